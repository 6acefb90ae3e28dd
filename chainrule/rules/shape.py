"""Rules of the shape ops, indexing and matmul: VJP and JVP side by side. Every
shape op is linear, so its JVP applies the op itself to the tangent."""

from __future__ import annotations

import itertools

import numpy as np

from .. import ops
from ..ir import dims
from .common import linear_self, swap_last, zeros_as
from .registry import jvp_rule, vjp_rule

for _op in (ops.reshape, ops.permute_dims, ops.expand_dims, ops.squeeze, ops.broadcast_to,
            ops.collapse_sum_to, ops.flip):
    jvp_rule(_op)(linear_self(_op))


@vjp_rule(ops.reshape)
def reshape_vjp(z, g, x, shape):
    """z = reshape(x);  dx = reshape(g, x.shape)"""
    return (ops.reshape(g, x.shape),)


@vjp_rule(ops.permute_dims)
def permute_dims_vjp(z, g, x, axes):
    """z = permute(x, axes);  dx = permute(g, inverse(axes))"""
    return (ops.permute_dims(g, tuple(int(i) for i in np.argsort(axes))),)


@vjp_rule(ops.expand_dims)
def expand_dims_vjp(z, g, x, axis):
    """z = expand_dims(x, axis);  dx = squeeze(g, axis)"""
    return (ops.squeeze(g, axis),)


@vjp_rule(ops.squeeze)
def squeeze_vjp(z, g, x, axis):
    """z = squeeze(x, axis);  dx = reshape(g, x.shape)"""
    return (ops.reshape(g, x.shape),)


@vjp_rule(ops.broadcast_to)
def broadcast_to_vjp(z, g, x, shape):
    """z = broadcast_to(x, shape);  dx = collapse_sum_to(g, x.shape)  (done by the pass)"""
    return (g,)


@vjp_rule(ops.collapse_sum_to)
def collapse_sum_to_vjp(z, g, x, shape):
    """z = collapse_sum_to(x, shape);  dx = broadcast_to(g, x.shape)"""
    return (ops.broadcast_to(g, x.shape),)


@vjp_rule(ops.flip)
def flip_vjp(z, g, x, axis):
    """z = flip(x, axis);  dx = flip(g, axis)"""
    return (ops.flip(g, axis),)


@vjp_rule(ops.concatenate)
def concatenate_vjp(z, g, *xs, axis):
    """z = concatenate(xs, axis);  dxs = split(g) at the operands' boundaries"""
    bounds = tuple(itertools.accumulate([x.shape[axis] for x in xs[:-1]], dims.add))
    return tuple(ops.split(g, indices_or_sections=bounds, axis=axis))


@jvp_rule(ops.concatenate)
def concatenate_jvp(z, *xs, axis):
    """z = concatenate(xs);  dz = concatenate(dxs)  (zeros for constant parts)"""

    def part(i):
        def f(t):
            pieces = [t if j == i else zeros_as(x) for j, x in enumerate(xs)]
            return ops.concatenate(*pieces, axis=axis)

        return f

    return tuple(part(i) for i in range(len(xs)))


@vjp_rule(ops.split)
def split_vjp(z, g, x, indices_or_sections, axis):
    """zs = split(x);  dx = concatenate(gs, axis)  (g holds zeros for unused parts)"""
    return (ops.concatenate(*g, axis=axis),)


@jvp_rule(ops.split)
def split_jvp(z, x, indices_or_sections, axis):
    """zs = split(x);  dzs = split(dx)"""
    return (lambda t: ops.split(t, indices_or_sections=indices_or_sections, axis=axis),)


# -- indexing -------------------------------------------------------------------------
@vjp_rule(ops.index)
def index_vjp(z, g, x, *arrays, key):
    """z = x[key];  dx = zeros_like(x).at[key].add(g)  (repeated indices accumulate)"""
    return (ops.index_add(ops.zeros_like(x), g, *arrays, key=key),) + (None,) * len(arrays)


@jvp_rule(ops.index)
def index_jvp(z, x, *arrays, key):
    """z = x[key];  dz = dx[key]"""
    return (lambda t: ops.index(t, *arrays, key=key),) + (None,) * len(arrays)


@vjp_rule(ops.index_add)
def index_add_vjp(z, g, base, value, *arrays, key):
    """z = base.at[key].add(v);  dbase = g;  dv = g[key]"""
    return (g, ops.index(g, *arrays, key=key)) + (None,) * len(arrays)


@jvp_rule(ops.index_add)
def index_add_jvp(z, base, value, *arrays, key):
    """z = base.at[key].add(v);  dz = dbase.at[key].add(dv)"""
    return ((lambda t: t),
            (lambda t: ops.index_add(zeros_as(base), t, *arrays, key=key))
            ) + (None,) * len(arrays)


# -- linear algebra -------------------------------------------------------------------
@vjp_rule(ops.matmul)
def matmul_vjp(z, g, a, b):
    """z = a @ b;  da = g @ b^T;  db = a^T @ g  (1-D operands as row/column matrices)"""
    a2 = ops.expand_dims(a, 0) if a.ndim == 1 else a
    b2 = ops.expand_dims(b, -1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = ops.expand_dims(g2, -2 if b.ndim > 1 else -1)
    if b.ndim == 1:
        g2 = ops.expand_dims(g2, -1)
    da = ops.matmul(g2, swap_last(b2))
    db = ops.matmul(swap_last(a2), g2)
    if a.ndim == 1:
        da = ops.squeeze(da, -2)
    if b.ndim == 1:
        db = ops.squeeze(db, -1)
    return da, db


@jvp_rule(ops.matmul)
def matmul_jvp(z, a, b):
    """z = a @ b;  dz = da @ b + a @ db"""
    return (lambda t: ops.matmul(t, b)), (lambda t: ops.matmul(a, t))
