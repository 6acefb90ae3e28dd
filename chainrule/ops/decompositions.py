"""Matrix decompositions and matrix functions: ``eigh`` / ``eigvalsh`` (symmetric or
Hermitian), ``eig`` / ``eigvals`` (general matrices, complex results), ``svd`` /
``svdvals``, ``qr``, ``pinv`` and ``expm``. Each works on stacks of matrices
(leading axes). The ops returning several arrays return tuples; the value-only
ops (``eigvalsh``, ``eigvals``, ``svdvals``) exist so that a derivative of the
values alone never touches the eigen/singular vectors (whose derivatives are
undefined at repeated values). Their derivative rules are in
``chainrule/rules/decompositions.py``.

``eig`` / ``eigvals`` always return complex arrays (as JAX does; NumPy returns real
arrays when every eigenvalue of a real matrix happens to be real, which a program
whose types are known before it runs cannot do).

>>> import numpy as np
>>> w, v = eigh(np.array([[2.0, 0.0], [0.0, 1.0]]))
>>> w
array([1., 2.])
"""

from __future__ import annotations

import numpy as np

from ..ir.types import DType, TensorType, TupleType
from .common import NOT_YET_ON_ARRAY_API, define, tensor_types
from .linalg import LinAlgError, compute_dtype, linalg_dtype, matrices, real_dtype, square

__all__ = ["eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "qr", "pinv", "expm"]

# LAPACK raises on some matrices (no convergence, NaN entries): vmap never runs a
# factorization in a lane that did not ask for it (raises_on_values)
_FACTORIZATION = dict(fresh=True, aliases=False, raises_on_values=True)


def _complex_dtype(dtype: DType) -> DType:
    return DType(np.result_type(dtype.numpy, np.complex64))


# -- symmetric / Hermitian eigenproblems -----------------------------------------------------
_DRIVERS = (None, "scipy", "ev", "evd", "evr", "evx")


def _lower_normalize(types, attrs):
    driver = attrs["driver"]
    if driver not in _DRIVERS:
        raise LinAlgError(f"eigh: driver must be one of {_DRIVERS}, got {driver!r}")
    return {"lower": bool(attrs["lower"]), "driver": driver}


def _symmetric_eigen(a, lower, driver, values_only):
    """NumPy's eigh (driver None: LAPACK syevd) or SciPy's ("scipy": its default driver,
    or the one named), whose eigenvectors' signs may differ."""
    a = a.astype(compute_dtype(a), copy=False)
    if driver is None:
        uplo = "L" if lower else "U"
        return np.linalg.eigvalsh(a, uplo) if values_only else np.linalg.eigh(a, uplo)
    from scipy.linalg import eigh as scipy_eigh

    if a.shape[-1] == 0:
        return np.linalg.eigvalsh(a) if values_only else np.linalg.eigh(a)
    out = scipy_eigh(a, lower=lower, eigvals_only=values_only, check_finite=False,
                     driver=None if driver == "scipy" else driver)
    return out if values_only else tuple(out)


def _eigh_type(types, attrs):
    (a,) = tensor_types("eigh", types)
    n = square("eigh", a)
    dtype = linalg_dtype("eigh", [a])
    return TupleType([TensorType(a.shape[:-2] + (n,), real_dtype(dtype)),
                      TensorType(a.shape, dtype)])


def _eigh(a, lower, driver):
    w, v = _symmetric_eigen(a, lower, driver, False)
    return w, v


eigh = define(
    "eigh", _eigh_type, _eigh, 1, {"lower": True, "driver": None}, _lower_normalize,
    **_FACTORIZATION,
    doc="(w, v): the eigenvalues (ascending) and orthonormal eigenvectors (columns) of a "
        "symmetric/Hermitian matrix, of which only the lower (lower=True) or upper triangle "
        "is read (driver None: NumPy's eigh; 'scipy' or a SciPy driver name: SciPy's).")


def _eigvalsh_type(types, attrs):
    (a,) = tensor_types("eigvalsh", types)
    n = square("eigvalsh", a)
    return TensorType(a.shape[:-2] + (n,), real_dtype(linalg_dtype("eigvalsh", [a])))


eigvalsh = define(
    "eigvalsh", _eigvalsh_type,
    lambda a, lower, driver: _symmetric_eigen(a, lower, driver, True),
    1, {"lower": True, "driver": None}, _lower_normalize, **_FACTORIZATION,
    doc="The eigenvalues (ascending) of a symmetric/Hermitian matrix (one triangle read).")


# -- general eigenproblems ---------------------------------------------------------------
def _eig_type(types, attrs):
    (a,) = tensor_types("eig", types)
    n = square("eig", a)
    dtype = _complex_dtype(linalg_dtype("eig", [a]))
    return TupleType([TensorType(a.shape[:-2] + (n,), dtype), TensorType(a.shape, dtype)])


def _eig(a):
    dtype = _complex_dtype(DType(compute_dtype(a))).numpy
    w, v = np.linalg.eig(a.astype(compute_dtype(a), copy=False))
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


eig = define(
    "eig", _eig_type, _eig, 1, **_FACTORIZATION,
    doc="(w, v): eigenvalues and right eigenvectors (unit columns whose largest component "
        "is real, as LAPACK geev normalizes them) of a general matrix, as complex arrays.",
    kernels=NOT_YET_ON_ARRAY_API)


def _eigvals_type(types, attrs):
    (a,) = tensor_types("eigvals", types)
    n = square("eigvals", a)
    return TensorType(a.shape[:-2] + (n,), _complex_dtype(linalg_dtype("eigvals", [a])))


def _eigvals(a):
    dtype = _complex_dtype(DType(compute_dtype(a))).numpy
    return np.linalg.eigvals(a.astype(compute_dtype(a), copy=False)).astype(dtype, copy=False)


eigvals = define("eigvals", _eigvals_type, _eigvals, 1, **_FACTORIZATION,
                 doc="The eigenvalues of a general matrix, as a complex array.",
                 kernels=NOT_YET_ON_ARRAY_API)


# -- singular values ---------------------------------------------------------------------
def _svd_type(types, attrs):
    (a,) = tensor_types("svd", types)
    matrices("svd", a)
    m, n = a.shape[-2:]
    k = min(m, n)
    dtype = linalg_dtype("svd", [a])
    batch = a.shape[:-2]
    full = attrs["full_matrices"]
    return TupleType([TensorType(batch + (m, m if full else k), dtype),
                      TensorType(batch + (k,), real_dtype(dtype)),
                      TensorType(batch + (n if full else k, n), dtype)])


def _svd(a, full_matrices):
    a = a.astype(compute_dtype(a), copy=False)
    if 0 in a.shape[-2:]:  # LAPACK refuses empty matrices; NumPy's shapes, identity bases
        m, n = a.shape[-2:]
        k = min(m, n)
        batch = a.shape[:-2]
        eye = np.eye(max(m, n), dtype=a.dtype)
        u = np.broadcast_to(eye[:m, :m if full_matrices else k], batch + (m, m if full_matrices
                                                                           else k)).copy()
        vh = np.broadcast_to(eye[:n if full_matrices else k, :n],
                             batch + (n if full_matrices else k, n)).copy()
        return u, np.zeros(batch + (k,), a.real.dtype), vh
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


svd = define(
    "svd", _svd_type, _svd, 1, {"full_matrices": False},
    lambda types, attrs: {"full_matrices": bool(attrs["full_matrices"])}, **_FACTORIZATION,
    doc="(u, s, vh) with a = u diag(s) vh, singular values descending; u is (m, k) and vh "
        "(k, n) with k = min(m, n), or square with full_matrices=True.")


def _svdvals_type(types, attrs):
    (a,) = tensor_types("svdvals", types)
    matrices("svdvals", a)
    m, n = a.shape[-2:]
    return TensorType(a.shape[:-2] + (min(m, n),), real_dtype(linalg_dtype("svdvals", [a])))


def _svdvals(a):
    a = a.astype(compute_dtype(a), copy=False)
    if 0 in a.shape[-2:]:
        return np.zeros(a.shape[:-2] + (0,), a.real.dtype)
    return np.linalg.svd(a, compute_uv=False)


svdvals = define("svdvals", _svdvals_type, _svdvals, 1, **_FACTORIZATION,
                 doc="The singular values of a, descending.")


# -- QR ----------------------------------------------------------------------------------
def _qr_normalize(types, attrs):
    mode = attrs["mode"]
    if mode not in ("reduced", "complete"):
        raise LinAlgError(f"qr: mode must be 'reduced' or 'complete' (the op; 'r' is R of "
                          f"'reduced'), got {mode!r}")
    return {"mode": mode}


def _qr_type(types, attrs):
    (a,) = tensor_types("qr", types)
    matrices("qr", a)
    m, n = a.shape[-2:]
    k = m if attrs["mode"] == "complete" else min(m, n)
    dtype = linalg_dtype("qr", [a])
    return TupleType([TensorType(a.shape[:-2] + (m, k), dtype),
                      TensorType(a.shape[:-2] + (k, n), dtype)])


def _qr(a, mode):
    q, r = np.linalg.qr(a.astype(compute_dtype(a), copy=False), mode=mode)
    return q, r


qr = define(
    "qr", _qr_type, _qr, 1, {"mode": "reduced"}, _qr_normalize, **_FACTORIZATION,
    doc="(q, r): a = q r with orthonormal columns q and upper triangular r (Householder, "
        "LAPACK geqrf); mode 'reduced' ((m, k), (k, n), k = min(m, n)) or 'complete'.")


# -- pseudo-inverse --------------------------------------------------------------------------
def _pinv_normalize(types, attrs):
    rcond = attrs["rcond"]
    if isinstance(rcond, (bool, np.bool_)) or not isinstance(rcond, (int, float, np.integer,
                                                                     np.floating)):
        raise LinAlgError(f"pinv: rcond must be a number, got {rcond!r}")
    return {"rcond": float(rcond), "hermitian": bool(attrs["hermitian"])}


def _pinv_type(types, attrs):
    (a,) = tensor_types("pinv", types)
    matrices("pinv", a)
    if attrs["hermitian"]:
        square("pinv", a)
    return TensorType(a.shape[:-2] + (a.shape[-1], a.shape[-2]), linalg_dtype("pinv", [a]))


def _pinv(a, rcond, hermitian):
    a = a.astype(compute_dtype(a), copy=False)
    if 0 in a.shape[-2:]:
        return np.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    return np.linalg.pinv(a, rcond=rcond, hermitian=hermitian)


pinv = define(
    "pinv", _pinv_type, _pinv, 1, {"rcond": 1e-15, "hermitian": False}, _pinv_normalize,
    **_FACTORIZATION,
    doc="The Moore-Penrose pseudo-inverse from the SVD, singular values at most rcond times "
        "the largest taken as zero.", kernels=NOT_YET_ON_ARRAY_API)


# -- matrix exponential ------------------------------------------------------------------
def _expm_type(types, attrs):
    (a,) = tensor_types("expm", types)
    square("expm", a)
    return TensorType(a.shape, linalg_dtype("expm", [a]))


def _expm(a):
    from scipy.linalg import expm as scipy_expm

    a = a.astype(compute_dtype(a), copy=False)
    if a.shape[-1] == 0 or a.size == 0:
        return np.zeros(a.shape, a.dtype)
    return np.asarray(scipy_expm(a), a.dtype)


expm = define("expm", _expm_type, _expm, 1, **_FACTORIZATION,
              doc="The matrix exponential (scaling and squaring with a Pade approximant, "
                  "SciPy's expm).", kernels=NOT_YET_ON_ARRAY_API)
