"""Rules of the elementwise ops: each op's VJP and JVP side by side, the math
in each docstring. ``g`` is the output's cotangent, ``z`` the output, ``t``
an operand's tangent."""

from __future__ import annotations

import numpy as np

from .. import ops
from .common import unary_divide_rules, unary_rules
from .registry import jvp_rule, vjp_rule


# -- arithmetic ---------------------------------------------------------------------
@vjp_rule(ops.add)
def add_vjp(z, g, x, y):
    """z = x + y;  dx = g;  dy = g"""
    return g, g


@jvp_rule(ops.add)
def add_jvp(z, x, y):
    """z = x + y;  dz = dx + dy"""
    return (lambda t: t), (lambda t: t)


@vjp_rule(ops.subtract)
def subtract_vjp(z, g, x, y):
    """z = x - y;  dx = g;  dy = -g"""
    return g, -g


@jvp_rule(ops.subtract)
def subtract_jvp(z, x, y):
    """z = x - y;  dz = dx - dy"""
    return (lambda t: t), (lambda t: -t)


@vjp_rule(ops.multiply)
def multiply_vjp(z, g, x, y):
    """z = x * y;  dx = g * y;  dy = g * x"""
    return g * y, g * x


@jvp_rule(ops.multiply)
def multiply_jvp(z, x, y):
    """z = x * y;  dz = dx * y + x * dy"""
    return (lambda t: t * y), (lambda t: x * t)


@vjp_rule(ops.divide)
def divide_vjp(z, g, x, y):
    """z = x / y;  dx = g / y;  dy = -g * z / y"""
    gx = g / y
    return gx, -gx * z


@jvp_rule(ops.divide)
def divide_jvp(z, x, y):
    """z = x / y;  dz = dx / y - dy * z / y"""
    return (lambda t: t / y), (lambda t: -t * (z / y))


def _small_integer_power(y):
    return isinstance(y, np.ndarray) and y.ndim == 0 and y in (1, 2)


def _log_or_zero(x, positive):
    """log(x) where x > 0 (for complex x the principal log wherever x != 0); 0 at x = 0,
    where 0 ** y is constant (0) for y > 0; NaN where a real x < 0, where x ** y is not
    defined for non-integer y, so has no derivative in y (as JAX and autograd: a 0
    there would be a wrong number, not even the real part of the complex one)"""
    return ops.where(positive, ops.log(ops.where(positive, x, 1)),
                     ops.where(x == 0, 0, np.nan))


def _domain(x):
    """Where the y-derivative of x ** y is log(x): x > 0, or x != 0 for complex x."""
    return x != 0 if x.dtype.kind == "c" else x > 0


def _power_slope(x, y):
    """d(x ** y)/dx = y * x ** (y - 1), and 0 where y == 0 (so x ** 0 has slope 0 at
    x = 0, not 0 * inf); x is replaced where y == 0 so every derivative of this
    expression stays finite too."""
    if isinstance(y, np.ndarray) and not np.any(y == 0):
        return y * x ** (y - 1)
    zero = y == 0
    safe = ops.where(zero, 1, x)
    return ops.where(zero, 0, y * safe ** (y - 1))


def _is_zero_exponent(y):
    return isinstance(y, np.ndarray) and y.ndim == 0 and y == 0


def _power_x_slope(x, y):
    """The x-slope of x ** y, with shortcuts for exponents known to be 0, 1 or 2."""
    if _small_integer_power(y):
        return 1 if y == 1 else 2 * x
    return _power_slope(x, y)


@vjp_rule(ops.power)
def power_vjp(z, g, x, y):
    """z = x ** y;  dx = g * y * x ** (y - 1)  (0 where y = 0);  dy = g * z * log(x)
    (0 where x = 0, NaN where a real x < 0). The shortcuts for y = 0, 1, 2 apply to dx
    only: on the tape's eager backward y is an array even when it is being
    differentiated, so dy is always returned (the pass prunes it for a constant y)."""
    dy = g * z * _log_or_zero(x, _domain(x))
    if _is_zero_exponent(y):
        return None, dy
    return g * _power_x_slope(x, y), dy


@jvp_rule(ops.power)
def power_jvp(z, x, y):
    """z = x ** y;  dz = dx * y * x ** (y - 1) + dy * z * log(x)  (first term 0 where
    y = 0, log term 0 where x = 0 and NaN where a real x < 0)"""
    positive = _domain(x)
    dy = (lambda t: t * (z * _log_or_zero(x, positive)))
    if _is_zero_exponent(y):
        return None, dy
    return (lambda t: t * _power_x_slope(x, y)), dy


def _extremum_vjp(g, x, y, first):
    shared = ops.where(x == y, g * 0.5, g)
    if first:
        return ops.where(x >= y, shared, 0), ops.where(x <= y, shared, 0)
    return ops.where(x <= y, shared, 0), ops.where(x >= y, shared, 0)


def _extremum_jvp(x, y, first_wins_on):
    def dx(t):
        return ops.where(x == y, t * 0.5, ops.where(first_wins_on, t, 0))

    def dy(t):
        return ops.where(x == y, t * 0.5, ops.where(first_wins_on, 0, t))

    return dx, dy


@vjp_rule(ops.maximum)
def maximum_vjp(z, g, x, y):
    """z = max(x, y);  dx = g where x > y;  dy = g where y > x;  ties split g evenly"""
    return _extremum_vjp(g, x, y, first=True)


@jvp_rule(ops.maximum)
def maximum_jvp(z, x, y):
    """z = max(x, y);  dz = dx where x > y, dy where y > x, their mean on ties"""
    return _extremum_jvp(x, y, x > y)


@vjp_rule(ops.minimum)
def minimum_vjp(z, g, x, y):
    """z = min(x, y);  dx = g where x < y;  dy = g where y < x;  ties split g evenly"""
    return _extremum_vjp(g, x, y, first=False)


@jvp_rule(ops.minimum)
def minimum_jvp(z, x, y):
    """z = min(x, y);  dz = dx where x < y, dy where y < x, their mean on ties"""
    return _extremum_jvp(x, y, x < y)


@vjp_rule(ops.negative)
def negative_vjp(z, g, x):
    """z = -x;  dx = -g"""
    return (-g,)


@jvp_rule(ops.negative)
def negative_jvp(z, x):
    """z = -x;  dz = -dx"""
    return (lambda t: -t,)


# -- unary functions: dz = dx * f'(x), dx = g * f'(x) -----------------------------------
_scale, _divide_by = unary_rules, unary_divide_rules


_scale(ops.square, lambda z, x: 2 * x, "z = x^2;  f'(x) = 2 x")
_scale(ops.exp, lambda z, x: z, "z = exp(x);  f'(x) = z")
_scale(ops.expm1, lambda z, x: ops.exp(x),
       "z = exp(x) - 1;  f'(x) = exp(x)  (not z + 1, which cancels for x < 0: 1.7e-4 off at "
       "x = -30, 0 for x < -37; JAX computes z + 1)")
_scale(ops.sin, lambda z, x: ops.cos(x), "z = sin(x);  f'(x) = cos(x)")
_scale(ops.tan, lambda z, x: 1 + z * z, "z = tan(x);  f'(x) = 1 + z^2")

_scale(ops.tanh, lambda z, x: 1 - z * z, "z = tanh(x);  f'(x) = 1 - z^2")
_scale(ops.sigmoid, lambda z, x: z * (1 - z), "z = sigmoid(x);  f'(x) = z (1 - z)")
_divide_by(ops.log, lambda z, x: x, "z = log(x);  f'(x) = 1 / x")
_divide_by(ops.log1p, lambda z, x: 1 + x, "z = log(1 + x);  f'(x) = 1 / (1 + x)")
_divide_by(ops.sqrt, lambda z, x: 2 * z, "z = sqrt(x);  f'(x) = 1 / (2 z)")


def _arctan_slope(z, x):
    """1 / (1 + x^2) as (1 / hypot(x, 1))^2: the same to rounding, but its derivatives never
    form x^2, which overflows for |x| > 1e154 (the tangent of 1 + x * x is then inf and its
    product with the slope's 0 NaN). Complex x keeps 1 / (1 + x^2) (hypot is real)."""
    if x.dtype.kind == "c":
        return ops.reciprocal(1 + x * x)
    r = ops.reciprocal(ops.hypot(x, 1.0))
    return r * r


_scale(ops.arctan, _arctan_slope,
       "z = arctan(x);  f'(x) = 1 / (1 + x^2) = (1 / hypot(x, 1))^2  (no overflow of x^2 at any "
       "order)")


def _unit(z, x):
    """conj(x) / |x| for complex x (0 at x = 0, where |x| has no derivative)."""
    zero = z == 0
    return ops.where(zero, 0, ops.conj(x) / ops.where(zero, 1, z))


@vjp_rule(ops.abs)
def abs_vjp(z, g, x):
    """z = |x|;  dx = g sign(x) for real x, g conj(x) / |x| for complex x  (df/dx - i df/dy);
    0 at x = 0 (the subgradient JAX and autograd choose)"""
    if x.dtype.kind == "c":
        return (g * _unit(z, x),)
    return (g * ops.sign(x),)


@jvp_rule(ops.abs)
def abs_jvp(z, x):
    """z = |x|;  dz = sign(x) dx for real x, Re(conj(x) dx) / |x| for complex x"""
    if x.dtype.kind == "c":
        u = _unit(z, x)
        return (lambda t: ops.real(u * t),)
    return (lambda t: t * ops.sign(x),)


@vjp_rule(ops.reciprocal)
def reciprocal_vjp(z, g, x):
    """z = 1 / x;  dx = -g z^2"""
    return (-g * (z * z),)


@jvp_rule(ops.reciprocal)
def reciprocal_jvp(z, x):
    """z = 1 / x;  dz = -dx z^2"""
    return (lambda t: t * -(z * z),)


@vjp_rule(ops.cos)
def cos_vjp(z, g, x):
    """z = cos(x);  dx = -g * sin(x)"""
    return (-g * ops.sin(x),)


@jvp_rule(ops.cos)
def cos_jvp(z, x):
    """z = cos(x);  dz = -dx * sin(x)"""
    return (lambda t: t * -ops.sin(x),)


@vjp_rule(ops.relu)
def relu_vjp(z, g, x):
    """z = max(x, 0);  dx = g where x > 0, else 0"""
    return (ops.where(x > 0, g, 0),)


@jvp_rule(ops.relu)
def relu_jvp(z, x):
    """z = max(x, 0);  dz = dx where x > 0"""
    return (lambda t: ops.where(x > 0, t, 0),)


# -- selection and casts ------------------------------------------------------------
@vjp_rule(ops.where)
def where_vjp(z, g, c, x, y):
    """z = where(c, x, y);  dx = g where c;  dy = g where not c"""
    return None, ops.where(c, g, 0), ops.where(c, 0, g)


@jvp_rule(ops.where)
def where_jvp(z, c, x, y):
    """z = where(c, x, y);  dz = where(c, dx, dy)"""
    return None, (lambda t: ops.where(c, t, 0)), (lambda t: ops.where(c, 0, t))


@vjp_rule(ops.astype)
def astype_vjp(z, g, x, dtype):
    """z = x as dtype;  dx = g as x's dtype, Re(g) for a real x (none for integer x)"""
    if not np.issubdtype(x.dtype, np.inexact):
        return (None,)
    if np.issubdtype(g.dtype, np.complexfloating) and not np.issubdtype(
            x.dtype, np.complexfloating):
        g = ops.real(g)
    return (ops.astype(g, x.dtype),)


@jvp_rule(ops.astype)
def astype_jvp(z, x, dtype):
    """z = x as dtype;  dz = dx as dtype (zero for integer results)"""
    if not dtype.is_float:
        return (None,)
    return (lambda t: ops.astype(t, dtype),)
