"""The numerics at the edges of the elementwise math and special functions:
overflow-free derivatives, exact values at removable singularities, tails, the
remainder operators on traced values and tape tensors, and derivatives that do not
exist raising instead of giving zeros."""

from __future__ import annotations

import math
import sys

import cases_math
import cases_special
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import chainrule as cr
import chainrule.numpy as cnp
import chainrule.scipy.special as csp
import chainrule.scipy.stats as cst
from chainrule import ops, tape
from chainrule.errors import ChainruleError, NoRuleError
from chainrule.ir import OPS, TensorType
from chainrule.ir.types import DType
from chainrule.testing import check_grads


def _grads(f, *args):
    """Reverse- and forward-mode gradients of a scalar function of scalars."""
    rev = cr.grad(f, argnums=tuple(range(len(args))))(*args)
    fwd = tuple(cr.jvp(f, args, tuple(np.float64(i == k) for i in range(len(args))))[1]
                for k in range(len(args)))
    return np.array(rev, float), np.array(fwd, float)


# -- logaddexp -------------------------------------------------------------------------
@pytest.mark.parametrize("x, y, want", [
    (1e308, 1e308, (0.5, 0.5)),        # x - z rounds to 0: exp(x - z) would say 1
    (1000.0, 1000.0, (0.5, 0.5)),
    (1000.0, -1000.0, (1.0, 0.0)),
    (-np.inf, 3.0, (0.0, 1.0)),
    (np.inf, 3.0, (1.0, 0.0)),
    (-np.inf, -np.inf, (0.5, 0.5)),    # equal infinities weigh the same
    (1e308, -1e308, (1.0, 0.0)),
])
def test_logaddexp_derivative_at_large_magnitudes(x, y, want):
    with np.errstate(invalid="ignore", over="ignore"):  # x - y in the branch not taken
        rev, fwd = _grads(lambda a, b: cnp.logaddexp(a, b), np.float64(x), np.float64(y))
    np.testing.assert_allclose(rev, want, rtol=1e-15)
    np.testing.assert_allclose(fwd, want, rtol=1e-15)
    with np.errstate(over="ignore"):
        assert cnp.logaddexp(np.float64(x), np.float64(y)) == np.logaddexp(x, y)


def test_logaddexp_second_derivative_on_the_diagonal():
    # d2/dx2 log(e^x + e^y) = s (1 - s) with s = sigmoid(x - y): 1/4 at x = y
    h = cr.hessian(lambda v: cnp.logaddexp(v[0], v[1]))(np.array([1e300, 1e300]))
    np.testing.assert_allclose(h, [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-15)
    h2 = cr.hessian(lambda v: cnp.logaddexp2(v[0], v[1]))(np.array([3.0, 3.0]))
    ln2 = math.log(2)
    np.testing.assert_allclose(h2, [[ln2 / 4, -ln2 / 4], [-ln2 / 4, ln2 / 4]], rtol=1e-14)


# -- sinc -----------------------------------------------------------------------------------
def _nth_derivative(f, n):
    for _ in range(n):
        f = cr.grad(f)
    return f


@pytest.mark.parametrize("x", [0.0, 1e-9, -1e-9])
def test_sinc_derivatives_at_and_near_zero(x):
    # sinc(x) = 1 - (pi x)^2 / 6 + (pi x)^4 / 120 - ...: at 0 the derivatives are
    # 0, -pi^2/3, 0, pi^4/5 (and within rounding of those just off 0)
    want = [1.0, 0.0, -np.pi ** 2 / 3, 0.0, np.pi ** 4 / 5]
    f = lambda v: cnp.sinc(v)  # noqa: E731
    for n, w in enumerate(want):
        got = float(_nth_derivative(f, n)(np.float64(x)))
        assert got == pytest.approx(w, abs=1e-6 if n % 2 else 0, rel=1e-9), n
    jvp2 = cr.jvp(lambda v: cr.jvp(f, (v,), (np.float64(1.0),))[1], (np.float64(x),),
                  (np.float64(1.0),))[1]
    assert float(jvp2) == pytest.approx(-np.pi ** 2 / 3, rel=1e-9)


def test_sinc_third_derivative_away_from_zero():
    # d^3/dx^3 sin(pi x)/(pi x) against the closed form at x = 0.7
    x = 0.7
    y = np.pi * x
    s, c = math.sin(y), math.cos(y)
    want = np.pi ** 3 * (-c / y + 3 * s / y ** 2 + 6 * c / y ** 3 - 6 * s / y ** 4)
    got = float(_nth_derivative(lambda v: cnp.sinc(v), 3)(np.float64(x)))
    assert got == pytest.approx(want, rel=1e-12)


# -- tails and edges of the special functions ---------------------------------------------
def test_log_ndtr_far_left_tail():
    x = np.array([-40.0, -100.0, -1e4])
    np.testing.assert_allclose(csp.log_ndtr(x), sp.log_ndtr(x), rtol=1e-14)
    # d/dx log Phi(x) = phi(x) / Phi(x), which tends to -x (+ 1/|x| ...) as x -> -inf
    g = cr.grad(lambda v: cnp.sum(csp.log_ndtr(v)))(x)
    want = np.exp(st.norm.logpdf(x) - st.norm.logcdf(x))  # loses digits as x -> -inf
    np.testing.assert_allclose(g[:2], want[:2], rtol=1e-12)
    # the asymptotic series |x| + 1/|x| - 2/|x|^3 + 10/|x|^5 at x = -1e4 (exp(-x^2/2 - z)
    # would be off in the 9th digit there)
    assert g[2] == pytest.approx(1e4 + 1e-4 - 2e-12, rel=1e-15)
    assert g[0] == pytest.approx(40.0249, abs=1e-4)
    # second derivative: -lambda (x + lambda), lambda = phi / Phi (finite, small)
    h = cr.grad(lambda v: cr.grad(lambda u: csp.log_ndtr(u))(v))(np.float64(-40.0))
    lam = want[0]
    assert float(h) == pytest.approx(-lam * (-40.0 + lam), rel=1e-9)
    # far right: log Phi -> 0, derivative phi underflows to 0 (no nan)
    assert cr.grad(lambda v: csp.log_ndtr(v))(np.float64(40.0)) == 0.0


def test_erfinv_near_plus_minus_one():
    x = np.array([1 - 1e-12, -(1 - 1e-12), 0.999])
    z = sp.erfinv(x)
    g = cr.grad(lambda v: cnp.sum(csp.erfinv(v)))(x)
    np.testing.assert_allclose(g, np.sqrt(np.pi) / 2 * np.exp(z * z), rtol=1e-12)
    assert np.all(np.isfinite(g)) and np.all(g > 0)
    # at +-1: erfinv is +-inf and so is its slope
    with np.errstate(over="ignore"):
        g1 = cr.grad(lambda v: cnp.sum(csp.erfinv(v)))(np.array([1.0, -1.0]))
    assert np.all(g1 == np.inf)


def test_power_zero_and_kinks():
    # x ** 0: slope 0 at x = 0 (not 0 * inf), and the functions with a kink at 0 pick
    # the 0 subgradient (fabs, hypot at the origin), xlogy(0, y) is 0 even at y = 0
    assert cr.grad(lambda x: x ** 0.0)(np.float64(0.0)) == 0.0
    assert cr.grad(lambda x: cnp.fabs(x))(np.float64(0.0)) == 0.0
    assert np.array_equal(cr.grad(lambda x, y: cnp.hypot(x, y), argnums=(0, 1))(
        np.float64(0.0), np.float64(0.0)), (0.0, 0.0))
    assert csp.xlogy(np.float64(0.0), np.float64(0.0)) == 0.0
    assert csp.xlog1py(np.float64(0.0), np.float64(-1.0)) == 0.0
    # d/dx x log y = log y (also at x = 0), d/dy = x / y
    gx, gy = cr.grad(lambda x, y: csp.xlogy(x, y), argnums=(0, 1))(np.float64(0.0),
                                                                 np.float64(2.0))
    assert (gx, gy) == (math.log(2.0), 0.0)
    # heaviside: no derivative in x, 1 in h0 where x = 0
    gx, gh = cr.grad(lambda x, h: cnp.sum(cnp.heaviside(x, h)), argnums=(0, 1))(
        np.array([0.0, 2.0, -1.0]), np.float64(0.5))
    assert np.array_equal(gx, [0.0, 0.0, 0.0]) and gh == 1.0


def test_cbrt_at_zero_is_the_vertical_tangent():
    with np.errstate(divide="ignore"):
        assert cr.grad(lambda x: cnp.cbrt(x))(np.float64(0.0)) == np.inf
    assert cr.grad(lambda x: cnp.cbrt(x))(np.float64(-8.0)) == pytest.approx(1 / 12)


def test_arcsin_arccos_at_the_boundary():
    with np.errstate(divide="ignore"):
        g = cr.grad(lambda x: cnp.sum(cnp.arcsin(x)))(np.array([1.0, -1.0]))
        h = cr.grad(lambda x: cnp.sum(cnp.arccos(x)))(np.array([1.0, -1.0]))
    assert np.all(g == np.inf) and np.all(h == -np.inf)  # +-1 / 0, as NumPy/JAX
    x = np.array([1 - 1e-10])
    g = cr.grad(lambda v: cnp.sum(cnp.arcsin(v)))(x)
    np.testing.assert_allclose(g, 1 / np.sqrt((1 - x) * (1 + x)), rtol=1e-15)


def test_arcsinh_arccosh_derivatives_do_not_overflow():
    g = cr.grad(lambda v: cnp.sum(cnp.arcsinh(v)))(np.array([1e200, -1e200]))
    np.testing.assert_allclose(g, [1e-200, 1e-200], rtol=1e-15)
    g = cr.grad(lambda v: cnp.sum(cnp.arccosh(v)))(np.array([1e200]))
    np.testing.assert_allclose(g, [1e-200], rtol=1e-15)


def test_fmax_fmin_derivative_goes_to_the_number_not_the_nan():
    x, y = np.array([np.nan, 1.0, 2.0]), np.array([3.0, np.nan, 2.0])
    gx, gy = cr.grad(lambda a, b: cnp.sum(cnp.fmax(a, b)), argnums=(0, 1))(x, y)
    assert np.array_equal(gx, [0.0, 1.0, 0.5]) and np.array_equal(gy, [1.0, 0.0, 0.5])
    gx, gy = cr.grad(lambda a, b: cnp.sum(cnp.fmin(a, b)), argnums=(0, 1))(x, y)
    assert np.array_equal(gx, [0.0, 1.0, 0.5]) and np.array_equal(gy, [1.0, 0.0, 0.5])


def test_copysign_derivative_is_the_sign_agreement():
    x, y = np.array([2.0, 2.0, -2.0, 0.0, -0.0]), np.array([3.0, -3.0, -1.0, -1.0, 1.0])
    g = cr.grad(lambda a: cnp.sum(cnp.copysign(a, y)))(x)
    assert np.array_equal(g, [1.0, -1.0, 1.0, -1.0, -1.0])


# -- % and // -------------------------------------------------------------------------------
_X = np.array([-3.5, -0.25, 0.0, 2.75, 7.0])
_Y = np.array([2.0, -1.5, 0.75, -0.5, 3.0])


def _operators(x, y):
    return (x % y, x // y, x % 0.75, 7.5 % y, x // 2.0, -4.0 // y, *divmod(x, y),
            *divmod(10.0, y))


def test_mod_and_floor_divide_operators_on_traced_values_match_numpy():
    want = _operators(_X, _Y)
    got = cr.jit(_operators)(_X, _Y)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    ints = (np.array([-7, 7, 5, -3]), np.array([2, -3, 4, 5]))
    for g, w in zip(cr.jit(_operators)(*ints), _operators(*ints)):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype
    assert "remainder(x, y)" in str(cr.trace(lambda x, y: x % y, _X, _Y))
    assert "floor_divide(x, y)" in str(cr.trace(lambda x, y: x // y, _X, _Y))


def test_mod_and_floor_divide_operators_on_tape_tensors():
    x, y = tape.tensor(_X, requires_grad=True), tape.tensor(_Y, requires_grad=True)
    for g, w in zip(_operators(x, y), _operators(_X, _Y)):
        np.testing.assert_array_equal(g.value(), w)
    ((x % y).sum() + (x // y).sum() + (7.5 % y).sum()).backward()
    np.testing.assert_array_equal(x.grad, np.ones(5))   # d(x mod y)/dx = 1, // has none
    np.testing.assert_array_equal(y.grad, -np.floor_divide(_X, _Y)
                                  - np.floor_divide(7.5, _Y))


def test_mod_and_fmod_derivatives_in_the_divisor():
    # d/dy (x mod y) = -floor(x / y);  d/dy fmod(x, y) = -trunc(x / y)
    x, y = np.array([-3.5, 2.75, 7.0, -0.25]), np.array([2.0, -0.5, 3.0, 1.5])
    g = cr.grad(lambda b: cnp.sum(cnp.mod(x, b)))(y)
    np.testing.assert_array_equal(g, -np.floor(x / y))
    g = cr.grad(lambda b: cnp.sum(cnp.fmod(x, b)))(y)
    np.testing.assert_array_equal(g, -np.trunc(x / y))
    check_grads(lambda a, b: cnp.fmod(a, b), (x, y), order=2, modes=("fwd", "rev"))


# -- dtypes ---------------------------------------------------------------------------------
def test_result_dtypes():
    f32, i8 = np.ones(3, np.float32) * 0.5, np.arange(3, dtype=np.int8)
    assert cnp.sinh(f32).dtype == np.float32 and cnp.sinh(i8).dtype == np.float64
    assert cr.jit(lambda v: cnp.sinh(v))(i8).dtype == np.float64
    assert cnp.sinc(f32).dtype == np.float32 and cnp.sinc(i8).dtype == np.float64
    assert csp.erf(f32).dtype == np.float32 and csp.erf(i8).dtype == np.float64
    assert csp.polygamma(np.array([1, 2, 3]), f32).dtype == np.float64  # int64 promotes
    assert cnp.isnan(f32).dtype == np.bool_ and cnp.ceil(i8).dtype == np.int8
    assert (cnp.mod(i8, 2)).dtype == np.int8
    np.testing.assert_array_equal(cr.jit(lambda v: cnp.sinc(v))(f32), np.sinc(f32))


# -- derivatives that do not exist -------------------------------------------------------------
def test_missing_derivatives_raise():
    x = np.array([0.5, 1.5])
    with pytest.raises(NoRuleError, match="shape parameter a"):
        cr.grad(lambda a: cnp.sum(csp.gammainc(a, x)))(np.array([1.0, 2.0]))
    with pytest.raises(NoRuleError, match="shape parameter a"):
        cr.jvp(lambda a: csp.gammainc(a, x), (np.array([1.0, 2.0]),), (np.ones(2),))
    with pytest.raises(NoRuleError, match="degrees of freedom"):
        cr.grad(lambda df: cnp.sum(cst.t.cdf(x, df)))(np.float64(3.0))
    with pytest.raises(NoRuleError, match="shape parameters a and b"):
        cr.grad(lambda a: cnp.sum(cst.beta.cdf(x / 2, a, 2.0)))(np.float64(3.0))
    with pytest.raises(NoRuleError, match="order v"):
        cr.grad(lambda v: cnp.sum(csp.iv(v, x)))(np.float64(1.5))
    # ... while the derivatives that exist are there, with the shape parameter constant
    g = cr.grad(lambda v: cnp.sum(csp.gammainc(np.array([1.0, 2.0]), v)))(x)
    np.testing.assert_allclose(g, st.gamma.pdf(x, [1.0, 2.0]), rtol=1e-13)


def test_tape_constant_operand_without_derivative():
    x = tape.tensor(np.array([0.5, 1.5]), requires_grad=True)
    csp.gammainc(np.array([1.0, 2.0]), x).sum().backward()
    np.testing.assert_allclose(x.grad, st.gamma.pdf([0.5, 1.5], [1.0, 2.0]), rtol=1e-13)


def test_poisson_derivative_in_k_is_the_continuous_extension():
    # as JAX: d/dk [xlogy(k, mu) - gammaln(k + 1) - mu] = log(mu) - digamma(k + 1)
    k, mu = np.array([0.0, 2.0, 5.0]), 2.5
    g = cr.grad(lambda v: cnp.sum(cst.poisson.logpmf(v, mu)))(k)
    np.testing.assert_allclose(g, np.log(mu) - sp.digamma(k + 1), rtol=1e-13)
    # the cdf is piecewise constant in k; its derivative in mu is -pmf(floor(k), mu)
    g = cr.grad(lambda m: cnp.sum(cst.poisson.cdf(k, m)))(np.float64(mu))
    assert float(g) == pytest.approx(-np.sum(st.poisson.pmf(k, mu)), rel=1e-12)


def test_shape_parameter_derivatives_where_closed_form():
    # d/da gamma.logpdf = log x - digamma(a);  d/dalpha_i dirichlet.logpdf =
    # log x_i - digamma(alpha_i) + digamma(sum alpha)
    x, a = np.array([0.5, 2.0]), np.array([1.5, 3.0])
    g = cr.grad(lambda s: cnp.sum(cst.gamma.logpdf(x, s)))(a)
    np.testing.assert_allclose(g, np.log(x) - sp.digamma(a), rtol=1e-13)
    p, alpha = np.array([0.2, 0.3, 0.5]), np.array([1.5, 2.0, 0.7])
    g = cr.grad(lambda s: cst.dirichlet.logpdf(p, s))(alpha)
    np.testing.assert_allclose(g, np.log(p) - sp.digamma(alpha) + sp.digamma(alpha.sum()),
                               rtol=1e-13)


def test_multivariate_normal_gradients():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    mean, x = np.array([0.1, -0.2]), np.array([[0.5, 0.4], [-1.0, 2.0]])
    gx, gm, gc = cr.grad(lambda a, m, c: cnp.sum(cst.multivariate_normal.logpdf(a, m, c)),
                         argnums=(0, 1, 2))(x, mean, cov)
    inv = np.linalg.inv(cov)
    r = x - mean
    np.testing.assert_allclose(gx, -r @ inv, rtol=1e-13)
    np.testing.assert_allclose(gm, (r @ inv).sum(0), rtol=1e-13)
    want = 0.5 * sum(inv @ np.outer(ri, ri) @ inv - inv for ri in r)
    np.testing.assert_allclose(gc, want, rtol=1e-12)   # symmetric at a symmetric cov
    with pytest.raises(ChainruleError, match="positive definite"):
        cst.multivariate_normal.logpdf(x, mean, np.array([[1.0, 2.0], [2.0, 1.0]]))


def test_logsumexp_weights_and_sign():
    a, b = np.array([1000.0, 1000.0, 999.0]), np.array([0.5, 0.0, -2.0])
    out, sign = csp.logsumexp(a, b=b, return_sign=True)
    want, want_sign = sp.logsumexp(a, b=b, return_sign=True)
    assert out == pytest.approx(want, rel=1e-15) and sign == want_sign
    # d/db_i = exp(a_i - m) / s: finite where b_i = 0
    gb = cr.grad(lambda w: csp.logsumexp(a, b=w, return_sign=True)[0])(b)
    s = np.sum(b * np.exp(a - 1000.0))
    np.testing.assert_allclose(gb, np.exp(a - 1000.0) / s, rtol=1e-13)


def test_kernels_without_scipy_say_how_to_install_it(monkeypatch):
    import chainrule.ops.special as special

    monkeypatch.setattr(special, "_SPECIAL", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # import fails
    with pytest.raises(ChainruleError, match=r"pip install chainrule\[scipy\]"):
        ops.erf(np.array([0.5]))
    monkeypatch.undo()
    assert ops.erf(np.array([0.5]))[0] == pytest.approx(sp.erf(0.5))


# -- type rules against kernels ------------------------------------------------------------------
OP_INPUTS = {**cases_math.OP_INPUTS, **cases_special.OP_INPUTS}


def test_every_op_of_the_families_has_representative_inputs():
    import chainrule.ops.mathfuncs as mathfuncs
    import chainrule.ops.special as special

    assert set(mathfuncs.__all__) | set(special.__all__) == set(OP_INPUTS)


@pytest.mark.parametrize("name", sorted(OP_INPUTS))
def test_type_rule_predicts_kernel_output(name):
    op = OPS[name]
    for arrays, attrs in OP_INPUTS[name]:
        types = [TensorType(a.shape, DType(a.dtype)) for a in arrays]
        norm, t = op.type_call(types, attrs)
        with np.errstate(all="ignore"):
            out = np.asarray(op.kernel(*arrays, **norm))
        assert out.shape == t.shape and out.dtype == t.dtype.numpy, (name, types, attrs)
        if op.emit is not None:  # the generated code computes the same, bit for bit
            with np.errstate(all="ignore"):
                got = cr.jit(lambda *xs, attrs=attrs: op(*xs, **attrs))(*arrays)
            np.testing.assert_array_equal(got, out)
            assert got.dtype == out.dtype
