"""chainrule/numpy/_more.py without JAX (CI has none): exact edge values, and the chainrule
errors of what is refused or malformed. Derivatives against JAX's: test_numpy_more.py."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ChainruleError, ImmutableValueError

rng = np.random.default_rng(3)
X = rng.uniform(-1, 1, (3, 5))
XP = np.array([-1.0, -0.2, 0.3, 0.9, 1.5])
FP = np.array([0.5, -1.0, 2.0, 0.25, 1.0])


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
