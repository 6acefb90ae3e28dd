"""Bessel functions of the first and second kind (``chainrule.scipy.special.j0``, ``j1``,
``jn``, ``y0``, ``y1``, ``yn``), with SciPy's kernels (an optional extra, as the other
special functions: without SciPy they raise a ``ChainruleError`` saying
``pip install chainrule[scipy]``).

The op names carry a ``bessel_`` prefix (``j0`` and ``y1`` are likely variable names,
which the text format refuses to share with an op); the namespace names are SciPy's.
The order ``n`` of ``jn`` / ``yn`` is an operand broadcast against ``x``, as
``polygamma``'s: it has no derivative. SciPy's ``jn`` is its ``jv``, so a non-integer
order gives the Bessel function of that real order, as in SciPy; SciPy's ``yn``
truncates a float order to an integer (with a warning): ``bessel_yn`` takes an integer
array ``n`` and refuses a float one where the program is built (a
``TypeInferenceError``), never a silently different function.

>>> import numpy as np
>>> round(float(bessel_jn(np.array(1), np.array(2.0))), 6)
0.576725
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from .common import define, tensor_types
from .special import (
    _FACTS,
    _float_type,
    _result_dtype,
    _scipy_kernel,
    _special,
    scipy_special,
)

bessel_j0 = _special("bessel_j0", function="j0", namespace="j0",
                     doc="The Bessel function of the first kind of order 0.")
bessel_j1 = _special("bessel_j1", function="j1", namespace="j1",
                     doc="The Bessel function of the first kind of order 1.")
bessel_y0 = _special("bessel_y0", function="y0", namespace="y0",
                     doc="The Bessel function of the second kind of order 0.")
bessel_y1 = _special("bessel_y1", function="y1", namespace="y1",
                     doc="The Bessel function of the second kind of order 1.")
bessel_jn = _special("bessel_jn", 2, kernel=_scipy_kernel("jv"), namespace="jn",
                     doc="jn(n, x): the Bessel function of the first kind of order n (SciPy's "
                         "jn is jv: a non-integer n is that real order).")


def _yn_type(types, attrs):
    """As the other special functions, with an integer order n (SciPy truncates a float
    order to an integer, with a warning: refused here, before any value is seen)."""
    n = tensor_types("bessel_yn", types)[0]
    if n.dtype.numpy.kind not in "iu":
        raise TypeInferenceError(f"yn: the order n must be an integer array (SciPy would "
                                 f"truncate a float order), got {n!r}; pass n.astype(int)")
    return _float_type("bessel_yn")(types, attrs)


def _yn(n, x):
    """scipy.special.yn with the integer order (its integer loop) and x in the result
    dtype."""
    dtype = _result_dtype((n, x))
    out = scipy_special().yn(n.astype("l", copy=False), x.astype(dtype, copy=False))
    return np.asarray(out).astype(dtype, copy=False)


bessel_yn = define("bessel_yn", _yn_type, _yn, 2,
                   doc="yn(n, x): the Bessel function of the second kind of integer order n "
                       "(n an integer array: SciPy would truncate a float order).", **_FACTS)

__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "bessel_jn", "bessel_yn"]
