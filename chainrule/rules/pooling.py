"""Rules of the pooling family (``ops/pooling.py``): derivatives and batching.

Max pooling reads ``x`` at the positions ``i(x)`` of its windows' maxima, piecewise
constant in ``x``: ``max_pool_select(x, v) = v[i(x)]`` and ``max_pool_scatter(x, g)`` (``g``
added at ``i(x)``) are linear in their second operand and transposes of each other, and
``x`` has a zero derivative through ``i``. Average pooling is linear, its transpose
spreading each window's share back. Pooling acts on trailing axes, so a vmap axis in
front is one more leading axis.
"""

from __future__ import annotations

from .. import ops
from .batching import batching_rule, materialize
from .common import linear_self
from .registry import jvp_rule, vjp_rule


def _max_attrs(kernel, stride, padding, dilation, ceil_mode) -> dict:
    return {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation,
            "ceil_mode": ceil_mode}


@vjp_rule(ops.max_pool)
def max_pool_vjp(z, g, x, **attrs):
    """z = x[i(x)];  dx = scatter of g to the positions i(x) (the first maximum of each
    window)"""
    return (ops.max_pool_scatter(x, g, **_max_attrs(**attrs)),)


@jvp_rule(ops.max_pool)
def max_pool_jvp(z, x, **attrs):
    """z = x[i(x)];  dz = dx[i(x)]"""
    return (lambda t: ops.max_pool_select(x, t, **_max_attrs(**attrs)),)


@vjp_rule(ops.max_pool_select)
def max_pool_select_vjp(z, g, x, v, **attrs):
    """z = v[i(x)];  dv = scatter of g to i(x);  dx = 0 (i is piecewise constant)"""
    return None, ops.max_pool_scatter(x, g, **_max_attrs(**attrs))


@jvp_rule(ops.max_pool_select)
def max_pool_select_jvp(z, x, v, **attrs):
    """z = v[i(x)];  dz = dv[i(x)]  (no term in dx)"""
    return None, (lambda t: ops.max_pool_select(x, t, **_max_attrs(**attrs)))


@vjp_rule(ops.max_pool_scatter)
def max_pool_scatter_vjp(z, u, x, g, **attrs):
    """z = scatter of g to i(x);  dg = u[i(x)];  dx = 0"""
    return None, ops.max_pool_select(x, u, **_max_attrs(**attrs))


@jvp_rule(ops.max_pool_scatter)
def max_pool_scatter_jvp(z, x, g, **attrs):
    """z = scatter of g to i(x);  dz = scatter of dg to i(x)  (no term in dx)"""
    return None, (lambda t: ops.max_pool_scatter(x, t, **_max_attrs(**attrs)))


@vjp_rule(ops.avg_pool)
def avg_pool_vjp(z, g, x, **attrs):
    """z = A x (window means);  dx = A^T g = avg_pool_transpose(g)"""
    n = len(attrs["kernel"])
    return (ops.avg_pool_transpose(g, shape=tuple(x.shape[x.ndim - n:]), **attrs),)


@vjp_rule(ops.avg_pool_transpose)
def avg_pool_transpose_vjp(z, u, g, shape, **attrs):
    """z = A^T g;  dg = A u = avg_pool(u)"""
    return (ops.avg_pool(u, **attrs),)


jvp_rule(ops.avg_pool)(linear_self(ops.avg_pool))
jvp_rule(ops.avg_pool_transpose)(linear_self(ops.avg_pool_transpose))


@batching_rule(ops.max_pool, ops.avg_pool, ops.avg_pool_transpose)
def pool_batch(ctx, args, batched, **attrs):
    """Pool each lane: the vmap axis is one more leading axis."""
    (x,) = args
    return ctx.op(x, **attrs), True


@batching_rule(ops.max_pool_select, ops.max_pool_scatter)
def max_pool_pair_batch(ctx, args, batched, **attrs):
    """Both operands batched (an unbatched one repeated for every lane), then as one
    array with one more leading axis."""
    x, v = (materialize(ctx, a, b) for a, b in zip(args, batched))
    return ctx.op(x, v, **attrs), True
