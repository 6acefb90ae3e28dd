"""Cases of linear algebra: the products and matrix structure of chainrule.numpy (einsum,
tensordot, kron, cross, trace, diag, tril...), chainrule.numpy.linalg and
chainrule.scipy.linalg (see namespace_cases). Matrices are well conditioned with
distinct eigenvalues / singular values where derivatives are checked; functions with
complex results are checked through their real and imaginary parts; the triangle-
reading functions get non-symmetric inputs (their derivatives see one triangle)."""

import warnings

import numpy as np
import scipy.linalg as sl
from namespace_cases import I, U, case

import chainrule.numpy as cnp
import chainrule.scipy.linalg as csl

cla = cnp.linalg


def W(*shape):
    """Well-conditioned square matrices (n I plus noise), batched over leading axes."""
    n = shape[-1]
    return U(*shape) + n * np.eye(n)


def SPD(*shape):
    """Symmetric positive definite matrices."""
    m = U(*shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _np_make_diagonal(d, offset=0, axis1=-1, axis2=-2):
    """NumPy reference: zeros with ``d``'s last axis written on the offset diagonal."""
    m = d.shape[-1]
    out = np.zeros(d.shape[:-1] + (m + abs(offset),) * 2, d.dtype)
    k = np.arange(m)
    out[..., k + max(0, -offset), k + max(0, offset)] = d
    return np.moveaxis(out, (-2, -1), (axis1, axis2))


def _parts(fn):
    """(real, imag) of fn's complex result (the derivative checks compare real arrays)."""
    def f(*args):
        out = fn(*args)
        return cnp.real(out), cnp.imag(out)

    return f


def _ref_parts(fn):
    def f(*args):
        out = np.asarray(fn(*args), complex)
        return out.real, out.imag

    return f


def _quiet(fn):
    def f(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return fn(*args)

    return f


def _phase_free(v, conj):
    """Eigenvectors times the conjugate of their first components: independent of the phase
    (sign) LAPACK picks, which may jump between nearby matrices."""
    return v * conj(v[..., :1, :])


def _sign_free(wv):
    w, v = wv
    return w, _phase_free(v, lambda x: x)


def _eig_ref(a):
    w, v = np.linalg.eig(a)
    return w.real, w.imag, np.abs(v) ** 2


_SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])  # rank 2
_UPPER_NOISE = np.triu(U(3, 3), 1)
_LSTSQ = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.1], [0.3, 0.2, 0.05]])
_UP = "U"  # (a string constant "U" in a lambda makes the capture of traced functions look
# up the global U, which reaches namespace_cases.rng: see the report)
_RANK1 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])

_EINSUM = [
    ("ij,jk->ik", (U(2, 3), U(3, 4))), ("ij,jk", (U(2, 3), U(3, 4))), ("ii->i", (U(3, 3),)),
    ("ii", (U(3, 3),)), ("...ij,...jk->...ik", (U(2, 2, 3), U(3, 4))),
    ("bij,bjk->bik", (U(2, 2, 3), U(2, 3, 4))), ("i,i", (U(3), U(3))),
    ("i,j->ij", (U(3), U(2))), ("ijk,jl,lk->i", (U(2, 3, 4), U(3, 5), U(5, 4))),
    ("iij->j", (U(3, 3, 2),)), ("ij,jk,kl,lm->im", (U(2, 3), U(3, 4), U(4, 5), U(5, 2))),
    (",i->i", (U(), U(3))), ("ij->", (U(2, 3),)), ("ba", (U(2, 3),)),
    ("ij,jk", (U(2, 1), U(3, 4))), ("...i,...i->...", (U(2, 1, 3), U(4, 3))),
    ("abc,cd,bd->a", (U(2, 3, 4), U(4, 5), U(3, 5))), ("ij,ij->", (U(0, 3), U(0, 3))),
]

CASES = [
    # -- products --------------------------------------------------------------------------
    *[case("einsum", (lambda s_: lambda *a: cnp.einsum(s_, *a))(s),
           (lambda s_: lambda *a: np.einsum(s_, *a))(s), args, note=s) for s, args in _EINSUM],
    case("einsum", lambda a, b, c: cnp.einsum("ij,jk,kl->il", a, b, c, optimize="optimal"),
         lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c), (U(2, 3), U(3, 4), U(4, 2)),
         note="optimize=optimal"),
    case("einsum", lambda a, b: cnp.einsum(a, [0, 1], b, [1, Ellipsis], [0, Ellipsis]),
         lambda a, b: np.einsum(a, [0, 1], b, [1, Ellipsis], [0, Ellipsis]),
         (U(2, 3), U(3, 4, 2)), note="interleaved"),
    case("einsum", lambda a, b: cnp.einsum("ij,jk->ik", a, b), None,
         (I(2, 3), I(3, 2)), grad=False, note="int"),
    case("einsum_path", lambda a, b, c: cnp.einsum_path("ij,jk,kl->il", a, b, c)[0][1:],
         lambda a, b, c: np.einsum_path("ij,jk,kl->il", a, b, c)[0][1:],
         (U(2, 3), U(3, 4), U(4, 2)), grad=False, jit=False),
    case("tensordot", lambda a, b: cnp.tensordot(a, b), np.tensordot, (U(2, 3, 4), U(3, 4, 2)),
         (U(3, 4), U(3, 4))),
    case("tensordot", lambda a, b: cnp.tensordot(a, b, axes=([1, 0], [0, 2])),
         lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])), (U(3, 4, 5), U(4, 2, 3)),
         note="axes pairs"),
    case("tensordot", lambda a, b: cnp.tensordot(a, b, 0), lambda a, b: np.tensordot(a, b, 0),
         (U(2), U(3)), note="outer"),
    case("dot", lambda a, b: cnp.dot(a, b), np.dot, (U(2, 3, 4), U(5, 4, 2)), (U(3), U(2, 3, 4)),
         note="N-D"),
    case("inner", lambda a, b: cnp.inner(a, b), np.inner, (U(2, 3, 4), U(5, 4)), note="N-D"),
    case("outer", lambda a, b: cnp.outer(a, b), np.outer, (U(2, 3), U(2)), note="flattens"),
    case("vdot", lambda a, b: cnp.vdot(a, b), np.vdot, (U(2, 3), U(3, 2)), (U(4), U(4))),
    case("vdot", _parts(lambda a, b: cnp.vdot(a * (1 + 2j), b * (0.5 - 1j))),
         _ref_parts(lambda a, b: np.vdot(a * (1 + 2j), b * (0.5 - 1j))), (U(3), U(3)),
         note="complex conjugates the first"),
    case("vecdot", lambda a, b: cnp.vecdot(a, b), np.vecdot, (U(2, 3), U(3)),
         (U(4, 2, 3), U(2, 3))),
    case("vecdot", lambda a, b: cnp.vecdot(a, b, axis=0),
         lambda a, b: np.vecdot(a, b, axis=0), (U(3, 2), U(3, 2)), note="axis"),
    case("kron", lambda a, b: cnp.kron(a, b), np.kron, (U(2, 3), U(2, 2)), (U(3), U(2, 2)),
         (U(2, 1, 2), U(2, 3)), (U(), U(2))),
    case("cross", lambda a, b: cnp.cross(a, b), np.cross, (U(3), U(3)), (U(4, 3), U(3))),
    case("cross", lambda a, b: cnp.cross(a, b, axisa=0, axisb=0, axisc=0),
         lambda a, b: np.cross(a, b, axisa=0, axisb=0, axisc=0), (U(3, 4), U(3, 4)),
         note="axes"),
    case("cross", _quiet(lambda a, b: cnp.cross(a, b)), _quiet(np.cross), (U(2), U(2)),
         (U(5, 2), U(3)), note="2-vectors"),
    case("diagonal", lambda a: cnp.diagonal(a), np.diagonal, U(3, 4), U(4, 3), U(2, 3, 4)),
    case("diagonal", lambda a: cnp.diagonal(a, 1, 2, 0), lambda a: np.diagonal(a, 1, 2, 0),
         U(3, 2, 4), U(2, 2, 1), note="offset axes"),
    case("diagonal", lambda a: a.diagonal(-1), lambda a: a.diagonal(-1), U(3, 3), note="method"),
    case("make_diagonal", lambda d: cnp.make_diagonal(d), _np_make_diagonal, U(3), U(2, 3),
         U(0)),
    case("make_diagonal", lambda d: cnp.make_diagonal(d, 1, 0, 2),
         lambda d: _np_make_diagonal(d, 1, 0, 2), U(2, 3), U(4, 1), note="offset axes"),
    case("trace", lambda a: cnp.trace(a), np.trace, U(3, 3), U(2, 4), U(2, 3, 4), I(3, 3)),
    case("trace", lambda a: cnp.trace(a, -1, axis1=2, axis2=1),
         lambda a: np.trace(a, -1, axis1=2, axis2=1), U(2, 3, 4), note="offset axes"),
    case("diag", lambda v: cnp.diag(v), np.diag, U(3), U(3, 4), U(0)),
    *[case("diag", (lambda k_: lambda v: cnp.diag(v, k_))(k),
           (lambda k_: lambda v: np.diag(v, k_))(k), U(3), U(4, 3), note=f"k={k}")
      for k in (2, -1)],
    *[case(n, (lambda f, k_: lambda m: f(m, k_))(getattr(cnp, n), k),
           (lambda f, k_: lambda m: f(m, k_))(getattr(np, n), k), U(3, 4), U(2, 3, 3), U(3),
           I(2, 2), note=f"k={k}") for n in ("tril", "triu") for k in (0, 1, -2)],
    case("matrix_transpose", lambda x: cnp.matrix_transpose(x), np.matrix_transpose, U(2, 3),
         U(2, 3, 4)),
    # -- numpy.linalg: solvers and inverses -------------------------------------------------
    case("linalg.solve", lambda a, b: cla.solve(a, b), np.linalg.solve, (W(3, 3), U(3)),
         (W(3, 3), U(3, 2)), (W(2, 3, 3), U(2, 3, 2)), (W(2, 3, 3), U(3)), (W(2, 3, 3), U(3, 1)),
         (np.array([[4, 1], [2, 5]]), I(2)), (U(0, 0), U(0, 2)), grad_sets=4),
    case("linalg.inv", lambda a: cla.inv(a), np.linalg.inv, W(3, 3), W(2, 2, 2), U(0, 0)),
    *[case("linalg.matrix_power", (lambda k_: lambda a: cla.matrix_power(a, k_))(k),
           (lambda k_: lambda a: np.linalg.matrix_power(a, k_))(k), W(3, 3), W(2, 2, 2),
           note=f"n={k}", tape=k != 0) for k in (0, 1, 5, -2)],
    case("linalg.det", lambda a: cla.det(a), np.linalg.det, W(3, 3), W(2, 3, 3), U(1, 1),
         U(0, 0), grad_sets=2),
    case("linalg.det", lambda a: cla.det(a), np.linalg.det, _SINGULAR, order=1,
         note="singular"),
    case("linalg.adjugate", lambda a: cla.adjugate(a),
         lambda a: np.linalg.det(a)[..., None, None] * np.linalg.inv(a), W(3, 3), W(2, 2, 2),
         U(1, 1), grad_sets=2),
    case("linalg.adjugate", lambda a: cla.adjugate(a),
         lambda a: np.array([[-1.0, 3.0], [2.0, 1.0]]), np.array([[1.0, -3.0], [-2.0, -1.0]]),
         grad=False, note="2x2"),
    case("linalg.slogdet", lambda a: cla.slogdet(a), np.linalg.slogdet, W(3, 3), W(2, 3, 3),
         -W(3, 3)),
    case("linalg.cholesky", lambda a: cla.cholesky(a), np.linalg.cholesky, SPD(3, 3),
         SPD(2, 3, 3), U(0, 0)),
    case("linalg.cholesky", lambda a: cla.cholesky(a + _UPPER_NOISE),
         lambda a: np.linalg.cholesky(a + _UPPER_NOISE), SPD(3, 3),
         note="reads the lower triangle"),
    case("linalg.cholesky", lambda a: cla.cholesky(a, upper=True),
         lambda a: np.linalg.cholesky(a, upper=True), SPD(3, 3), note="upper"),
    # -- decompositions ----------------------------------------------------------------------
    case("linalg.qr", lambda a: cla.qr(a), np.linalg.qr, U(4, 3), U(3, 3), U(2, 4, 2)),
    case("linalg.qr", lambda a: cla.qr(a, "r"), lambda a: np.linalg.qr(a, "r"), U(4, 3),
         U(2, 3, 3), note="r"),
    case("linalg.qr", lambda a: cla.qr(a, "complete"), lambda a: np.linalg.qr(a, "complete"),
         U(3, 3), U(3, 5), grad_sets=1, note="complete"),
    case("linalg.eigh", lambda a: cla.eigh(a), np.linalg.eigh, U(3, 3), U(2, 4, 4)),
    case("linalg.eigh", lambda a: cla.eigh(a, UPLO=_UP), lambda a: np.linalg.eigh(a, UPLO=_UP),
         U(3, 3), note="UPLO=U"),
    case("linalg.eigvalsh", lambda a: cla.eigvalsh(a), np.linalg.eigvalsh, U(3, 3), U(2, 4, 4)),
    case("linalg.eig", lambda a: (cnp.real(cla.eig(a)[0]), cnp.imag(cla.eig(a)[0]),
                                  cnp.abs(cla.eig(a)[1]) ** 2), _eig_ref, U(3, 3), U(2, 4, 4)),
    case("linalg.eig", _parts(lambda a: _phase_free(cla.eig(a)[1], cnp.conj)),
         _ref_parts(lambda a: _phase_free(np.linalg.eig(a)[1], np.conj)), U(4, 4), U(3, 3),
         grad_sets=2, note="eigenvectors"),
    case("linalg.eigvals", _parts(lambda a: cla.eigvals(a)), _ref_parts(np.linalg.eigvals),
         U(3, 3), U(2, 4, 4)),
    case("linalg.svd", lambda a: cla.svd(a, full_matrices=False),
         lambda a: np.linalg.svd(a, full_matrices=False), U(4, 3), U(3, 4), U(2, 3, 3),
         grad_sets=3),
    case("linalg.svd", lambda a: cla.svd(a), np.linalg.svd, U(3, 3), U(4, 2), grad_sets=1,
         note="full_matrices"),
    case("linalg.svd", lambda a: cla.svd(a, compute_uv=False),
         lambda a: np.linalg.svd(a, compute_uv=False), U(4, 3), U(2, 3, 5), note="values"),
    case("linalg.svd", lambda a: cla.svd(a + a.T, hermitian=True),
         lambda a: np.linalg.svd(a + a.T, hermitian=True), U(3, 3), note="hermitian"),
    case("linalg.svdvals", lambda a: cla.svdvals(a), np.linalg.svdvals, U(4, 3), U(2, 2, 3)),
    case("linalg.pinv", lambda a: cla.pinv(a), np.linalg.pinv, U(4, 3), U(2, 3), U(2, 3, 3)),
    case("linalg.pinv", lambda a: cla.pinv(a, rtol=None), lambda a: np.linalg.pinv(
        a, rtol=None), _RANK1, grad=False, note="rank deficient"),
    case("linalg.pinv", lambda a: cla.pinv(a + a.T, hermitian=True),
         lambda a: np.linalg.pinv(a + a.T, hermitian=True), U(3, 3), note="hermitian"),
    case("linalg.matrix_rank", lambda a: cla.matrix_rank(a), np.linalg.matrix_rank, U(4, 3),
         _RANK1, U(2, 3, 3), U(3), grad=False),
    case("linalg.matrix_rank", lambda a: cla.matrix_rank(a, tol=0.5),
         lambda a: np.linalg.matrix_rank(a, tol=0.5), U(4, 3), grad=False, note="tol"),
    case("linalg.lstsq", lambda a, b: cla.lstsq(a, b), np.linalg.lstsq, (U(5, 3), U(5)),
         (U(5, 3), U(5, 2)), (U(3, 4), U(3)), grad_sets=3, tape=False),
    case("linalg.lstsq", lambda a, b: cla.lstsq(a, b, rcond=0.2)[0],
         lambda a, b: np.linalg.lstsq(a, b, rcond=0.2)[0], (_LSTSQ, U(4)), grad=False,
         note="rcond"),
    case("linalg.multi_dot", lambda a, b, c: cla.multi_dot([a, b, c]),
         lambda a, b, c: np.linalg.multi_dot([a, b, c]), (U(2, 5), U(5, 3), U(3, 4)),
         (U(5), U(5, 3), U(3)), (U(5), U(5, 3), U(3, 2))),
    case("linalg.multi_dot", lambda a, b: cla.multi_dot([a, b]),
         lambda a, b: np.linalg.multi_dot([a, b]), (U(2, 3), U(3)), note="two"),
    case("linalg.tensorsolve", lambda a, b: cla.tensorsolve(a, b),
         np.linalg.tensorsolve, (W(6, 6).reshape(2, 3, 6), U(2, 3))),
    case("linalg.tensorsolve", lambda a, b: cla.tensorsolve(a, b, axes=(0,)),
         lambda a, b: np.linalg.tensorsolve(a, b, axes=(0,)),
         (W(4, 4).reshape(2, 2, 2, 2), U(2, 2)), note="axes"),
    case("linalg.tensorinv", lambda a: cla.tensorinv(a), np.linalg.tensorinv,
         W(6, 6).reshape(2, 3, 6)),
    case("linalg.tensorinv", lambda a: cla.tensorinv(a, ind=1),
         lambda a: np.linalg.tensorinv(a, ind=1), W(4, 4).reshape(4, 2, 2), note="ind=1"),
    *[case("linalg.cond", (lambda p_: lambda a: cla.cond(a, p_))(p),
           (lambda p_: lambda a: np.linalg.cond(a, p_))(p), W(3, 3), W(2, 3, 3), note=f"p={p}")
      for p in (None, -2, "fro", 1, np.inf)],
    # -- norms -----------------------------------------------------------------------------------
    case("linalg.norm", lambda x: cla.norm(x), np.linalg.norm, U(3, 4), U(5), U(2, 3, 4), U()),
    *[case("linalg.norm", (lambda o_: lambda x: cla.norm(x, ord=o_, axis=-1))(o),
           (lambda o_: lambda x: np.linalg.norm(x, ord=o_, axis=-1))(o), U(3, 4), U(5),
           note=f"vector ord={o}") for o in (None, np.inf, -np.inf, 1, 2, 3, 0.5)],
    case("linalg.norm", lambda x: cla.norm(x, 0, axis=0), lambda x: np.linalg.norm(x, 0, axis=0),
         np.array([[1.0, 0.0], [0.0, 0.0], [2.0, -1.0]]), grad=False, note="vector ord=0"),
    *[case("linalg.norm", (lambda o_: lambda x: cla.norm(x, ord=o_))(o),
           (lambda o_: lambda x: np.linalg.norm(x, ord=o_))(o), U(3, 4), U(4, 3), note=f"ord={o}")
      for o in ("fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2)],
    *[case("linalg.norm", (lambda o_: lambda x: cla.norm(x, ord=o_, axis=(2, 0), keepdims=True))(o),
           (lambda o_: lambda x: np.linalg.norm(x, ord=o_, axis=(2, 0), keepdims=True))(o),
           U(3, 2, 4), note=f"axes keepdims ord={o}") for o in (None, "nuc", 1, -np.inf, 2)],
    case("linalg.norm", lambda x: cla.norm(x, keepdims=True, axis=1),
         lambda x: np.linalg.norm(x, keepdims=True, axis=1), U(3, 4), note="keepdims"),
    case("linalg.norm", lambda x: cla.norm(x * (1 - 2j), axis=0),
         lambda x: np.linalg.norm(x * (1 - 2j), axis=0), U(3, 4), note="complex"),
    case("linalg.norm", lambda x, y: cla.norm(x - y), lambda x, y: np.linalg.norm(x - y),
         (U(3, 4), U(4)), note="a - b"),
    case("linalg.vector_norm", lambda x: cla.vector_norm(x), np.linalg.vector_norm, U(3, 4),
         U(2, 3, 2)),
    case("linalg.vector_norm", lambda x: cla.vector_norm(x, axis=(0, 2), keepdims=True, ord=1),
         lambda x: np.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=1), U(3, 2, 4),
         note="axes"),
    case("linalg.matrix_norm", lambda x: cla.matrix_norm(x), np.linalg.matrix_norm, U(3, 4),
         U(2, 3, 2)),
    case("linalg.matrix_norm", lambda x: cla.matrix_norm(x, ord="nuc", keepdims=True),
         lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True), U(2, 3, 4), note="nuc"),
    # -- the array API's linalg functions ---------------------------------------------------------
    case("linalg.matmul", lambda a, b: cla.matmul(a, b), np.linalg.matmul, (U(2, 3), U(3, 4))),
    case("linalg.outer", lambda a, b: cla.outer(a, b), np.linalg.outer, (U(3), U(2))),
    case("linalg.cross", lambda a, b: cla.cross(a, b), np.linalg.cross, (U(2, 3), U(3))),
    case("linalg.tensordot", lambda a, b: cla.tensordot(a, b, axes=1),
         lambda a, b: np.linalg.tensordot(a, b, axes=1), (U(2, 3), U(3, 4))),
    case("linalg.trace", lambda a: cla.trace(a, offset=1), lambda a: np.linalg.trace(
        a, offset=1), U(2, 3, 3), U(3, 4)),
    case("linalg.diagonal", lambda a: cla.diagonal(a), np.linalg.diagonal, U(2, 3, 4)),
    case("linalg.vecdot", lambda a, b: cla.vecdot(a, b), np.linalg.vecdot, (U(2, 3), U(3))),
    case("linalg.matrix_transpose", lambda a: cla.matrix_transpose(a),
         np.linalg.matrix_transpose, U(2, 3, 4)),
    # -- scipy.linalg --------------------------------------------------------------------------
    *[case("scipy.linalg.solve_triangular",
           (lambda kw_: lambda a, b: csl.solve_triangular(a, b, **kw_))(kw),
           (lambda kw_: lambda a, b: sl.solve_triangular(a, b, **kw_))(kw),
           (W(3, 3), U(3, 2)), (W(3, 3), U(3)), note=str(kw))
      for kw in ({}, {"lower": True}, {"trans": 1}, {"trans": "C", "lower": True},
                 {"unit_diagonal": True}, {"lower": True, "trans": "T", "unit_diagonal": True})],
    case("scipy.linalg.solve_triangular", lambda a, b: csl.solve_triangular(a, b, lower=True),
         lambda a, b: sl.solve_triangular(a, b, lower=True), (W(2, 3, 3), U(2, 3, 2)),
         note="batched"),
    case("scipy.linalg.cholesky", lambda a: csl.cholesky(a), sl.cholesky, SPD(3, 3),
         SPD(2, 3, 3)),
    case("scipy.linalg.cholesky", lambda a: csl.cholesky(a, lower=True),
         lambda a: sl.cholesky(a, lower=True), SPD(3, 3), note="lower"),
    *[case("scipy.linalg.cho_factor", (lambda lo_: lambda a: csl.cho_factor(a, lower=lo_)[0])(lo),
           (lambda lo_: lambda a: sl.cho_factor(a, lower=lo_)[0])(lo), SPD(3, 3),
           note=f"lower={lo}") for lo in (False, True)],
    *[case("scipy.linalg.cho_solve",
           (lambda lo_: lambda a, b: csl.cho_solve(csl.cho_factor(a, lower=lo_), b))(lo),
           (lambda lo_: lambda a, b: sl.cho_solve(sl.cho_factor(a, lower=lo_), b))(lo),
           (SPD(3, 3), U(3)), (SPD(3, 3), U(3, 2)), note=f"lower={lo}") for lo in (False, True)],
    *[case("scipy.linalg.solve", (lambda kw_: lambda a, b: csl.solve(a, b, **kw_))(kw),
           (lambda kw_: lambda a, b: sl.solve(a, b, **kw_))(kw), (W(3, 3), U(3)),
           (W(3, 3), U(3, 2)), note=str(kw))
      for kw in ({}, {"assume_a": "sym"}, {"assume_a": "her", "lower": True},
                 {"assume_a": "pos"}, {"assume_a": "pos", "lower": True},
                 {"assume_a": "diagonal"}, {"assume_a": "tridiagonal"},
                 {"assume_a": "banded"}, {"assume_a": "upper triangular"},
                 {"assume_a": "lower triangular"}, {"transposed": True})],
    case("scipy.linalg.solve", lambda a, b: csl.solve(a, b), sl.solve, (W(2, 3, 3), U(2, 3, 2)),
         note="batched"),
    case("scipy.linalg.inv", lambda a: csl.inv(a), sl.inv, W(3, 3), W(2, 2, 2)),
    case("scipy.linalg.inv", lambda a: csl.inv(a, assume_a="pos"),
         lambda a: sl.inv(a, assume_a="pos"), SPD(3, 3), note="pos"),
    case("scipy.linalg.det", lambda a: csl.det(a), sl.det, W(3, 3), W(2, 3, 3)),
    case("scipy.linalg.eigh", lambda a: _sign_free(csl.eigh(a)), lambda a: _sign_free(
        sl.eigh(a)), U(3, 3)),
    case("scipy.linalg.eigh", lambda a: csl.eigh(a, lower=False, eigvals_only=True),
         lambda a: sl.eigh(a, lower=False, eigvals_only=True), U(4, 4), note="values upper"),
    case("scipy.linalg.eigh", lambda a, b: _sign_free(csl.eigh(a, b)),
         lambda a, b: _sign_free(sl.eigh(a, b)), (U(3, 3), SPD(3, 3)), note="generalized"),
    case("scipy.linalg.eigh", lambda a: _sign_free(csl.eigh(a, subset_by_index=(1, 2))),
         lambda a: _sign_free(sl.eigh(a, subset_by_index=(1, 2))), U(4, 4), note="subset"),
    case("scipy.linalg.eigvalsh", lambda a: csl.eigvalsh(a), sl.eigvalsh, U(3, 3)),
    case("scipy.linalg.eigvalsh", lambda a, b: csl.eigvalsh(a, b), sl.eigvalsh,
         (U(3, 3), SPD(3, 3)), note="generalized"),
    case("scipy.linalg.expm", lambda a: csl.expm(a), sl.expm, U(3, 3), U(2, 2, 2), U(1, 1)),
]

