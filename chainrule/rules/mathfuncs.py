"""Rules of ``ops/mathfuncs.py``: each op's VJP and JVP side by side. ``g`` is the
output's cotangent, ``z`` the output, ``t`` an operand's tangent.

Conventions where JAX and autograd differ (or where the derivative is not
defined) are stated in each rule's docstring; the ops without rules
(``floor_divide``, ``ceil``, ``trunc``, ``isnan``, ``isinf``, ``isfinite``,
``signbit``) are declared ``differentiable=False``.
"""

from __future__ import annotations

import math

from .. import ops
from .common import partials_rules, unary_divide_rules, unary_rules
from .registry import jvp_rule, vjp_rule

_LN2, _LN10 = math.log(2.0), math.log(10.0)


_unary, _unary_divide, _binary = unary_rules, unary_divide_rules, partials_rules


# -- hyperbolic and inverse trigonometric ---------------------------------------------
_unary(ops.sinh, lambda z, x: ops.cosh(x), "z = sinh(x);  f'(x) = cosh(x)")
_unary(ops.cosh, lambda z, x: ops.sinh(x), "z = cosh(x);  f'(x) = sinh(x)")


def _one_minus_square(x):
    """1 - x^2: factored, (1 - x)(1 + x), where |x| >= 1/2 (accurate near +-1, where x * x
    rounds), 1 - x * x below (whose derivative, -2x, is exact near 0: that of the factored
    form, (1 - x) - (1 + x), cancels to 0 for |x| < 1e-16)."""
    return ops.where(ops.abs(x) < 0.5, 1 - x * x, (1 - x) * (1 + x))


_unary_divide(ops.arcsin, lambda z, x: ops.sqrt(_one_minus_square(x)),
              "z = arcsin(x);  f'(x) = 1 / sqrt(1 - x^2)  (1 - x^2 factored as (1 - x)(1 + x) "
              "for |x| >= 1/2: accurate near +-1; +inf at +-1, nan outside [-1, 1], as "
              "NumPy/JAX)")
_unary_divide(ops.arccos, lambda z, x: -ops.sqrt(_one_minus_square(x)),
              "z = arccos(x);  f'(x) = -1 / sqrt(1 - x^2)  (as arcsin; -inf at +-1, as JAX)")
def _arcsinh_denominator(z, x):
    """sqrt(x^2 + 1): hypot(x, 1) for real x (no overflow of x^2), the principal square
    root for complex x (hypot is real-only)."""
    return ops.sqrt(x * x + 1) if x.dtype.kind == "c" else ops.hypot(x, 1.0)


_unary_divide(ops.arcsinh, _arcsinh_denominator,
              "z = arcsinh(x);  f'(x) = 1 / sqrt(x^2 + 1) = 1 / hypot(x, 1)  (no overflow "
              "of x^2 for large |x|; complex x: the principal sqrt(x^2 + 1))")
_unary_divide(ops.arccosh, lambda z, x: ops.sqrt(x - 1) * ops.sqrt(x + 1),
              "z = arccosh(x);  f'(x) = 1 / (sqrt(x - 1) sqrt(x + 1))  (accurate near 1, no "
              "overflow for large x; +inf at 1)")
_unary_divide(ops.arctanh, lambda z, x: _one_minus_square(x),
              "z = arctanh(x);  f'(x) = 1 / (1 - x^2)  (factored as (1 - x)(1 + x) for "
              "|x| >= 1/2; +inf at +-1)")


@vjp_rule(ops.arctan2)
def arctan2_vjp(z, g, y, x):
    """z = arctan2(y, x);  r = hypot(x, y);  dy = g x / r^2;  dx = -g y / r^2  (computed as
    (x / r) / r: no overflow or underflow of the squares; nan at the origin, as JAX)"""
    r = ops.hypot(x, y)
    return g * (x / r) / r, -g * (y / r) / r


@jvp_rule(ops.arctan2)
def arctan2_jvp(z, y, x):
    """z = arctan2(y, x);  dz = (dy x - dx y) / hypot(x, y)^2"""
    r = ops.hypot(x, y)
    return (lambda t: t * ((x / r) / r)), (lambda t: -t * ((y / r) / r))


def _over_hypot(z, v):
    """v / z, and 0 where z = 0 (the origin, where hypot has a kink: 0 is the
    subgradient chainrule picks, as for |x|, and so are its derivatives there: the outer
    where makes the second derivative 0 at the origin too, as |x|'s, not the 1 of
    v / 1)."""
    zero = z == 0
    return ops.where(zero, 0, v / ops.where(zero, 1, z))


_binary(ops.hypot, lambda z, x, y: (_over_hypot(z, x), _over_hypot(z, y)),
        "z = hypot(x, y) = sqrt(x^2 + y^2);  f_x = x / z;  f_y = y / z  (0 at the origin, "
        "and so are the second derivatives there)")

# -- exponents and logarithms in other bases ------------------------------------------
_unary(ops.log2, lambda z, x: (1 / _LN2) / x,
       "z = log2(x);  f'(x) = 1 / (x ln 2), computed as (1 / ln 2) / x (x ln 2 rounds "
       "again where x is subnormal)")
_unary(ops.log10, lambda z, x: (1 / _LN10) / x,
       "z = log10(x);  f'(x) = 1 / (x ln 10), computed as (1 / ln 10) / x: x ln 10 "
       "overflows for x > 7.8e307 (giving 0, not 4.3e-309)")
_unary(ops.exp2, lambda z, x: z * _LN2, "z = 2^x;  f'(x) = z ln 2")
_unary_divide(ops.cbrt, lambda z, x: 3 * (z * z),
              "z = x^(1/3);  f'(x) = 1 / (3 z^2)  (+inf at x = 0, the vertical tangent; a "
              "zero cotangent or tangent there gives nan, as JAX's 0 * inf)")


def _logaddexp_diff(x, y, scale):
    """(x - y) * scale, and 0 where x and y are the same infinity (where x - y is nan
    but the two terms weigh the same)."""
    same_inf = ops.logical_and(x == y, ops.isinf(x))
    d = ops.where(same_inf, 0, x - y)
    return d if scale == 1 else d * scale


def _logaddexp_rules(op, scale, doc):
    def slopes(z, x, y):
        d = _logaddexp_diff(x, y, scale)
        return ops.sigmoid(d), ops.sigmoid(-d)

    _binary(op, slopes, doc)


_logaddexp_rules(
    ops.logaddexp, 1,
    "z = log(e^x + e^y);  f_x = e^(x - z) = sigmoid(x - y);  f_y = sigmoid(y - x)  (the "
    "logistic form is exact at every magnitude: at x = y = 1e308, x - z rounds to 0 and "
    "e^(x - z) to 1, not 1/2; equal infinities weigh 1/2 each)")
_logaddexp_rules(
    ops.logaddexp2, _LN2,
    "z = log2(2^x + 2^y);  f_x = 2^x / (2^x + 2^y) = sigmoid((x - y) ln 2);  "
    "f_y = sigmoid((y - x) ln 2)")

# -- signs, extrema, remainders -------------------------------------------------------
_unary(ops.fabs, lambda z, x: ops.sign(x), "z = |x|;  f'(x) = sign(x)  (0 at 0, as abs)")


@vjp_rule(ops.copysign)
def copysign_vjp(z, g, x, y):
    """z = copysign(x, y) = |x| with the sign of y;  dx = g where x and y have the same
    sign bit, -g where they differ (so at x = +-0 the slope is +-1 by the sign bits, as
    JAX's abs at 0 gives 1);  dy = 0 (z is piecewise constant in y)"""
    return ops.where(ops.signbit(x) == ops.signbit(y), g, -g), None


@jvp_rule(ops.copysign)
def copysign_jvp(z, x, y):
    """z = copysign(x, y);  dz = dx * (+1 if signbit(x) == signbit(y) else -1)"""
    same = ops.signbit(x) == ops.signbit(y)
    return (lambda t: ops.where(same, t, -t)), None


@vjp_rule(ops.heaviside)
def heaviside_vjp(z, g, x, h0):
    """z = 0 (x < 0), h0 (x = 0), 1 (x > 0);  dx = 0 (piecewise constant: no delta at 0,
    as JAX);  dh0 = g where x = 0"""
    return None, ops.where(x == 0, g, 0)


@jvp_rule(ops.heaviside)
def heaviside_jvp(z, x, h0):
    """z = heaviside(x, h0);  dz = dh0 where x = 0, else 0 (no derivative in x)"""
    return None, (lambda t: ops.where(x == 0, t, 0))


def _nan_extremum(first_wins, doc):
    """fmax/fmin: like maximum/minimum (ties split evenly), but a NaN operand loses:
    where y is NaN the result is x, so the derivative goes to x (and to y where x
    is NaN)."""

    def split(g, x, y):
        wins = ops.logical_or(first_wins(x, y), ops.isnan(y))
        tie = x == y
        half = g * 0.5
        return (ops.where(tie, half, ops.where(wins, g, 0)),
                ops.where(tie, half, ops.where(wins, 0, g)))

    def vjp(z, g, x, y):
        return split(g, x, y)

    def jvp(z, x, y):
        return (lambda t: split(t, x, y)[0]), (lambda t: split(t, x, y)[1])

    vjp.__doc__ = jvp.__doc__ = doc
    return vjp, jvp


for _op, _wins, _doc in (
        (ops.fmax, lambda x, y: x > y,
         "z = fmax(x, y);  dx = g where x > y or y is NaN, dy = g where y > x or x is NaN "
         "(NumPy's fmax ignores a NaN);  ties split g evenly, as maximum"),
        (ops.fmin, lambda x, y: x < y,
         "z = fmin(x, y);  dx = g where x < y or y is NaN, dy = g where y < x or x is NaN;  "
         "ties split g evenly, as minimum")):
    _v, _j = _nan_extremum(_wins, _doc)
    vjp_rule(_op)(_v)
    jvp_rule(_op)(_j)


@vjp_rule(ops.remainder)
def remainder_vjp(z, g, x, y):
    """z = x mod y = x - y floor(x / y) (the sign of y, as Python's %);  dx = g;
    dy = -g floor(x / y), with floor(x / y) NumPy's floor_divide (exactly the quotient z
    was computed with), as JAX"""
    return g, -g * ops.floor_divide(x, y)


@jvp_rule(ops.remainder)
def remainder_jvp(z, x, y):
    """z = x mod y;  dz = dx - dy floor(x / y)"""
    return (lambda t: t), (lambda t: -t * ops.floor_divide(x, y))


def _trunc_quotient(z, x, y):
    """trunc(x / y) for z = fmod(x, y) = x - y trunc(x / y): (x - z) / y rounded to the
    integer it approximates (x / y itself may round up to the next integer)."""
    return ops.round((x - z) / y)


@vjp_rule(ops.fmod)
def fmod_vjp(z, g, x, y):
    """z = fmod(x, y) = x - y trunc(x / y) (the sign of x, as C);  dx = g;
    dy = -g trunc(x / y), as JAX"""
    return g, -g * _trunc_quotient(z, x, y)


@jvp_rule(ops.fmod)
def fmod_jvp(z, x, y):
    """z = fmod(x, y);  dz = dx - dy trunc(x / y)"""
    return (lambda t: t), (lambda t: -t * _trunc_quotient(z, x, y))


# -- sinc --------------------------------------------------------------------------------
@vjp_rule(ops.sinc)
def sinc_vjp(z, g, x, n):
    """z = sinc^(n)(x), the n-th derivative of sin(pi x) / (pi x);  dx = g sinc^(n+1)(x)
    (the op computes every order stably: 0 at x = 0 for odd orders, -pi^2/3 for the
    second, from the Maclaurin series near 0)"""
    return (g * ops.sinc(x, n + 1),)


@jvp_rule(ops.sinc)
def sinc_jvp(z, x, n):
    """z = sinc^(n)(x);  dz = dx sinc^(n+1)(x)"""
    return (lambda t: t * ops.sinc(x, n + 1),)
