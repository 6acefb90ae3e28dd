"""The tape (issue 5): eager reverse mode on the same IR and rules."""

import sys

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape as ct
from chainrule.errors import ChainruleError, GradientError
from chainrule.tape.pullback import STATS


def test_seed_pytorch_example():
    x = ct.tensor(np.ones((5, 5)), requires_grad=True)
    y = ct.tensor(np.ones((5, 5)) * 4, requires_grad=True)
    z = x ** 2 + x * 2 + x * y + y
    z.backward(np.ones((5, 5)))
    np.testing.assert_allclose(x.grad, 2 * 1 + 2 + 4)  # dz/dx = 2x + 2 + y
    np.testing.assert_allclose(y.grad, 1 + 1)  # dz/dy = x + 1


def test_gradients_accumulate_and_zero_grad():
    w = ct.tensor(np.array([1.0, 2.0]), requires_grad=True)
    for _ in range(3):
        cnp.sum(w * w).backward()
    np.testing.assert_allclose(w.grad, 3 * 2 * w.value())
    w.zero_grad()
    assert w.grad is None


def test_non_scalar_backward_needs_a_gradient():
    x = ct.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(GradientError, match="implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_retain_graph():
    x = ct.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = cnp.sum(cnp.exp(x))
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * np.exp([1.0, 2.0]))
    with pytest.raises(ChainruleError, match="second time"):
        y.backward()


def test_no_grad_and_detach():
    x = ct.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with ct.no_grad():
        y = x * 3
    assert not y.requires_grad and y.is_leaf
    z = x.detach() * x
    cnp.sum(z).backward()
    np.testing.assert_allclose(x.grad, [1.0, 2.0])


def test_python_control_flow_on_values():
    w = ct.tensor(np.array([0.5, -0.3]), requires_grad=True)
    loss = cnp.sum(w * w)
    steps = 0
    while loss > 1e-3:  # a Python loop on a value: fine on the tape
        loss = loss * 0.5
        steps += 1
    loss.backward()
    np.testing.assert_allclose(w.grad, 2 * w.value() * 0.5 ** steps)


def test_bignet_smallnet_pruning():
    rng = np.random.default_rng(0)
    data = ct.tensor(rng.normal(size=(4, 3)))
    big_w = ct.tensor(rng.normal(size=(3, 3)), requires_grad=True)
    small_w = ct.tensor(rng.normal(size=(3, 1)), requires_grad=True)
    h = data
    for _ in range(20):  # BigNet: lots of work, none of it reaches the loss
        h = cnp.cos(h @ big_w)
    result = h
    loss = cnp.sum(cnp.tanh(data @ small_w))  # SmallNet
    loss.backward()
    assert STATS["last_nodes"] == 3
    assert set(STATS["last_ops"]) == {"matmul", "tanh", "sum"}
    assert "cos" not in STATS["last_ops"]
    assert big_w.grad is None
    assert result.shape == (4, 3)


def test_backward_structure_is_cached():
    for _ in range(2):  # the first backward runs the rules eagerly; the second compiles
        w = ct.tensor(np.array([0.1, 0.2]), requires_grad=True)
        cnp.sum(cnp.tanh(w * 2.0)).backward()
    before = STATS["backward_compilations"]
    for k in range(5):
        x = ct.tensor(np.array([0.3, 0.1]) * k, requires_grad=True)
        cnp.sum(cnp.tanh(x * 2.0)).backward()
        np.testing.assert_allclose(x.grad, 2 * (1 - np.tanh(2 * x.value()) ** 2))
    assert STATS["backward_compilations"] == before


def test_dynet_style_training_loop_lazy():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(3, 2)) * 0.1
    b = np.zeros(2)
    X = rng.normal(size=(16, 3))
    labels = (X[:, 0] > 0).astype(np.int64)
    losses = []
    for _ in range(60):
        with ct.lazy():
            Wt = ct.tensor(W, requires_grad=True)  # a fresh graph every step
            bt = ct.tensor(b, requires_grad=True)
            logp = cnp.log_softmax(X @ Wt + bt)
            loss = -cnp.mean(logp[np.arange(16), labels])
        assert loss._value is None  # nothing computed yet
        losses.append(float(loss.value()))
        loss.backward()
        W = W - 0.5 * Wt.grad
        b = b - 0.5 * bt.grad
    assert losses[-1] < 0.5 * losses[0]


def test_lazy_computes_only_what_is_needed():
    with ct.lazy():
        x = ct.tensor(np.array([1.0, 2.0]), requires_grad=True)
        unused = cnp.exp(x) * 100.0
        used = cnp.sum(x * x)
    assert used.value() == 5.0
    assert unused._value is None
    assert unused.shape == (2,)


def _functions():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(3, 4))
    x = rng.normal(size=(5, 3))

    def mlp(W):
        return cnp.sum(cnp.tanh(x @ W) ** 2)

    def chain(W):
        return cnp.sum(cnp.exp(cnp.sin(W) * 0.5) / (1.0 + W * W))

    def tuple_out(W):
        a, b = cnp.split(W, 2, axis=1)
        return cnp.sum(a * b) + cnp.mean(cnp.log_softmax(W))

    return [(mlp, W), (chain, W), (tuple_out, W)]


@pytest.mark.parametrize("k", range(3))
def test_tape_equals_compiled(k):
    f, W = _functions()[k]
    w = ct.tensor(W, requires_grad=True)
    f(w).backward()
    np.testing.assert_allclose(w.grad, cr.grad(f)(W), rtol=1e-12, atol=1e-14)


def test_grad_falls_back_to_tape_for_value_control_flow():
    def f(x):
        if cnp.sum(x) > 0:
            return cnp.sum(x * x)
        return cnp.sum(cnp.sin(x))

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.grad(f)(x), 2 * x)
    np.testing.assert_allclose(cr.grad(f)(-x), np.cos(-x))

    def newton(a):
        x = a
        while cnp.abs(x * x - a) > 1e-12:
            x = x - (x * x - a) / (2 * x)
        return x

    assert cr.grad(newton)(2.0) == pytest.approx(1 / (2 * np.sqrt(2.0)), rel=1e-12)

    def power(x, n):  # recursion on a value
        return x if n == 1 else x * power(x, n - 1)

    assert cr.grad(lambda x: power(x, 4) if x > 0 else x)(1.5) == pytest.approx(4 * 1.5 ** 3)


def test_second_order_create_graph_equals_hessian():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(2, 2))
    f = lambda W: cnp.sum(cnp.tanh(W @ W) * W)
    H = cr.hessian(f)(W).reshape(4, 4)
    rows = []
    for i in range(4):
        w = ct.tensor(W, requires_grad=True)
        f(w).backward(create_graph=True)
        g = w.grad
        w.grad = None
        g.reshape(-1)[i].backward()
        rows.append(w.grad.reshape(-1))
    np.testing.assert_allclose(np.array(rows), H, rtol=1e-10, atol=1e-12)


def test_grad_of_grad_on_tape():
    def f(x):
        return cnp.sin(x) if x > 0 else cnp.cos(x)

    assert cr.grad(cr.grad(f))(0.5) == pytest.approx(-np.sin(0.5), rel=1e-12)


def test_graph_and_dot():
    x = ct.tensor(np.ones(3), requires_grad=True)
    y = cnp.sum(cnp.exp(x) * 2.0)
    m = y.graph()
    text = str(m)
    assert "exp(w0)" in text and "sum(" in text
    assert cr.parse(text) == m
    dot = y.to_dot()
    assert dot.startswith("digraph") and "exp" in dot and "w0 -> n0" in dot


def test_long_chain_backprop_without_recursion():
    n = 100_000
    x = ct.tensor(np.array([0.5]), requires_grad=True)
    y = x
    for _ in range(n // 2):
        y = y * 1.0000001
        y = y + 0.0
    assert sys.getrecursionlimit() < n
    cnp.sum(y).backward()
    np.testing.assert_allclose(x.grad, [1.0000001 ** (n // 2)], rtol=1e-9)


# -- indexing, chainrule.numpy functions and tuple-valued ops on tensors -------------------
def test_indexing_and_numpy_functions_on_tensors():
    W = np.random.default_rng(4).normal(size=(4, 3))

    def f(W):
        a = W[1:, 0] * W[np.array([0, 2, 3]), 1]  # basic and advanced indexing
        b = cnp.reshape(W, (3, 4)).T @ cnp.ones(3)
        c = cnp.where(W > 0, W, 0.1 * W)
        s = cnp.concatenate([W[:, :1], cnp.exp(W[:, 1:])], axis=1)
        return (cnp.sum(a) + cnp.sum(b * b) + cnp.mean(c) + cnp.sum(cnp.max(W, axis=0))
                + cnp.sum(cnp.log_softmax(s, axis=1) * W) + W[2, 1] * W[-1, ...].sum())

    w = ct.tensor(W, requires_grad=True)
    out = f(w)
    assert isinstance(out, ct.Tensor) and out.shape == ()
    np.testing.assert_allclose(out.value(), f(W), rtol=1e-12)
    out.backward()
    np.testing.assert_allclose(w.grad, cr.grad(f)(W), rtol=1e-12, atol=1e-14)


def test_split_on_the_tape():
    x = ct.tensor(np.arange(6.0), requires_grad=True)
    a, b, c = cnp.split(x, 3)
    assert all(isinstance(p, ct.Tensor) and p.shape == (2,) for p in (a, b, c))
    cnp.sum(a * cnp.exp(c)).backward()  # b unused: its adjoint is zero
    np.testing.assert_allclose(x.grad, [np.exp(4), np.exp(5), 0, 0, 0, np.exp(5)])
    with ct.no_grad():
        parts = cnp.split(x, 2)
    assert len(parts) == 2 and not parts[0].requires_grad and parts[1].shape == (3,)


def test_lazy_mode_with_tuple_ops():
    with ct.lazy():
        x = ct.tensor(np.arange(6.0), requires_grad=True)
        a, b = cnp.split(x, 2)
        loss = cnp.sum(a * cnp.exp(b))
    assert a._value is None and loss._value is None
    assert a.shape == (3,) and b.dtype == np.float64  # from the type rules, no compute
    assert a._value is None
    loss.backward()
    np.testing.assert_allclose(x.grad, np.concatenate([np.exp([3.0, 4, 5]),
                                                       [0, 1, 2] * np.exp([3.0, 4, 5])]))


# -- retain_graph, create_graph ----------------------------------------------------------
def test_retain_graph_keeps_the_graph_and_plain_backward_frees_it():
    x = ct.tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = cnp.sum(cnp.sin(x) * x)
    for _ in range(3):
        y.backward(retain_graph=True)
    assert "sin(w0)" in str(y.graph())
    y.backward()
    np.testing.assert_allclose(x.grad, 4 * (np.cos(x.value()) * x.value() + np.sin(x.value())))
    with pytest.raises(ChainruleError, match="already freed this graph"):
        y.graph()


def test_create_graph_twice_third_order():
    def f(x):
        return cnp.sin(x) * x ** 3 + cnp.exp(0.5 * x)

    x = ct.tensor(0.7, requires_grad=True)
    f(x).backward(create_graph=True)
    g1, x.grad = x.grad, None
    assert isinstance(g1, ct.Tensor) and g1.requires_grad
    g1.backward(create_graph=True)
    g2, x.grad = x.grad, None
    g2.backward()
    assert float(g1) == pytest.approx(cr.grad(f)(0.7), rel=1e-12)
    assert float(g2) == pytest.approx(cr.grad(cr.grad(f))(0.7), rel=1e-12)
    assert float(x.grad) == pytest.approx(cr.grad(cr.grad(cr.grad(f)))(0.7), rel=1e-12)


# -- errors --------------------------------------------------------------------------------
def test_errors():
    with pytest.raises(ChainruleError, match="only float tensors can require gradients"):
        ct.tensor(np.array([1, 2]), requires_grad=True)
    x = ct.tensor(np.ones(3))
    with pytest.raises(GradientError, match="does not require grad"):
        cnp.sum(x * 2.0).backward()
    w = ct.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(GradientError, match=r"gradient of shape \(2,\) for an output of shape "
                                            r"\(3,\)"):
        (w * 2.0).backward(np.ones(2))
    with pytest.raises(ChainruleError, match="only for leaf tensors"):
        (w * 2.0).requires_grad_()


def test_render_without_graphviz(monkeypatch):
    from chainrule.tape.dot import render

    x = ct.tensor(np.ones(2), requires_grad=True)
    y = cnp.sum(x * x)
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz fails
    with pytest.raises(ChainruleError, match="optional graphviz package: pip install graphviz"):
        render(y, "graph")


# -- the pullback cache ------------------------------------------------------------------------
def _chain_grad(x0, scale=1.5):
    x = ct.tensor(x0, requires_grad=True)
    y = x
    for _ in range(5):
        y = cnp.tanh(y * scale) + y
    cnp.sum(y).backward()
    return x.grad


def test_rules_run_eagerly_first_and_the_pullback_is_compiled_when_the_structure_comes_back():
    x0 = np.array([0.3, -0.2])
    eager = STATS["eager_backwards"]
    codegen, built = STATS["backward_codegen"], STATS["backward_compilations"]
    first = _chain_grad(x0, scale=1.25)  # a new structure (the scalar is part of it)
    assert STATS["eager_backwards"] == eager + 1
    assert STATS["backward_compilations"] == built
    second = _chain_grad(x0, scale=1.25)  # seen before: its pullback is built and compiled
    assert STATS["backward_compilations"] == built + 1
    assert STATS["backward_codegen"] == codegen + 1
    third = _chain_grad(x0, scale=1.25)
    assert STATS["backward_codegen"] == codegen + 1
    assert STATS["backward_compilations"] == built + 1
    assert STATS["eager_backwards"] == eager + 1
    np.testing.assert_allclose(second, first, rtol=1e-14)
    np.testing.assert_allclose(third, first, rtol=1e-14)


def test_structure_key_tells_scalars_apart_exactly():
    for c in (0.0, -0.0, 0.0, -0.0):
        x = ct.tensor(np.array([2.0]), requires_grad=True)
        cnp.sum(x * c).backward()
        assert np.signbit(x.grad[0]) == np.signbit(c)
    x = ct.tensor(np.array([2.0]), requires_grad=True)
    cnp.sum(x * 2 + x * 2.0).backward()  # int and float scalars: both weakly typed
    np.testing.assert_allclose(x.grad, [4.0])


def test_pullback_cache_is_bounded(monkeypatch):
    from chainrule.backend import policy

    graph_module = sys.modules["chainrule.tape.graph"]
    monkeypatch.setattr(policy, "PULLBACK_CACHE_ENTRIES", 4)
    graph_module._BACKWARD_CACHE.clear()
    for n in range(1, 12):  # a dynamic graph: a new structure every step
        x = ct.tensor(np.array([0.1]), requires_grad=True)
        y = x
        for _ in range(n):
            y = cnp.sin(y)
        cnp.sum(y).backward()
        assert len(graph_module._BACKWARD_CACHE) <= 4


def test_memoized_rules_keep_attribute_types_apart():
    from chainrule.errors import TypeInferenceError

    a = np.ones((2, 3))
    np.testing.assert_allclose(cnp.sum(a, axis=1), [3.0, 3.0])
    with pytest.raises(TypeInferenceError, match="axis must be an int"):
        cnp.sum(a, axis=True)  # True == 1 and hashes alike, but is refused
    t = ct.tensor(a, requires_grad=True)
    assert cnp.sum(t, axis=1).shape == (2,)
    with pytest.raises(TypeInferenceError, match="axis must be an int"):
        cnp.sum(t, axis=True)
    i8 = np.ones(3, np.int8)
    assert (i8 + 1).dtype == np.int8 and cnp.add(i8, 1).dtype == np.int8
    for _ in range(2):  # the memoized scalar dtype still checks each value
        with pytest.raises(OverflowError):
            cnp.add(i8, 1000)
    f32 = ct.tensor(np.ones(2, np.float32), requires_grad=True)
    assert (f32 * 2.0).dtype == np.float32


# -- memory ----------------------------------------------------------------------------------
def test_training_loop_does_not_grow_memory():
    import tracemalloc

    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(16, 8)), rng.normal(size=(16, 2))
    params = [rng.normal(size=(8, 16)) * 0.1, np.zeros(16), rng.normal(size=(16, 2)) * 0.1]

    def step():
        ts = [ct.tensor(p, requires_grad=True) for p in params]
        W1, b1, W2 = ts
        loss = cnp.mean((cnp.tanh(X @ W1 + b1) @ W2 - Y) ** 2)
        loss.backward()  # a fresh graph every step, freed by the next one
        for i, t in enumerate(ts):
            params[i] = params[i] - 0.1 * t.grad
        return float(loss)

    first = [step() for _ in range(5)]  # the structure is built and compiled here
    tracemalloc.start()
    try:
        for _ in range(20):
            step()
        base = tracemalloc.get_traced_memory()[0]
        losses = [step() for _ in range(200)]
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert losses[-1] < first[0]
    assert grown < 256 * 1024, f"memory grew by {grown} bytes over 200 steps"
