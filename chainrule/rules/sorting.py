"""Rules of ``ops/sorting.py``: each op's VJP and JVP side by side.

``argsort``, ``argpartition`` and ``searchsorted`` return integer indices and are
declared ``differentiable=False``, so they need no rules. ``sort`` is the gather
``x[perm]`` along its axis with ``perm = argsort(x)`` (stable: tied elements are
taken in their order), so its rules are the gather's (``rules/shape.py``):
written with ``index`` / ``index_add``, they differentiate again at every order.
The composites of ``chainrule.numpy`` that gather with these indices
(``partition``, ``median``, ``quantile``, ``unique`` with ``size=``) get their
derivatives from ``index`` directly.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..ir.indexing import ArrayIndex
from .registry import jvp_rule, vjp_rule


def along_axis_key(perm, shape, axis: int):
    """The index arrays and key of ``take_along_axis(x, perm, axis)`` for ``x`` of
    ``shape``: ``perm`` on ``axis``, an ``arange`` broadcast on every other axis."""
    arrays, key = [], []
    for i, n in enumerate(shape):
        if i == axis:
            arrays.append(perm)
        else:
            ix = [1] * len(shape)
            ix[i] = n
            arrays.append(np.arange(n).reshape(ix))
        key.append(ArrayIndex(i))
    return arrays, tuple(key)


@vjp_rule(ops.sort)
def sort_vjp(z, g, x, axis):
    """z = sort(x) = x[perm] along axis, perm = argsort(x) (stable);
    dx = zeros_like(x).at[perm].add(g)  (the cotangent scattered back through perm)"""
    arrays, key = along_axis_key(ops.argsort(x, axis=axis), x.shape, axis)
    return (ops.index_add(ops.zeros_like(x), g, *arrays, key=key),)


@jvp_rule(ops.sort)
def sort_jvp(z, x, axis):
    """z = sort(x) = x[perm] along axis, perm = argsort(x) (stable);  dz = dx[perm]"""
    arrays, key = along_axis_key(ops.argsort(x, axis=axis), x.shape, axis)
    return (lambda t: ops.index(t, *arrays, key=key),)
