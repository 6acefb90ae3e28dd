"""Rules of ``ops/special_extra.py`` (``gammasgn`` is declared non-differentiable: its
derivative is zero, it needs no rules).

``rgamma`` = 1 / Gamma is entire, and so is its derivative -psi(x) / Gamma(x); that
product is 0 * inf = NaN at the poles of Gamma (0, -1, -2, ...), where the derivative is
(-1)^n n!. Below x = 1/2 the rules use the reflection formula 1 / Gamma(x) =
Gamma(1 - x) sin(pi x) / pi instead, whose derivative
Gamma(1 - x) (cos(pi x) - psi(1 - x) sin(pi x) / pi) is smooth there (and so are its own
derivatives, which the passes take of the ops below: exact at every order).
"""

from __future__ import annotations

import math

from .. import ops
from .common import partials_rules

_SQRT_PI_2 = math.sqrt(math.pi) / 2.0

partials_rules(ops.erfcinv, lambda z, x: (-_SQRT_PI_2 * ops.exp(z * z),),
               "z = erfcinv(x);  f'(x) = -sqrt(pi) / 2 exp(z^2)  (-inf at x = 0 and 2, "
               "where z is infinite)")


def _rgamma_slope(z, x):
    reflect = x < 0.5
    xr = ops.where(reflect, x, 0.0)  # each branch reads a safe x where the other is taken
    # sin(pi x), cos(pi x) of x reduced by an even integer (exactly): no loss to pi * x
    # rounding for large |x|; round has zero derivative, so d(reduced)/dx = 1
    reduced = xr - 2.0 * ops.round(xr * 0.5)
    near_poles = ops.gamma_function(1.0 - xr) * (
        ops.cos(math.pi * reduced) - ops.digamma(1.0 - xr) * ops.sin(math.pi * reduced)
        / math.pi)
    xd = ops.where(reflect, 1.0, x)
    direct = -ops.digamma(xd) * ops.rgamma(xd)
    return (ops.where(reflect, near_poles, direct),)


partials_rules(ops.rgamma, _rgamma_slope,
               "z = 1 / Gamma(x);  f'(x) = -psi(x) / Gamma(x) for x >= 1/2, and "
               "Gamma(1 - x) (cos(pi x) - psi(1 - x) sin(pi x) / pi) below (the reflection "
               "formula: (-1)^n n! at the pole -n, where -psi / Gamma is NaN)")
