"""Regression tests of the numerics audit (docs/numerics.md): each hazard fixed there (a
derivative that cancelled, overflowed or turned a 0 into NaN) at its problem point,
against a reference computed with mpmath at 50 digits (or an exact value), in reverse
and forward mode, compiled and on the tape (its eager first backward and its compiled
pullback), at order 2 where the hazard was there."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import chainrule as cr
import chainrule.numpy as cnp
import chainrule.scipy.special as csp
import chainrule.scipy.stats as cst
from chainrule import tape
from chainrule.tape.graph import grad_tensors


# -- derivatives of a scalar function of one array, by every route -------------------------
def _rev(f, order):
    for _ in range(order):
        f = cr.grad(f)
    return f


def _fwd(f, order):
    """order-th derivative by nested jvp (a scalar function of a scalar)."""
    for _ in range(order):
        f = (lambda g: (lambda v: cr.jvp(g, (v,), (np.ones_like(v),))[1]))(f)
    return f


def _tape(f, x, order):
    """order-th derivative on the tape (grad_tensors, create_graph below the last)."""
    t = tape.tensor(x, requires_grad=True)
    y = f(t)
    for k in range(order):
        (y,) = grad_tensors(cnp.sum(y) if k else y, [t], create_graph=k < order - 1)
    return np.asarray(y.value() if isinstance(y, tape.Tensor) else y)


def routes(f, x, order=1):
    """{route: the order-th derivative of f at x}: compiled reverse and forward mode, the
    tape's eager first backward and (the same structure again) its compiled pullback."""
    x = np.asarray(x)
    out = {"rev": np.asarray(_rev(f, order)(x))}
    if x.ndim == 0:
        out["fwd"] = np.asarray(_fwd(f, order)(x))
    out["tape"] = _tape(f, x, order)
    out["tape again"] = _tape(f, x, order)
    return out


def assert_routes(f, x, want, order=1, rtol=1e-14, atol=0.0):
    with np.errstate(all="ignore"):
        got = routes(f, x, order)
    for route, value in got.items():
        np.testing.assert_allclose(value, want, rtol=rtol, atol=atol,
                                   err_msg=f"{route}, order {order}")


# -- the two cases: logsumexp at large magnitudes, d/dx x ** 0 -----------------------
@pytest.mark.parametrize("dtype, big", [(np.float64, 1e16), (np.float32, 1e7)])
def test_logsumexp_gradient_at_large_magnitudes(dtype, big):
    x = np.array([big, big], dtype)
    assert_routes(lambda v: csp.logsumexp(v), x, [0.5, 0.5], rtol=0)
    hess = cr.hessian(lambda v: csp.logsumexp(v))(x)
    np.testing.assert_allclose(hess, [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-6)
    assert cr.grad(lambda v: csp.logsumexp(v))(x).dtype == dtype


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("exponent", [0, 0.0])
def test_power_zero_at_zero(dtype, exponent):
    x = dtype(0.0)
    for order in (1, 2):
        assert_routes(lambda v: v ** exponent, x, 0.0, order=order)
        assert_routes(lambda v: cnp.power(v, exponent), x, 0.0, order=order)
    # a zero tangent through the jvp of x ** 0 at 0 is 0, not 0 * inf
    assert cr.jvp(lambda v: v ** exponent, (x,), (dtype(0.0),))[1] == 0


def test_logsumexp_of_a_fully_masked_slice_has_uniform_weights():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, np.log(3.0), -np.inf]])
    want = [[1 / 3, 1 / 3, 1 / 3], [0.25, 0.75, 0.0]]
    assert_routes(lambda v: cnp.sum(csp.logsumexp(v, axis=1)), x, want)


# -- power's derivative in the exponent -----------------------------------------------------
@pytest.mark.parametrize("y", [0.0, 1.0, 2.0, 2.5])
def test_power_exponent_derivative_for_every_exponent_value(y):
    # the tape's eager backward sees the exponent's value: 0, 1, 2 must not be taken for
    # constants (d/dy 3 ** y was 0 there at y = 0)
    want = 3.0 ** y * math.log(3.0)
    assert_routes(lambda v: cnp.power(np.float64(3.0), v), np.float64(y), want)
    assert_routes(lambda v: cnp.power(np.float64(3.0), v), np.float64(y),
                  want * math.log(3.0), order=2)


def test_power_exponent_derivative_at_zero_and_negative_bases():
    assert_routes(lambda v: cnp.power(np.float64(0.0), v), np.float64(2.0), 0.0)
    with np.errstate(invalid="ignore"):
        got = routes(lambda v: cnp.power(np.float64(-2.0), v), np.float64(2.0))
    assert all(np.isnan(v) for v in got.values())  # (-2) ** y is not defined near y = 2


# -- elementwise and mathfuncs --------------------------------------------------------------
@pytest.mark.parametrize("x", [-30.0, -40.0, -800.0])
def test_expm1_slope_does_not_cancel(x):
    for order in (1, 2):
        assert_routes(cnp.expm1, np.float64(x), math.exp(x), order=order)


@pytest.mark.parametrize("f, second", [(cnp.arcsin, 1.0), (cnp.arccos, -1.0),
                                       (cnp.arctanh, 2.0)])
def test_inverse_trig_second_derivative_near_zero(f, second):
    assert_routes(f, np.float64(1e-20), second * 1e-20, order=2)


@pytest.mark.parametrize("x", [1.5e308, -1.5e308])
def test_no_overflow_of_x_squared_in_derivatives(x):
    for f in (cnp.arctan, csp.erf, csp.erfc, csp.ndtr):
        for order in (2, 3):
            assert _rev(f, order)(np.float64(x)) == 0, (f, order)
            assert _fwd(f, order)(np.float64(x)) == 0, (f, order)


def test_hypot_second_derivative_at_the_origin_is_abs_convention():
    hess = cr.hessian(lambda v: cnp.hypot(v[0], v[1]))(np.zeros(2))
    np.testing.assert_array_equal(hess, np.zeros((2, 2)))


def test_log10_slope_does_not_overflow():
    # 1 / (x ln 10) with x ln 10 overflowing gave 0
    assert_routes(cnp.log10, np.float64(1e308), 4.34294481903252e-309, rtol=1e-14)


# -- special functions ----------------------------------------------------------------------
@pytest.mark.parametrize("x, d1, d2", [
    (1e8, -5.641895835477562e-17, 1.1283791670955122e-24),   # 2 x erfcx - 2 / sqrt(pi): 0
    (30.0, -0.0006258354105074841, 4.165309238445888e-05),
    (12.0, -0.003877862738062271, 0.0006397363162930207),
])
def test_erfcx_slope_in_the_right_tail(x, d1, d2):
    assert_routes(csp.erfcx, np.float64(x), d1, rtol=1e-15)
    assert_routes(csp.erfcx, np.float64(x), d2, order=2, rtol=1e-14)


def test_erfcx_slope_in_float32():
    got = cr.grad(csp.erfcx)(np.float32(30.0))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, -0.0006258354105074841, rtol=1e-7)


@pytest.mark.parametrize("x, d1, d2", [
    (-1e5, 100000.00001, -0.9999999999),
    (-9000.0, 9000.000111111109, -0.9999999876543219),
    (-40.0, 40.02496884720726, -0.9993773316214086),
    (39.0, 0.0, 0.0),   # order 2 was nan for x > 26 (erfcx^2 overflowed)
    (41.0, 0.0, 0.0),
])
def test_log_ndtr_slope_in_both_tails(x, d1, d2):
    assert_routes(csp.log_ndtr, np.float64(x), d1, rtol=1e-15)
    assert_routes(csp.log_ndtr, np.float64(x), d2, order=2, rtol=1e-14)


@pytest.mark.parametrize("a, b, d1, d2", [
    (1e6, 3.0, -2.999997000005e-06, 2.999994000015e-12),     # was 3e-10 off
    (1e20, 3.0, -3e-20, 3e-40),                              # was 0
    (50.0, 0.001, -2.020112918945015e-05, 4.0807174630473986e-07),
])
def test_betaln_slope_without_digamma_cancellation(a, b, d1, d2):
    f = lambda v: csp.betaln(v, np.float64(b))  # noqa: E731
    assert_routes(f, np.float64(a), d1, rtol=1e-15)
    assert_routes(f, np.float64(a), d2, order=2, rtol=1e-14)


@pytest.mark.parametrize("a, d2", [(0.5, -np.inf), (1.0, -1.0), (2.0, 1.0), (3.0, 0.0),
                                   (1.5, np.inf)])
def test_gammainc_second_derivative_at_zero(a, d2):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a): its derivative at 0 was 0 * inf = nan
    assert_routes(lambda v: csp.gammainc(np.float64(a), v), np.float64(0.0), d2, order=2)


@pytest.mark.parametrize("a, b, at_0, at_1", [(2.0, 2.0, 6.0, -6.0), (1.0, 2.0, -2.0, -2.0),
                                              (2.0, 1.0, 2.0, 2.0), (1.0, 1.0, 0.0, 0.0)])
def test_betainc_second_derivative_at_the_edges(a, b, at_0, at_1):
    f = lambda v: csp.betainc(np.float64(a), np.float64(b), v)  # noqa: E731
    assert_routes(f, np.float64(0.0), at_0, order=2)
    assert_routes(f, np.float64(1.0), at_1, order=2)


def test_t_distribution_at_large_df():
    # the gamma-function ratio as a beta function: gammaln((df+1)/2) - gammaln(df/2) lost
    # every digit at df = 1e16 (the logpdf was -19.04)
    df, t = np.float64(1e16), np.float64(0.3)
    assert_routes(lambda v: csp.stdtr(df, v), t, 0.3813878154605241, rtol=1e-14)
    np.testing.assert_allclose(cst.t.logpdf(t, df), -0.9639385332046728, rtol=1e-14)
    np.testing.assert_allclose(cst.t.logpdf(t, df), st.t.logpdf(0.3, 1e16), rtol=1e-14)
    assert_routes(lambda v: cst.t.logpdf(v, df), t, -0.3, rtol=1e-15)


def test_bessel_slopes_near_zero_and_far_out():
    assert_routes(csp.i1, np.float64(1e-310), 0.5)          # was nan (iv(2, x) subnormal)
    assert_routes(csp.i1e, np.float64(1e11), -6.307831304979437e-18, rtol=1e-14)  # was nan
    assert_routes(csp.i0e, np.float64(1e11), -6.307831305074055e-18, rtol=1e-14)  # was 0
    assert_routes(csp.i1e, np.float64(1e4), -1.9944869852852436e-07, rtol=1e-15)
    assert_routes(csp.i0e, np.float64(-1e4), 1.9947862106984187e-07, rtol=1e-15)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_xlogy_at_zero_zero():
    grad = cr.grad(lambda x, y: csp.xlogy(x, y), argnums=(0, 1))
    dx, dy = grad(np.float64(0.0), np.float64(0.0))
    assert dx == -np.inf and dy == 0  # JAX: dy = 0 / 0 = nan
    # the entropy term p log p: slope log p + 1 = -inf, curvature 1 / p = +inf at p = 0
    ent = lambda p: cnp.sum(csp.xlogy(p, p))  # noqa: E731
    p = np.array([0.0, 0.5])
    assert_routes(ent, p, [-np.inf, math.log(0.5) + 1])
    np.testing.assert_array_equal(np.diag(cr.hessian(ent)(p)), [np.inf, 2.0])
    assert cr.grad(lambda v: cnp.sum(csp.xlog1py(v, v - 1)))(np.array([0.0])) == -np.inf


def test_logpdfs_at_the_edge_of_the_support():
    # xlogy / xlog1py's slopes at 0 ** 0: the densities' derivatives are finite there
    assert_routes(lambda v: cnp.sum(cst.gamma.logpdf(v, 1.0)), np.array([0.0]), [-1.0])
    assert_routes(lambda v: cnp.sum(cst.beta.logpdf(v, 1.0, 2.0)), np.array([0.0]), [-1.0])
    assert_routes(lambda v: cnp.sum(cst.poisson.logpmf(0.0, v)), np.array([0.0]), [-1.0])


# -- composites: norms and the standard deviation at their kink -----------------------------
@pytest.mark.parametrize("f", [
    lambda v: cnp.linalg.norm(v),
    lambda v: cnp.linalg.norm(v, 2),
    lambda v: cnp.linalg.norm(v, 3),
    lambda v: cnp.linalg.norm(cnp.reshape(v, (2, 2))),
    lambda v: cnp.linalg.norm(cnp.reshape(v, (2, 2)), "fro"),
    lambda v: cnp.linalg.vector_norm(v),
    lambda v: cnp.std(v),
], ids=["norm", "ord2", "ord3", "matrix", "fro", "vector_norm", "std"])
def test_norms_and_std_at_their_kink(f):
    # 0, the subgradient of |x| and of the 1- and inf-norms (sqrt(0)'s inf * 0 was nan)
    x = np.zeros(4)
    assert_routes(f, x, np.zeros(4))
    np.testing.assert_array_equal(cr.hessian(f)(x), np.zeros((4, 4)))


def test_std_of_a_constant_and_values_unchanged():
    assert_routes(lambda v: cnp.std(v), np.ones(3), np.zeros(3))
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(cnp.std(x), np.std(x), rtol=1e-15)
    np.testing.assert_allclose(cr.grad(lambda v: cnp.std(v))(x),
                               (x - x.mean()) / (x.size * np.std(x)), rtol=1e-14)
    np.testing.assert_allclose(cr.grad(lambda v: cnp.linalg.norm(v))(np.array([3.0, 4.0])),
                               [0.6, 0.8], rtol=1e-15)


def test_changed_slopes_keep_complex_arguments():
    z = np.complex128(0.3 + 0.2j)
    for f, slope in [(cnp.arctan, 1 / (1 + z * z)), (cnp.arcsin, 1 / np.sqrt(1 - z * z)),
                     (cnp.arctanh, 1 / (1 - z * z)), (cnp.expm1, np.exp(z)),
                     (cnp.log10, 1 / (z * np.log(10)))]:
        np.testing.assert_allclose(cr.grad(f, holomorphic=True)(z), slope, rtol=1e-14)
