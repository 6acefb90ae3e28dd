"""VJP rules for every op. Each docstring states the math; ``g`` is the
output's cotangent, ``z`` the output. Broadcast results are summed down to
each operand's shape by the passes."""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from .. import ops
from .registry import nondifferentiable, vjp_rule

nondifferentiable(
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_not", "sign", "floor", "round", "argmax", "argmin", "zeros", "ones",
    "full", "zeros_like", "ones_like", "full_like", "arange", "stop_gradient",
)


def keepdims_shape(shape, axis) -> tuple:
    axes = range(len(shape)) if axis is None else axis
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def expand_reduced(g, x_shape, axis, keepdims):
    """The cotangent of a reduction, reshaped so it broadcasts against x (no
    reshape when the reduced axes lead: trailing axes already line up)."""
    if keepdims or axis is None or tuple(axis) == tuple(range(len(axis))):
        return g
    return cnp.reshape(g, keepdims_shape(x_shape, axis))


# -- arithmetic ---------------------------------------------------------------------
@vjp_rule("add")
def add_vjp(z, g, x, y):
    """z = x + y;  dx = g;  dy = g"""
    return g, g


@vjp_rule("subtract")
def subtract_vjp(z, g, x, y):
    """z = x - y;  dx = g;  dy = -g"""
    return g, -g


@vjp_rule("multiply")
def multiply_vjp(z, g, x, y):
    """z = x * y;  dx = g * y;  dy = g * x"""
    return g * y, g * x


@vjp_rule("divide")
def divide_vjp(z, g, x, y):
    """z = x / y;  dx = g / y;  dy = -g * z / y"""
    gx = g / y
    return gx, -gx * z


@vjp_rule("power")
def power_vjp(z, g, x, y):
    """z = x ** y;  dx = g * y * x ** (y - 1);  dy = g * z * log(x)  (0 where x <= 0)"""
    if isinstance(y, np.ndarray) and y.ndim == 0 and y in (1, 2):
        return (g if y == 1 else g * (2 * x)), None
    dx = g * y * x ** (y - 1)
    positive = x > 0
    dy = g * z * cnp.where(positive, cnp.log(cnp.where(positive, x, 1)), 0)
    return dx, dy


@vjp_rule("maximum")
def maximum_vjp(z, g, x, y):
    """z = max(x, y);  dx = g where x > y;  dy = g where y > x;  ties split g evenly"""
    shared = cnp.where(x == y, g * 0.5, g)
    return cnp.where(x >= y, shared, 0), cnp.where(x <= y, shared, 0)


@vjp_rule("minimum")
def minimum_vjp(z, g, x, y):
    """z = min(x, y);  dx = g where x < y;  dy = g where y < x;  ties split g evenly"""
    shared = cnp.where(x == y, g * 0.5, g)
    return cnp.where(x <= y, shared, 0), cnp.where(x >= y, shared, 0)


@vjp_rule("negative")
def negative_vjp(z, g, x):
    """z = -x;  dx = -g"""
    return (-g,)


@vjp_rule("abs")
def abs_vjp(z, g, x):
    """z = |x|;  dx = g * sign(x)"""
    return (g * cnp.sign(x),)


@vjp_rule("square")
def square_vjp(z, g, x):
    """z = x^2;  dx = 2 g x"""
    return (g * (2 * x),)


@vjp_rule("reciprocal")
def reciprocal_vjp(z, g, x):
    """z = 1 / x;  dx = -g z^2"""
    return (-g * (z * z),)


@vjp_rule("sqrt")
def sqrt_vjp(z, g, x):
    """z = sqrt(x);  dx = g / (2 z)"""
    return (g / (2 * z),)


# -- transcendental -----------------------------------------------------------------
@vjp_rule("exp")
def exp_vjp(z, g, x):
    """z = exp(x);  dx = g * z"""
    return (g * z,)


@vjp_rule("expm1")
def expm1_vjp(z, g, x):
    """z = exp(x) - 1;  dx = g * (z + 1)"""
    return (g * (z + 1),)


@vjp_rule("log")
def log_vjp(z, g, x):
    """z = log(x);  dx = g / x"""
    return (g / x,)


@vjp_rule("log1p")
def log1p_vjp(z, g, x):
    """z = log(1 + x);  dx = g / (1 + x)"""
    return (g / (1 + x),)


@vjp_rule("sin")
def sin_vjp(z, g, x):
    """z = sin(x);  dx = g * cos(x)"""
    return (g * cnp.cos(x),)


@vjp_rule("cos")
def cos_vjp(z, g, x):
    """z = cos(x);  dx = -g * sin(x)"""
    return (-g * cnp.sin(x),)


@vjp_rule("tan")
def tan_vjp(z, g, x):
    """z = tan(x);  dx = g * (1 + z^2)"""
    return (g * (1 + z * z),)


@vjp_rule("arctan")
def arctan_vjp(z, g, x):
    """z = arctan(x);  dx = g / (1 + x^2)"""
    return (g / (1 + x * x),)


@vjp_rule("tanh")
def tanh_vjp(z, g, x):
    """z = tanh(x);  dx = g * (1 - z^2)"""
    return (g * (1 - z * z),)


@vjp_rule("sigmoid")
def sigmoid_vjp(z, g, x):
    """z = sigmoid(x);  dx = g * z * (1 - z)"""
    return (g * (z * (1 - z)),)


@vjp_rule("relu")
def relu_vjp(z, g, x):
    """z = max(x, 0);  dx = g where x > 0, else 0"""
    return (cnp.where(x > 0, g, 0),)


# -- selection and casts ------------------------------------------------------------
@vjp_rule("where")
def where_vjp(z, g, c, x, y):
    """z = where(c, x, y);  dx = g where c;  dy = g where not c"""
    return None, cnp.where(c, g, 0), cnp.where(c, 0, g)


@vjp_rule("astype")
def astype_vjp(z, g, x, dtype):
    """z = x as dtype;  dx = g as x's dtype (none for integer x)"""
    if not np.issubdtype(x.dtype, np.inexact):
        return (None,)
    return (cnp.astype(g, x.dtype),)


# -- reductions ---------------------------------------------------------------------
@vjp_rule("sum")
def sum_vjp(z, g, x, axis, keepdims):
    """z = sum(x, axis);  dx = broadcast(g) over the summed axes"""
    return (cnp.broadcast_to(expand_reduced(g, x.shape, axis, keepdims), x.shape),)


@vjp_rule("mean")
def mean_vjp(z, g, x, axis, keepdims):
    """z = mean(x, axis);  dx = broadcast(g) / n"""
    n = int(np.prod([x.shape[a] for a in (range(x.ndim) if axis is None else axis)]))
    return (cnp.broadcast_to(expand_reduced(g, x.shape, axis, keepdims) / n, x.shape),)


def _extremum_vjp(z, g, x, axis, keepdims):
    """dx = g at the positions equal to the extremum, shared evenly among ties"""
    hit = cnp.astype(x == expand_reduced(z, x.shape, axis, keepdims), g.dtype)
    share = expand_reduced(g, x.shape, axis, keepdims) / cnp.sum(hit, axis=axis, keepdims=True)
    return (share * hit,)


vjp_rule("max")(_extremum_vjp)
vjp_rule("min")(_extremum_vjp)


def prod_others(x, axis):
    """prod_{j != i} x_j over the reduced axes, for every i (exclusive scans from
    both ends, so exact where x has zeros); shaped like x."""
    axes = tuple(range(x.ndim)) if axis is None else axis
    rest = tuple(a for a in range(x.ndim) if a not in axes)
    order = rest + axes
    moved = cnp.permute_dims(x, order)
    lead = tuple(x.shape[a] for a in rest)
    n = int(np.prod([x.shape[a] for a in axes]))
    flat = cnp.reshape(moved, lead + (n,))
    left = cnp.prefix_product(flat, -1, exclusive=True)
    right = cnp.flip(cnp.prefix_product(cnp.flip(flat, -1), -1, exclusive=True), -1)
    others = cnp.reshape(left * right, tuple(moved.shape))
    return cnp.permute_dims(others, tuple(int(i) for i in np.argsort(order)))


@vjp_rule("prod")
def prod_vjp(z, g, x, axis, keepdims):
    """z = prod(x, axis);  dx_i = g * prod_{j != i} x_j"""
    return (expand_reduced(g, x.shape, axis, keepdims) * prod_others(x, axis),)


@vjp_rule("cumsum")
def cumsum_vjp(z, g, x, axis, reverse):
    """z = cumsum(x, axis);  dx = reverse cumsum of g"""
    return (ops.cumsum(g, axis=axis, reverse=not reverse),)


@vjp_rule("logsumexp")
def logsumexp_vjp(z, g, x, axis, keepdims):
    """z = log(sum(exp(x), axis));  dx = g * exp(x - z)"""
    zz = expand_reduced(z, x.shape, axis, keepdims)
    return (expand_reduced(g, x.shape, axis, keepdims) * cnp.exp(x - zz),)


@vjp_rule("softmax")
def softmax_vjp(z, g, x, axis):
    """z = softmax(x);  dx = z * (g - sum(g * z, axis))"""
    return (z * (g - cnp.sum(g * z, axis=axis, keepdims=True)),)


@vjp_rule("log_softmax")
def log_softmax_vjp(z, g, x, axis):
    """z = log_softmax(x);  dx = g - exp(z) * sum(g, axis)"""
    return (g - cnp.exp(z) * cnp.sum(g, axis=axis, keepdims=True),)


# -- shapes -------------------------------------------------------------------------
@vjp_rule("reshape")
def reshape_vjp(z, g, x, shape):
    """z = reshape(x);  dx = reshape(g, x.shape)"""
    return (cnp.reshape(g, x.shape),)


@vjp_rule("permute_dims")
def permute_dims_vjp(z, g, x, axes):
    """z = permute(x, axes);  dx = permute(g, inverse(axes))"""
    return (cnp.permute_dims(g, tuple(int(i) for i in np.argsort(axes))),)


@vjp_rule("expand_dims")
def expand_dims_vjp(z, g, x, axis):
    """z = expand_dims(x, axis);  dx = squeeze(g, axis)"""
    return (cnp.squeeze(g, axis),)


@vjp_rule("squeeze")
def squeeze_vjp(z, g, x, axis):
    """z = squeeze(x, axis);  dx = reshape(g, x.shape)"""
    return (cnp.reshape(g, x.shape),)


@vjp_rule("broadcast_to")
def broadcast_to_vjp(z, g, x, shape):
    """z = broadcast_to(x, shape);  dx = collapse_sum_to(g, x.shape)"""
    return (g,)


@vjp_rule("collapse_sum_to")
def collapse_sum_to_vjp(z, g, x, shape):
    """z = collapse_sum_to(x, shape);  dx = broadcast_to(g, x.shape)"""
    return (cnp.broadcast_to(g, x.shape),)


@vjp_rule("concatenate")
def concatenate_vjp(z, g, *xs, axis):
    """z = concatenate(xs, axis);  dxs = split(g) at the operands' boundaries"""
    bounds = tuple(np.cumsum([x.shape[axis] for x in xs])[:-1].tolist())
    return tuple(ops.split(g, indices_or_sections=bounds, axis=axis))


@vjp_rule("split")
def split_vjp(z, g, x, indices_or_sections, axis):
    """zs = split(x);  dx = concatenate(gs, axis)  (g holds zeros for unused parts)"""
    return (ops.concatenate(*g, axis=axis),)


@vjp_rule("flip")
def flip_vjp(z, g, x, axis):
    """z = flip(x, axis);  dx = flip(g, axis)"""
    return (cnp.flip(g, axis),)


@vjp_rule("index")
def index_vjp(z, g, x, *arrays, key):
    """z = x[key];  dx = zeros_like(x).at[key].add(g)  (repeated indices accumulate)"""
    return (ops.index_add(cnp.zeros_like(x), g, *arrays, key=key),) + (None,) * len(arrays)


@vjp_rule("index_add")
def index_add_vjp(z, g, base, value, *arrays, key):
    """z = base.at[key].add(v);  dbase = g;  dv = g[key]"""
    return (g, ops.index(g, *arrays, key=key)) + (None,) * len(arrays)


# -- linear algebra -----------------------------------------------------------------
@vjp_rule("matmul")
def matmul_vjp(z, g, a, b):
    """z = a @ b;  da = g @ b^T;  db = a^T @ g  (1-D operands as row/column matrices)"""
    a2 = cnp.expand_dims(a, 0) if a.ndim == 1 else a
    b2 = cnp.expand_dims(b, -1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = cnp.expand_dims(g2, -2 if b.ndim > 1 else -1)
    if b.ndim == 1:
        g2 = cnp.expand_dims(g2, -1)
    da = cnp.matmul(g2, cnp.swapaxes(b2, -1, -2))
    db = cnp.matmul(cnp.swapaxes(a2, -1, -2), g2)
    if a.ndim == 1:
        da = cnp.squeeze(da, -2)
    if b.ndim == 1:
        db = cnp.squeeze(db, -1)
    return da, db
