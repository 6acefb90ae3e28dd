"""Linear algebra: ``matmul`` with NumPy semantics (1-D operands promoted and
their axis removed again; batch dimensions broadcast), and the solvers and
determinants of ``chainrule.numpy.linalg`` / ``chainrule.scipy.linalg``:
``solve``, ``triangular_solve``, ``cholesky``, ``slogdet``, ``det`` and
``adjugate``. The decompositions (eigh, svd, qr, eig, ...) are in
``decompositions.py``. Every op works on stacks of matrices (leading axes,
broadcast between operands as NumPy broadcasts them); integer operands are
computed in float64, float16 is refused as NumPy's linalg refuses it.

Ops that read one triangle of a matrix (``cholesky``, and ``eigh`` /
``eigvalsh`` in ``decompositions.py``) are functions of exactly that triangle,
as LAPACK is: their derivatives with respect to the other triangle are zero,
so finite differences of NumPy's functions agree with them on any input.

>>> import numpy as np
>>> matmul(np.ones((2, 3)), np.ones(3))
array([3., 3.])
>>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([[1.0], [2.0]]))
array([[0.5],
       [0.5]])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.types import DType, TensorType, TupleType
from .common import NOT_YET_ON_ARRAY_API, broadcast_shapes, define, promote, tensor_types

__all__ = ["matmul", "solve", "triangular_solve", "cholesky", "slogdet", "det", "adjugate",
           "LinAlgError"]


class LinAlgError(TypeInferenceError, np.linalg.LinAlgError):
    """A linear algebra function given operands of the wrong shape or kind (not square,
    mismatched, too few dimensions): a chainrule error that is also NumPy's
    ``LinAlgError`` (a ``ValueError``), so code catching NumPy's error catches it."""


def _matmul_type(types, attrs):
    a, b = tensor_types("matmul", types)
    if a.ndim == 0 or b.ndim == 0:
        raise TypeInferenceError(f"matmul: operands must have rank >= 1, got {a!r} and {b!r} "
                                 f"(use multiply for scalars)")
    a_shape = (1,) + a.shape if a.ndim == 1 else a.shape
    b_shape = b.shape + (1,) if b.ndim == 1 else b.shape
    if a_shape[-1] != b_shape[-2]:
        raise TypeInferenceError(
            f"matmul: inner dimensions differ: {a!r} @ {b!r} ({a_shape[-1]} vs {b_shape[-2]})")
    batch = broadcast_shapes("matmul", [TensorType(a_shape[:-2], a.dtype),
                                        TensorType(b_shape[:-2], b.dtype)])
    shape = batch + ((a_shape[-2],) if a.ndim > 1 else ()) + ((b_shape[-1],) if b.ndim > 1 else ())
    if a.dtype.is_bool and b.dtype.is_bool:
        raise TypeInferenceError("matmul: not defined on bool operands")
    return TensorType(shape, promote("matmul", [a, b]))


# NumPy's matmul of a stack broadcast against a shorter one multiplies every pair of
# matrices on its own: ht's (26, 22, 3, 3) @ (22, 3, 3), 572 products of 3x3 by 3x3,
# took 25 us; with the 26 moved into the rows (a copy of the left stack), 22 products of
# 78x3 by 3x3, 7 us. On a large left stack the copy costs more than it saves
# ((26, 544, 3, 4) @ (544, 4, 1): 128 us, 163 with the copy, whose result was copied too)
MERGED_ROWS_MAX = 256  # rows x columns of the left matrices up to which that pays
MERGED_SIZE_MAX = 32768  # elements of the left stack (the copy) up to which it pays


def _matmul_emit(e):
    """``a @ b``; when ``a``'s leading batch dimensions are broadcast against ``b`` (its
    batch is a suffix of ``a``'s) and ``a``'s matrices are small, those dimensions are
    moved into ``a``'s rows: ``(L, V, m, k) @ (V, k, n)`` as ``(V, L m, k) @ (V, k, n)``."""
    a, b = e.types
    x, y = e.args
    if not (a.is_static and b.is_static):  # symbolic sizes: NumPy's own broadcasting
        return f"{x} @ {y}"
    if b.ndim > a.ndim >= 2 and b.shape[-2] * b.shape[-1] <= MERGED_ROWS_MAX and (
            b.size <= MERGED_SIZE_MAX and b.shape[b.ndim - a.ndim:-2] == a.shape[:-2]):
        return _merged_columns(e)
    if (a.ndim < 3 or b.ndim < 2 or a.shape[-2] * a.shape[-1] > MERGED_ROWS_MAX
            or a.size > MERGED_SIZE_MAX):
        return f"{x} @ {y}"
    lead = a.ndim - b.ndim  # a's batch dimensions b has not (b is broadcast over them)
    if lead <= 0 or a.shape[lead:-2] != b.shape[:-2]:
        return f"{x} @ {y}"
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    rows = int(np.prod(a.shape[:lead])) * m
    if b.ndim == 2:  # one matrix: the whole stack's rows times it
        return f"({x}.reshape(({rows * int(np.prod(a.shape[lead:-2]))}, {k})) @ {y})" \
               f".reshape({tuple(e.out.shape)})"
    inner = tuple(range(lead, a.ndim - 2))
    moved = inner + tuple(range(lead)) + (a.ndim - 2, a.ndim - 1)
    batch = int(np.prod(b.shape[:-2]))
    back = tuple(range(len(inner), len(inner) + lead)) + tuple(range(len(inner))) + (
        a.ndim - 2, a.ndim - 1)
    out_moved = b.shape[:-2] + a.shape[:lead] + (m, n)
    return (f"(np.ascontiguousarray({x}.transpose({moved}))"
            f".reshape(({batch}, {rows}, {k})) @ {y}.reshape(({batch}, {k}, {n})))"
            f".reshape({out_moved}).transpose({back})")


def _merged_columns(e) -> str:
    """``(V, m, k) @ (L, V, k, n)`` as ``(V, m, k) @ (V, k, L n)``: ``b``'s leading batch
    dimensions, broadcast against ``a``, moved into its columns."""
    a, b = e.types
    x, y = e.args
    lead = b.ndim - a.ndim
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    inner = tuple(range(lead, b.ndim - 2))  # the shared batch dimensions
    batch = int(np.prod(a.shape[:-2]))
    cols = int(np.prod(b.shape[:lead])) * n
    # b as (V..., k, L..., n), then (V, k, L n)
    moved = inner + (b.ndim - 2,) + tuple(range(lead)) + (b.ndim - 1,)
    product = (f"({x}.reshape(({batch}, {m}, {k})) @ "
               f"np.ascontiguousarray({y}.transpose({moved})).reshape(({batch}, {k}, {cols})))")
    # (V..., m, L..., n) back to (L..., V..., m, n)
    shaped = a.shape[:-2] + (m,) + b.shape[:lead] + (n,)
    nv = len(inner)
    back = tuple(range(nv + 1, nv + 1 + lead)) + tuple(range(nv)) + (nv, nv + 1 + lead)
    # a transposed view: made contiguous it cost more than the ops reading it saved
    return f"{product}.reshape({shaped}).transpose({back})"


matmul = define("matmul", _matmul_type, np.matmul, 2, emit=_matmul_emit, linear="one",
                fresh=True, aliases=False, namespace=("matmul",), array_api_name="matmul")


# -- shared type-rule helpers ------------------------------------------------------------
def linalg_dtype(name: str, types) -> DType:
    """The dtype a linear algebra op computes in: the operands' promoted float or complex
    dtype (integers and bools give float64); float16 is refused, as NumPy refuses it."""
    dtype = promote(name, types)
    if dtype.numpy == np.float16:
        raise LinAlgError(f"{name}: float16 is not supported in linear algebra "
                          f"(operands {', '.join(map(repr, types))}); use float32")
    if dtype.numpy.kind not in "fc":
        return DType("f64")
    return dtype


def real_dtype(dtype: DType) -> DType:
    """The real dtype of the same precision (f64 for c128, f32 for c64)."""
    return DType(np.empty(0, dtype.numpy).real.dtype)


def square(name: str, t: TensorType, what: str = "a") -> int:
    """The size n of ``t``'s (..., n, n) matrices, or a LinAlgError naming the shape."""
    if t.ndim < 2:
        raise LinAlgError(f"{name}: {what} must be a matrix or a stack of matrices (..., n, n), "
                          f"got {t!r} ({t.ndim}-dimensional)")
    if t.shape[-1] != t.shape[-2]:
        raise LinAlgError(f"{name}: {what} must be square (..., n, n), got {t!r} "
                          f"({t.shape[-2]}x{t.shape[-1]} matrices)")
    return t.shape[-1]


def matrices(name: str, t: TensorType, what: str = "a") -> None:
    if t.ndim < 2:
        raise LinAlgError(f"{name}: {what} must be a matrix or a stack of matrices (..., m, n), "
                          f"got {t!r} ({t.ndim}-dimensional)")


def batch_of(name: str, *types) -> tuple:
    """The broadcast shape of the operands' leading (batch) axes."""
    return broadcast_shapes(name, [TensorType(t.shape[:-2], t.dtype) for t in types])


def compute_dtype(*arrays) -> np.dtype:
    """The dtype a kernel computes in: the arrays' float/complex dtype, else float64."""
    dtype = np.result_type(*arrays)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def cast(*arrays, dtype):
    return [np.asarray(a).astype(dtype, copy=False) for a in arrays]


# -- solve -------------------------------------------------------------------------------
def _solve_type(types, attrs):
    a, b = tensor_types("solve", types)
    n = square("solve", a)
    matrices("solve", b, "b")
    if b.shape[-2] != n:
        raise LinAlgError(f"solve: b must have {n} rows to match a, got a {a!r} and b {b!r}")
    dtype = linalg_dtype("solve", [a, b])
    return TensorType(batch_of("solve", a, b) + (n, b.shape[-1]), dtype)


def _solve(a, b):
    a, b = cast(a, b, dtype=compute_dtype(a, b))
    return np.linalg.solve(a, b)


# singular matrices raise (LinAlgError): raises_on_values
solve = define("solve", _solve_type, _solve, 2, linear=(1,), fresh=True, aliases=False,
               raises_on_values=True,
               doc="solve(a, b): x with a @ x = b, for (..., n, n) a and (..., n, k) b "
                   "(batch axes broadcast); LU with partial pivoting (LAPACK gesv).",
               kernels=NOT_YET_ON_ARRAY_API)


# -- triangular solve --------------------------------------------------------------------
_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}


def _triangular_normalize(types, attrs):
    trans = attrs["trans"]
    if isinstance(trans, (bool, np.bool_)) or trans not in _TRANS:
        raise LinAlgError(f"triangular_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', got "
                          f"{trans!r}")
    return {"lower": bool(attrs["lower"]), "trans": _TRANS[trans],
            "unit_diagonal": bool(attrs["unit_diagonal"])}


def _triangular_type(types, attrs):
    a, b = tensor_types("triangular_solve", types)
    n = square("triangular_solve", a)
    matrices("triangular_solve", b, "b")
    if b.shape[-2] != n:
        raise LinAlgError(f"triangular_solve: b must have {n} rows to match a, got a {a!r} "
                          f"and b {b!r}")
    dtype = linalg_dtype("triangular_solve", [a, b])
    return TensorType(batch_of("triangular_solve", a, b) + (n, b.shape[-1]), dtype)


def _triangular_solve(a, b, lower, trans, unit_diagonal):
    dtype = compute_dtype(a, b)
    a, b = cast(a, b, dtype=dtype)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if a.shape[-1] == 0 or b.shape[-1] == 0:
        return np.zeros(b.shape, dtype)
    from scipy.linalg import solve_triangular

    return np.asarray(solve_triangular(a, b, trans=trans, lower=lower,
                                       unit_diagonal=unit_diagonal, check_finite=False),
                      dtype=dtype)


triangular_solve = define(
    "triangular_solve", _triangular_type, _triangular_solve, 2,
    {"lower": False, "trans": 0, "unit_diagonal": False}, _triangular_normalize, linear=(1,),
    fresh=True, aliases=False, raises_on_values=True,
    doc="solve_triangular(a, b, lower=False, trans=0, unit_diagonal=False): x with op(a) x = "
        "b, op(a) = a, a^T (trans 1 or 'T') or a^H (2 or 'C'); only the lower (or upper) "
        "triangle of a is read, and its diagonal is taken as ones with unit_diagonal "
        "(LAPACK trtrs; batched over leading axes).", kernels=NOT_YET_ON_ARRAY_API)


# -- cholesky ----------------------------------------------------------------------------
def _cholesky_type(types, attrs):
    (a,) = tensor_types("cholesky", types)
    square("cholesky", a)
    return TensorType(a.shape, linalg_dtype("cholesky", [a]))


def _cholesky(a):
    dtype = compute_dtype(a)
    return np.linalg.cholesky(a.astype(dtype, copy=False))


cholesky = define(
    "cholesky", _cholesky_type, _cholesky, 1, fresh=True, aliases=False, raises_on_values=True,
    doc="The lower Cholesky factor L (L L^H = a) of a symmetric (Hermitian) positive definite "
        "matrix, of which only the lower triangle is read (NumPy's cholesky).")


# -- determinants ------------------------------------------------------------------------
def _slogdet_type(types, attrs):
    (a,) = tensor_types("slogdet", types)
    square("slogdet", a)
    dtype = linalg_dtype("slogdet", [a])
    batch = a.shape[:-2]
    return TupleType([TensorType(batch, dtype), TensorType(batch, real_dtype(dtype))])


def _slogdet(a):
    dtype = compute_dtype(a)
    sign, logabsdet = np.linalg.slogdet(a.astype(dtype, copy=False))
    return (np.asarray(sign, dtype), np.asarray(logabsdet, real_dtype(DType(dtype)).numpy))


slogdet = define(
    "slogdet", _slogdet_type, _slogdet, 1, fresh=True, aliases=False,
    doc="(sign, log|det a|) from an LU factorization: det a = sign exp(logabsdet) without "
        "overflow; sign is +-1 (a unit complex number for complex a), 0 for singular a.")


def _det_type(types, attrs):
    (a,) = tensor_types("det", types)
    square("det", a)
    return TensorType(a.shape[:-2], linalg_dtype("det", [a]))


def _det(a):
    dtype = compute_dtype(a)
    return np.asarray(np.linalg.det(a.astype(dtype, copy=False)), dtype)


det = define("det", _det_type, _det, 1, fresh=True, aliases=False,
             doc="The determinant (LU factorization). Its derivative is the adjugate, "
                 "computed stably also where a is singular.")


def _adjugate_type(types, attrs):
    (a,) = tensor_types("adjugate", types)
    square("adjugate", a)
    return TensorType(a.shape, linalg_dtype("adjugate", [a]))


def others_product(s: np.ndarray) -> np.ndarray:
    """prod_{j != i} s_j along the last axis, for every i (exclusive products from both
    ends: no division, exact where s has zeros)."""
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(s, -1)[..., :-1]], -1), -1), -1)
    return left * right


def _adjugate(a):
    """adj(a) = det(a) a^-1, from the SVD a = U S V^H: adj(a) = adj(V^H) adj(S) adj(U) =
    det(U) det(V^H) V diag(prod_{j != i} s_j) U^H (adj(Q) = det(Q) Q^H for unitary Q), so
    accurate also where a is singular (rank n - 1 gives a non-zero adjugate)."""
    dtype = compute_dtype(a)
    a = a.astype(dtype, copy=False)
    n = a.shape[-1]
    if n == 0:
        return np.zeros(a.shape, dtype)
    u, s, vh = np.linalg.svd(a)
    phase = np.linalg.det(u) * np.linalg.det(vh)
    core = others_product(s).astype(dtype)
    v = np.conj(np.swapaxes(vh, -1, -2))
    uh = np.conj(np.swapaxes(u, -1, -2))
    out = (v * core[..., None, :]) @ uh
    return (out * phase[..., None, None]).astype(dtype, copy=False)


adjugate = define(
    "adjugate", _adjugate_type, _adjugate, 1, fresh=True, aliases=False,
    raises_on_values=True,  # its SVD
    namespace=("linalg.adjugate",),
    doc="The adjugate (classical adjoint) adj(a) = det(a) a^-1, the transposed cofactor "
        "matrix, from the SVD (defined and accurate for singular a too).",
    kernels=NOT_YET_ON_ARRAY_API)
