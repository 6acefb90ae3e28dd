"""autograd's API where its own test programs rely on it, on chainrule: both forms of
``make_vjp``, ``unary_to_nary``, ``const_graph``, ``vspace``, the deprecated primitive
methods, the exception types autograd's tests expect, ``check_grads`` catching a wrong
VJP (first and second order), names of wrapped functions, non-array arguments passed
through ``grad``, ``where`` of Python values, and the generalized ``convolve`` against
autograd's (when installed, a dev extra) and finite differences.
"""

from __future__ import annotations

import re
import warnings

import numpy as onp
import pytest

import chainrule.numpy as cnp
from chainrule.compat.autograd import api as ac
from chainrule.scipy.signal import convolve
from chainrule.testing import check_grads

try:
    import autograd.scipy.signal as ag_signal
except ImportError:  # autograd is a dev extra
    ag_signal = None


def test_make_vjp_in_both_of_autograds_forms():
    f = lambda x, y: cnp.sin(x) * y  # noqa: E731
    vjp, ans = ac.make_vjp(f, 1)(0.5, 2.0)  # autograd.make_vjp(fun, argnum)(*args)
    assert onp.isclose(ans, onp.sin(0.5) * 2.0) and onp.isclose(vjp(1.0), onp.sin(0.5))
    vjp, ans = ac.make_vjp(lambda x: f(x, 2.0), 0.5)  # autograd.core.make_vjp(fun, x)
    assert onp.isclose(vjp(1.0), 2.0 * onp.cos(0.5))


def test_unary_to_nary_writes_an_operator_once():
    @ac.unary_to_nary
    def slope(fun, x):
        vjp, _ = ac.make_vjp(fun, x)
        return vjp(1.0)

    g = slope(lambda a, b: a ** 3 * b, 0)
    assert onp.isclose(g(2.0, 5.0), 60.0)
    assert g.__name__ == "slope_of_<lambda>_wrt_argnum_0"


def test_const_graph_traces_once():
    calls = []

    def f(x, y):
        calls.append(None)
        return ac.grad(lambda x: cnp.sin(x) + x * 2)(x * y)

    wrapped = ac.const_graph(f)
    for x, y in [(0.0, 0.0), (1.0, 0.5), (1.0, 0.5), (2.0, 1.0)]:
        assert onp.isclose(wrapped(x, y), onp.cos(x * y) + 2)
    assert len(calls) == 1


def test_grad_names_and_non_array_arguments():
    def checker(x, kind, flag):
        assert kind is list and flag is True
        return cnp.sum(x ** 2)

    g = ac.grad(checker)
    onp.testing.assert_allclose(g(onp.array([1.0, 2.0]), list, True), [2.0, 4.0])
    assert g.__name__ == "grad_of_checker_wrt_argnum_0"
    assert ac.grad.__doc__.lstrip().startswith("Returns a function which")


@pytest.mark.parametrize("value", [onp.zeros((3, 2)), 0.0, 1j * onp.zeros(2),
                                   {"x": [0.0, onp.zeros((3, 1))], "y": ({"a": 0.0}, [0.0])}])
def test_vspace_axioms(value):
    vs = ac.vspace(value)
    x, y = vs.randn(), vs.randn()
    close = lambda a, b: onp.isclose(vs.inner_prod(x, a), vs.inner_prod(x, b))  # noqa: E731
    assert close(vs.add(x, y), vs.add(y, x))
    assert close(vs.scalar_mul(vs.add(x, y), 2.0), vs.add(vs.scalar_mul(x, 2.0),
                                                           vs.scalar_mul(y, 2.0)))
    basis = list(vs.standard_basis())
    assert len(basis) == vs.size and all(ac.vspace(b) == vs for b in basis)
    total = basis[0]
    for b in basis[1:]:
        total = vs.add(total, b)
    assert close(total, vs.ones())
    gram = [[vs.inner_prod(a, b) for b in basis] for a in basis]
    onp.testing.assert_allclose(gram, onp.eye(vs.size), atol=1e-12)
    check_grads(vs.inner_prod, (x, y), order=2, modes=("fwd", "rev"))


def test_errors_are_the_exception_types_autograd_raises():
    with pytest.raises(TypeError):  # a complex output without holomorphic
        ac.grad(lambda x: x * (1.0 + 0.2j))(1.0)
    with pytest.raises(TypeError):  # a bool output
        ac.grad(lambda x: cnp.allclose(x, x * 3.0 / 3.0))(onp.ones(3))
    with pytest.raises(TypeError):  # in-place assignment

        def assign(a):
            a[1] = 3.0
            return a

        check_grads(assign, (onp.ones(5),))
    fun = ac.primitive(lambda x: 2.0 * x)
    with pytest.raises(NotImplementedError):
        ac.grad(fun)(1.0)
    with pytest.raises(NotImplementedError):
        ac.deriv(fun)(1.0)


def test_check_grads_catches_a_wrong_vjp_at_first_and_second_order():
    @ac.primitive
    def foo(x):
        return x * 2.0

    ac.defvjp(foo, lambda ans, x: lambda g: g * 2.001)
    with pytest.raises(AssertionError, match=re.escape("(VJP) check of foo failed")):
        ac.check_grads(foo, modes=["rev"])(1.0)

    @ac.primitive
    def bar(x):
        return x

    @ac.primitive
    def baz(x):
        return x * 2.0

    ac.defvjp(bar, lambda ans, x: lambda g: g * 1.001)  # wrong, reached only at order 2
    ac.defvjp(baz, lambda ans, x: lambda g: bar(g) * 2)
    ac.check_grads(baz, modes=["rev"], order=1)(1.0)
    with pytest.raises(AssertionError, match=re.escape("(VJP) check of vjp_baz failed")):
        ac.check_grads(baz, modes=["rev"], order=2)(1.0)


def test_deprecated_primitive_methods():
    @ac.primitive
    def mul(x, y):
        return x * y

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mul.defgrad(lambda ans, x, y: lambda g: y * g)
        mul.defvjp(lambda g, ans, vs, gvs, x, y: x * g, argnum=1)
        a, b = onp.array([1.0, 2.0]), onp.array([3.0, -1.0])
        ac.check_grads(lambda x, y: mul(x, y), modes=["rev"])(a, b)
        ac.quick_grad_check(lambda x, y: cnp.sum(x ** 2 * y), a, (b,))


def test_where_of_python_values_is_a_python_value():
    assert cnp.where(True, 1, 2) == 1 and type(cnp.where(True, 1, 2)) is int
    assert type(cnp.where(False, 1, 2.0)) is float
    assert cnp.where(True, [1, 2], [3, 4]) == [1, 2]
    assert cnp.where(False, onp.array([1.0]), onp.array([2.0], onp.float32)).dtype == float


CONVOLUTIONS = [  # (in1 shape, in2 shape, axes, dot_axes)
    ((4, 3), (3, 2), ([0], [0]), ([], [])),
    ((4, 3), (3, 2), ([1, 0], [1, 0]), ([], [])),
    ((3, 3, 2), (3, 2, 3), ([1], [1]), ([0], [2])),
    ((2, 5, 4, 3), (2, 4, 2, 3, 2), ([1, 2], [2, 4]), ([0, 3], [0, 3])),
    ((2, 3), (4, 3), ([0], [0]), ([1], [1])),
]


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("shapes", CONVOLUTIONS, ids=[str(c[:2]) for c in CONVOLUTIONS])
def test_tensor_convolve(shapes, mode):
    s1, s2, axes, dot_axes = shapes
    rng = onp.random.default_rng(0)
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)

    def f(a, b):
        return convolve(a, b, axes=axes, dot_axes=dot_axes, mode=mode)

    if ag_signal is not None:
        want = ag_signal.convolve(a, b, axes=axes, dot_axes=dot_axes, mode=mode)
        onp.testing.assert_allclose(f(a, b), want, rtol=1e-12, atol=1e-12)
    check_grads(f, (a, b), order=2, modes=("fwd", "rev"))


def test_tensor_convolve_matches_scipy_along_one_axis_pair():
    import scipy.signal

    rng = onp.random.default_rng(1)
    a, b = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    for mode in ("full", "valid", "same"):
        got = convolve(a, b, axes=([1], [0]), mode=mode)[1, 2]
        onp.testing.assert_allclose(got, scipy.signal.convolve(a[1], b[:, 2], mode))


def test_real_if_close():
    from chainrule import tape
    from chainrule.errors import ConcretizationError

    almost = onp.array([1 + 1e-20j, 2 + 0j])
    onp.testing.assert_array_equal(cnp.real_if_close(almost), [1.0, 2.0])
    onp.testing.assert_array_equal(cnp.real_if_close(onp.array([1 + 1j])), [1 + 1j])
    t = tape.tensor(almost, requires_grad=True)
    assert cnp.real_if_close(t).dtype == onp.float64
    with pytest.raises(ConcretizationError):
        import chainrule as cr

        cr.jit(lambda z: cnp.real_if_close(z * 1j))(onp.ones(2) + 0j)
    check_grads(lambda x: cnp.real_if_close(x) ** 2, (onp.array([0.5, 1.5]),), order=2,
                modes=("fwd", "rev"))


def test_cast_to_int_picks_indices_like_autograd():
    """np.int64 of a value being differentiated (autograd's test_cast_to_int): the cast
    has a zero derivative; the function runs on the tape and the gather differentiates."""
    rng = onp.random.default_rng(2)
    w = rng.standard_normal((5, 4))
    w[:, -1] = [0, 2, 1, 1, 0]

    def fun(w):
        rows = onp.int64(w[:, -1])
        assert rows.dtype == onp.int64
        return cnp.sum(w[:, :-1][rows] ** 2)

    want = onp.zeros_like(w)
    onp.add.at(want, (onp.int64(w[:, -1]),), 2 * w[onp.int64(w[:, -1]), :])
    want[:, -1] = 0.0
    onp.testing.assert_allclose(ac.grad(fun)(w), want)
