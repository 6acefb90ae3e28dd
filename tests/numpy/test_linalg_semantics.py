"""Linear algebra the way programs use it: model code written with einsum, norms of
differences, Gaussian log-likelihoods through cholesky + solve_triangular, log-det of a
covariance, an eigh-based PCA loss, the nuclear norm; batched inputs; complex inputs
(JAX's convention, checked against differences on real and imaginary parts); and the
errors and the policy at repeated eigenvalues."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_directional, fd_grad

import chainrule as cr
import chainrule.numpy as cnp
import chainrule.scipy.linalg as csl
from chainrule import tape
from chainrule.errors import ChainruleError, NoRuleError, TypeInferenceError
from chainrule.testing import check_grads

la = cnp.linalg
rng = np.random.default_rng(23)


def U(*shape):
    return rng.uniform(-1, 1, shape)


def SPD(n, batch=()):
    m = rng.uniform(-1, 1, batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def Z(*shape):
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def _all_routes(f, args, order=2):
    """Finite differences in both modes to ``order``, and the tape equals the compiler."""
    check_grads(f, args, order=order, modes=("fwd", "rev"))
    want = cr.grad(f, argnums=tuple(range(len(args))))(*args)
    ts = [tape.tensor(a, requires_grad=True) for a in args]
    f(*ts).backward()
    for t, w in zip(ts, want):
        np.testing.assert_allclose(t.grad, w, rtol=1e-9, atol=1e-11)


# -- programs ------------------------------------------------------------------------------
def attention(q, k, v, w):
    """One attention head written with einsum (batch b, heads h, positions i/j, dim d)."""
    scores = cnp.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(q.shape[-1])
    weights = cnp.softmax(scores, axis=-1)
    out = cnp.einsum("bhij,bhjd->bhid", weights, v)
    return cnp.sum(cnp.tanh(cnp.einsum("bhid,hde->bie", out, w)))


def test_einsum_model():
    args = (U(2, 2, 3, 4), U(2, 2, 3, 4), U(2, 2, 3, 4), U(2, 4, 5))
    _all_routes(attention, args)
    m = cr.trace(attention, *args)
    assert "matmul" in str(m) and "einsum" not in str(m)  # contractions are matmuls


def test_norm_of_difference():
    f = lambda a, b: la.norm(a - b) + la.norm(a - b, ord=1, axis=0).sum()  # noqa: E731
    _all_routes(f, (U(3, 4), U(4)))


def gaussian_loglik(x, mean, cov):
    """log N(x | mean, cov) for the rows of x, via the Cholesky factor."""
    chol = la.cholesky(cov)
    z = csl.solve_triangular(chol, (x - mean).T, lower=True)
    logdet = 2 * cnp.sum(cnp.log(cnp.diagonal(chol)))
    d = x.shape[-1]
    return -0.5 * cnp.sum(z * z) - x.shape[0] * 0.5 * (logdet + d * np.log(2 * np.pi))


def test_gaussian_log_likelihood():
    x, mean, cov = U(5, 3), U(3), SPD(3)
    want = sum(__import__("scipy").stats.multivariate_normal.logpdf(r, mean, cov) for r in x)
    np.testing.assert_allclose(gaussian_loglik(x, mean, cov), want, rtol=1e-10)
    np.testing.assert_allclose(cr.jit(gaussian_loglik)(x, mean, cov), want, rtol=1e-10)
    _all_routes(gaussian_loglik, (x, mean, cov))


def test_logdet_of_covariance():
    def f(w):
        cov = w @ w.T + np.eye(3)
        sign, logdet = la.slogdet(cov)
        return logdet + la.det(cov) * 0.1

    _all_routes(f, (U(3, 4),))
    w = U(3, 4)
    cov = w @ w.T + np.eye(3)
    np.testing.assert_allclose(cr.grad(lambda c: la.slogdet(c)[1])(cov), np.linalg.inv(cov).T)


def pca_loss(x):
    """Variance captured by the top 2 principal directions, and a reconstruction error."""
    xc = x - cnp.mean(x, axis=0)
    cov = xc.T @ xc / x.shape[0]
    w, v = la.eigh(cov)
    top = v[:, -2:]
    recon = xc @ top @ top.T
    return cnp.sum(w[-2:]) + cnp.sum((xc - recon) ** 2)


def test_eigh_pca():
    _all_routes(pca_loss, (U(6, 4),))


def test_nuclear_norm():
    f = lambda a: la.norm(a, "nuc") + cnp.sum(la.svd(a, full_matrices=False)[1] ** 2)  # noqa: E731
    _all_routes(f, (U(4, 3),))
    a = U(3, 5)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(cr.grad(lambda a: la.norm(a, "nuc"))(a), u @ vh, atol=1e-12)


def test_matrix_functions_in_a_program():
    def f(a, b):
        x = la.solve(a, b)
        return cnp.sum(csl.expm(0.1 * a) * x[:, :1]) + cnp.sum(la.inv(a) ** 2) + cnp.sum(
            la.pinv(b))

    _all_routes(f, (U(3, 3) + 3 * np.eye(3), U(3, 2)))


def test_batched_inputs():
    a, b = U(2, 3, 3, 3) + 3 * np.eye(3), U(3, 2)
    f = lambda a, b: cnp.sum(la.solve(a, b) ** 2) + cnp.sum(la.slogdet(a)[1])  # noqa: E731
    np.testing.assert_allclose(cr.jit(f)(a, b), np.sum(np.linalg.solve(a, b) ** 2)
                               + np.sum(np.linalg.slogdet(a)[1]))
    _all_routes(f, (a, b))
    g = lambda a: cnp.sum(la.eigvalsh(a) ** 2) + cnp.sum(la.svd(a, compute_uv=False))  # noqa: E731
    _all_routes(g, (U(2, 3, 3),))
    h = lambda s: cnp.sum(la.cholesky(s) ** 3)  # noqa: E731
    _all_routes(h, (SPD(3, (2,)),))


def test_linearize_and_transpose_agree_with_reverse_mode():
    a, b = U(3, 3) + 3 * np.eye(3), U(3, 2)
    f = lambda a, b: csl.solve_triangular(a, la.solve(a, b), lower=True)  # noqa: E731
    out, f_jvp = cr.linearize(f, a, b)
    ta, tb = U(3, 3), U(3, 2)
    _, want = cr.jvp(f, (a, b), (ta, tb))
    np.testing.assert_allclose(f_jvp(ta, tb), want, rtol=1e-10)
    ct = U(3, 2)
    via = cr.jvp_via_vjp(f, (a, b), (ta, tb))[1] if hasattr(cr, "jvp_via_vjp") else want
    np.testing.assert_allclose(via, want, rtol=1e-10)
    ga, gb = cr.vjp(f, a, b)[1](ct)
    np.testing.assert_allclose(np.sum(ga * ta) + np.sum(gb * tb), np.sum(ct * want), rtol=1e-10)


# -- complex inputs: JAX's convention ---------------------------------------------------------
def _real_loss(f, weights):
    def loss(*args):
        outs = f(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        total = 0.0
        for o, w in zip(outs, weights):
            total = total + cnp.sum(cnp.real(o * w))
        return total

    return loss


COMPLEX = {
    "solve": (lambda a, b: la.solve(a, b), (Z(3, 3) + 3 * np.eye(3), Z(3, 2))),
    "inv": (lambda a: la.inv(a), (Z(3, 3) + 2 * np.eye(3),)),
    "det": (lambda a: la.det(a), (Z(3, 3),)),
    "slogdet": (lambda a: la.slogdet(a), (Z(3, 3) + np.eye(3),)),
    "eigvals": (lambda a: la.eigvals(a), (Z(3, 3),)),
    "eig": (lambda a: (la.eig(a)[0], la.eig(a)[1] * cnp.conj(la.eig(a)[1][:1, :])), (Z(3, 3),)),
    "svdvals": (lambda a: la.svd(a, compute_uv=False), (Z(3, 2),)),
    "svd": (lambda a: _svd_invariants(*la.svd(a, full_matrices=False)), (Z(3, 2),)),
    "svd_wide": (lambda a: _svd_invariants(*la.svd(a, full_matrices=False)), (Z(2, 3),)),
    "cholesky": (lambda a: la.cholesky(a), (np.eye(3) * 3 + Z(3, 3) * 0.3,)),
    "eigh": (lambda a: (la.eigh(a)[0], la.eigh(a)[1] * cnp.conj(la.eigh(a)[1][:1, :])),
             (Z(3, 3),)),
    "qr": (lambda a: la.qr(a), (Z(3, 2),)),
    "expm": (lambda a: csl.expm(a), (Z(2, 2) * 0.5,)),
    "solve_triangular": (lambda a, b: csl.solve_triangular(a, b, trans="C", lower=True),
                         (Z(3, 3) + 3 * np.eye(3), Z(3, 2))),
    "adjugate": (lambda a: la.adjugate(a), (Z(3, 3) + 2 * np.eye(3),)),
    "norm": (lambda a: la.norm(a, "nuc") + la.norm(a), (Z(3, 2),)),
}


def _svd_invariants(u, s, vh):
    """Functions of the complex SVD that do not depend on the singular vectors' phases."""
    return s, (u * s[None, :]) @ vh, u * cnp.conj(u[:1, :])


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_value_and_first_derivatives(name):
    f, args = COMPLEX[name]
    outs = f(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    weights = [rng.standard_normal(np.shape(o)) + 1j * rng.standard_normal(np.shape(o))
               for o in outs]
    loss = _real_loss(f, weights)
    grads = cr.grad(loss, argnums=tuple(range(len(args))))(*args)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, fd_grad(loss, args, i), rtol=1e-5, atol=1e-6)
    tangents = tuple(Z(*a.shape) for a in args)
    _, t_out = cr.jvp(loss, args, tangents)
    fd = float(fd_directional(loss, args, tangents))
    assert abs(float(t_out) - fd) < 1e-5 * max(1.0, abs(fd))
    ts = [tape.tensor(a, requires_grad=True) for a in args]
    loss(*ts).backward()
    for t, g in zip(ts, grads):
        np.testing.assert_allclose(t.grad, g, rtol=1e-9, atol=1e-11)


def test_complex_values_match_numpy():
    a, b = Z(3, 3) + 3 * np.eye(3), Z(3)
    np.testing.assert_allclose(cr.jit(la.solve)(a, b), np.linalg.solve(a, b))
    np.testing.assert_allclose(cr.jit(la.det)(a), np.linalg.det(a))
    np.testing.assert_allclose(cr.jit(lambda a: la.eig(a)[1])(a), np.linalg.eig(a)[1])
    np.testing.assert_allclose(cr.jit(lambda a: la.svd(a)[1])(a), np.linalg.svd(a)[1])
    np.testing.assert_allclose(cr.jit(la.adjugate)(a), np.linalg.det(a) * np.linalg.inv(a))


def test_holomorphic_vjp_is_a_transpose():
    """For holomorphic maps the VJP applies the transpose, not the adjoint: the pullback of
    inv at a cotangent c is -a^-T c a^-T."""
    a, c = Z(3, 3) + 2 * np.eye(3), Z(3, 3)
    inv_a = np.linalg.inv(a)
    np.testing.assert_allclose(cr.vjp(la.inv, a)[1](c)[0], -inv_a.T @ c @ inv_a.T)


# -- determinants at singular matrices ---------------------------------------------------------
def test_det_derivative_is_the_cofactor_matrix_also_when_singular():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    cof = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(cr.grad(la.det)(a), cof, atol=1e-12)
    np.testing.assert_allclose(cr.jvp(la.det, (a,), (np.eye(3),))[1], np.trace(cof.T),
                               atol=1e-12)


# -- repeated eigenvalues and singular values ----------------------------------------------------
def test_eigenvalue_gradients_at_repeated_eigenvalues_are_finite():
    a = np.eye(3) * 2.0
    np.testing.assert_allclose(cr.grad(lambda a: cnp.sum(la.eigvalsh(a)))(a), np.eye(3))
    # eigh with its eigenvectors unused: their cotangent is zero, so no NaN
    np.testing.assert_allclose(cr.grad(lambda a: cnp.sum(la.eigh(a)[0] ** 2))(a), 4 * np.eye(3))
    # a loss invariant to rotations inside the eigenspace: the projector onto it
    b = np.diag([1.0, 1.0, 3.0])
    g = cr.grad(lambda a: cnp.sum((la.eigh(a)[1][:, 2:] @ la.eigh(a)[1][:, 2:].T) * b))(b)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(cr.grad(lambda a: cnp.sum(la.svd(a, compute_uv=False)))(
        np.eye(2)), np.eye(2))


def test_eigenvector_gradient_at_repeated_eigenvalues_is_nan_not_wrong():
    a = np.diag([1.0, 1.0, 3.0])
    # v00 v10 changes at first order when the basis of the repeated eigenspace rotates
    g = cr.grad(lambda a: la.eigh(a)[1][0, 0] * la.eigh(a)[1][1, 0])(a)
    assert np.isnan(g).any()
    _, t = cr.jvp(lambda a: la.eigh(a)[1], (a,), (U(3, 3),))
    assert np.isnan(t).any()


# -- errors ------------------------------------------------------------------------------------
def test_shape_errors_name_the_op_and_shapes():
    with pytest.raises(np.linalg.LinAlgError, match=r"solve: a must be square.*f64\[2, 3\]"):
        la.solve(U(2, 3), U(2))  # on arrays: NumPy's error class too
    with pytest.raises(TypeInferenceError, match=r"solve: a must be square.*f64\[2, 3\]"):
        cr.jit(la.solve)(U(2, 3), U(2))
    with pytest.raises(TypeInferenceError, match=r"solve: b must have 3 rows"):
        cr.jit(la.solve)(U(3, 3), U(2, 1))
    with pytest.raises(TypeInferenceError, match="cholesky: a must be square"):
        cr.grad(lambda a: cnp.sum(la.cholesky(a)))(U(2, 3))
    with pytest.raises(ChainruleError, match="eigh: a must be a matrix"):
        cr.jit(la.eigh)(U(3))
    with pytest.raises(ValueError, match=r"tensordot: shape-mismatch.*axis 1 has 3"):
        cr.jit(lambda a, b: cnp.tensordot(a, b, 1))(U(2, 3), U(2, 2))
    with pytest.raises(ValueError, match="einsum 'ij,jk' on shapes"):
        cr.jit(lambda a, b: cnp.einsum("ij,jk", a, b))(U(2, 3), U(2, 2))
    with pytest.raises(ValueError, match="UPLO"):
        cr.jit(lambda a: la.eigh(a, UPLO="X"))(U(2, 2))
    with pytest.raises(ValueError, match="Invalid norm order"):
        cr.jit(lambda a: la.norm(a, "nuc", axis=0))(U(2, 2))


def test_singular_matrix_is_a_clear_error():
    with pytest.raises(ChainruleError, match="solve.*[Ss]ingular"):
        cr.jit(la.inv)(np.ones((2, 2)))


def test_undefined_derivatives_are_errors_not_zeros():
    with pytest.raises(NoRuleError, match="full_matrices=True"):
        cr.grad(lambda a: cnp.sum(la.svd(a)[0]))(U(3, 2))
    with pytest.raises(NoRuleError, match="wide matrix"):
        cr.grad(lambda a: cnp.sum(la.qr(a)[1]))(U(2, 3))
    with pytest.raises(NoRuleError, match="mode='complete'"):
        cr.grad(lambda a: cnp.sum(la.qr(a, "complete")[0]))(U(3, 2))
    # square full SVDs are differentiable (the reduced and full factors coincide)
    check_grads(lambda a: la.svd(a)[0] ** 3, (U(3, 3),), order=1, modes=("fwd", "rev"))


def test_matrix_rank_is_an_integer_without_derivative():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])
    assert int(cr.jit(la.matrix_rank)(a)) == 1
    f = lambda a: la.norm(a) * la.matrix_rank(a)  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(a), a / np.linalg.norm(a))


def test_eig_is_complex_also_for_real_spectra():
    w = cr.jit(la.eigvals)(np.diag([1.0, 2.0]))
    assert w.dtype == np.complex128
    np.testing.assert_allclose(w, [1.0, 2.0])


def test_lstsq_on_traced_values():
    a, b = U(5, 3), U(5, 2)
    x, res, rank, s = cr.jit(la.lstsq)(a, b)
    want = np.linalg.lstsq(a, b)
    for got, w in zip((x, res, rank, s), want):
        np.testing.assert_allclose(got, w, rtol=1e-10)
    check_grads(lambda a, b: la.lstsq(a, b)[0], (a, b), order=2, modes=("fwd", "rev"))


def test_pinv_derivative_where_rcond_truncates_is_nan():
    a = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.1], [0.3, 0.2, 0.05]])
    g = cr.grad(lambda a: cnp.sum(la.pinv(a, rcond=0.2)))(a)
    assert np.isnan(g).all()
    # an exactly rank-deficient matrix loses nothing: a finite derivative (constant rank)
    r = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])
    assert np.isfinite(cr.grad(lambda a: cnp.sum(la.pinv(a, rtol=None)))(r)).all()


def test_numpy_functions_on_traced_values_route_here():
    x = U(3, 3)
    f = lambda x: np.trace(x) + np.einsum("ii", x) + np.sum(np.diagonal(x)) + np.sum(np.tril(x))  # noqa: E731
    np.testing.assert_allclose(cr.jit(f)(x), f(x))
    np.testing.assert_allclose(cr.grad(f)(x), 3 * np.eye(3) + np.tri(3))


def test_complex_gradients_equal_jax_when_installed():
    """The same real losses of complex matrices differentiated by JAX (skipped without it)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    w, a = Z(3, 3), Z(3, 3) + 3 * np.eye(3)
    losses = [
        lambda m, a: m.real(m.sum(m.linalg.solve(a, w[:, :2]) * w[:, 1:])),
        lambda m, a: m.real(m.sum(m.linalg.inv(a) * w)),
        lambda m, a: m.real(m.linalg.det(a) * (1 + 2j)),
        lambda m, a: m.real(m.linalg.slogdet(a)[0] * (0.3 - 1j)) + m.linalg.slogdet(a)[1],
        lambda m, a: m.real(m.sum(m.linalg.eigvals(a) * w[0])),
        lambda m, a: m.sum(m.linalg.svd(a, compute_uv=False) * np.arange(3.0)),
        lambda m, a: m.real(m.sum(m.linalg.cholesky(a @ a.conj().T + 3 * np.eye(3)) * w)),
        lambda m, a: m.sum(m.linalg.eigh(a + a.conj().T)[0] * np.arange(3.0)),
        lambda m, a: m.real(m.sum(m.linalg.qr(a)[0] * w) + m.sum(m.linalg.qr(a)[1] * w.T)),
        lambda m, a: m.real(m.sum(m.linalg.pinv(a) * w)),
        lambda m, a: m.linalg.norm(a, "nuc"),
    ]
    for f in losses:
        want = np.asarray(jax.grad(lambda x, f=f: f(jnp, x))(jnp.asarray(a)))
        np.testing.assert_allclose(cr.grad(lambda x, f=f: f(cnp, x))(a), want, rtol=1e-10,
                                   atol=1e-12)


# -- regressions: array methods named like the tracer's fields, tape create_graph ----------
def test_trace_and_var_methods_of_traced_values_and_tensors():
    from chainrule import tape

    a = np.random.RandomState(3).randn(3, 3)
    assert np.allclose(cr.grad(lambda x: x.trace(offset=1))(a), np.eye(3, k=1))
    assert np.allclose(cr.grad(lambda x: x.var())(a), 2 * (a - a.mean()) / a.size)
    t = tape.tensor(a, requires_grad=True)
    assert np.allclose(t.trace().value(), np.trace(a))
    assert np.allclose(t.var().value(), a.var())


def test_tape_create_graph_through_a_tuple_valued_op_matches_compiled_hvp():
    from chainrule import tape

    rs = np.random.RandomState(0)
    a = rs.randn(3, 3)
    a = a + a.T
    v = rs.randn(3, 3)

    def f(x):
        return (cnp.linalg.eigh(x)[1] ** 3).sum()

    t = tape.tensor(a, requires_grad=True)
    f(t).backward(create_graph=True)
    g = t.grad
    t.grad = None
    (g * v).sum().backward()
    assert np.allclose(np.asarray(t.grad), cr.hvp(f, (a,), (v,)))


def test_a_linalg_error_keeps_its_class_under_tracing():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        cr.grad(lambda x: cnp.linalg.inv(x[:, :2]).sum())(np.ones((3, 3)))
