"""SciPy's ``scipy.linalg``, differentiable: ``solve`` (every ``assume_a``),
``solve_triangular``, ``cholesky`` (upper by default, as SciPy), ``cho_factor`` /
``cho_solve``, ``inv``, ``det``, ``eigh`` (also generalized, ``b=``), ``eigvalsh``
and ``expm`` (its derivative is the Frechet derivative, from the block-matrix
identity), ``sqrtm``, ``solve_sylvester`` and ``solve_banded`` (see
``chainrule/ops/matrix_equations.py``). Ops that declare ``"scipy.linalg.<name>"`` in
their ``namespace`` appear here too, next to the functions written below. Stacks of matrices
(leading axes) work as in SciPy 1.15+; ``overwrite_*`` and ``check_finite`` are
accepted and have no effect (arrays are never overwritten here).

Functions that read one triangle of a matrix (``cholesky``, ``solve`` with
``assume_a`` symmetric/Hermitian/positive definite, ``eigh``) are functions of
that triangle alone, as SciPy's are: their derivatives with respect to the other
triangle are zero.

>>> import numpy as np
>>> import chainrule as cr
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> u = cholesky(a)                              # upper, as SciPy
>>> bool(np.allclose(u.T @ u, a))
True
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..numpy._assemble import assemble as _assemble
from ..numpy._core import exposes, shape
from ..numpy._linalg import LinalgArgumentError
from ..numpy.linalg import inv as _np_inv
from ..ops.linalg import LinAlgError


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype) if hasattr(x, "dtype") else _np.asarray(x).dtype


def _ndim(x) -> int:
    return len(shape(x))


def _complex(x) -> bool:
    return _dtype(x).kind == "c"


def _mT(x):
    n = _ndim(x)
    return _ops.permute_dims(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _mH(x):
    return _ops.conj(_mT(x)) if _complex(x) else _mT(x)


def _band(x, k, lower):
    rows, cols = shape(x)[-2:]
    mask = _np.tri(rows, cols, k, dtype=bool) if lower else ~_np.tri(rows, cols, k - 1,
                                                                      dtype=bool)
    return _ops.where(mask, x, _np.zeros((), _dtype(x)))


def _as_matrix(b):
    """(b as (..., n, k), whether b was one vector)."""
    if _ndim(b) == 1:
        return _ops.reshape(b, (-1, 1)), True
    return b, False


def _as_given(x, vector):
    return x[..., 0] if vector else x


@exposes(_ops.triangular_solve)
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """x with op(a) x = b, op(a) = a, a^T (trans 1 / 'T') or a^H (2 / 'C'); only the lower
    (or upper) triangle of a is read, its diagonal taken as ones with unit_diagonal."""
    bm, vector = _as_matrix(b)
    return _as_given(_ops.triangular_solve(a, bm, lower, trans, unit_diagonal), vector)


def _from_triangle(a, lower, hermitian):
    """The symmetric (Hermitian: conjugate, real diagonal) matrix one triangle of a gives."""
    strict = _band(a, -1, True) if lower else _band(a, 1, False)
    diag = _ops.where(_np.eye(shape(a)[-1], dtype=bool), a, _np.zeros((), _dtype(a)))
    if hermitian and _complex(a):
        diag = _ops.complex_from_parts(_ops.real(diag), _ops.zeros_like(_ops.real(diag)))
        return strict + _mH(strict) + diag
    return strict + _mT(strict) + diag


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a Hermitian positive definite matrix: upper U (a = U^H U,
    from a's upper triangle; SciPy's default) or lower L (a = L L^H, lower triangle)."""
    if lower:
        return _ops.cholesky(a)
    return _mH(_ops.cholesky(_mH(a)))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower): the Cholesky factor in c's lower (or upper) triangle, a's own entries in
    the other (as SciPy leaves them), for ``cho_solve``."""
    factor = cholesky(a, lower=lower)
    rest = _band(a, 1, False) if lower else _band(a, -1, True)
    return factor + rest, lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a x = b, given ``cho_factor(a)``: two triangular solves (only the factor's
    triangle of c is read)."""
    c, lower = c_and_lower
    bm, vector = _as_matrix(b)
    if lower:  # a = L L^H
        y = _ops.triangular_solve(c, bm, True, 0)
        x = _ops.triangular_solve(c, y, True, 2)
    else:  # a = U^H U
        y = _ops.triangular_solve(c, bm, False, 2)
        x = _ops.triangular_solve(c, y, False, 0)
    return _as_given(x, vector)


_ASSUME = {None: "gen", "gen": "gen", "general": "gen", "sym": "sym", "symmetric": "sym",
           "her": "her", "hermitian": "her", "pos": "pos", "positive definite": "pos",
           "diagonal": "diagonal", "tridiagonal": "tridiagonal", "banded": "gen",
           "upper triangular": "upper", "lower triangular": "lower"}


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """x with a x = b (a^T x = b with transposed=True); ``assume_a`` as SciPy: the
    symmetric, Hermitian and positive definite kinds read one triangle (upper unless
    lower=True), 'diagonal' the diagonal, 'tridiagonal' the three diagonals, the
    triangular kinds one triangle; 'banded' and 'general' the whole matrix."""
    kind = _ASSUME.get(assume_a)
    if kind is None:
        raise LinalgArgumentError(f"solve: {assume_a!r} is not a recognized matrix structure")
    if transposed:
        if _complex(a):
            raise NotImplementedError("scipy.linalg.solve can currently not solve a^T x = b "
                                      "for complex a")
        a = _mT(a)
        if kind in ("upper", "lower"):
            kind = "lower" if kind == "upper" else "upper"
        lower = not lower
    n = shape(a)[-1] if _ndim(a) >= 2 else None
    if _ndim(a) < 2 or shape(a)[-2] != n:
        raise LinAlgError(f"solve: a must be square (..., n, n), got shape {shape(a)}")
    bm, vector = _as_matrix(b)
    if kind == "gen":
        x = _ops.solve(a, bm)
    elif kind in ("sym", "her"):
        x = _ops.solve(_from_triangle(a, lower, kind == "her"), bm)
    elif kind == "pos":
        factor = _ops.cholesky(a if lower else _mH(a))
        x = _ops.triangular_solve(factor, _ops.triangular_solve(factor, bm, True, 0), True, 2)
    elif kind == "diagonal":
        d = _ops.sum(a * _np.eye(n, dtype=bool), axis=-1)
        x = bm / _ops.expand_dims(d, -1)
    elif kind == "tridiagonal":
        x = _ops.solve(_band(_band(a, 1, True), -1, False), bm)
    else:
        x = _ops.triangular_solve(a, bm, kind == "lower", 0)
    return _as_given(x, vector)


def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """a^-1 (solve(a, I) with the same ``assume_a`` kinds as ``solve``)."""
    if assume_a in (None, "gen", "general"):
        return _np_inv(a)
    eye = _np.eye(shape(a)[-1], dtype=_dtype(a) if _dtype(a).kind in "fc" else _np.float64)
    return solve(a, eye, lower=lower, assume_a=assume_a)


def det(a, overwrite_a=False, check_finite=True):
    """The determinant (derivative: the adjugate, exact at singular matrices too)."""
    return _ops.det(a)


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None,  # noqa: A002
         driver=None):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian a reading its lower (lower
    =True) or upper triangle; with b (Hermitian positive definite) the generalized problem
    a v = w b v (type 1), eigenvectors normalized v^H b v = I, from b's Cholesky factor."""
    if type != 1:
        raise LinalgArgumentError("eigh: only type=1 (a v = w b v) is supported")
    if subset_by_value is not None:
        raise LinalgArgumentError("eigh: subset_by_value selects a data-dependent number of "
                                  "eigenvalues; use subset_by_index")
    if b is None:
        w, v = _ops.eigh(a, bool(lower), driver or "scipy")
    else:
        factor = _ops.cholesky(b if lower else _mH(b))  # b = L L^H
        half = _ops.triangular_solve(factor, _from_triangle(a, lower, True), True, 0)
        c = _mH(_ops.triangular_solve(factor, _mH(half), True, 0))  # L^-1 a L^-H
        w, u = _ops.eigh(c, True, driver or "scipy")
        v = _ops.triangular_solve(factor, u, True, 2)  # L^-H u
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def eigvalsh(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,  # noqa: A002
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """The eigenvalues of ``eigh`` alone (differentiable also at repeated eigenvalues when
    b is None)."""
    if b is None and subset_by_index is None and subset_by_value is None:
        return _ops.eigvalsh(a, bool(lower), driver or "scipy")
    return eigh(a, b, lower=lower, eigvals_only=True, type=type,
                subset_by_index=subset_by_index, subset_by_value=subset_by_value)


@exposes(_ops.expm)
def expm(A):  # noqa: N803 - SciPy's name
    """The matrix exponential; its derivative along E is the Frechet derivative, the upper
    right block of expm([[A, E], [0, A]])."""
    return _ops.expm(A)


_NO_DISP = ("sqrtm: disp=False (deprecated since SciPy 1.16) is not supported; the "
            "residual is norm(s @ s - A) / norm(A)")


@exposes(_ops.sqrtm)
def sqrtm(A, disp=True, blocksize=64):  # noqa: N803 - SciPy's name
    """The principal square root S of A (S @ S = A), always a complex matrix, as JAX's
    (SciPy's is real when the root is: a dtype known only from the values). Its derivative
    dS solves the Sylvester equation S dS + dS S = dA. ``blocksize`` has no effect."""
    if disp is not True:
        raise LinalgArgumentError(_NO_DISP)
    return _ops.sqrtm(A)


@exposes(_ops.solve_sylvester)
def solve_sylvester(a, b, q):
    """X with a X + X b = q (unique when a and -b share no eigenvalue). Differentiable
    in a, b and q: a dX + dX b = dq - da X - X db."""
    return _ops.solve_sylvester(a, b, q)


@exposes(_ops.solve_banded)
def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """x with A x = b, A given by its diagonals: (l, u) = l_and_u sub- and
    super-diagonals, ab[u + i - j, j] = A[i, j] (SciPy's banded storage; the corners of
    ab no A[i, j] maps to are not read, and their derivative is 0). b is (n,) or (n, k)."""
    try:
        lower, upper = (int(k) for k in l_and_u)
    except (TypeError, ValueError):
        raise LinalgArgumentError(f"solve_banded: l_and_u must be a pair of ints (l, u), got "
                                  f"{l_and_u!r}") from None
    return _ops.solve_banded(ab, b, lower, upper)


# the functions written here (besides the ops that declare "scipy.linalg.<name>")
_OWN: list[str] = ["solve_triangular", "cholesky", "cho_factor", "cho_solve", "solve", "inv",
                   "det", "eigh", "eigvalsh", "expm", "sqrtm", "solve_sylvester",
                   "solve_banded"]

__all__ = _assemble(globals(), "scipy.linalg.", _OWN)
