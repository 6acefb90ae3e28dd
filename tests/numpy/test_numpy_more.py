"""chainrule/numpy/_more.py beyond the namespace cases (tests/cases_more.py): derivatives
against JAX's (reverse and forward, second order on a few) and ``np.<name>(traced)``
dispatch; what needs no JAX (edge values, errors) is in test_numpy_more_checks.py."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp

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
