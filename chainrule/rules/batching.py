"""Batching rules: one table ``BATCH`` keyed by the op object, for the ``vmap`` pass.

The pass keeps every batched value with its batch axis in front (axis 0), so a
rule sees each operand either unbatched (the value of one lane, shared by all)
or batched (shape ``(B, *lane_shape)``), and returns its result with the batch
axis in front as well. A rule is called only when at least one operand is
batched (or the op has effects: a draw differs in every lane):

    rule(ctx, args, batched, **attrs) -> (result, result_batched)

``args`` are values of the IR under construction (rules are written with ops,
as derivative rules are), or arrays for constant operands; ``batched`` says
which are batched; ``ctx.op`` is the
op, ``ctx.size`` the batch size, ``ctx.emit(op, *args, **attrs)`` emits an op
that has no operands (which would otherwise compute at once). A rule returns
``result_batched`` True for a batched result, or a tuple for a tuple result.

Most rules fall out of the op facts: an ``elementwise`` op batches by aligning
its batched operands' lane axes to the others (NumPy broadcasting does the
rest); reductions, scans, sorts, FFTs and softmaxes shift their axis
attributes past the batch axis; shape ops put the batch axis in front of their
shape. Indexing and scatters are in ``batching_index.py``, matmul and linear
algebra in ``batching_linalg.py``. A rule raises ``CannotBatch`` for a case it
does not handle (a batched sorted array in ``searchsorted``); an op without a
rule is batched by a loop over the lanes that the pass emits in the IR (never
a wrong answer, only a slower one).

>>> import numpy as np
>>> from chainrule import ops
>>> batching_rule_of(ops.tanh) is elementwise_batch, ops.sum in BATCH
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ops
from ..errors import ChainruleError
from ..ir.op import Op

BATCH: dict[Op, Callable] = {}
# ops batched by the loop over lanes on purpose, with the reason (the registry test
# requires every built-in op to have a rule, be elementwise, take no operands, or be here)
LANE_LOOP: dict[Op, str] = {}


class CannotBatch(Exception):  # noqa: N818 - a signal between a rule and the pass
    """Raised by a rule (or the pass) for a case it does not batch: the pass then
    emits a loop over the lanes instead. Never seen by users."""


def batching_rule(*targets: Op):
    """Decorator: the batching rule of the ops ``targets`` (an op declared in a layer
    above this one registers its rule there: the solvers' run-time check)."""
    for op in targets:
        if not isinstance(op, Op):
            raise ChainruleError(f"batching_rule takes ops (keys of BATCH), not {op!r}")

    def deco(fn):
        for op in targets:
            BATCH[op] = fn
        return fn

    return deco


def batched_by_lanes(op: Op, reason: str) -> None:
    """Declare that ``op`` has no batching rule: with a batched operand each lane runs
    it alone (a loop over the lanes in the IR), for ``reason``."""
    LANE_LOOP[op] = reason


def batching_rule_of(op: Op) -> Callable | None:
    """The rule that batches ``op``: its entry in ``BATCH``, else the elementwise
    rule for an op declared ``elementwise``, else None (the pass loops over lanes)."""
    rule = BATCH.get(op)
    if rule is None and op.elementwise:
        return elementwise_batch
    return rule


# -- helpers ------------------------------------------------------------------------------
def lane_ndim(x, batched: bool) -> int:
    """The rank of one lane of ``x``."""
    return x.ndim - 1 if batched else x.ndim


def align(x, batched: bool, rank: int):
    """A batched ``x`` with unit axes inserted after the batch axis so its lanes have
    rank ``rank``: it then broadcasts lane by lane against unbatched operands of
    rank <= ``rank`` (which NumPy aligns on the right, past the batch axis)."""
    r = lane_ndim(x, batched)
    if not batched or r >= rank:
        return x
    return ops.expand_dims(x, axis=tuple(range(1, 1 + rank - r)))


def moveaxis(x, source: int, destination: int):
    """``x`` with axis ``source`` moved to ``destination`` (a view)."""
    if source == destination:
        return x
    perm = list(range(x.ndim))
    perm.pop(source)
    perm.insert(destination, source)
    return ops.permute_dims(x, axes=tuple(perm))


def shift_axes(axis, x):
    """A normalized axis attribute (None or a tuple) of one lane, for the batched
    ``x``: every lane axis (None) or each axis past the batch axis."""
    if axis is None:
        return tuple(range(1, x.ndim))
    return tuple(a + 1 for a in axis)


def materialize(ctx, x, batched: bool):
    """``x`` batched: an unbatched operand broadcast to ``(B, *shape)`` (a view)."""
    if batched:
        return x
    return ctx.emit(ops.broadcast_to, x, shape=(ctx.size, *x.shape))  # emitted, not folded


# -- elementwise ops ----------------------------------------------------------------------
def elementwise_batch(ctx, args, batched, **attrs):
    """Each lane applies the op to its operands broadcast together: align the batched
    operands' lanes to the highest lane rank; NumPy's broadcasting does the rest."""
    rank = max(lane_ndim(a, b) for a, b in zip(args, batched))
    return ctx.op(*[align(a, b, rank) for a, b in zip(args, batched)], **attrs), True


@batching_rule(ops.stop_gradient)
def unary_batch(ctx, args, batched, **attrs):
    """An op applied to each element (or lane) alone: the batched array as it is."""
    return ctx.op(*args, **attrs), True


# -- reductions, scans and axis-wise ops ----------------------------------------------------
@batching_rule(ops.sum, ops.mean, ops.max, ops.min, ops.prod, ops.reduction.any,
               ops.reduction.all, ops.logsumexp)
def reduce_batch(ctx, args, batched, axis, keepdims):
    """Reduce each lane over its axes: the axes past the batch axis."""
    (x,) = args
    return ctx.op(x, axis=shift_axes(axis, x), keepdims=keepdims), True


@batching_rule(ops.softmax, ops.log_softmax)
def softmax_batch(ctx, args, batched, axis):
    """Normalize each lane over its axes."""
    (x,) = args
    return ctx.op(x, axis=shift_axes(axis, x)), True


@batching_rule(ops.argmax, ops.argmin)
def arg_reduce_batch(ctx, args, batched, axis, keepdims):
    """The index along one lane axis; with axis None, the flat index into each lane
    (its lanes flattened first)."""
    (x,) = args
    if axis is not None:
        return ctx.op(x, axis=axis + 1, keepdims=keepdims), True
    lane = tuple(x.shape[1:])
    flat = ops.reshape(x, (ctx.size, int(_prod(lane))))
    out = ctx.op(flat, axis=1, keepdims=False)
    if keepdims:
        out = ops.reshape(out, (ctx.size,) + (1,) * len(lane))
    return out, True


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@batching_rule(ops.cumsum)
def cumsum_batch(ctx, args, batched, axis, reverse):
    """The scan along the lane axis."""
    (x,) = args
    return ctx.op(x, axis=axis + 1, reverse=reverse), True


@batching_rule(ops.sort, ops.argsort)
def sort_batch(ctx, args, batched, axis):
    """Sort each lane along its axis."""
    (x,) = args
    return ctx.op(x, axis=axis + 1), True


@batching_rule(ops.argpartition)
def argpartition_batch(ctx, args, batched, kth, axis):
    """Partition each lane along its axis."""
    (x,) = args
    return ctx.op(x, kth=kth, axis=axis + 1), True


@batching_rule(ops.searchsorted)
def searchsorted_batch(ctx, args, batched, side):
    """Batched values, one sorted array: the values' lanes are just more values. A
    batched sorted array (one per lane) is left to the loop over lanes."""
    a, v = args
    if batched[0]:
        raise CannotBatch("searchsorted: a sorted array per lane")
    return ctx.op(a, v, side=side), True


# -- shape ops ------------------------------------------------------------------------------
@batching_rule(ops.reshape)
def reshape_batch(ctx, args, batched, shape):
    """Reshape each lane: with the batch axis in front, row-major order keeps lanes apart."""
    (x,) = args
    return ops.reshape(x, (ctx.size, *shape)), True


@batching_rule(ops.permute_dims)
def permute_dims_batch(ctx, args, batched, axes):
    """Permute each lane's axes; the batch axis stays in front."""
    (x,) = args
    return ops.permute_dims(x, axes=(0, *(a + 1 for a in axes))), True


@batching_rule(ops.expand_dims, ops.squeeze, ops.flip)
def axes_batch(ctx, args, batched, axis):
    """Insert, remove or reverse each lane's axes: the axes past the batch axis."""
    (x,) = args  # (expand_dims' axes are the result's: the batch axis stays in front too)
    return ctx.op(x, axis=tuple(a + 1 for a in axis)), True


@batching_rule(ops.broadcast_to)
def broadcast_to_batch(ctx, args, batched, shape):
    """Broadcast each lane: its lane axes aligned to the target's rank first."""
    (x,) = args
    return ops.broadcast_to(align(x, True, len(shape)), (ctx.size, *shape)), True


@batching_rule(ops.collapse_sum_to)
def collapse_sum_to_batch(ctx, args, batched, shape):
    """Sum each lane down to ``shape``: its extra leading lane axes first, then the
    axes ``shape`` keeps as 1 (collapse_sum_to on equal ranks)."""
    (x,) = args
    extra = lane_ndim(x, True) - len(shape)
    if extra > 0:
        summed = ops.sum(x, axis=tuple(range(1, 1 + extra)))
        # collapse_sum_to keeps x's dtype: a cast of the sum wraps around as summing in
        # x's dtype would (integers), and is exact for the dtypes sum keeps
        x = summed if summed.dtype == x.dtype else ops.astype(summed, dtype=x.dtype)
    return ops.collapse_sum_to(x, (ctx.size, *shape)), True


@batching_rule(ops.concatenate)
def concatenate_batch(ctx, args, batched, axis):
    """Join the lanes along their axis: every operand batched (unbatched ones broadcast)."""
    xs = [materialize(ctx, x, b) for x, b in zip(args, batched)]
    return ops.concatenate(*xs, axis=axis + 1), True


@batching_rule(ops.split)
def split_batch(ctx, args, batched, indices_or_sections, axis):
    """Split each lane along its axis: every part is batched."""
    (x,) = args
    parts = ops.split(x, indices_or_sections=indices_or_sections, axis=axis + 1)
    return parts, (True,) * len(parts)


@batching_rule(ops.zeros_like, ops.ones_like, ops.full_like)
def like_batch(ctx, args, batched, **attrs):
    """An array with the shape of each lane: the batched shape."""
    return ctx.op(*args, **attrs), True


# -- windows, transforms --------------------------------------------------------------------
@batching_rule(ops.reduction.correlate_valid)
def correlate_valid_batch(ctx, args, batched):
    """Batched x, shared window: a window of length 1 along the batch axis keeps the
    lanes apart. A window per lane is left to the loop over lanes."""
    x, w = args
    if batched[1]:
        raise CannotBatch("correlate_valid: a window per lane")
    return ops.reduction.correlate_valid(x, ops.expand_dims(w, axis=0)), True


@batching_rule(ops.fft.fft)
def fft_batch(ctx, args, batched, axes, inverse, norm):
    """Transform each lane over its axes."""
    (x,) = args
    return ctx.op(x, axes=tuple(a + 1 for a in axes), inverse=inverse, norm=norm), True


@batching_rule(ops.fft.rfft)
def rfft_batch(ctx, args, batched, axis, norm):
    """Transform each lane along its axis."""
    (x,) = args
    return ctx.op(x, axis=axis + 1, norm=norm), True


@batching_rule(ops.fft.irfft)
def irfft_batch(ctx, args, batched, n, axis, norm):
    """Transform each lane along its axis."""
    (x,) = args
    return ctx.op(x, n=n, axis=axis + 1, norm=norm), True


# -- randomness -------------------------------------------------------------------------------
@batching_rule(ops.random_draw)
def random_draw_batch(ctx, args, batched, method, shape, dtype, source, params):
    """Each lane draws on its own: one draw of the batched shape (the lanes are
    independent draws, as a loop would make them, in another order)."""
    return ctx.emit(ops.random_draw, method=method, shape=(ctx.size, *shape), dtype=dtype,
                    source=source, params=params), True


# The keyed draws are pure functions of one key: with an unbatched key every lane gets the
# same numbers, as in JAX, without a rule (the binding is copied); a key per lane runs each
# lane's draw on its own key.
for _op in (ops.random_bits, ops.random_normal, ops.random_uniform, ops.random_split,
            ops.random_fold_in):
    batched_by_lanes(_op, "a key per lane: each lane draws from its own key")


# -- the stacks of reverse-mode loops ---------------------------------------------------------
@batching_rule(ops.stack.STACK_EMPTY)
def stack_empty_batch(ctx, args, batched, elem):
    """A stack of batched values (stacks always hold batched values: every lane pushes
    the same number of times outside loops whose predicate is batched)."""
    return ctx.emit(ops.stack.STACK_EMPTY, elem=ctx.batched_type(elem)), True


@batching_rule(ops.stack.STACK_ALLOC)
def stack_alloc_batch(ctx, args, batched, elem, slot):
    """Rows of batched values; a trip count per lane is no single size: linked cells."""
    if batched[0]:
        return ctx.emit(ops.stack.STACK_EMPTY, elem=ctx.batched_type(elem)), True
    return ctx.emit(ops.stack.STACK_ALLOC, args[0], elem=ctx.batched_type(elem), slot=slot), True


@batching_rule(ops.stack.STACK_PUSH)
def stack_push_batch(ctx, args, batched, **attrs):
    """Push the value, broadcast to every lane (as atoms: an element that is an empty
    tuple is no empty array)."""
    s, x = args
    bt = ctx.batcher
    pushed = bt.unwrap(ctx.full(x, batched[1]))
    return bt.trace.emit_op(ops.stack.STACK_PUSH, [bt.unwrap(s), pushed], {}), True


@batching_rule(ops.stack.STACK_POP)
def stack_pop_batch(ctx, args, batched, **attrs):
    """The top (batched) and the rest."""
    (s,) = args
    top, rest = ops.stack.STACK_POP(s)
    return (top, rest), (ctx.full_bd(top), True)


@batching_rule(ops.stack.STACK_POP_OR_ZERO)
def stack_pop_or_zero_batch(ctx, args, batched, elem):
    """The top (batched; zeros of the batched type when the stack is the empty zero)
    and the rest."""
    (s,) = args
    top, rest = ctx.emit(ops.stack.STACK_POP_OR_ZERO, s, elem=ctx.batched_type(elem))
    return (top, rest), (ctx.full_bd(top), True)


@batching_rule(ops.stack.STACK_ADD)
def stack_add_batch(ctx, args, batched):
    """Element by element: the elements are batched arrays, added lane by lane."""
    a, b = args
    return ops.stack.STACK_ADD(a, b), True


@batching_rule(ops.stack_schedule.LOOP_CHECKPOINT)
def loop_checkpoint_batch(ctx, args, batched, snapshots):
    """The marker of a checkpointed loop is its carry's initial value: as batched as that
    value. A trip count per lane is left to the loop over lanes."""
    x, trips = args
    if batched[1]:
        raise CannotBatch("loop_checkpoint: a trip count per lane")
    return ctx.emit(ctx.op, x, trips, snapshots=snapshots), batched[0]


batched_by_lanes(ops.stack_schedule.REVOLVE_NEXT,
                 "a checkpoint schedule: integer scalars, one schedule per lane")


@batching_rule(ops.stack.STACK_NONEMPTY)
def stack_nonempty_batch(ctx, args, batched, **attrs):
    """Every lane pushed as many times: one answer for all."""
    (s,) = args
    return ops.stack.STACK_NONEMPTY(s), False
