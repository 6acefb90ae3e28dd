"""Behaviour of the Bessel functions J and Y, erfcinv, rgamma, gammasgn, erf / erfc of
complex numbers, and the matrix equations sqrtm, solve_sylvester, solve_banded: the way
users call them (broadcast orders, 0-d inputs, stacks), their edge cases, their errors,
and the complex derivatives (JAX's convention) against finite differences along the real
and the imaginary directions. The table cases are in tests/cases_bessel.py."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.special as sp
from finite_differences import fd_directional, fd_grad, real_loss

import chainrule as cr
import chainrule.numpy as cnp
import chainrule.scipy.linalg as csl
import chainrule.scipy.special as csp
from chainrule import ops, tape
from chainrule.errors import ChainruleError, NoRuleError, TypeInferenceError
from chainrule.ir import DType, TensorType
from chainrule.ops.linalg import LinAlgError
from chainrule.testing import check_grads

rng = np.random.default_rng(20)


def Z(*shape):
    return rng.uniform(-1.5, 1.5, shape) + 1j * rng.uniform(-1.5, 1.5, shape)


# -- Bessel functions -------------------------------------------------------------------------
def test_jn_broadcasts_an_array_of_orders():
    n, x = np.arange(4)[:, None], np.linspace(0.5, 8.0, 5)
    np.testing.assert_allclose(csp.jn(n, x), sp.jn(n, x), rtol=1e-14)
    # the gradient in x sums the orders' slopes: d/dx sum_n J_n(x) = sum (J_{n-1} - J_{n+1}) / 2
    g = cr.grad(lambda x: cnp.sum(csp.jn(n, x)))(x)
    np.testing.assert_allclose(g, np.sum((sp.jv(n - 1, x) - sp.jv(n + 1, x)) / 2, axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize("name", ["j0", "j1", "y0", "y1"])
def test_zero_dimensional_inputs(name):
    f, ref = getattr(csp, name), getattr(sp, name)
    x = np.float64(2.5)
    assert np.shape(f(x)) == () and f(x) == pytest.approx(ref(x), rel=1e-15)
    assert np.shape(cr.jit(f)(x)) == ()
    eps = 1e-6
    assert cr.grad(f)(x) == pytest.approx((ref(x + eps) - ref(x - eps)) / (2 * eps), rel=1e-8)


def test_derivatives_are_the_recurrences():
    x = np.array([0.0, 0.7, 3.0, 12.0])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(csp.j0(x)))(x), -sp.j1(x), atol=1e-15)
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(csp.j1(x)))(x),
                               (sp.j0(x) - sp.jv(2, x)) / 2, atol=1e-15)
    assert cr.grad(csp.j1)(0.0) == 0.5  # finite at 0 (J0 - J1 / x is 0 / 0 there)
    xp = x[1:]
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(csp.yn(3, x)))(xp),
                               (sp.yn(2, xp) - sp.yn(4, xp)) / 2, rtol=1e-13)


def test_higher_orders_of_jn():
    x = np.array([0.4, 2.0, 7.5])
    check_grads(lambda x: csp.jn(3, x), (x,), order=3, modes=("fwd", "rev"))
    check_grads(lambda x: csp.y1(x), (x,), order=3, modes=("fwd", "rev"))


def test_jn_takes_real_orders_yn_only_integer_ones():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(csp.jn(1.5, x), sp.jv(1.5, x), rtol=1e-15)  # SciPy's jn is jv
    # SciPy's yn truncates a float order (with a warning): refused where the program is built
    for run in (csp.yn, cr.jit(csp.yn)):
        with pytest.raises(TypeInferenceError, match="yn: the order n must be an integer"):
            run(np.array([1.5, 2.0]), x)
    with pytest.raises(TypeInferenceError, match="pass n.astype"):
        csp.yn(2.0, x)
    np.testing.assert_allclose(csp.yn(np.array([1, 2], np.uint8), x), sp.yn([1, 2], x),
                               rtol=1e-15)
    np.testing.assert_allclose(csp.yn(-3, x), sp.yn(-3, x), rtol=1e-15)


def test_the_order_has_no_derivative():
    with pytest.raises(NoRuleError, match="order n"):
        cr.grad(lambda n: csp.jn(n, 2.0))(1.0)
    with pytest.raises(NoRuleError, match="order n"):
        cr.jvp(lambda n: csp.jn(n, 2.0), (1.0,), (1.0,))


# -- erfcinv, rgamma, gammasgn ----------------------------------------------------------------
def test_erfcinv_inverts_erfc_and_its_slope():
    x = np.array([0.1, 1.0, 1.9])
    np.testing.assert_allclose(sp.erfc(csp.erfcinv(x)), x, rtol=1e-14)
    slope = cr.grad(lambda x: cnp.sum(csp.erfcinv(x)))(x)
    np.testing.assert_allclose(slope, -math.sqrt(math.pi) / 2 * np.exp(sp.erfcinv(x) ** 2),
                               rtol=1e-14)
    assert cr.grad(csp.erfcinv)(0.0) == -np.inf


def test_rgamma_is_smooth_through_the_poles_of_gamma():
    poles = np.array([0.0, -1.0, -2.0, -3.0, -6.0])
    slope = cr.grad(lambda x: cnp.sum(csp.rgamma(x)))(poles)
    n = -poles
    np.testing.assert_allclose(slope, (-1.0) ** n * sp.factorial(n), rtol=1e-13)
    # 1 / Gamma(x) = x + gamma_E x^2 + ...: the second derivative at 0 is 2 gamma_E
    assert cr.grad(cr.grad(csp.rgamma))(0.0) == pytest.approx(2 * np.euler_gamma, rel=1e-12)
    check_grads(lambda x: csp.rgamma(x), (np.array([-2.0, -0.5, 0.0, 0.3, 2.5]),), order=2,
                modes=("fwd", "rev"))
    # far out the reflection's sin(pi x) keeps its digits (x is reduced by an even integer)
    x = np.array([-40.3])
    eps = 1e-7
    fd = (sp.rgamma(x + eps) - sp.rgamma(x - eps)) / (2 * eps)
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(csp.rgamma(x)))(x), fd, rtol=1e-6)


def test_gammasgn_has_zero_derivative_and_nan_at_the_poles():
    x = np.array([-2.5, -1.5, 0.5, 3.0])
    np.testing.assert_array_equal(csp.gammasgn(x), [-1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(cr.grad(lambda x: cnp.sum(csp.gammasgn(x) * x))(x),
                                  csp.gammasgn(x))
    assert np.isnan(csp.gammasgn(-1.0)) and csp.gammasgn(-0.0) == -1.0


# -- erf / erfc of complex numbers ------------------------------------------------------------
COMPLEX = {
    "erf": (lambda z: csp.erf(z), (Z(3),)),
    "erfc": (lambda z: csp.erfc(z), (Z(2, 2),)),
    "sqrtm": (lambda a: csl.sqrtm(a), (np.eye(3) * 3 + Z(3, 3) * 0.5,)),
    "solve_sylvester": (lambda a, q: csl.solve_sylvester(a, np.eye(2) * 2.0, q),
                        (np.eye(2) * 3 + Z(2, 2) * 0.5, Z(2, 2))),
}


def _weights(f, args):
    shape = np.shape(f(*args))
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_reverse_mode_along_real_and_imaginary_directions(name):
    f, args = COMPLEX[name]
    loss = real_loss(f, _weights(f, args))
    grads = cr.grad(loss, argnums=tuple(range(len(args))))(*args)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, fd_grad(loss, args, i), rtol=1e-6, atol=1e-7)
    ts = [tape.tensor(a, requires_grad=True) for a in args]
    loss(*ts).backward()
    for t, g in zip(ts, grads):
        np.testing.assert_allclose(t.grad, g, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_forward_mode_and_second_order(name):
    f, args = COMPLEX[name]
    loss = real_loss(f, _weights(f, args))
    tangents = tuple(Z(*np.shape(a)) for a in args)
    _, t_out = cr.jvp(loss, args, tangents)
    fd = float(fd_directional(loss, args, tangents))
    assert float(t_out) == pytest.approx(fd, rel=1e-6, abs=1e-7)
    g = cr.grad(loss)
    loss2 = real_loss(g, _weights(g, args))
    np.testing.assert_allclose(cr.grad(loss2)(*args), fd_grad(loss2, args, 0), rtol=1e-5,
                               atol=1e-6)


def test_erf_is_holomorphic():
    z = np.complex128(0.7 - 1.2j)
    want = 2 / math.sqrt(math.pi) * np.exp(-z * z)
    assert cr.grad(csp.erf, holomorphic=True)(z) == pytest.approx(want, rel=1e-14)
    assert cr.grad(csp.erfc, holomorphic=True)(z) == pytest.approx(-want, rel=1e-14)
    assert cr.vjp(csp.erf, z)[1](np.complex128(1j))[0] == pytest.approx(1j * want, rel=1e-14)
    # real arguments keep their real dtype and clipped derivative
    assert csp.erf(np.float32(0.5)).dtype == np.float32
    assert cr.grad(csp.erf)(1e200) == 0.0


# -- matrix equations -------------------------------------------------------------------------
def test_sqrtm_is_complex_and_squares_back():
    a = np.array([[1.0, 2.0], [3.0, -4.0]])  # a negative eigenvalue: a complex root
    s = csl.sqrtm(a)
    assert s.dtype == np.complex128
    np.testing.assert_allclose(s @ s, a, atol=1e-12)
    np.testing.assert_allclose(s, sl.sqrtm(a), rtol=1e-12)
    assert csl.sqrtm(np.eye(2, dtype=np.float32)).dtype == np.complex64
    stack = np.stack([a + 6 * np.eye(2), np.eye(2) * 4])
    np.testing.assert_allclose(cr.jit(csl.sqrtm)(stack),
                               [sl.sqrtm(stack[0]), 2 * np.eye(2)], rtol=1e-12)
    with pytest.raises(ChainruleError, match="disp=False"):
        csl.sqrtm(a, disp=False)
    with pytest.raises(LinAlgError, match="sqrtm: a must be square"):
        csl.sqrtm(np.ones((2, 3)))


def test_sqrtm_gradient_of_a_real_matrix_is_real():
    a = np.array([[2.0, 0.3], [0.1, 1.0]])
    g = cr.grad(lambda a: cnp.sum(cnp.real(csl.sqrtm(a))))(a)
    assert g.dtype == np.float64
    check_grads(lambda a: cnp.real(csl.sqrtm(a)), (a,), order=2, modes=("fwd", "rev"))


def test_solve_sylvester_stacks_and_errors():
    a = rng.standard_normal((2, 3, 3)) + 4 * np.eye(3)
    b = rng.standard_normal((2, 2)) + 4 * np.eye(2)
    q = rng.standard_normal((3, 2))
    x = csl.solve_sylvester(a, b, q)
    np.testing.assert_allclose(a @ x + x @ b, np.broadcast_to(q, (2, 3, 2)), atol=1e-12)
    np.testing.assert_allclose(x[1], sl.solve_sylvester(a[1], b, q), rtol=1e-12)
    with pytest.raises(LinAlgError, match=r"q must be \(\.\.\., 3, 2\)"):
        csl.solve_sylvester(a[0], b, q.T)
    with pytest.raises(LinAlgError, match="b must be square"):
        cr.jit(csl.solve_sylvester)(a[0], np.ones((2, 3)), q)


def _dense(ab, lower, upper):
    n = ab.shape[1]
    a = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            a[i, j] = ab[upper + i - j, j]
    return a


def test_solve_banded_gradient_is_the_dense_one_on_the_band():
    lower, upper, n = 2, 1, 5
    ab = rng.standard_normal((lower + upper + 1, n))
    ab[upper] += 5
    b = rng.standard_normal((n, 2))
    w = rng.standard_normal((n, 2))
    g_ab, g_b = cr.grad(lambda ab, b: cnp.sum(csl.solve_banded((lower, upper), ab, b) * w),
                        argnums=(0, 1))(ab, b)
    a = _dense(ab, lower, upper)
    y = np.linalg.solve(a.T, w)
    np.testing.assert_allclose(g_b, y, rtol=1e-12)
    g_dense = -y @ np.linalg.solve(a, b).T
    np.testing.assert_allclose(g_ab, _dense_to_band(g_dense, lower, upper, ab.shape),
                               rtol=1e-12, atol=1e-14)
    assert g_ab[0, 0] == 0 and g_ab[-1, -1] == 0 and g_ab[-2, -1] == 0  # corners: never read


def _dense_to_band(m, lower, upper, shape):
    out = np.zeros(shape)
    n = shape[1]
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            out[upper + i - j, j] = m[i, j]
    return out


def test_solve_banded_on_the_tape_and_batched():
    ab = rng.standard_normal((3, 4))
    ab[1] += 4
    b = rng.standard_normal(4)
    t_ab, t_b = tape.tensor(ab, requires_grad=True), tape.tensor(b, requires_grad=True)
    cnp.sum(csl.solve_banded((1, 1), t_ab, t_b) ** 2).backward()
    want = cr.grad(lambda ab, b: cnp.sum(csl.solve_banded((1, 1), ab, b) ** 2),
                   argnums=(0, 1))(ab, b)
    np.testing.assert_allclose(t_ab.grad, want[0], rtol=1e-12)
    np.testing.assert_allclose(t_b.grad, want[1], rtol=1e-12)
    rhs = rng.standard_normal((3, 4))
    np.testing.assert_allclose(cr.vmap(lambda r: csl.solve_banded((1, 1), ab, r))(rhs),
                               [sl.solve_banded((1, 1), ab, r) for r in rhs], rtol=1e-12)
    assert "lane" not in str(cr.vmap(lambda r: csl.solve_banded((1, 1), ab, r)).module(rhs))


def test_solve_banded_errors():
    ab, b = np.ones((3, 4)), np.ones(4)
    with pytest.raises(LinAlgError, match=r"ab must be \(4, n\) for \(l, u\) = \(2, 1\)"):
        csl.solve_banded((2, 1), ab, b)
    with pytest.raises(LinAlgError, match=r"b must be \(4,\) or \(4, k\)"):
        csl.solve_banded((1, 1), ab, np.ones(3))
    with pytest.raises(ChainruleError, match="l_and_u must be a pair"):
        csl.solve_banded(1, ab, b)
    with pytest.raises(LinAlgError, match="lower diagonals must be an int >= 0"):
        csl.solve_banded((-1, 3), ab, b)


# -- dtypes and the optional SciPy ------------------------------------------------------------
UNARY = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "erfcinv", "rgamma", "gammasgn"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_type_rules_predict_the_kernels(dtype):
    x = np.array([0.5, 1.5], dtype) if dtype != np.int64 else np.array([1, 2])
    calls = [(name, (x,)) for name in UNARY]
    calls += [(name, (np.array([0, 2]), x)) for name in ("bessel_jn", "bessel_yn")]
    calls += [("erf", (x.astype(np.complex64),)), ("erfc", (x.astype(np.complex128),))]
    m = np.eye(2, dtype=x.dtype) * 3
    calls += [("sqrtm", (m,)), ("solve_sylvester", (m, m, m)),
              ("solve_banded", (np.ones((1, 2), x.dtype), x))]
    for name, args in calls:
        op = ops.OPS[name]
        _, t = op.type_call([TensorType(a.shape, DType(a.dtype)) for a in args], {})
        out = np.asarray(op(*args))
        assert out.shape == t.shape and out.dtype == t.dtype.numpy, (name, dtype)


def test_kernels_without_scipy_say_how_to_install_it(monkeypatch):
    import chainrule.ops.special as special

    monkeypatch.setattr(special, "_SPECIAL", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # import fails
    for call in (lambda: csp.j0(0.5), lambda: csp.rgamma(0.5),
                 lambda: csl.sqrtm(np.eye(2)), lambda: csl.solve_banded((0, 0), np.ones((1, 2)),
                                                                         np.ones(2))):
        with pytest.raises(ChainruleError, match=r"pip install chainrule\[scipy\]"):
            call()


def test_solve_sylvester_with_complex_a_and_real_b_solves_the_equation():
    """SciPy 1.17's solve_sylvester(complex a, real b, q) misses for some inputs (its
    residual is O(1)); chainrule promotes b first, and its X solves a X + X b = q."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
        b = rng.standard_normal((2, 2))
        q = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
        x = np.asarray(csl.solve_sylvester(a, b, q))
        np.testing.assert_allclose(a @ x + x @ b, q, atol=1e-10)
