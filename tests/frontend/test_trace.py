"""Tracing: ``trace(f, *args)`` then ``run(m, *args)`` equals ``f(*args)`` on NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ArgumentError, ConcretizationError, TraceError, TypeInferenceError

rng = np.random.default_rng(0)


def same_as_numpy(f, *args, rtol=1e-12):
    """Trace, check the module (verify, round-trip), run it, compare with f on arrays."""
    m = cr.trace(f, *args)
    cr.verify(m)
    assert cr.parse(str(m)) == m
    got, want = cr.run(m, *args), f(*args)
    check_tree(got, want, rtol)
    return m


def check_tree(got, want, rtol):
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want)
        for k in want:
            check_tree(got[k], want[k], rtol)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            check_tree(g, w, rtol)
    elif want is None:
        assert got is None
    else:
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        rtol = max(rtol, 1e-6) if got.dtype == np.float32 else rtol
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


# -- models ------------------------------------------------------------------------------------
def mlp_loss(params, x, labels):
    h = cnp.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    B = x.shape[0]
    logp = logits - cnp.logsumexp(logits, axis=-1, keepdims=True)
    return -cnp.mean(logp[np.arange(B), labels])


def numpy_mlp_loss(params, x, labels):
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = logits.max(-1, keepdims=True)
    logp = logits - (np.log(np.exp(logits - m).sum(-1, keepdims=True)) + m)
    return -np.mean(logp[np.arange(x.shape[0]), labels])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_softmax_cross_entropy(dtype):
    params = {"W1": rng.standard_normal((4, 8)).astype(dtype), "b1": np.zeros(8, dtype),
              "W2": rng.standard_normal((8, 3)).astype(dtype), "b2": np.zeros(3, dtype)}
    x = rng.standard_normal((5, 4)).astype(dtype)
    labels = np.array([0, 2, 1, 1, 0])
    m = same_as_numpy(mlp_loss, params, x, labels)
    np.testing.assert_allclose(cr.run(m, params, x, labels), numpy_mlp_loss(params, x, labels),
                               rtol=1e-5 if dtype == np.float32 else 1e-12)
    text = str(m)
    t = "f32" if dtype == np.float32 else "f64"
    assert (f"def main(params_W1: {t}[4, 8], params_W2: {t}[8, 3], params_b1: {t}[8], "
            f"params_b2: {t}[3], x: {t}[5, 4], labels: i64[5]) -> {t}:") in text
    assert "i64([0, 1, 2, 3, 4]), labels]" in text  # traced integer labels index the logits


def test_flat_leaves_are_accepted_too():
    params = {"W1": np.ones((4, 8)), "b1": np.zeros(8), "W2": np.ones((8, 3)), "b2": np.zeros(3)}
    x, labels = np.ones((5, 4)), np.zeros(5, np.int64)
    m = cr.trace(mlp_loss, params, x, labels)
    flat = cr.run(m, params["W1"], params["W2"], params["b1"], params["b2"], x, labels)
    np.testing.assert_allclose(flat, cr.run(m, params, x, labels))


# -- many small functions ----------------------------------------------------------------------
X34 = rng.standard_normal((3, 4))
X34_32 = X34.astype(np.float32)
V4 = rng.standard_normal(4)

FUNCTIONS = {
    "broadcast": (lambda x, y: x[:, None] * y + 1.0, (rng.standard_normal(3), V4)),
    "transpose_matmul": (lambda x: x.T @ x, (X34,)),
    "shape_reshape": (lambda x: x.reshape(x.shape[1], -1).sum(axis=1) * x.shape[0], (X34_32,)),
    "reshape_tuple": (lambda x: x.reshape((2, 6)), (X34,)),
    "ravel_index": (lambda x: x.ravel()[1:10:3], (X34,)),
    "basic_indexing": (lambda x: (x[0], x[-1, ::-1], x[..., 1], x[None, 1:, ::2], x[1, 2]),
                       (X34,)),
    "array_indexing": (lambda x: (x[np.array([2, 0, 2])], x[:, np.array([[0], [3]])],
                                  x[np.array([0, 1]), np.array([3, 3])]), (X34,)),
    "nonadjacent_advanced": (lambda x: x[np.array([0, 1]), :, np.array([1, 0])],
                             (rng.standard_normal((2, 3, 4)),)),
    "compare_where": (lambda x, y: cnp.where(x > y, x, y * 2.0), (X34, V4)),
    "logical": (lambda x: cnp.where((x > 0) & (x < 1) | ~(x > -1), 1.0, 0.0), (X34,)),
    "reductions": (lambda x: (x.sum(), x.sum(axis=0), x.mean(axis=-1, keepdims=True),
                              x.max(axis=(0, 1)), x.min(1), x.prod(axis=0), x.argmax(axis=1),
                              cnp.argmin(x)), (X34,)),
    "numpy_functions": (lambda x: np.exp(x) + np.sum(x) + np.maximum(x, 0.0) + np.tanh(x)
                        + np.mean(x, axis=0), (X34,)),
    "arith": (lambda x: x ** 2 + 2 ** x + abs(x) + (-x) + +x + x / 3 + 3 / (x + 10) - 1 + (1 - x),
              (X34,)),
    "composites": (lambda x: (cnp.stack([x, x * 2], axis=1), cnp.concatenate([x, x]),
                              cnp.clip(x, -0.5, 0.5), cnp.var(x), cnp.std(x, axis=0),
                              cnp.outer(x, x), cnp.dot(x, x), cnp.softplus(x),
                              cnp.log_sigmoid(x)), (V4,)),
    "shape_ops": (lambda x: (cnp.split(x, 2, axis=1), cnp.take(x, np.array([2, 0]), axis=1),
                             cnp.expand_dims(x, 0), cnp.squeeze(x[None]),
                             cnp.broadcast_to(x, (2, 3, 4)), cnp.flip(x, 0), cnp.cumsum(x, 1),
                             cnp.swapaxes(x, 0, 1), cnp.moveaxis(x, 0, -1)), (X34,)),
    "nn": (lambda x: (cnp.softmax(x), cnp.log_softmax(x, axis=0), cnp.logsumexp(x),
                      cnp.sigmoid(x), cnp.relu(x)), (X34,)),
    "creation_like": (lambda x: cnp.zeros_like(x) + cnp.ones_like(x) + cnp.full_like(x, 2.0)
                      + cnp.zeros(4) + cnp.arange(4.0), (X34,)),
    "astype_stop_gradient": (lambda x: (x.astype(np.int32), cnp.stop_gradient(x) * 2), (X34,)),
    "iterate_and_len": (lambda x: sum(list(x)) * len(x), (X34,)),
    "integer_inputs": (lambda i, j: (i * j + 1, i - j, i / j), (np.arange(3), np.ones(3, int))),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_trace_equals_numpy(name):
    f, args = FUNCTIONS[name]
    same_as_numpy(f, *args)


def test_dot_method_and_matmul_shapes():
    same_as_numpy(lambda a, b: (a.dot(b), a @ b[:, 0], b[:, 0] @ a.T), X34, X34.T.copy())


# -- pytrees -----------------------------------------------------------------------------------
def test_pytree_args_and_results():
    def f(d, xs, pair):
        return {"a": d["x"] * 2, "b": [d["y"][0] + pair[1], (xs[0] - xs[1],)]}, pair[0]

    args = ({"x": np.ones(2), "y": [np.ones(3), np.zeros(1)]}, [np.ones(3), np.arange(3.0)],
            (np.float64(4.0), np.ones(3)))
    m = same_as_numpy(f, *args)
    assert ("def main(d_x: f64[2], d_y_0: f64[3], d_y_1: f64[1], xs_0: f64[3], xs_1: f64[3], "
            "pair_0: f64, pair_1: f64[3])") in str(m)
    out = cr.run(m, *args)
    assert isinstance(out, tuple) and isinstance(out[0], dict) and isinstance(out[0]["b"], list)


def test_namedtuple_and_none_leaves():
    from collections import namedtuple

    P = namedtuple("P", ["w", "b"])

    def f(p, x):
        return P(x @ p.w + p.b, None)

    m = same_as_numpy(f, P(np.ones((3, 2)), np.zeros(2)), np.ones((4, 3)))
    assert "def main(p_w: f64[3, 2], p_b: f64[2], x: f64[4, 3])" in str(m)
    out = cr.run(m, P(np.ones((3, 2)), np.zeros(2)), np.ones((4, 3)))
    assert isinstance(out, P) and out.b is None


def test_varargs_parameter_names():
    m = same_as_numpy(lambda *xs: xs[0] + xs[1], np.ones(2), np.ones(2))
    assert "def main(xs_0: f64[2], xs_1: f64[2])" in str(m)


# -- constants ---------------------------------------------------------------------------------
def test_captured_arrays_and_scalars_become_constants():
    w = np.arange(3.0).astype(np.float32)

    def f(x):
        return x * w + 2, x * 1.5, x + np.float64(1.0)

    m = same_as_numpy(f, np.ones(3, np.float32))
    text = str(m)
    assert "multiply(x, f32([0.0, 1.0, 2.0]))" in text
    assert "add(lv0, f32(2.0))" in text
    assert "multiply(x, f32(1.5))" in text  # a Python float does not promote f32
    assert "add(x, 1.0)" in text  # a NumPy f64 scalar does
    out = cr.run(m, np.ones(3, np.float32))
    assert out[1].dtype == np.float32 and out[2].dtype == np.float64


def test_python_scalars_with_integer_arrays():
    same_as_numpy(lambda i: (i * 2, i * 1.5, i + True), np.arange(3))


def test_large_captured_constant_is_hoisted():
    w = rng.standard_normal((5, 5))
    m = same_as_numpy(lambda x: x @ w, np.ones((2, 5)))
    assert str(m).startswith("c0 = f64([[")


def test_result_that_is_a_constant_or_an_input():
    m = same_as_numpy(lambda x: (x, np.ones(2), 3.0), np.zeros(2))
    assert "return (x, f64([1.0, 1.0]), 3.0)" in str(m)


# -- errors ------------------------------------------------------------------------------------
def test_python_if_on_traced_value():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError) as info:
        cr.trace(f, np.ones(3))
    msg = str(info.value)
    assert "cnp.where" in msg and "cr.cond" in msg


@pytest.mark.parametrize("f", [lambda x: float(x), lambda x: int(x), lambda x: np.asarray(x),
                               lambda x: [0, 1][x], lambda x: x.sum() and x,
                               lambda x: bool(x > 0)])
def test_concretization_errors(f):
    with pytest.raises(ConcretizationError, match="Python control flow cannot depend on traced"):
        cr.trace(f, np.ones(()))


def test_numpy_function_routes_to_chainrule():
    m = cr.trace(lambda x: np.exp(x) + np.sum(x, axis=0), np.ones((2, 3)))
    assert "exp(x)" in str(m) and "sum(x, axis=(0,))" in str(m)


def test_unsupported_numpy_function_is_a_trace_error():
    with pytest.raises(TraceError, match=r"np\.histogram is not supported on chainrule values"):
        cr.trace(lambda x: np.histogram(x), np.eye(2))
    with pytest.raises(TraceError, match="not supported"):
        cr.trace(lambda x: np.add.reduce(x), np.eye(2))


def test_shape_error_at_trace_time_names_op_and_shapes():
    with pytest.raises(TypeInferenceError) as info:
        cr.trace(lambda x, y: x + y, np.ones(3), np.ones(4))
    msg = str(info.value)
    assert "add: shapes do not broadcast: f64[3], f64[4]" in msg
    assert "test_trace.py" in msg  # points at the user's line
    with pytest.raises(TypeInferenceError, match=r"matmul: inner dimensions differ: f32\[2, 3\]"):
        cr.trace(lambda x: x @ x, np.ones((2, 3), np.float32))


def test_bad_arguments():
    with pytest.raises(ArgumentError, match="argument x is a object .* not an array"):
        cr.trace(lambda x: x, object())
    with pytest.raises(TraceError, match="cannot use"):
        cr.trace(lambda x: x + object(), np.ones(2))


def test_escaped_traced_value():
    leaked = []

    def f(x):
        leaked.append(x)
        return x

    cr.trace(f, np.ones(2))
    with pytest.raises(TraceError, match="escaped the function that traced it"):
        cr.trace(lambda y: y + leaked[0], np.ones(2))


# -- chainrule.numpy on plain arrays just computes ---------------------------------------------
def test_chainrule_numpy_on_numpy_arrays():
    x = X34
    np.testing.assert_allclose(cnp.exp(x), np.exp(x))
    np.testing.assert_allclose(cnp.sum(x, axis=1), np.sum(x, axis=1))
    np.testing.assert_allclose(cnp.where(x > 0, x, 0.0), np.where(x > 0, x, 0.0))
    np.testing.assert_allclose(cnp.softmax(x), np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    np.testing.assert_allclose(cnp.getitem(x, (slice(None), np.array([0, 0]))), x[:, [0, 0]])
    np.testing.assert_allclose(cnp.take_along_axis(x, np.array([[0], [1], [2]]), 1),
                               np.take_along_axis(x, np.array([[0], [1], [2]]), 1))
    np.testing.assert_allclose(cnp.cumprod(x, axis=1), np.cumprod(x, axis=1))
    assert isinstance(cnp.matmul(x, x.T), np.ndarray)
    assert cnp.multiply(np.ones(2, np.float32), 2.5).dtype == np.float32


def test_registered_pytree_node_and_tree_map():
    from chainrule.tree import flatten, register_pytree_node, tree_map, unflatten

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda aux, c: Pair(*c))
    leaves, tree = flatten({"p": Pair(1.0, (2.0, 3.0))})
    assert leaves == [1.0, 2.0, 3.0]
    back = unflatten(tree, [4.0, 5.0, 6.0])
    assert back["p"].a == 4.0 and back["p"].b == (5.0, 6.0)
    doubled = tree_map(lambda x, y: x + y, {"u": [1, 2]}, {"u": [10, 20]})
    assert doubled == {"u": [11, 22]}
    import chainrule as cr
    import chainrule.numpy as cnp

    g = cr.grad(lambda p: cnp.sum(p.a * p.b))(Pair(np.array([2.0]), np.array([3.0])))
    assert float(g.a[0]) == 3.0 and float(g.b[0]) == 2.0
