"""Linear algebra, NumPy's ``numpy.linalg``: ``import chainrule.numpy as cnp`` then
``cnp.linalg.solve(a, b)``.

Assembled like ``chainrule.numpy``: ops that declare ``"linalg.<name>"`` in
their ``namespace`` appear here (``adjugate``), next to the functions written
below with NumPy 2's signatures, stacks of matrices (leading axes) included.
The decompositions and solvers are ops (``chainrule/ops/linalg.py``,
``decompositions.py``) with derivative rules; ``inv``, ``norm``, ``pinv``-based
``lstsq``, ``matrix_power``, ``multi_dot``, ``cond``, ``tensorsolve`` and
``tensorinv`` are composites of them.

Differences from NumPy, all from types being known before a program runs:
``eig`` / ``eigvals`` always return complex arrays (as JAX does); on traced
values ``lstsq``'s residuals are computed whenever M > N, NaN where the rank is
below N (where NumPy returns an empty array). Derivatives: eigenvectors and
singular vectors at repeated values (see ``chainrule/rules/decompositions.py``);
``svd(full_matrices=True)`` of a non-square matrix and ``qr`` of a wide one
have no derivative (a clear error); the 2-norm's derivative at 0 is NaN (as
JAX's).

>>> import numpy as np
>>> import chainrule as cr
>>> float(cr.grad(lambda a: slogdet(a)[1])(np.diag([2.0, 4.0]))[1, 1])
0.25
"""

from __future__ import annotations

from collections import namedtuple
from math import prod

import numpy as _np

from .. import ops as _ops
from ..ir.op import is_dispatched as _is_dispatched
from ..ops.linalg import LinAlgError
from . import _linalg
from ._assemble import assemble as _assemble
from ._core import _shape, exposes
from ._linalg import LinalgArgumentError

EigResult = namedtuple("EigResult", "eigenvalues eigenvectors")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
QRResult = namedtuple("QRResult", "Q R")
SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
SVDResult = namedtuple("SVDResult", "U S Vh")


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype) if hasattr(x, "dtype") else _np.asarray(x).dtype


def _ndim(x) -> int:
    return len(_shape(x))


def _float(x):
    """x in a float dtype (integers and bools as float64), as NumPy's linalg computes."""
    if _dtype(x).kind in "fc":
        return x
    return _ops.astype(x, _np.float64) if _is_dispatched(x) else _np.asarray(x, _np.float64)


def _mT(x):
    n = _ndim(x)
    return _ops.permute_dims(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _mH(x):
    return _ops.conj(_mT(x)) if _dtype(x).kind == "c" else _mT(x)


def _eye(x):
    dtype = _dtype(x) if _dtype(x).kind in "fc" else _np.dtype(_np.float64)
    return _np.eye(_shape(x)[-1], dtype=dtype)


def _need_square(name, x):
    s = _shape(x)
    if len(s) < 2 or s[-1] != s[-2]:
        raise LinAlgError(f"{name}: needs square matrices (..., n, n), got shape {s}")


# -- solvers and inverses ------------------------------------------------------------------
@exposes(_ops.solve)
def solve(a, b):
    """x with a @ x = b; b is one vector (M,) or a stack of matrices (..., M, K) (NumPy 2)."""
    if _ndim(b) == 1:
        return _ops.solve(a, _ops.reshape(b, (-1, 1)))[..., 0]
    return _ops.solve(a, b)


def inv(a):
    """a^-1, as solve(a, I)."""
    _need_square("inv", a)
    return _ops.solve(a, _eye(a))


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring; n = 0 gives I, n < 0 powers of inv(a)."""
    if not isinstance(n, (int, _np.integer)) or isinstance(n, bool):
        raise TypeError("exponent must be an integer")
    _need_square("matrix_power", a)
    if not _is_dispatched(a):
        return _np.linalg.matrix_power(a, n)
    if n == 0:
        return _ops.broadcast_to(_np.eye(_shape(a)[-1], dtype=_dtype(a)), _shape(a))
    base = inv(a) if n < 0 else a
    n = abs(int(n))
    result = None
    while n:
        if n & 1:
            result = base if result is None else _ops.matmul(result, base)
        n >>= 1
        if n:
            base = _ops.matmul(base, base)
    return result


@exposes(_ops.det)
def det(a):
    """The determinant (its derivative is the adjugate: exact at singular matrices too)."""
    return _ops.det(a)


@exposes(_ops.slogdet)
def slogdet(a):
    """(sign, log|det a|), a named tuple like NumPy's."""
    return SlogdetResult(*_ops.slogdet(a))


@exposes(_ops.cholesky)
def cholesky(a, /, *, upper=False):
    """The lower Cholesky factor L (a = L L^H), or U = L^H with upper=True; only the lower
    triangle of a is read."""
    lower = _ops.cholesky(a)
    return _mH(lower) if upper else lower


@exposes(_ops.qr)
def qr(a, mode="reduced"):
    """q, r with a = q r; mode 'reduced', 'complete' or 'r' (r alone)."""
    if mode == "r":
        return _ops.qr(a, "reduced")[1]
    if mode not in ("reduced", "complete"):
        raise LinalgArgumentError(f"qr: unrecognized mode {mode!r}; 'reduced', 'complete' "
                                  f"and 'r' are supported ('raw' is not)")
    return QRResult(*_ops.qr(a, mode))


def _uplo(uplo) -> bool:
    if uplo not in ("L", "U"):
        raise LinalgArgumentError("UPLO argument must be 'L' or 'U'")
    return uplo == "L"


@exposes(_ops.eigh)
def eigh(a, UPLO="L"):  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors of a symmetric/Hermitian matrix whose
    UPLO triangle is read."""
    return EighResult(*_ops.eigh(a, _uplo(UPLO)))


@exposes(_ops.eigvalsh)
def eigvalsh(a, UPLO="L"):  # noqa: N803
    """Eigenvalues (ascending) of a symmetric/Hermitian matrix."""
    return _ops.eigvalsh(a, _uplo(UPLO))


@exposes(_ops.eig)
def eig(a):
    """Eigenvalues and unit right eigenvectors (largest component real), complex."""
    return EigResult(*_ops.eig(a))


@exposes(_ops.eigvals)
def eigvals(a):
    """Eigenvalues of a general matrix, complex."""
    return _ops.eigvals(a)


def _hermitian_singular_values(a):
    return _np_flip_last(_sorted_abs(_ops.eigvalsh(a, True)))


def _sorted_abs(w):
    return _ops.sort(_ops.abs(w), axis=-1)


def _np_flip_last(x):
    return _ops.flip(x, -1)


@exposes(_ops.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """u, s, vh with a = u diag(s) vh (NumPy's default full_matrices=True; the
    derivative needs full_matrices=False or a square a); s alone without compute_uv."""
    if not compute_uv:
        return _hermitian_singular_values(a) if hermitian else _ops.svdvals(a)
    if not hermitian:
        return SVDResult(*_ops.svd(a, bool(full_matrices)))
    _need_square("svd", a)
    w, u = _ops.eigh(a, True)
    sign = _ops.sign(w)
    order = _ops.flip(_ops.argsort(_ops.abs(w), axis=-1), -1)
    take = lambda x, idx: _take_last(x, idx)  # noqa: E731
    s = take(_ops.abs(w), order)
    sign = take(sign, order)
    n = _shape(a)[-1]
    u = _take_columns(u, order, n)
    vh = _mH(u * _ops.expand_dims(_ops.astype(sign, _dtype(u)), -2))
    return SVDResult(u, s, vh)


def _take_last(x, idx):
    from ._sorting import take_along_axis

    return take_along_axis(x, idx, axis=-1)


def _take_columns(u, idx, n):
    from ._sorting import take_along_axis

    shape = _shape(idx)[:-1] + (n, n)
    return take_along_axis(u, _ops.broadcast_to(_ops.expand_dims(idx, -2), shape), axis=-1)


@exposes(_ops.svdvals)
def svdvals(x, /):
    """The singular values, descending."""
    return _ops.svdvals(x)


@exposes(_ops.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=_np._NoValue):
    """The pseudo-inverse; singular values <= rcond * the largest are dropped (NumPy 2's
    defaults: rcond 1e-15, or with rtol=None max(M, N) * eps)."""
    if rcond is None:
        if rtol is _np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(_shape(a)[-2:]) * _np.finfo(_float(_np.zeros((), _dtype(a))).dtype).eps
        else:
            rcond = rtol
    elif rtol is not _np._NoValue:
        raise LinalgArgumentError("`rtol` and `rcond` can't be both set.")
    if _np.ndim(rcond) != 0:
        raise LinalgArgumentError("pinv: rcond must be one number here (not an array)")
    return _ops.pinv(a, float(rcond), bool(hermitian))


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803
    """The number of singular values above tol (default: max(M, N) eps times the largest);
    an integer, not differentiable."""
    if not _is_dispatched(A):
        return _np.linalg.matrix_rank(A, tol, hermitian, rtol=rtol)
    if _ndim(A) < 2:
        nonzero = _ops.sum(_ops.astype(_ops.not_equal(A, 0), _np.int64))
        return _ops.astype(_ops.greater(nonzero, 0), _np.int64)
    s = (_hermitian_singular_values(A) if hermitian else _ops.svdvals(A))
    if tol is None:
        if rtol is None:
            rtol = max(_shape(A)[-2:]) * _np.finfo(_dtype(s)).eps
        tol = _ops.max(s, axis=-1, keepdims=True) * _np.expand_dims(_np.asarray(rtol), -1)
    else:
        tol = _np.expand_dims(_np.asarray(tol), -1)
    return _ops.sum(_ops.astype(_ops.greater(s, tol), _np.int64), axis=-1)


def lstsq(a, b, rcond=None):
    """(x, residuals, rank, s): the least-squares solution x = pinv(a) b (singular values
    <= rcond * the largest dropped; default max(M, N) eps), the squared residual norms
    (when M > N), the rank and the singular values; x is differentiable."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.linalg.lstsq(a, b, rcond=rcond)
    if _ndim(a) != 2:
        raise LinAlgError(f"lstsq: a must be 2-D, got shape {_shape(a)}")
    vector = _ndim(b) == 1
    m, n = _shape(a)
    if _shape(b)[0] != m:
        raise LinAlgError(f"lstsq: incompatible dimensions: a {_shape(a)}, b {_shape(b)}")
    a, b = _float(a), _float(b)
    dtype = _np.result_type(_dtype(a), _dtype(b))
    if rcond is None:
        rcond = _np.finfo(dtype).eps * max(m, n)
    bm = _ops.reshape(b, (-1, 1)) if vector else b
    x = _ops.matmul(_ops.pinv(a, float(rcond), False), bm)
    s = _ops.svdvals(a)
    if min(m, n):  # int32, as NumPy's (LAPACK's) rank
        rank = _ops.astype(_ops.sum(_ops.astype(_ops.greater(s, _ops.max(s) * rcond),
                                                _np.int64)), _np.int32)
    else:
        rank = _np.int32(0)
    if m > n:
        r = _ops.subtract(bm, _ops.matmul(a, x))
        sq = _ops.real(r * _ops.conj(r)) if _dtype(r).kind == "c" else r * r
        residuals = _ops.where(_ops.less(rank, n), _np.nan, _ops.sum(sq, axis=0))
    else:
        residuals = _np.zeros((0,), _np.empty(0, dtype).real.dtype)
    return (x[:, 0] if vector else x), residuals, rank, s


def multi_dot(arrays, *, out=None):
    """The product of several matrices, in the order with the fewest multiplications
    (first and last may be vectors)."""
    if out is not None:
        raise LinalgArgumentError("multi_dot: out= is not supported; use the result")
    arrays = list(arrays)
    if len(arrays) < 2:
        raise LinalgArgumentError("Expecting at least two arrays.")
    if not any(_is_dispatched(x) for x in arrays):
        return _np.linalg.multi_dot(arrays)
    if len(arrays) == 2:
        return _linalg.dot(arrays[0], arrays[1])
    first_vector, last_vector = _ndim(arrays[0]) == 1, _ndim(arrays[-1]) == 1
    if first_vector:
        arrays[0] = _ops.reshape(arrays[0], (1, -1))
    if last_vector:
        arrays[-1] = _ops.reshape(arrays[-1], (-1, 1))
    for x in arrays:
        if _ndim(x) != 2:
            raise LinAlgError(f"multi_dot: {_ndim(x)}-dimensional array given; the arrays "
                              f"must be 2-D (the first and last may be 1-D)")
    dims = [_shape(x)[0] for x in arrays] + [_shape(arrays[-1])[1]]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _ops.matmul(product(i, k), product(k + 1, j))

    result = product(0, len(arrays) - 1)
    if first_vector and last_vector:
        return result[0, 0]
    if first_vector:
        return result[0]
    return result[:, 0] if last_vector else result


def _chain_order(dims):
    """The matrix-chain split points (dynamic programming, as NumPy's multi_dot)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) = b (a reshaped to a square matrix)."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.linalg.tensorsolve(a, b, axes)
    an = _ndim(a)
    if axes is not None:
        order = [k for k in range(an) if k not in [x % an for x in axes]] + [
            x % an for x in axes]
        a = _ops.permute_dims(a, tuple(order))
    old = _shape(a)[_ndim(b):]
    n = prod(old)
    if prod(_shape(a)) != n * n:
        raise LinAlgError("Input arrays must satisfy the requirement "
                          "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x = solve(_ops.reshape(a, (n, n)), _ops.reshape(b, (-1,)))
    return _ops.reshape(x, old)


def tensorinv(a, ind=2):
    """The inverse of a under tensordot(., ., ind): inv of a reshaped to a square matrix."""
    if not _is_dispatched(a):
        return _np.linalg.tensorinv(a, ind)
    if ind <= 0:
        raise LinalgArgumentError("Invalid ind argument.")
    shape = _shape(a)
    n = prod(shape[ind:])
    if prod(shape[:ind]) != n:
        raise LinAlgError(f"tensorinv: prod(a.shape[:{ind}]) must equal prod(a.shape[{ind}:]),"
                          f" got shape {shape}")
    return _ops.reshape(inv(_ops.reshape(a, (n, n))), shape[ind:] + shape[:ind])


def cond(x, p=None):
    """The condition number: s_max / s_min for p None, 2, -2; else norm(x, p) norm(inv(x), p)."""
    if not _is_dispatched(x):
        return _np.linalg.cond(x, p)
    if p is None or p == 2 or p == -2:
        s = _ops.svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    _need_square("cond", x)
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


from ._norms import matrix_norm, norm, vector_norm  # noqa: E402, F401  (they use the above)


# -- the array API's linalg functions ----------------------------------------------------------
def matmul(x1, x2, /):
    """x1 @ x2."""
    return _ops.matmul(x1, x2)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    if _ndim(x1) != 1 or _ndim(x2) != 1:
        raise LinalgArgumentError(f"linalg.outer: Input arrays must be one-dimensional, got "
                                  f"shapes {_shape(x1)} and {_shape(x2)}")
    return _linalg.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along axis."""
    if _shape(x1)[axis] != 3 or _shape(x2)[axis] != 3:
        raise LinalgArgumentError(f"Both input arrays must be (arrays of) 3-dimensional "
                                  f"vectors, but they are {_shape(x1)[axis]} and "
                                  f"{_shape(x2)[axis]} dimensional instead.")
    return _linalg.cross(x1, x2, axis=axis)


def tensordot(x1, x2, /, *, axes=2):
    return _linalg.tensordot(x1, x2, axes)


def trace(x, /, *, offset=0, dtype=None):
    """The traces of the last two axes' matrices."""
    return _linalg.trace(x, offset, -2, -1, dtype)


def diagonal(x, /, *, offset=0):
    """The diagonals of the last two axes' matrices."""
    return _linalg.diagonal(x, offset, -2, -1)


def vecdot(x1, x2, /, *, axis=-1):
    return _linalg.vecdot(x1, x2, axis=axis)


matrix_transpose = _linalg.matrix_transpose

# the functions written here (besides the ops that declare "linalg.<name>")
_OWN: list[str] = [
    "solve", "inv", "matrix_power", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh",
    "eig", "eigvals", "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "multi_dot",
    "tensorsolve", "tensorinv", "cond", "norm", "vector_norm", "matrix_norm", "matmul",
    "outer", "cross", "tensordot", "trace", "diagonal", "vecdot", "matrix_transpose",
]

__all__ = _assemble(globals(), "linalg.", _OWN)
