"""JVP rules for every op: one linear map per operand, ``lambda t: ...``, from
that operand's tangent to its part of the output tangent. Maps use only
linear ops on ``t`` (with primal values as fixed coefficients), so the
tangent program is linear and can be transposed. Results may be smaller
than the output (broadcasting): the passes broadcast them."""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from .. import ops
from .registry import jvp_rule
from .vjp import expand_reduced, prod_others


def _same(op_name):
    """Ops linear in their single operand: dz = op(dx)."""

    def rule(z, x, **attrs):
        return (lambda t: getattr(ops, op_name)(t, **attrs),)

    rule.__doc__ = f"z = {op_name}(x);  dz = {op_name}(dx)  (linear)"
    jvp_rule(op_name)(rule)


for _name in ("reshape", "permute_dims", "expand_dims", "squeeze", "broadcast_to",
              "collapse_sum_to", "flip", "cumsum", "sum", "mean"):
    _same(_name)


@jvp_rule("add")
def add_jvp(z, x, y):
    """z = x + y;  dz = dx + dy"""
    return (lambda t: t), (lambda t: t)


@jvp_rule("subtract")
def subtract_jvp(z, x, y):
    """z = x - y;  dz = dx - dy"""
    return (lambda t: t), (lambda t: -t)


@jvp_rule("multiply")
def multiply_jvp(z, x, y):
    """z = x * y;  dz = dx * y + x * dy"""
    return (lambda t: t * y), (lambda t: x * t)


@jvp_rule("divide")
def divide_jvp(z, x, y):
    """z = x / y;  dz = dx / y - dy * z / y"""
    return (lambda t: t / y), (lambda t: -t * (z / y))


@jvp_rule("power")
def power_jvp(z, x, y):
    """z = x ** y;  dz = dx * y * x ** (y - 1) + dy * z * log(x)  (log term 0 where x <= 0)"""
    if isinstance(y, np.ndarray) and y.ndim == 0 and y in (1, 2):
        return (lambda t: t if y == 1 else t * (2 * x)), None
    positive = x > 0
    return ((lambda t: t * (y * x ** (y - 1))),
            (lambda t: t * (z * cnp.where(positive, cnp.log(cnp.where(positive, x, 1)), 0))))


def _extremum_pair(x, y, first_wins_on):
    def dx(t):
        return cnp.where(x == y, t * 0.5, cnp.where(first_wins_on, t, 0))

    def dy(t):
        return cnp.where(x == y, t * 0.5, cnp.where(first_wins_on, 0, t))

    return dx, dy


@jvp_rule("maximum")
def maximum_jvp(z, x, y):
    """z = max(x, y);  dz = dx where x > y, dy where y > x, their mean on ties"""
    return _extremum_pair(x, y, x > y)


@jvp_rule("minimum")
def minimum_jvp(z, x, y):
    """z = min(x, y);  dz = dx where x < y, dy where y < x, their mean on ties"""
    return _extremum_pair(x, y, x < y)


def _scale(name, factor, doc):
    def rule(z, x):
        return (lambda t: t * factor(z, x),)

    rule.__doc__ = doc
    jvp_rule(name)(rule)


_scale("exp", lambda z, x: z, "z = exp(x);  dz = dx * z")
_scale("expm1", lambda z, x: z + 1, "z = exp(x) - 1;  dz = dx * (z + 1)")
_scale("sin", lambda z, x: cnp.cos(x), "z = sin(x);  dz = dx * cos(x)")
_scale("cos", lambda z, x: -cnp.sin(x), "z = cos(x);  dz = -dx * sin(x)")
_scale("tan", lambda z, x: 1 + z * z, "z = tan(x);  dz = dx * (1 + z^2)")
_scale("tanh", lambda z, x: 1 - z * z, "z = tanh(x);  dz = dx * (1 - z^2)")
_scale("sigmoid", lambda z, x: z * (1 - z), "z = sigmoid(x);  dz = dx * z * (1 - z)")
_scale("abs", lambda z, x: cnp.sign(x), "z = |x|;  dz = dx * sign(x)")
_scale("square", lambda z, x: 2 * x, "z = x^2;  dz = 2 x dx")
_scale("reciprocal", lambda z, x: -(z * z), "z = 1 / x;  dz = -dx z^2")


def _divide_by(name, divisor, doc):
    def rule(z, x):
        return (lambda t: t / divisor(z, x),)

    rule.__doc__ = doc
    jvp_rule(name)(rule)


_divide_by("log", lambda z, x: x, "z = log(x);  dz = dx / x")
_divide_by("log1p", lambda z, x: 1 + x, "z = log(1 + x);  dz = dx / (1 + x)")
_divide_by("arctan", lambda z, x: 1 + x * x, "z = arctan(x);  dz = dx / (1 + x^2)")
_divide_by("sqrt", lambda z, x: 2 * z, "z = sqrt(x);  dz = dx / (2 z)")


@jvp_rule("negative")
def negative_jvp(z, x):
    """z = -x;  dz = -dx"""
    return (lambda t: -t,)


@jvp_rule("relu")
def relu_jvp(z, x):
    """z = max(x, 0);  dz = dx where x > 0"""
    return (lambda t: cnp.where(x > 0, t, 0),)


@jvp_rule("where")
def where_jvp(z, c, x, y):
    """z = where(c, x, y);  dz = where(c, dx, dy)"""
    return None, (lambda t: cnp.where(c, t, 0)), (lambda t: cnp.where(c, 0, t))


@jvp_rule("astype")
def astype_jvp(z, x, dtype):
    """z = x as dtype;  dz = dx as dtype (zero for integer results)"""
    if not dtype.is_float:
        return (None,)
    return (lambda t: cnp.astype(t, dtype),)


def _extremum_jvp(z, x, axis, keepdims):
    """z = max(x, axis);  dz = sum(dx * hit / count(hit), axis)  (ties share)"""
    hit = cnp.astype(x == expand_reduced(z, x.shape, axis, keepdims), x.dtype)
    weight = hit / cnp.sum(hit, axis=axis, keepdims=True)
    return (lambda t: cnp.sum(t * weight, axis=axis, keepdims=keepdims),)


jvp_rule("max")(_extremum_jvp)
jvp_rule("min")(_extremum_jvp)


@jvp_rule("prod")
def prod_jvp(z, x, axis, keepdims):
    """z = prod(x, axis);  dz = sum(dx * prod_{j != i} x_j, axis)"""
    others = prod_others(x, axis)
    return (lambda t: cnp.sum(t * others, axis=axis, keepdims=keepdims),)


@jvp_rule("logsumexp")
def logsumexp_jvp(z, x, axis, keepdims):
    """z = logsumexp(x);  dz = sum(dx * exp(x - z), axis)"""
    p = cnp.exp(x - expand_reduced(z, x.shape, axis, keepdims))
    return (lambda t: cnp.sum(t * p, axis=axis, keepdims=keepdims),)


@jvp_rule("softmax")
def softmax_jvp(z, x, axis):
    """z = softmax(x);  dz = z * (dx - sum(dx * z, axis))"""
    return (lambda t: z * (t - cnp.sum(t * z, axis=axis, keepdims=True)),)


@jvp_rule("log_softmax")
def log_softmax_jvp(z, x, axis):
    """z = log_softmax(x);  dz = dx - sum(dx * exp(z), axis)"""
    p = cnp.exp(z)
    return (lambda t: t - cnp.sum(t * p, axis=axis, keepdims=True),)


@jvp_rule("concatenate")
def concatenate_jvp(z, *xs, axis):
    """z = concatenate(xs);  dz = concatenate(dxs)  (zeros for constant parts)"""

    def part(i):
        def f(t):
            pieces = [t if j == i else cnp.zeros_like(x) for j, x in enumerate(xs)]
            return ops.concatenate(*pieces, axis=axis)

        return f

    return tuple(part(i) for i in range(len(xs)))


@jvp_rule("split")
def split_jvp(z, x, indices_or_sections, axis):
    """zs = split(x);  dzs = split(dx)"""
    return (lambda t: ops.split(t, indices_or_sections=indices_or_sections, axis=axis),)


@jvp_rule("index")
def index_jvp(z, x, *arrays, key):
    """z = x[key];  dz = dx[key]"""
    return (lambda t: ops.index(t, *arrays, key=key),) + (None,) * len(arrays)


@jvp_rule("index_add")
def index_add_jvp(z, base, value, *arrays, key):
    """z = base.at[key].add(v);  dz = dbase.at[key].add(dv)"""
    return ((lambda t: t),
            (lambda t: ops.index_add(cnp.zeros_like(base), t, *arrays, key=key))
            ) + (None,) * len(arrays)


@jvp_rule("matmul")
def matmul_jvp(z, a, b):
    """z = a @ b;  dz = da @ b + a @ db"""
    return (lambda t: cnp.matmul(t, b)), (lambda t: cnp.matmul(a, t))
