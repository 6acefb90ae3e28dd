"""Semantics of the reductions, sorting and convolution functions beyond the
namespace cases: ties (max/min share the gradient evenly among tied extrema, as
autograd and JAX do; argmax picks the first), unique's data-dependent shape,
allclose on traced values, empty reductions, ddof, the methods of traced values,
and generated code equal to the kernels bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_helpers import check

import chainrule as cr
import chainrule.numpy as cnp
import chainrule.scipy.signal as csig
from chainrule import tape
from chainrule.api.reverse import trace_grad_module
from chainrule.errors import ConcretizationError, TypeInferenceError
from chainrule.testing import check_grads

rng = np.random.default_rng(11)


# -- ties: max / min share the gradient evenly (autograd's grad_chooser) ---------------------
@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
def test_extremum_gradient_is_shared_among_ties(name):
    f = getattr(cnp, name)
    x = np.array([1.0, 3.0, 3.0, 2.0]) * (1 if "max" in name else -1)
    want = np.array([0.0, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(cr.grad(lambda x: f(x))(x), want)
    _, tangent = cr.jvp(lambda x: f(x), (x,), (np.array([1.0, 2.0, 4.0, 8.0]),))
    np.testing.assert_allclose(tangent, 3.0)  # (2 + 4) / 2: the mean over the tied slots
    t = tape.tensor(x, requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad, want)


def test_extremum_ties_along_an_axis_and_with_keepdims():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 5.0, 5.0], [0.0, -1.0, 4.0]])
    want = np.array([[1 / 3, 1 / 3, 1 / 3], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(cnp.max(x, axis=1)))(x), want)
    np.testing.assert_allclose(
        cr.grad(lambda x: cnp.sum(cnp.max(x, axis=-1, keepdims=True)))(x), want)
    col = cr.grad(lambda x: cnp.sum(cnp.min(x, axis=0)))(np.array([[1.0, 2.0], [1.0, 3.0]]))
    np.testing.assert_allclose(col, [[0.5, 1.0], [0.5, 0.0]])
    every = cr.grad(lambda x: cnp.max(x))(np.full((2, 2), 7.0))
    np.testing.assert_allclose(every, np.full((2, 2), 0.25))


def test_extremum_ties_second_order_and_ptp():
    x = np.array([1.0, 3.0, 3.0])
    h = cr.hessian(lambda x: cnp.max(x) ** 2)(x)
    np.testing.assert_allclose(h, 2 * np.outer([0, 0.5, 0.5], [0, 0.5, 0.5]))
    np.testing.assert_allclose(cr.grad(lambda x: cnp.ptp(x))(np.array([0.0, 0.0, 2.0])),
                               [-0.5, -0.5, 1.0])


def test_nanmax_ignores_nans_and_shares_ties():
    x = np.array([np.nan, 2.0, 2.0, -1.0])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.nanmax(x))(x), [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.nanmin(x))(x), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.nansum(x) * 3)(x), [0.0, 3.0, 3.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.nanmean(x))(x), [0.0, 1 / 3, 1 / 3, 1 / 3])


def test_argmax_and_argmin_take_the_first_tie_and_have_no_derivative():
    x = np.array([[1.0, 4.0, 4.0], [0.0, 0.0, -2.0]])
    for name in ("argmax", "argmin"):
        for axis in (None, 0, 1, -1):
            got = cr.jit(lambda x, a=axis, n=name: getattr(cnp, n)(x, axis=a))(x)
            np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis))
    g = cr.grad(lambda x: cnp.sum(x * cnp.argmax(x, axis=1, keepdims=True)))(x)
    np.testing.assert_allclose(g, np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))


def test_sort_ties_are_stable_and_their_gradient_is_a_permutation():
    x = np.array([2.0, 1.0, 2.0, 0.0, 1.0])
    np.testing.assert_array_equal(cr.jit(lambda x: cnp.argsort(x))(x),
                                  np.argsort(x, kind="stable"))
    w = np.arange(5.0)
    g = cr.grad(lambda x: cnp.sum(cnp.sort(x) * w))(x)
    # sorted order is [3, 1, 4, 0, 2]: the cotangent w goes back through that permutation
    np.testing.assert_allclose(g, [3.0, 1.0, 4.0, 0.0, 2.0])
    _, t = cr.jvp(lambda x: cnp.sort(x), (x,), (np.arange(5.0) * 10,))
    np.testing.assert_allclose(t, [30.0, 10.0, 40.0, 0.0, 20.0])


def test_median_and_quantile_route_the_cotangent_to_order_statistics():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.median(x))(x), [0.0, 0.0, 0.5, 0.5])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.quantile(x, 0.25))(x),
                               [0.0, 0.25, 0.0, 0.75])
    # a traced q: d/dq = (n - 1) (a[hi] - a[lo])
    np.testing.assert_allclose(cr.grad(lambda q: cnp.quantile(x, q))(0.4), 3.0)
    check_grads(lambda x: cnp.median(x, axis=0), (rng.standard_normal((5, 3)),), order=2,
                modes=("fwd", "rev"))


# -- unique: a data-dependent shape ---------------------------------------------------------
def test_unique_on_traced_values_needs_size():
    x = np.array([3.0, 1.0, 3.0])
    with pytest.raises(ConcretizationError, match="size="):
        cr.jit(lambda x: cnp.unique(x))(x)
    with pytest.raises(ConcretizationError, match="size="):
        cr.trace(lambda x: cnp.unique(x), x)
    # grad falls back to the tape on a concretization error, where the size is known
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(cnp.unique(x) ** 2))(x), [6, 2, 0])
    got = cr.jit(lambda x: cnp.unique(x, size=2))(x)
    np.testing.assert_array_equal(got, [1.0, 3.0])
    got = cr.jit(lambda x: cnp.unique(x, size=4, fill_value=0.0))(x)
    np.testing.assert_array_equal(got, [1.0, 3.0, 0.0, 0.0])
    np.testing.assert_array_equal(cr.jit(lambda x: cnp.unique(x, size=4))(x), [1, 3, 1, 1])
    g = cr.grad(lambda x: cnp.sum(cnp.unique(x, size=3) * np.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_allclose(g, [10.0, 101.0, 0.0])  # fill (the minimum) and 3's first copy


def test_unique_on_the_tape_reads_its_size_from_the_data():
    t = tape.tensor(np.array([2.0, -1.0, 2.0, 5.0]), requires_grad=True)
    u = cnp.unique(t)
    np.testing.assert_array_equal(u.value(), [-1.0, 2.0, 5.0])
    (u * u).sum().backward()
    np.testing.assert_allclose(t.grad, [4.0, -2.0, 0.0, 10.0])


def test_unique_equal_nan_and_indices():
    x = np.array([np.nan, 1.0, np.nan, 1.0, 0.5])
    for equal_nan in (True, False):
        want = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                         equal_nan=equal_nan)
        size = want[0].size
        got = cr.jit(lambda x, e=equal_nan, n=size: cnp.unique(
            x, return_index=True, return_inverse=True, return_counts=True, equal_nan=e,
            size=n))(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


# -- allclose / isclose ------------------------------------------------------------------------
def test_allclose_is_a_bool_on_arrays_and_an_array_when_traced():
    a = np.array([1.0, 2.0])
    assert cnp.allclose(a, a + 1e-9) is True
    assert cnp.allclose(a, a + 1.0) is False
    got = cr.jit(lambda a, b: cnp.allclose(a, b))(a, a + 1e-9)
    assert got.shape == () and got.dtype == bool and bool(got)

    def branch(x):
        return x if cnp.allclose(x, 1.0) else -x

    with pytest.raises(ConcretizationError, match="concrete value"):
        cr.jit(branch)(a)
    t = tape.tensor(a)
    assert bool(cnp.allclose(t, a))  # tape values are concrete


# -- empty reductions, ddof ---------------------------------------------------------------------
def test_max_of_an_array_empty_elsewhere_is_empty():
    x = np.zeros((0, 3))
    assert cr.jit(lambda x: cnp.max(x, axis=1))(x).shape == (0,)
    with pytest.raises(TypeInferenceError, match="empty"):
        cr.jit(lambda x: cnp.max(x, axis=0))(x)
    with pytest.raises(TypeInferenceError, match="empty"):
        cr.jit(lambda x: cnp.min(x))(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_var_divides_by_n_minus_ddof_clamped_at_zero():
    x = np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 1.0]])
    for ddof in (0, 1, 2, 3, 5):
        for axis in (None, 1, -1, (0, 1)):
            want = np.var(x, axis=axis, ddof=ddof)
            np.testing.assert_allclose(cnp.var(x, axis=axis, ddof=ddof), want)
            compiled = cr.jit(lambda x, a=axis, d=ddof: cnp.var(x, axis=a, ddof=d))
            np.testing.assert_allclose(compiled(x), want)
            np.testing.assert_allclose(cnp.std(x, axis=axis, ddof=ddof, keepdims=True),
                                       np.std(x, axis=axis, ddof=ddof, keepdims=True))
    with pytest.raises(ValueError, match="ddof and correction"):
        cnp.var(x, ddof=1, correction=1)


# -- methods of traced values and tape tensors ---------------------------------------------
def test_methods_of_traced_values():
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    got = cr.jit(lambda x: (x.sort(), x.sort(axis=0), x.argsort(), x.partition(1),
                            x.argpartition(1), (x > 0).any(axis=1), (x > -2).all(),
                            x.take(np.array([0, -1]), axis=1), x.std(axis=0)))(x)
    want = (np.sort(x), np.sort(x, axis=0), np.argsort(x, kind="stable"), np.partition(x, 1),
            np.argpartition(x, 1), (x > 0).any(axis=1), (x > -2).all(),
            x.take([0, -1], axis=1), x.std(axis=0))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    t = tape.tensor(x, requires_grad=True)
    (t.sort(axis=1)[:, 0] * np.array([1.0, 2.0])).sum().backward()
    np.testing.assert_allclose(t.grad, [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])


def test_take_checks_bounds_and_modes_like_numpy():
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError):
        cnp.take(x, np.array([6]))
    with pytest.raises(IndexError):
        cr.jit(lambda x: cnp.take(x, np.array([3]), axis=1))(x)
    with pytest.raises(ValueError):
        cnp.take(x, np.array([0]), mode="fill")
    with pytest.raises(ValueError):
        cnp.take_along_axis(x, np.array([0, 1]), axis=1)  # ranks differ


# -- convolution: both inputs, every order, the cost stays one op ------------------------------
def test_convolution_derivatives_in_both_inputs_are_correlations():
    a, v = rng.standard_normal((5, 4)), rng.standard_normal((2, 3))
    for mode in ("full", "same", "valid"):
        check_grads(lambda a, v, m=mode: csig.convolve(a, v, m) ** 2, (a, v), order=2,
                    modes=("fwd", "rev"))
    m = trace_grad_module(lambda a, v: cnp.sum(csig.correlate(a, v) ** 2), a, v,
                             argnums=(0, 1))
    text = str(m)
    assert "correlate_valid" in text and "convolve" not in text


def test_generated_code_equals_the_kernels():
    x = rng.standard_normal((3, 5))
    s = np.sort(rng.standard_normal(6))
    for fn, args in [
        (lambda x: cnp.argsort(x, axis=0), (x,)),
        (lambda x: cnp.argpartition(x, (1, -1)), (x,)),
        (lambda a, v: cnp.searchsorted(a, v, side="right"), (s, x)),
        (lambda x: (cnp.any(x > 0, axis=1), cnp.all(x > -1, axis=(0, 1), keepdims=True)),
         (x,)),
        (lambda a, v: csig.correlate(a, v, "same"), (x, x[:2, :3])),
        (lambda a, v: cnp.convolve(a, v), (x[0], x[1, :3])),
    ]:
        for dtype in (np.float64, np.float32):
            cast = tuple(a.astype(dtype) for a in args)
            check(cr.trace(fn, *cast), *cast)
