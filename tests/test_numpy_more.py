"""chainrule/numpy/_more.py beyond the namespace cases (tests/cases_more.py): derivatives
against JAX's (reverse and forward, second order on a few), ``np.<name>(traced)``
dispatch, and chainrule errors for what is refused."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ChainruleError, ImmutableValueError

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

rng = np.random.default_rng(3)
X = rng.uniform(-1, 1, (3, 5))
XP = np.array([-1.0, -0.2, 0.3, 0.9, 1.5])
FP = np.array([0.5, -1.0, 2.0, 0.25, 1.0])

# (name, chainrule function, JAX function): scalar functions of X
PAIRS = [
    ("cov", lambda x: (cnp.cov(x) ** 2).sum(), lambda x: (jnp.cov(x) ** 2).sum()),
    ("cov-rowvar", lambda x: (cnp.cov(x, rowvar=False, ddof=0) ** 2).sum(),
     lambda x: (jnp.cov(x, rowvar=False, ddof=0) ** 2).sum()),
    ("corrcoef", lambda x: (cnp.corrcoef(x) ** 3).sum(), lambda x: (jnp.corrcoef(x) ** 3).sum()),
    ("nanvar", lambda x: cnp.nanvar(x, axis=1, ddof=1).sum(),
     lambda x: jnp.nanvar(x, axis=1, ddof=1).sum()),
    ("nanstd", lambda x: cnp.nanstd(x, axis=0).sum(), lambda x: jnp.nanstd(x, axis=0).sum()),
    ("nanprod", lambda x: cnp.nanprod(x, axis=1).sum(), lambda x: jnp.nanprod(x, axis=1).sum()),
    ("nancumsum", lambda x: (cnp.nancumsum(x, axis=1) ** 2).sum(),
     lambda x: (jnp.nancumsum(x, axis=1) ** 2).sum()),
    ("nancumprod", lambda x: cnp.nancumprod(x).sum(), lambda x: jnp.nancumprod(x).sum()),
    ("interp", lambda x: (cnp.interp(x, XP, FP) ** 2).sum(),
     lambda x: (jnp.interp(x, XP, FP) ** 2).sum()),
    ("interp-fp", lambda x: (cnp.interp(XP * 0.7, XP, x[0]) ** 2).sum(),
     lambda x: (jnp.interp(XP * 0.7, XP, x[0]) ** 2).sum()),
    ("trapezoid", lambda x: (cnp.trapezoid(x, XP) ** 2).sum(),
     lambda x: (jnp.trapezoid(x, XP) ** 2).sum()),
    ("polyval", lambda x: (cnp.polyval(x[0], x[1:]) ** 2).sum(),
     lambda x: (jnp.polyval(x[0], x[1:]) ** 2).sum()),
    ("polymul", lambda x: (cnp.polymul(x[0], x[1]) ** 2).sum(),
     lambda x: (jnp.polymul(x[0], x[1]) ** 2).sum()),
    ("polyint", lambda x: (cnp.polyint(x[0], 2, x[1, :2]) ** 2).sum(),
     lambda x: (jnp.polyint(x[0], 2, x[1, :2]) ** 2).sum()),
    ("polyder", lambda x: (cnp.polyder(x[0], 2) ** 2).sum(),
     lambda x: (jnp.polyder(x[0], 2) ** 2).sum()),
    ("vander", lambda x: (cnp.vander(x[0], 4) ** 2).sum(),
     lambda x: (jnp.vander(x[0], 4) ** 2).sum()),
    ("matvec", lambda x: (cnp.matvec(x, x[0]) ** 2).sum(),
     lambda x: (jnp.matvec(x, x[0]) ** 2).sum()),
    ("vecmat", lambda x: (cnp.vecmat(x[:, 0], x) ** 2).sum(),
     lambda x: (jnp.vecmat(x[:, 0], x) ** 2).sum()),
    ("float_power", lambda x: cnp.float_power(x * x + 1, x).sum(),
     lambda x: jnp.float_power(x * x + 1, x).sum()),
    ("modf", lambda x: (cnp.modf(3 * x)[0] ** 2).sum(), lambda x: (jnp.modf(3 * x)[0] ** 2).sum()),
    ("i0", lambda x: cnp.i0(2 * x).sum(), lambda x: jnp.i0(2 * x).sum()),
    ("acos", lambda x: cnp.acos(x * 0.9).sum(), lambda x: jnp.acos(x * 0.9).sum()),
    ("atan2", lambda x: cnp.atan2(x, x[0] + 2).sum(), lambda x: jnp.atan2(x, x[0] + 2).sum()),
    ("cumulative_prod", lambda x: cnp.cumulative_prod(x, axis=1, include_initial=True).sum(),
     lambda x: jnp.cumulative_prod(x, axis=1, include_initial=True).sum()),
    ("ediff1d", lambda x: (cnp.ediff1d(x, to_begin=x[0, :2]) ** 2).sum(),
     lambda x: (jnp.ediff1d(x, to_begin=x[0, :2]) ** 2).sum()),
    ("diagflat", lambda x: (cnp.diagflat(x[0], 1) @ cnp.diagflat(x[1], 1).T).sum(),
     lambda x: (jnp.diagflat(x[0], 1) @ jnp.diagflat(x[1], 1).T).sum()),
    ("nanmedian", lambda x: (cnp.nanmedian(x, axis=1) ** 2).sum(),
     lambda x: (jnp.nanmedian(x, axis=1) ** 2).sum()),
    ("nanquantile", lambda x: (cnp.nanquantile(x, 0.3, axis=0) ** 2).sum(),
     lambda x: (jnp.nanquantile(x, 0.3, axis=0) ** 2).sum()),
    ("nanpercentile", lambda x: cnp.nanpercentile(x, 80.0),
     lambda x: jnp.nanpercentile(x, 80.0)),
    ("block", lambda x: (cnp.block([[x, x[:, :2]], [x[:1], x[:1, :2]]]) ** 2).sum(),
     lambda x: (jnp.block([[x, x[:, :2]], [x[:1], x[:1, :2]]]) ** 2).sum()),
    ("unwrap", lambda x: (cnp.unwrap(4 * x, axis=0) ** 2).sum(),
     lambda x: (jnp.unwrap(4 * x, axis=0) ** 2).sum()),
    ("resize", lambda x: (cnp.resize(x, (4, 7)) ** 2).sum(),
     lambda x: (jnp.resize(x, (4, 7)) ** 2).sum()),
    ("compress", lambda x: (cnp.compress([1, 0, 1, 1], x, axis=1) ** 2).sum(),
     lambda x: (jnp.compress(np.array([1, 0, 1, 1], bool), x, axis=1) ** 2).sum()),
    ("choose", lambda x: (cnp.choose(np.array([[0, 1, 2, 1, 0]]), [x, x[:1] ** 2, 3 * x])
                          ** 2).sum(),
     lambda x: (jnp.choose(np.array([[0, 1, 2, 1, 0]]), [x, x[:1] ** 2, 3 * x]) ** 2).sum()),
    ("sort_complex", lambda x: (cnp.real(cnp.sort_complex(x)) ** 3).sum(),
     lambda x: (jnp.real(jnp.sort_complex(x)) ** 3).sum()),
    ("unstack", lambda x: (cnp.unstack(x, axis=1)[2] ** 3).sum(),
     lambda x: (jnp.unstack(x, axis=1)[2] ** 3).sum()),
]


def _with_nans(x):
    x = x.copy()
    x[0, 1] = x[2, 3] = np.nan
    return x


@pytest.mark.parametrize("name, f, g", PAIRS, ids=[p[0] for p in PAIRS])
def test_derivatives_match_jax(name, f, g):
    x = _with_nans(X) if name.startswith("nan") else X
    np.testing.assert_allclose(f(x), g(jnp.asarray(x)), rtol=1e-10, atol=1e-12)
    want = np.asarray(jax.grad(g)(jnp.asarray(x)))
    np.testing.assert_allclose(cr.grad(f)(x), want, rtol=1e-9, atol=1e-12)
    t = rng.uniform(-1, 1, x.shape)
    _, jvp = cr.jvp(f, (x,), (t,))
    _, want_jvp = jax.jvp(g, (jnp.asarray(x),), (jnp.asarray(t),))
    np.testing.assert_allclose(jvp, want_jvp, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["cov", "corrcoef", "nanvar", "nanmedian", "interp", "polyval",
                                  "vander"])
def test_second_order_matches_jax(name):
    _, f, g = next(p for p in PAIRS if p[0] == name)
    x = _with_nans(X) if name.startswith("nan") else X
    want = np.asarray(jax.hessian(g)(jnp.asarray(x)))
    np.testing.assert_allclose(cr.hessian(f)(x), want, rtol=1e-8, atol=1e-10)


def test_numpy_functions_dispatch_to_chainrule():
    """np.<name>(traced) reaches chainrule.numpy's function of that name."""
    f = (lambda x: np.cov(x).sum() + np.nanvar(x) + np.trapezoid(x).sum()
         + np.interp(x, XP, FP).sum() + np.polyval(x[0], x[1]).sum() + np.vander(x[0]).sum()
         + np.matvec(x, x[0]).sum() + np.cumulative_sum(x, axis=0).sum()
         + np.acos(0.5 * x).sum() + np.modf(3 * x)[0].sum() + sum(np.unstack(x)).sum())
    g = (lambda x: jnp.cov(x).sum() + jnp.nanvar(x) + jnp.trapezoid(x).sum()
         + jnp.interp(x, XP, FP).sum() + jnp.polyval(x[0], x[1]).sum()
         + jnp.vander(x[0]).sum() + jnp.matvec(x, x[0]).sum()
         + jnp.cumulative_sum(x, axis=0).sum() + jnp.acos(0.5 * x).sum()
         + jnp.modf(3 * x)[0].sum() + sum(jnp.unstack(x)).sum())
    np.testing.assert_allclose(cr.grad(f)(X), jax.grad(g)(jnp.asarray(X)), rtol=1e-9)
    np.testing.assert_allclose(cr.jit(f)(X), f(X), rtol=1e-12)


def test_interp_at_knots_and_outside_is_exact():
    q = np.concatenate([XP, [-3.0, 4.0, np.nan]])
    np.testing.assert_array_equal(cnp.interp(q, XP, FP), np.interp(q, XP, FP))
    np.testing.assert_array_equal(cr.jit(lambda q: cnp.interp(q, XP, FP))(q),
                                  np.interp(q, XP, FP))


def test_modf_of_infinities_matches_numpy():
    x = np.array([-np.inf, np.inf, -0.0, 0.0, 2.5, -2.0, -1.5, 3.0])
    for got, want in zip(cnp.modf(x), np.modf(x)):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("call", [
    lambda: cnp.cov(X, fweights=np.ones(5, int)),
    lambda: cnp.cov(X, aweights=np.ones(5)),
    lambda: cnp.interp(X, XP, FP, period=2.0),
    lambda: cnp.interp(X, XP, FP[:3]),
    lambda: cnp.interp(X, XP.reshape(1, -1), FP),
    lambda: cnp.interp(X, XP, FP + 1j),
    lambda: cnp.nanvar(X, where=X > 0),
    lambda: cnp.nanprod(X, initial=2.0),
    lambda: cnp.matvec(X, X[0], axes=[(-2, -1), (-1,), (-1,)]),
    lambda: cnp.vecmat(X[:, 0], X, out=None, dtype=float),
    lambda: cnp.cumulative_sum(X),
    lambda: cnp.polyval(np.poly1d([1.0, 2.0]), X),
    lambda: cnp.polyder(X[0], -1),
    lambda: cnp.vander(X),
    lambda: cnp.unstack(np.float64(1.0)),
    lambda: cnp.positive(np.array([True])),
    lambda: cnp.tril_indices_from(X[0]),
    lambda: cnp.diag_indices_from(X),
    lambda: cnp.ediff1d(np.arange(3), to_end=np.array([0.5])),
    lambda: cnp.nanquantile(X, [0.2, 0.5]),
    lambda: cnp.nanquantile(X, 1.5),
    lambda: cnp.nanpercentile(X, 50, method="nearest"),
    lambda: cnp.nanmedian(X + 1j),
    lambda: cnp.isin(X, X, kind="table"),
    lambda: cnp.block([]),
    lambda: cnp.block([[X], X]),
    lambda: cnp.block((X, X)),
    lambda: cr.jit(lambda c: cnp.compress(c, X, axis=0))(np.array([True, False, True])),
    lambda: cnp.compress(np.ones((2, 2), bool), X),
    lambda: cnp.compress([0, 0, 0, 1], X, axis=0),
    lambda: cr.jit(lambda x: cnp.unwrap(x, period=x[0, 0]))(X),
    lambda: cr.jit(lambda x: cnp.resize(x, (-1, 2)))(X),
    lambda: cnp.choose(np.array([0, 3]), [X[0, :2], X[1, :2]]),
    lambda: cr.jit(lambda i: cnp.choose(i, [X[0, :2], X[1, :2]]))(np.array([0, 1])),
    lambda: cnp.choose(np.array([0, 1]), [X[0, :2], X[1, :2]], mode="nearest"),
    lambda: cnp.choose(np.array([0, 1]), [X[0, :2], X[1, :2]], out=np.zeros(2)),
    lambda: cr.jit(lambda x: cnp.sort_complex(x + 1j))(X),
    lambda: cr.jit(lambda x: cnp.sort_complex(x[0, 0]))(X),
])


def test_refused_with_chainrule_errors(call):
    with pytest.raises(ChainruleError):
        call()


def test_integer_arrays_have_no_nans():
    a = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(cnp.nanmedian(a, axis=1), np.nanmedian(a, axis=1))
    np.testing.assert_array_equal(cnp.nanquantile(a, 0.3), np.nanquantile(a, 0.3))


def test_traced_q_is_refused():
    with pytest.raises(ChainruleError, match="concrete scalar q"):
        cr.grad(lambda q: cnp.nanquantile(X, q))(0.5)


def test_refused_keywords_are_named():
    with pytest.raises(ChainruleError, match="fweights="):
        cnp.cov(X, fweights=np.ones(5, int))
    with pytest.raises(ChainruleError, match="period="):
        cnp.interp(X, XP, FP, period=2.0)


def test_put_along_axis_refuses_traced_values():
    with pytest.raises(ImmutableValueError, match=r"\.at\[idx\]\.set"):
        cr.grad(lambda x: cnp.put_along_axis(x, np.zeros((3, 1), int), 0.0, 1))(X)
    with pytest.raises(ImmutableValueError):
        cr.grad(lambda v: cnp.put_along_axis(np.zeros((3, 5)), np.zeros((3, 1), int), v, 1))(1.0)


def test_copy_method_of_traced_values():
    f = lambda x: (x.copy() * 2).sum()  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(X), 2 * np.ones_like(X))


@pytest.mark.parametrize("call, numpy_type", [
    (lambda: cnp.nanvar(np.ones(3), ddof=1, correction=1), ValueError),
    (lambda: cnp.var(np.ones(3), ddof=1, correction=1), ValueError),
    (lambda: cnp.cov(np.ones((2, 2, 2))), ValueError),
    (lambda: cnp.interp(0.5, np.arange(3.0), np.arange(2.0)), ValueError),
    (lambda: cnp.polyder(np.ones(3), -1), ValueError),
    (lambda: cnp.i0(np.ones(2) * 1j), TypeError),
    (lambda: cnp.choose(np.array([0, 1]), [np.ones(2)], mode="bad"), ValueError),
    (lambda: cnp.compress(np.array([True, True, True]), np.ones(2)), IndexError),
    (lambda: cnp.quantile(np.ones(3), 2.0), ValueError),
])
def test_bad_arguments_raise_chainrule_errors_of_numpys_kind(call, numpy_type):
    with pytest.raises(ChainruleError) as info:
        call()
    assert isinstance(info.value, numpy_type)  # code catching NumPy's exception still does
