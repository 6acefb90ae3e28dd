"""Rules of ``ops/matrix_equations.py``: ``sqrtm``, ``solve_sylvester``, ``solve_banded``,
each VJP and JVP side by side, written with the ops (so they differentiate again: the
derivatives of ``sqrtm`` and ``solve_sylvester`` are Sylvester solves, those of
``solve_banded`` banded solves). Complex operands follow JAX's convention: the VJP is the
transpose of the derivative, never conjugated (all three are holomorphic); a real operand
of ``sqrtm`` (whose result is complex) receives the real part, as the passes cast a
cotangent to its operand's dtype. Their batching rules are here too.
"""

from __future__ import annotations

from .. import ops
from .batching import CannotBatch, align, batching_rule, lane_ndim
from .common import swap_last
from .registry import jvp_rule, vjp_rule


# -- sqrtm ----------------------------------------------------------------------------------
@vjp_rule(ops.sqrtm)
def sqrtm_vjp(z, g, a):
    """S = sqrtm(A): S dS + dS S = dA;  the transpose of dA -> dS:
    dA = Y with S^T Y + Y S^T = G"""
    st = swap_last(z)
    return (ops.solve_sylvester(st, st, g),)


@jvp_rule(ops.sqrtm)
def sqrtm_jvp(z, a):
    """S = sqrtm(A);  dS solves S dS + dS S = dA"""
    return (lambda t: ops.solve_sylvester(z, z, t),)


# -- solve_sylvester ------------------------------------------------------------------------
@vjp_rule(ops.solve_sylvester)
def solve_sylvester_vjp(z, g, a, b, q):
    """X: A X + X B = Q;  A dX + dX B = dQ - dA X - X dB;  with Y solving the adjoint
    equation A^T Y + Y B^T = G:  dQ = Y,  dA = -Y X^T,  dB = -X^T Y"""
    y = ops.solve_sylvester(swap_last(a), swap_last(b), g)
    return -(y @ swap_last(z)), -(swap_last(z) @ y), y


@jvp_rule(ops.solve_sylvester)
def solve_sylvester_jvp(z, a, b, q):
    """X: A X + X B = Q;  dX solves A dX + dX B = dQ - dA X - X dB"""
    return ((lambda t: ops.solve_sylvester(a, b, -(t @ z))),
            (lambda t: ops.solve_sylvester(a, b, -(z @ t))),
            (lambda t: ops.solve_sylvester(a, b, t)))


@batching_rule(ops.sqrtm, ops.solve_sylvester)
def stacked_operands_batch(ctx, args, batched, **attrs):
    """Stacks of matrices: the batched operands' stack axes aligned to the largest lane
    rank, then the op broadcasts each lane's stacks as it would alone."""
    rank = max(lane_ndim(x, bx) for x, bx in zip(args, batched))
    return ctx.op(*[align(x, bx, rank) for x, bx in zip(args, batched)], **attrs), True


# -- solve_banded ---------------------------------------------------------------------------
def _shift(v, s: int):
    """w[j] = v[j + s] along the first axis, 0 where j + s is outside v."""
    n = v.shape[0]
    if s == 0:
        return v
    if abs(s) >= n:
        return ops.zeros_like(v)
    if s > 0:
        return ops.concatenate(v[s:], ops.zeros_like(v[:s]), axis=0)
    return ops.concatenate(ops.zeros_like(v[s:]), v[:n + s], axis=0)


def _column(row, like):
    """A row of ab as a column against a (n, k) right-hand side."""
    return row if like.ndim == 1 else ops.expand_dims(row, -1)


def _banded_transpose(ab, lower: int, upper: int):
    """The banded storage of A^T ((upper, lower) diagonals): row r of it is row
    lower + upper - r of ab, shifted by r - lower (A^T[i, j] = A[j, i])."""
    rows = [ops.expand_dims(_shift(ab[lower + upper - r], r - lower), 0)
            for r in range(lower + upper + 1)]
    return ops.concatenate(*rows, axis=0)


def _banded_times(ab, x, upper: int):
    """A x from A's banded storage: (A x)[i] = sum_r ab[r, j] x[j], j = i - (r - upper)."""
    total = None
    for r in range(ab.shape[0]):
        term = _shift(_column(ab[r], x) * x, upper - r)
        total = term if total is None else total + term
    return total


@vjp_rule(ops.solve_banded)
def solve_banded_vjp(z, g, ab, b, lower, upper):
    """x = A^-1 b;  db = A^-T g (a banded solve with A^T's storage);  dA = -db x^T on
    the band:  d ab[r, j] = -sum_k db[j + r - upper, k] x[j, k]  (0 in the corners of ab
    that no A[i, j] maps to: they are never read)"""
    gb = ops.solve_banded(_banded_transpose(ab, lower, upper), g, upper, lower)
    rows = []
    for r in range(lower + upper + 1):
        outer = _shift(gb, r - upper) * z
        rows.append(ops.expand_dims(outer if z.ndim == 1 else ops.sum(outer, axis=-1), 0))
    return -ops.concatenate(*rows, axis=0), gb


@jvp_rule(ops.solve_banded)
def solve_banded_jvp(z, ab, b, lower, upper):
    """x = A^-1 b;  dx = A^-1 (db - dA x), dA x from dA's banded storage"""
    return ((lambda t: -ops.solve_banded(ab, _banded_times(t, z, upper), lower, upper)),
            (lambda t: ops.solve_banded(ab, t, lower, upper)))


@batching_rule(ops.solve_banded)
def solve_banded_batch(ctx, args, batched, lower, upper):
    """One banded matrix and a right-hand side per lane: the lanes are more columns of
    one (n, lanes * k) right-hand side. A matrix per lane is left to the loop over
    lanes (SciPy solves one banded matrix at a time)."""
    ab, b = args
    if batched[0]:
        raise CannotBatch("solve_banded: a banded matrix per lane")
    lanes, n = b.shape[0], b.shape[1]
    columns = ops.reshape(ops.permute_dims(b, (1, 0) + tuple(range(2, b.ndim))), (n, -1))
    x = ops.solve_banded(ab, columns, lower, upper)
    x = ops.reshape(x, (n, lanes) + tuple(b.shape[2:]))
    return ops.permute_dims(x, (1, 0) + tuple(range(2, b.ndim))), True
