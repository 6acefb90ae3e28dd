"""The tape reuses a structure's compiled pullback, and only for that structure.

A training loop records the same ops on the same shapes every step: the first
backward applies the VJP rules eagerly, the second builds and compiles the
structure's pullback, every later one runs that code. These tests check the
gradients of every step against the interpreted (eager) backward and against
hand-written or finite-difference values, that a changed structure (shapes,
dtypes, a branch, attributes, wiring, constants) never runs another
structure's code, and that higher orders and very long tapes still work.
"""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_grad

import chainrule.numpy as cnp
from chainrule import tape as ct
from chainrule.tape import graph as graph_module
from chainrule.tape.pullback import STATS


def _eager_grads(build, values):
    """The gradients of ``build(*tensors)`` by the eager (interpreted) backward: the
    structure cache is emptied first, so this is a first sighting."""
    graph_module._BACKWARD_CACHE.clear()
    ts = [ct.tensor(v, requires_grad=True) for v in values]
    build(*ts).backward()
    return [t.grad for t in ts]


def _mlp(W1, b1, W2, b2, W3, b3, X, Y):
    h1 = cnp.tanh(X @ W1 + b1)
    h2 = cnp.tanh(h1 @ W2 + b2)
    d = h2 @ W3 + b3 - Y
    return cnp.mean(d * d)


def _mlp_numpy_grads(W1, b1, W2, b2, W3, b3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    d = h2 @ W3 + b3 - Y
    g = d * (2.0 / d.size)
    g2 = (g @ W3.T) * (1 - h2 * h2)
    g1 = (g2 @ W2.T) * (1 - h1 * h1)
    return [X.T @ g1, g1.sum(0), h1.T @ g2, g2.sum(0), h2.T @ g, g.sum(0)]


def test_training_loop_reuses_one_compiled_pullback_with_changing_values():
    rng = np.random.default_rng(0)
    sizes = (5, 7, 6, 3)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(size=(n_in, n_out)), rng.normal(size=n_out)]
    graph_module._BACKWARD_CACHE.clear()
    codegen = STATS["backward_codegen"]
    ps = [ct.tensor(p, requires_grad=True) for p in params]
    for _ in range(8):
        X, Y = rng.normal(size=(4, 5)), rng.normal(size=(4, 3))  # new data every step
        values = [p.value() for p in ps]
        _mlp(*ps, X, Y).backward()
        expected = _mlp_numpy_grads(*values, X, Y)
        for p, e in zip(ps, expected):
            np.testing.assert_allclose(p.grad, e, rtol=1e-12, atol=1e-12)
        with ct.no_grad():
            ps = [(p - 0.1 * p.grad).requires_grad_() for p in ps]
    # built and compiled once, on the second step; steps 3..8 ran that code
    assert STATS["backward_codegen"] == codegen + 1
    assert len(graph_module._BACKWARD_CACHE) == 1


def test_compiled_pullback_agrees_with_the_eager_backward_to_1e12():
    rng = np.random.default_rng(1)

    def build(x, y):
        v = x
        for k in range(30):
            v = cnp.sin(v * y) + (v / 1.5 if k % 2 else v - 0.25)
            v = cnp.tanh(v) * 2.0
        return cnp.sum(v * v) + cnp.sum(cnp.exp(-y))

    for _ in range(2):  # first the eager one, then the compiled one on new values
        xs, ys = rng.normal(size=6), rng.normal(size=6)
        eager = _eager_grads(build, [xs, ys])
        for _ in range(3):  # 2nd sighting builds + compiles, 3rd runs the cached code
            x, y = ct.tensor(xs, requires_grad=True), ct.tensor(ys, requires_grad=True)
            build(x, y).backward()
            for got, want in zip((x.grad, y.grad), eager):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _run_twice(build, *values):
    """Gradients of the same program twice (the second from a cached structure if the
    key says it is the same one)."""
    out = []
    for _ in range(2):
        ts = [ct.tensor(v, requires_grad=True) for v in values]
        build(*ts).backward()
        out.append([t.grad for t in ts])
    return out


@pytest.mark.parametrize("variant", ["shape", "dtype", "branch", "attribute", "wiring",
                                     "constant", "weak scalar type"])
def test_a_changed_structure_never_runs_another_structures_code(variant):
    rng = np.random.default_rng(2)
    graph_module._BACKWARD_CACHE.clear()
    a = rng.normal(size=(3, 4))
    b = rng.normal(size=(3, 4))

    def base(x, y):
        return cnp.sum(cnp.sin(x) * y + x)

    changed = {
        "shape": (base, (rng.normal(size=(4, 3)), rng.normal(size=(4, 3)))),
        "dtype": (base, (a.astype(np.float32), b.astype(np.float32))),
        "branch": (lambda x, y: cnp.sum(cnp.cos(x) * y + x), (a, b)),
        "attribute": (lambda x, y: cnp.sum(cnp.sum(cnp.sin(x) * y + x, axis=0) ** 2), (a, b)),
        "wiring": (lambda x, y: cnp.sum(cnp.sin(x) * y + y), (a, b)),
        "constant": (lambda x, y: cnp.sum(cnp.sin(x) * y + x * 2.0), (a, b)),
        "weak scalar type": (lambda x, y: cnp.sum(cnp.sin(x) * y + x * 2), (a, b)),
    }[variant]
    # the base structure is cached and compiled
    _run_twice(base, a, b)
    _run_twice(base, a, b)
    entries = len(graph_module._BACKWARD_CACHE)
    build, values = changed
    want = _eager_grads(build, values)
    graph_module._BACKWARD_CACHE.clear()
    _run_twice(base, a, b)
    _run_twice(base, a, b)
    for grads in _run_twice(build, *values) + _run_twice(build, *values):
        for got, w in zip(grads, want):
            assert got.dtype == w.dtype and got.shape == w.shape
            np.testing.assert_allclose(got, w, rtol=1e-6 if got.dtype == np.float32 else 1e-12)
    assert len(graph_module._BACKWARD_CACHE) == entries + 1  # a structure of its own


def test_value_dependent_branch_in_a_loop():
    """``if`` on a value: each step takes whichever branch its values say, and each
    branch's structure keeps its own pullback."""
    graph_module._BACKWARD_CACHE.clear()
    rng = np.random.default_rng(3)

    def f(x):
        s = cnp.sum(x)
        return cnp.sum(cnp.sin(x) * x) if s > 0 else cnp.sum(cnp.exp(x) / (1 + x * x))

    def df(x):
        if x.sum() > 0:
            return np.cos(x) * x + np.sin(x)
        return np.exp(x) / (1 + x * x) - np.exp(x) * 2 * x / (1 + x * x) ** 2

    for _ in range(12):
        v = rng.normal(size=5) + rng.choice([-1.0, 1.0])
        x = ct.tensor(v, requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(x.grad, df(v), rtol=1e-12, atol=1e-12)
    assert len(graph_module._BACKWARD_CACHE) == 2


@pytest.mark.parametrize("order", [1, 2, 3])
def test_higher_order_on_the_tape_against_finite_differences(order):
    """d^order/dx^order of sum(sin(x) * x^2) elementwise, each order through
    create_graph, run three times so the cached structures are reused."""

    def derivative(v, k):
        """The k-th derivative (elementwise, summed into a scalar function of x) on
        the tape, as an array."""
        x = ct.tensor(v, requires_grad=True)
        y = cnp.sum(cnp.sin(x) * x * x)
        for _ in range(k):
            (g,) = graph_module.grad_tensors(y, [x], create_graph=True)
            y = cnp.sum(g)
        return x, y

    rng = np.random.default_rng(4)
    for _ in range(3):
        v = rng.normal(size=4)
        x, y = derivative(v, order - 1)
        y.backward()

        def lower(u):
            return float(derivative(u, order - 1)[1].value())

        np.testing.assert_allclose(x.grad, fd_grad(lower, (v,), eps=1e-5), rtol=1e-6,
                                   atol=1e-6)


def test_100000_op_tape_backward_twice():
    """A very long tape: eager the first time, and a second sighting does not pay for
    compiling a 100,000-op pullback (that waits until the structure has come back often)."""
    graph_module._BACKWARD_CACHE.clear()
    codegen = STATS["backward_codegen"]
    v0 = np.linspace(0.1, 0.2, 3)
    for _ in range(2):
        x = ct.tensor(v0, requires_grad=True)
        v = x
        for _ in range(50_000):
            v = v * 0.9999 + 1e-6
        cnp.sum(v).backward()
        np.testing.assert_allclose(x.grad, np.full(3, 0.9999 ** 50_000), rtol=1e-9)
    assert STATS["last_nodes"] == 100_001
    assert STATS["backward_codegen"] == codegen


def test_signatures_shared_by_nodes_recorded_alike():
    """Nodes recorded with the same op, operand shapes, dtypes and attributes share one
    Signature (the type rule ran once), and the key tells the rest apart."""
    x = ct.tensor(np.ones(3), requires_grad=True)
    a, b = x * 2.0, x * 3.0
    c = x * np.ones(3)
    assert a.node.sig is b.node.sig
    assert c.node.sig is not a.node.sig
    assert a.node.attrs == {}
    s1, s2 = cnp.sum(x, axis=0), cnp.sum(x, axis=-1)
    assert s1.node.attrs == s2.node.attrs == {"axis": (0,), "keepdims": False}


def test_operators_with_traced_and_odd_operands_still_dispatch():
    """The direct path of the operators is only for plain operands: NumPy scalars,
    lists and traced values go through the op's dispatch as before."""
    import chainrule as cr

    x = ct.tensor(np.arange(3.0), requires_grad=True)
    y = x * np.float32(2) + [1.0, 2.0, 3.0]
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.value(), [1.0, 4.0, 7.0])
    cnp.sum(y).backward()
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0])
    out = cr.jit(lambda t: t * np.arange(3.0) - 1)(np.ones(3))
    np.testing.assert_array_equal(out, [-1.0, 0.0, 1.0])
