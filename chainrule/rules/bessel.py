"""Rules of ``ops/bessel.py``: the Bessel functions of the first and second kind, from
the recurrences C_n'(x) = (C_{n-1}(x) - C_{n+1}(x)) / 2 (C = J or Y, any real order for
J), which with C_{-1} = -C_1 give C_0' = -C_1. The order n has no derivative
(``NoDerivative``: asking for it is an error). Each slope is written with the ops, so
it differentiates again to any order.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from .common import partials_rules
from .registry import NoDerivative

_NO_DN = ("the derivative of a Bessel function with respect to its order n is not "
          "available (n is an integer order)")

partials_rules(ops.bessel_j0, lambda z, x: (-ops.bessel_j1(x),), "z = J0(x);  f'(x) = -J1(x)")
partials_rules(ops.bessel_y0, lambda z, x: (-ops.bessel_y1(x),), "z = Y0(x);  f'(x) = -Y1(x)")
_TWO = np.int64(2)  # an integer order (yn refuses a float one)
partials_rules(ops.bessel_j1, lambda z, x: ((ops.bessel_j0(x) - ops.bessel_jn(_TWO, x)) * 0.5,),
               "z = J1(x);  f'(x) = (J0(x) - J2(x)) / 2  (finite at x = 0, unlike "
               "J0 - J1 / x)")
partials_rules(ops.bessel_y1, lambda z, x: ((ops.bessel_y0(x) - ops.bessel_yn(_TWO, x)) * 0.5,),
               "z = Y1(x);  f'(x) = (Y0(x) - Y2(x)) / 2")
partials_rules(ops.bessel_jn,
               lambda z, n, x: (NoDerivative(_NO_DN),
                                (ops.bessel_jn(n - 1, x) - ops.bessel_jn(n + 1, x)) * 0.5),
               "z = J_n(x);  f_x = (J_{n-1}(x) - J_{n+1}(x)) / 2;  f_n: not available")
partials_rules(ops.bessel_yn,
               lambda z, n, x: (NoDerivative(_NO_DN),
                                (ops.bessel_yn(n - 1, x) - ops.bessel_yn(n + 1, x)) * 0.5),
               "z = Y_n(x);  f_x = (Y_{n-1}(x) - Y_{n+1}(x)) / 2;  f_n: not available")
