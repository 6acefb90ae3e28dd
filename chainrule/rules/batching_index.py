"""Batching rules of indexing (``index``) and the scatters (``index_add``,
``index_set``, ``index_multiply``, ``index_min``, ``index_max``): NumPy's
indexing rules decide where the lanes' axes land.

With only the array batched, a full slice in front of the key indexes every
lane alike. With batched index arrays, each lane must read (or write) its own
array with its own indices: a ``lanes`` index array ``arange(B)`` is put next
to the first index array of the key, for the array's batch axis moved there,
so the advanced indices stay together (or apart) as they were and the result
keeps each lane's layout. Where NumPy puts the advanced axes (in place of the
first index array when the index arrays are adjacent, else first) tells where
the batch axis lands; it is then moved to the front.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..ir.indexing import ArrayIndex, Slice
from ..ir.types import TensorType
from ..ops.indexing import indexed_shape
from .batching import CannotBatch, align, batching_rule, lane_ndim, materialize, moveaxis

FULL = Slice(None, None, None)


class _Key:
    """Where a lane's key puts its advanced indices (index arrays, and the ints of a
    key that has index arrays, which NumPy then treats as 0-d index arrays)."""

    def __init__(self, key: tuple):
        has_arrays = any(type(k) is ArrayIndex for k in key)
        self.adv = [p for p, k in enumerate(key)
                    if type(k) is ArrayIndex or (has_arrays and type(k) is int)]
        self.contiguous = self.adv == list(range(self.adv[0], self.adv[-1] + 1)) if self.adv \
            else True
        first = self.adv[0] if self.adv else 0
        # output axes before the advanced block (slices and new axes before it), and the
        # array axes the key consumes before its first advanced index
        self.basic_before = sum(1 for k in key[:first] if k is None or type(k) is Slice)
        self.consumed_before = sum(1 for k in key[:first] if k is not None)


def _lane_types(idx, batched) -> list[TensorType]:
    return [TensorType(tuple(i.shape[1:]) if b else tuple(i.shape), i.dtype)
            for i, b in zip(idx, batched)]


def _adv_rank(key: tuple, idx, batched) -> int:
    """The rank of the advanced indices' broadcast shape in one lane."""
    ranks = [lane_ndim(i, b) for i, b in zip(idx, batched)]
    return max([ranks[k.position] for k in key if type(k) is ArrayIndex], default=0)


def _lanes_index(size: int, rank: int) -> np.ndarray:
    """``arange(B)`` shaped to broadcast against index arrays of lane rank ``rank``."""
    if isinstance(size, str):  # B symbolic (polymorphic_shapes): counted at run time
        from .. import ops

        count = ops.ones(shape=(size,), dtype="i64")
        return ops.reshape(ops.subtract(ops.cumsum(count, axis=0), 1), (size,) + (1,) * rank)
    return np.arange(size, dtype=np.int64).reshape((size,) + (1,) * rank)


def _key_with_lanes(info: _Key, key: tuple, position: int) -> tuple:
    """``key`` with the lanes' index array (operand ``position``) before its first
    advanced index: the array's batch axis is moved to the axis that entry consumes."""
    first = info.adv[0]
    return key[:first] + (ArrayIndex(position),) + key[first:]


@batching_rule(ops.index)
def index_batch(ctx, args, batched, key):
    """x[key] in each lane (see the module docstring)."""
    x, *idx = args
    bx, *bi = batched
    info = _Key(key)
    if not any(bi):  # one key for every lane: a full slice over the batch axis
        out = ops.index(x, *idx, key=(FULL,) + key)
        if info.adv and not info.contiguous:  # the advanced axes came first
            out = moveaxis(out, _adv_rank(key, idx, bi), 0)
        return out, True
    rank = max(lane_ndim(i, b) for i, b in zip(idx, bi))
    arrays = [align(i, b, rank) for i, b in zip(idx, bi)]
    if bx:
        x = moveaxis(x, 0, info.consumed_before)
        arrays.append(_lanes_index(ctx.size, rank))
        key = _key_with_lanes(info, key, len(arrays) - 1)
    out = ops.index(x, *arrays, key=key)
    return moveaxis(out, info.basic_before if info.contiguous else 0, 0), True


@batching_rule(ops.index_add, ops.index_set, ops.index_multiply, ops.index_min, ops.index_max)
def scatter_batch(ctx, args, batched, key):
    """base.at[key].<op>(v) in each lane: every lane updates its own copy of the base
    (broadcast when only the values or indices are batched)."""
    base, value, *idx = args
    bb, bv, *bi = batched
    info = _Key(key)
    lane_base = TensorType(tuple(base.shape[1:]) if bb else tuple(base.shape), base.dtype)
    target = indexed_shape(ctx.op.name, lane_base, key, _lane_types(idx, bi))
    base = materialize(ctx, base, bb)
    if not any(bi):
        arrays, new_key = list(idx), (FULL,) + key
        at = _adv_rank(key, idx, bi) if info.adv and not info.contiguous else 0
        moved = 0
    else:
        rank = max(lane_ndim(i, b) for i, b in zip(idx, bi))
        arrays = [align(i, b, rank) for i, b in zip(idx, bi)]
        moved = info.consumed_before
        base = moveaxis(base, 0, moved)
        arrays.append(_lanes_index(ctx.size, rank))
        new_key = _key_with_lanes(info, key, len(arrays) - 1)
        at = info.basic_before if info.contiguous else 0
    if bv or at:  # the values' lanes must meet the batch axis where the indexing puts it
        if not bv:
            value = ops.expand_dims(value, axis=0)  # one lane, broadcast to all
        value = moveaxis(align(value, True, len(target)), 0, at)
    if any(not isinstance(d, int) for d in target):
        raise CannotBatch(f"{ctx.op.name}: symbolic indexed shape {target}")
    out = ctx.op(base, value, *arrays, key=new_key)
    return moveaxis(out, moved, 0), True
