"""The speed paths of a repeated call (issue 16, the float32 MLP rows), and the calls
they must not change.

- A call whose arguments have the types of the last compiled one skips the argument
  checks (``Transformed.__call__``'s fast path); when the generated code returns only
  arrays it allocated (``backend.execution.results_allocated``), ``own`` neither checks
  nor copies them (``checks.Allocated``). Not taken, or not skipping what protects the
  result: a changed dtype or shape, a captured value changed between calls (its guards
  still run), Python numbers and lists, results that are arguments, views or returned
  twice.
- Generated code computes a logsumexp from the exponentials its derivative reads
  (``backend.logsumexp_sharing``): the same NumPy calls on the same values, so the
  results are the same bit for bit as without the rewrite, -inf and inf slices included.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_losses import mlp_loss
from test_results_owned import _assert_owned

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import compile_module
from chainrule.backend.execution import results_allocated
from chainrule.transform.lowering.logsumexp_sharing import share_logsumexp


# -- which programs return only arrays they allocated ------------------------------------
@pytest.mark.parametrize("body, ret, types, want", [
    ("a = tanh(x)\n    b = multiply(a, x)", "(a, b)", "f64[2, 3], f64[2, 3]", True),
    ("a = tanh(x)\n    s = sum(a)", "(a, s)", "f64[2, 3], f64", True),  # 0-d: a scalar
    ("a = tanh(x)", "(a, x)", "f64[2, 3], f64[2, 3]", False),  # the caller's own array
    ("a = tanh(x)", "(a, a)", "f64[2, 3], f64[2, 3]", False),  # the same array twice
    ("a = permute_dims(x, axes=(1, 0))", "(a,)", "f64[3, 2]", False),  # a view of x
    ("a = sum(x, axis=(0,))\n    b = collapse_sum_to(x, shape=(1, 3))", "(a, b)",
     "f64[3], f64[1, 3]", True),
    ("a = stop_gradient(x)", "(a,)", "f64[2, 3]", False),
])
def test_results_allocated(body, ret, types, want):
    m = cr.parse(f"def main(x: f64[2, 3]) -> tuple[{types}]:\n    {body}\n    return {ret}\n")
    assert results_allocated(m["main"]) is want


# -- the fast path and the cases it must not take -----------------------------------------
def _mlp_problem(dtype, batch=6, seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal((12, 8)) / 3, 0.1 * rng.standard_normal(8),
              rng.standard_normal((8, 4)) / 3, 0.1 * rng.standard_normal(4)]
    return ([p.astype(dtype) for p in params], rng.standard_normal((batch, 12)).astype(dtype),
            rng.integers(0, 4, batch))


def _interpreted(f, *args):
    """``value_and_grad(f)`` at its first call: the AD pass's program in the interpreter
    (no optimize, no code generation, no speed path)."""
    return cr.value_and_grad(f, eager_compile=False)(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_repeated_calls_match_the_interpreter_and_own_their_results(dtype):
    params, x, labels = _mlp_problem(dtype)
    vg = cr.value_and_grad(mlp_loss, eager_compile=True)
    want_value, want_grads = _interpreted(mlp_loss, params, x, labels)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    for _ in range(3):  # the first call specializes; the next take the fast path
        value, grads = vg(params, x, labels)
        assert type(value) is dtype
        np.testing.assert_allclose(value, want_value, rtol=tol)
        for g, w in zip(grads, want_grads):
            assert g.dtype == dtype
            np.testing.assert_allclose(g, w, rtol=10 * tol, atol=tol)
        _assert_owned(grads, [*params, x])
        grads[0][...] = np.nan  # the caller's to change: the next call is not affected
    assert len(vg.fast_cache) == 1
    assert next(iter(vg.fast_cache.values())).tiers.allocates_results


def test_changed_dtypes_and_shapes_between_calls():
    vg = cr.value_and_grad(mlp_loss, eager_compile=True)
    for dtype, batch in [(np.float32, 6), (np.float32, 6), (np.float64, 6), (np.float32, 5),
                         (np.float64, 6), (np.float32, 6)]:
        params, x, labels = _mlp_problem(dtype, batch, seed=batch)
        value, grads = vg(params, x, labels)
        want_value, want_grads = _interpreted(mlp_loss, params, x, labels)
        assert type(value) is dtype and all(g.dtype == dtype for g in grads)
        tol = 1e-6 if dtype == np.float32 else 1e-14
        np.testing.assert_allclose(value, want_value, rtol=tol)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=10 * tol, atol=tol)


def test_captured_values_changed_between_calls():
    """The fast path still runs the guards of what the function reads from outside."""
    state = {"w": np.arange(3.0), "scale": 2.0}

    class Model:
        def __init__(self):
            self.bias = np.ones(3)

    model = Model()

    def f(x):
        return cnp.sum(cnp.tanh(x * state["w"] + model.bias) * state["scale"])

    vg = cr.value_and_grad(f, eager_compile=True)
    x = np.linspace(-1, 1, 3)

    def want():
        t = np.tanh(x * state["w"] + model.bias)
        return np.sum(t * state["scale"]), state["scale"] * (1 - t * t) * state["w"]

    for change in [None, None, "in place", "rebound", "number", "attribute", "shape", None]:
        if change == "in place":
            state["w"][0] = 5.0
        elif change == "rebound":
            state["w"] = np.array([0.5, -1.0, 2.0])
        elif change == "number":
            state["scale"] = -3.0
        elif change == "attribute":
            model.bias = np.full(3, -0.25)
        elif change == "shape":  # the captured array changes shape: traced again
            state["w"] = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
            x = np.linspace(-1, 1, 6).reshape(2, 3)
        value, grad = vg(x)
        want_value, want_grad = want()
        np.testing.assert_allclose(value, want_value, rtol=1e-14)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-14)


@pytest.mark.parametrize("arg", [1.5, [0.5, -1.0, 2.0], np.float32(0.25), (1.0, 2.0)])
def test_non_array_arguments(arg):
    f = cr.jit(lambda x: cnp.tanh(cnp.asarray(x)) * 2.0, eager_compile=True)
    for _ in range(3):
        got = f(arg)
        np.testing.assert_allclose(got, np.tanh(np.asarray(arg)) * 2.0, rtol=1e-6)


def test_static_int_argument_changes():
    f = cr.jit(lambda x, n: cnp.sum(x[:n] ** 2), eager_compile=True)
    x = np.arange(5.0)
    for n in [2, 2, 3, 5, 2]:
        assert f(x, n) == np.sum(x[:n] ** 2)


def test_results_that_are_arguments_views_or_twice_are_copied():
    x = np.arange(6.0).reshape(2, 3)
    f = cr.jit(lambda x: (x, x.T, x * 2, cnp.tanh(x)), eager_compile=True)
    g = cr.jit(lambda x: (lambda y: (y, y))(x * 2), eager_compile=True)
    for _ in range(3):
        out = f(x)
        _assert_owned(out, [x])
        np.testing.assert_array_equal(out[1], x.T)
        a, b = g(x)
        assert a is not b and not np.shares_memory(a, b)
        a[...] = 0
        np.testing.assert_array_equal(b, x * 2)


# -- logsumexp computed from its derivative's exponentials ----------------------------------
def _compiled_both_ways(f, *args):
    """The optimized program of ``value_and_grad(f)`` compiled with and without the
    rewrite (the results, and the rewritten source)."""
    vg = cr.value_and_grad(f, eager_compile=True, argnums=0)
    vg(*args)
    module = next(iter(vg.cache.values())).module
    shared_module = share_logsumexp(module)
    assert shared_module is not module  # the rewrite applies
    leaves = [a for a in args if isinstance(a, np.ndarray)]
    shared = compile_module(shared_module, "main_adjoint")
    plain = compile_module(module, "main_adjoint")
    with np.errstate(all="ignore"):
        return shared(*leaves), plain(*leaves), shared.source


def _flat(tree):
    from chainrule.tree import flatten

    return flatten(tree)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_gradient_is_the_same_bit_for_bit_with_one_exp(dtype):
    params, x, labels = _mlp_problem(dtype, batch=9)
    shared, plain, source = _compiled_both_ways(
        lambda w1, b1, w2, b2, x, lb: mlp_loss([w1, b1, w2, b2], x, lb), *params, x, labels)
    for a, b in zip(_flat(shared), _flat(plain)):
        np.testing.assert_array_equal(a, b)
    assert source.count("np.exp(") == 1 and ".max(" in source and source.count(".max(") == 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis, keepdims", [(1, True), (1, False), (0, False), (None, False),
                                            ((0, 1), True)])
def test_logsumexp_and_its_gradient_the_same_bit_for_bit(dtype, axis, keepdims):
    x = np.array([[0.5, -1.0, 3.0], [-np.inf, -np.inf, -np.inf], [1e4, 1e4 - 1, -np.inf],
                  [np.inf, 0.0, 1.0], [1e30, 1e30, 2.0]], dtype)
    y = np.linspace(-1, 1, x.size).reshape(x.shape).astype(dtype)

    def f(x, y):
        z = cnp.logsumexp(x, axis=axis, keepdims=keepdims)
        return cnp.sum(z * z) + cnp.sum(x * y)

    shared, plain, _ = _compiled_both_ways(f, x, y)
    for a, b in zip(_flat(shared), _flat(plain)):
        np.testing.assert_array_equal(a, b)


def test_a_program_without_the_chain_is_unchanged():
    m = cr.parse("def main(x: f64[2, 3]) -> f64[2]:\n"
                 "    z = logsumexp(x, axis=(1,))\n"
                 "    t = max(x, axis=(1,), keepdims=True)\n"
                 "    d = subtract(x, t)\n"
                 "    return z\n")
    assert share_logsumexp(m) is m


def test_the_module_a_transform_shows_keeps_the_op():
    """Only the generated code changes: ``.module`` (inlined into enclosing traces and
    differentiated again) keeps logsumexp, and second derivatives stay right."""
    x = np.array([[0.3, -1.2, 2.0], [4.0, 4.5, -3.0]])
    vg = cr.value_and_grad(lambda x: cnp.sum(cnp.logsumexp(x, axis=1)), eager_compile=True)
    vg(x)
    assert "logsumexp(" in str(next(iter(vg.cache.values())).module)
    h = cr.hessian(lambda x: cnp.sum(cnp.logsumexp(x, axis=1)))(x)
    p = np.exp(x - np.log(np.sum(np.exp(x), axis=1, keepdims=True)))
    want = np.zeros((2, 3, 2, 3))
    for i in range(2):
        want[i, :, i, :] = np.diag(p[i]) - np.outer(p[i], p[i])
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("make", [lambda x: cnp.real(x), lambda x: cnp.imag(x),
                                  lambda x: cnp.conj(x), lambda x: x.astype(np.float64),
                                  lambda x: x[1:], lambda x: cnp.reshape(x, (3, 2)),
                                  lambda x: cnp.zeros_like(x), lambda x: cnp.sum(x, axis=0),
                                  lambda x: cnp.where(x > 2, x, 0.0), lambda x: x @ x.T])
def test_ops_next_to_a_fresh_result_never_hand_out_argument_memory(make):
    """Whether or not the program's results count as allocated, the caller gets arrays
    of its own, at every call (the later ones on the fast path)."""
    x = np.arange(6.0).reshape(2, 3)
    f = cr.jit(lambda x: (make(x), x * 2), eager_compile=True)
    for _ in range(3):
        out = f(x)
        _assert_owned(out, [x])
        np.testing.assert_array_equal(out[0], np.asarray(make(x)))
