"""Batching rules of matmul and linear algebra. The linear algebra ops already work
on stacks of matrices (leading axes, broadcast between operands as NumPy does):
a batched operand is one more stack axis, put in front of the others, so an
unbatched operand with fewer stack axes still broadcasts against each lane.
"""

from __future__ import annotations

from .. import ops
from .batching import CannotBatch, align, batched_by_lanes, batching_rule, lane_ndim


@batching_rule(ops.matmul)
def matmul_batch(ctx, args, batched):
    """a @ b in each lane. A 1-D operand is made a matrix (a row for a, a column for
    b) and its axis removed again, as NumPy's matmul does; the batched operands'
    stack axes are aligned to the larger stack so the batch axis stays apart."""
    a, b = args
    ba, bb = batched
    ra, rb = lane_ndim(a, ba), lane_ndim(b, bb)
    if ra == 1 and rb == 2 and not bb:  # rows times one matrix: a single matrix product
        return ops.matmul(a, b), True
    if ra == 2 and rb == 1 and not ba:  # one matrix times a vector per lane: rows @ a^T
        return ops.matmul(b, ops.permute_dims(a, axes=(1, 0))), True
    if ba and not bb and ra >= 2 and rb == 2 and _static(a):
        return _rows_times(a, b), True
    if bb and not ba and ra == 2 and rb == 2 and _static(b):
        # one matrix times each lane's matrix: (b^T a^T)^T, the lanes' rows in one product
        bt = ops.permute_dims(b, axes=(0, 2, 1))
        out = _rows_times(bt, ops.permute_dims(a, axes=(1, 0)))
        return ops.permute_dims(out, axes=(0, 2, 1)), True
    if ra == 1:
        a = ops.expand_dims(a, axis=a.ndim - 1)
    if rb == 1:
        b = ops.expand_dims(b, axis=b.ndim)
    stack = max(ra, rb, 2)
    a, b = align(a, ba, stack), align(b, bb, stack)
    if ra >= 2 and rb >= 2 and a.shape[-1] == 1 and a.dtype == b.dtype and a.dtype.kind in "fc":
        # an outer product in each lane (the weight gradient of one example): a
        # broadcast product, which NumPy does far faster than a stack of k=1 products
        return ops.multiply(a, b), True
    out = ops.matmul(a, b)
    squeeze = ((out.ndim - 2,) if ra == 1 else ()) + ((out.ndim - 1,) if rb == 1 else ())
    return (ops.squeeze(out, axis=squeeze) if squeeze else out), True


def _static(x) -> bool:
    return all(isinstance(d, int) for d in x.shape)


def _rows_times(a, b):
    """A stack of matrices ``a`` times one matrix ``b`` as one matrix product of all
    their rows (NumPy's matmul would loop over the stack)."""
    n_rows = 1
    for d in a.shape[:-1]:
        n_rows *= d
    rows = ops.reshape(a, (n_rows, a.shape[-1]))
    return ops.reshape(ops.matmul(rows, b), (*a.shape[:-1], b.shape[-1]))


@batching_rule(ops.solve, ops.triangular_solve)
def stacked_pair_batch(ctx, args, batched, **attrs):
    """Two stacks of matrices: align the batched operands' stack axes, then the op
    broadcasts each lane's stacks as it would alone."""
    a, b = args
    rank = max(lane_ndim(a, batched[0]), lane_ndim(b, batched[1]))
    return ctx.op(align(a, batched[0], rank), align(b, batched[1], rank), **attrs), True


@batching_rule(ops.cholesky, ops.slogdet, ops.det, ops.adjugate, ops.eigh, ops.eigvalsh, ops.eig,
               ops.eigvals, ops.svd, ops.svdvals, ops.qr, ops.pinv, ops.expm)
def stacked_batch(ctx, args, batched, **attrs):
    """One stack of matrices: the batch axis is one more stack axis."""
    out = ctx.op(*args, **attrs)
    if isinstance(out, tuple):
        return out, (True,) * len(out)
    return out, True


@batching_rule(ops.mvn_solve)
def mvn_solve_batch(ctx, args, batched):
    """Rows of b solved against one matrix a: the lanes' rows are more rows. A matrix
    per lane is left to the loop over lanes."""
    a, b = args
    if batched[0]:
        raise CannotBatch("mvn_solve: a matrix per lane")
    n, d = b.shape[1:]
    rows = ops.reshape(b, (ctx.size * n, d))
    return ops.reshape(ops.mvn_solve(a, rows), (ctx.size, n, d)), True


batched_by_lanes(ops.mvn_logdet,
                 "one covariance matrix per call (its error is about that matrix)")
