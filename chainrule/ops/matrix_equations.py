"""Matrix equations of ``chainrule.scipy.linalg``: ``sqrtm`` (the principal square root,
S S = A), ``solve_sylvester`` (A X + X B = Q) and ``solve_banded`` (A x = b with A in
LAPACK's banded storage), with SciPy's kernels (an optional extra: without SciPy they
raise a ``ChainruleError`` saying ``pip install chainrule[scipy]``).

``sqrtm`` always returns a complex matrix, as JAX's does: SciPy returns a real one when
the principal root is real and a complex one otherwise (a real matrix with a negative
eigenvalue), a dtype no type rule can know before the values. Its derivative solves the
Sylvester equation S dS + dS S = dA, so ``sqrtm`` and ``solve_sylvester`` differentiate
within each other, to any order. ``sqrtm`` and ``solve_sylvester`` take stacks of
matrices (leading axes, broadcast between the operands as SciPy 1.15+ does).

``solve_banded(ab, b, lower, upper)``: ``ab`` holds the diagonals of the n x n matrix A as
SciPy's (and LAPACK gbsv's) ``ab[upper + i - j, j] = A[i, j]``; the corners of ``ab`` that
no A[i, j] maps to are never read. ``b`` is (n,) or (n, k).

>>> import numpy as np
>>> s = sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))
>>> s.dtype, s.real.tolist()
(dtype('complex128'), [[2.0, 0.0], [0.0, 3.0]])
>>> solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2))).tolist()
[[0.5, 0.5], [0.5, 0.5]]
"""

from __future__ import annotations

import numpy as np

from ..ir.types import DType, TensorType
from .common import NOT_YET_ON_ARRAY_API, define, tensor_types
from .linalg import LinAlgError, batch_of, cast, compute_dtype, linalg_dtype, matrices, square
from .special import scipy_special

_FACTS = dict(fresh=True, aliases=False)


def scipy_linalg():
    """``scipy.linalg``, or the ``ChainruleError`` saying how to install SciPy."""
    scipy_special()  # raises that error when SciPy is missing
    import scipy.linalg

    return scipy.linalg


def _per_matrix(fn, out_shape, dtype, *stacks):
    """fn applied to each matrix of the broadcast stacks (SciPy before 1.15 takes one)."""
    batch = out_shape[:-2]
    out = np.empty(out_shape, dtype)
    stacks = [np.broadcast_to(s, batch + s.shape[-2:]) for s in stacks]
    for index in np.ndindex(*batch):
        out[index] = fn(*[s[index] for s in stacks])
    return out


# -- sqrtm ----------------------------------------------------------------------------------
def _sqrtm_type(types, attrs):
    (a,) = tensor_types("sqrtm", types)
    square("sqrtm", a)
    return TensorType(a.shape, DType(np.result_type(linalg_dtype("sqrtm", [a]).numpy,
                                                    np.complex64)))


def _sqrtm(a):
    dtype = np.result_type(compute_dtype(a), np.complex64)
    # a real matrix stays real for SciPy (its real Schur form, several times faster than
    # the complex one; SciPy returns a complex root where there is no real one); the
    # result is cast to the complex dtype
    (a,) = cast(a, dtype=compute_dtype(a))
    if a.shape[-1] == 0:
        return np.zeros(a.shape, dtype)
    return _per_matrix(lambda m: scipy_linalg().sqrtm(m), a.shape, dtype, a)


sqrtm = define("sqrtm", _sqrtm_type, _sqrtm, 1,
               doc="sqrtm(A): the principal matrix square root S (S S = A; eigenvalues in "
                   "the right half plane), always complex, as JAX's (SciPy's Schur method).",
               **_FACTS, kernels=NOT_YET_ON_ARRAY_API)


# -- solve_sylvester ------------------------------------------------------------------------
def _sylvester_type(types, attrs):
    a, b, q = tensor_types("solve_sylvester", types)
    m = square("solve_sylvester", a, "a")
    n = square("solve_sylvester", b, "b")
    matrices("solve_sylvester", q, "q")
    if tuple(q.shape[-2:]) != (m, n):
        raise LinAlgError(f"solve_sylvester: q must be (..., {m}, {n}) to match a {a!r} and "
                          f"b {b!r}, got {q!r}")
    dtype = linalg_dtype("solve_sylvester", [a, b, q])
    return TensorType(batch_of("solve_sylvester", a, b, q) + (m, n), dtype)


def _sylvester_one(a, b, q):
    """SciPy's solve_sylvester (Bartels-Stewart: the Schur forms of a and b^H, then
    LAPACK trsyl), with one Schur form when b equals a (a X + X a = q, as sqrtm's
    derivatives solve): a = U R U^H, R Y + Y R = U^H q U, X = U Y U^H."""
    linalg = scipy_linalg()
    if a.dtype.kind == "c" and not (a.imag.any() or b.imag.any() or q.imag.any()):
        # a real equation in complex arrays (the derivatives of sqrtm of a matrix with a
        # real root): the real Schur forms, several times faster than the complex ones
        return _sylvester_one(a.real, b.real, q.real)
    if b is not a and not np.array_equal(a, b):
        return linalg.solve_sylvester(a, b, q)
    r, u = linalg.schur(a, output="real")
    (trsyl,) = linalg.get_lapack_funcs(("trsyl",), (r, r, q))
    y, scale, info = trsyl(r, r, u.conj().T @ q @ u)
    if info < 0:
        raise LinAlgError(f"solve_sylvester: illegal value in argument {-info} of trsyl")
    return u @ (scale * y) @ u.conj().T


def _solve_sylvester(a, b, q):
    dtype = compute_dtype(a, b, q)
    a, b, q = cast(a, b, q, dtype=dtype)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    shape = batch + q.shape[-2:]
    if 0 in q.shape[-2:]:
        return np.zeros(shape, dtype)
    return _per_matrix(_sylvester_one, shape, dtype, a, b, q)


solve_sylvester = define(
    "solve_sylvester", _sylvester_type, _solve_sylvester, 3, linear=(2,),
    doc="solve_sylvester(a, b, q): X with a X + X b = q (Bartels-Stewart, SciPy's); unique "
        "when a and -b share no eigenvalue.", **_FACTS, kernels=NOT_YET_ON_ARRAY_API)


# -- solve_banded ---------------------------------------------------------------------------
def _banded_type(types, attrs):
    ab, b = tensor_types("solve_banded", types)
    lower, upper = attrs["lower"], attrs["upper"]
    for name, k in (("lower", lower), ("upper", upper)):
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
            raise LinAlgError(f"solve_banded: the number of {name} diagonals must be an int "
                              f">= 0, got {k!r}")
    if ab.ndim != 2 or ab.shape[0] != lower + upper + 1:
        raise LinAlgError(f"solve_banded: ab must be ({lower + upper + 1}, n) for (l, u) = "
                          f"({lower}, {upper}), got {ab!r}")
    if b.ndim not in (1, 2) or b.shape[0] != ab.shape[1]:
        raise LinAlgError(f"solve_banded: b must be ({ab.shape[1]},) or ({ab.shape[1]}, k) to "
                          f"match ab {ab!r}, got {b!r}")
    return TensorType(b.shape, linalg_dtype("solve_banded", [ab, b]))


def _solve_banded(ab, b, lower, upper):
    dtype = compute_dtype(ab, b)
    ab, b = cast(ab, b, dtype=dtype)
    if b.size == 0:
        return np.zeros(b.shape, dtype)
    out = scipy_linalg().solve_banded((lower, upper), ab, b, check_finite=False)
    return np.asarray(out, dtype)


solve_banded = define(
    "solve_banded", _banded_type, _solve_banded, 2, {"lower": 0, "upper": 0}, linear=(1,),
    doc="solve_banded(ab, b, lower, upper): x with A x = b, A banded with ``lower`` "
        "sub- and ``upper`` super-diagonals, given as ab[upper + i - j, j] = A[i, j] "
        "(LAPACK gbsv).", **_FACTS, kernels=NOT_YET_ON_ARRAY_API)

__all__ = ["sqrtm", "solve_sylvester", "solve_banded"]
