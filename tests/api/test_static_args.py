"""Static arguments of grad, value_and_grad, jit (and the Jacobians): declared ones
(static_argnums / static_argnames, hashed into the cache key: a new value traces again)
and undeclared Python ints, bools and strings that are not differentiated (static the way
autograd runs the function on them); keyword arguments to compiled functions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from trace_counter import Counter

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ArgumentError, ChainruleWarning, GradientError

X = np.arange(24.0).reshape(12, 2) / 10
Y = np.linspace(-1.0, 1.0, 12)


def counted(f, counter):
    def g(*args, **kwargs):
        counter.tick()
        return f(*args, **kwargs)

    g.__name__ = f.__name__
    return g


def batch_loss(w, i, n_batches=4):
    """autograd's training examples: a Python int picks the batch (`i % n`)."""
    k = i % n_batches
    rows = slice(k * 3, (k + 1) * 3)
    return cnp.sum((X[rows] @ w - Y[rows]) ** 2)


def batch_grad(w, i, n_batches=4):
    k = i % n_batches
    Xb, Yb = X[k * 3:(k + 1) * 3], Y[k * 3:(k + 1) * 3]
    return 2 * Xb.T @ (Xb @ w - Yb)


def test_a_python_int_picks_the_batch():
    w = np.array([0.3, -0.1])
    g = cr.grad(batch_loss)
    for i in range(6):
        np.testing.assert_allclose(g(w, i), batch_grad(w, i), rtol=1e-12)
    value, grad = cr.value_and_grad(batch_loss)(w, 5, n_batches=2)
    np.testing.assert_allclose(grad, batch_grad(w, 5, 2), rtol=1e-12)
    np.testing.assert_allclose(cr.jit(batch_loss)(w, 3), batch_loss(w, 3), rtol=1e-12)


def test_an_int_changing_at_every_call_stops_compiling():
    """Each value of an undeclared static int compiles a program; past a few values
    (an iteration counter), new values run uncompiled, with one warning."""
    w = np.array([0.3, -0.1])
    seen = Counter()
    g = cr.grad(counted(batch_loss, seen))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(20):
            np.testing.assert_allclose(g(w, i), batch_grad(w, i), rtol=1e-12)
    assert sum(issubclass(c.category, ChainruleWarning) for c in caught) == 1
    assert "np.int64" in str(caught[0].message)
    n = seen.n
    g(w, 3)  # compiled: no new trace
    assert seen.n == n


def test_ints_bools_and_strings_branch_and_shape():
    def f(x, n, flag, mode):
        y = cnp.zeros(n) + x[:n] if flag else x[:n] * 2.0
        return cnp.sum(y ** 2) if mode == "sq" else cnp.sum(y)

    x = np.array([1.0, 2.0, 3.0])
    g = cr.grad(f)
    np.testing.assert_allclose(g(x, 2, True, "sq"), [2.0, 4.0, 0.0])
    np.testing.assert_allclose(g(x, 3, False, "sum"), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(cr.jit(f)(x, 2, True, "sq"), 5.0)


def test_python_int_keeps_numpy_weak_typing():
    x = np.ones(3, np.float32)
    out = cr.jit(lambda x, n: x * n)(x, 3)
    assert out.dtype == np.float32  # as x * 3 in NumPy (a traced i64 would make f64)
    assert "f32(3.0)" in str(cr.jit(lambda x, n: x * n).module(x, 3))


def test_static_inside_pytrees_of_undifferentiated_arguments():
    def f(w, config):
        return cnp.sum(w[: config["k"]] ** config["p"]) * config["scale"]

    w = np.array([1.0, 2.0, 3.0])
    g = cr.grad(f)
    cfg = {"k": 2, "p": 3, "scale": np.float64(2.0)}
    np.testing.assert_allclose(g(w, cfg), [6.0, 24.0, 0.0])
    cfg["scale"] = np.float64(1.0)  # an array leaf: traced, no new program
    np.testing.assert_allclose(g(w, cfg), [3.0, 12.0, 0.0])


def test_declared_static_argnums_and_argnames():
    seen = Counter()

    def f(x, shape, *, reduce="sum"):
        y = cnp.reshape(x, shape)
        return cnp.sum(y, axis=0) if reduce == "sum" else cnp.max(y, axis=0)

    j = cr.jit(counted(f, seen), static_argnums=1, static_argnames="reduce")
    x = np.arange(6.0)
    np.testing.assert_allclose(j(x, (2, 3)), [3.0, 5.0, 7.0])
    np.testing.assert_allclose(j(x, (2, 3)), [3.0, 5.0, 7.0])
    assert seen.n == 1
    np.testing.assert_allclose(j(x, (3, 2)), [6.0, 9.0])
    np.testing.assert_allclose(j(x, (3, 2), reduce="max"), [4.0, 5.0])
    assert seen.n == 3  # a new value, a new trace
    np.testing.assert_allclose(j(x, shape=(2, 3)), [3.0, 5.0, 7.0])  # by name too


def test_static_argnames_name_a_positional_parameter():
    def f(x, n):
        return cnp.sum(x ** n)

    g = cr.grad(f, static_argnames="n")
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(x, 3), 3 * x ** 2)
    np.testing.assert_allclose(g(x, n=2), 2 * x)
    vg = cr.value_and_grad(f, static_argnums=(1,))
    value, grad = vg(x, n=2)
    np.testing.assert_allclose(value, 5.0)
    np.testing.assert_allclose(grad, 2 * x)


def test_a_static_value_is_keyed_by_type_and_contents():
    f = cr.jit(lambda x, v: x * cnp.asarray(v), static_argnums=1)
    x = np.ones(2)
    assert f(x, 1).dtype == np.float64
    assert f(x, True).dtype == np.float64
    np.testing.assert_allclose(f(x, 2.5), [2.5, 2.5])
    v = [1.0, 2.0]
    np.testing.assert_allclose(f(x, v), [1.0, 2.0])
    v[1] = 5.0  # a list is keyed by its contents, read at every call
    np.testing.assert_allclose(f(x, v), [1.0, 5.0])


def test_unhashable_static_values_are_refused():
    f = cr.jit(lambda x, v: x * v, static_argnums=1)
    with pytest.raises(ArgumentError, match="unhashable ndarray"):
        f(np.ones(2), np.ones(2))
    with pytest.raises(ArgumentError, match="static_argnums"):
        cr.jit(lambda x: x, static_argnums="a")
    with pytest.raises(ArgumentError, match="static_argnames"):
        cr.grad(lambda x: x, static_argnames=1)
    with pytest.raises(ArgumentError, match="both differentiated"):
        cr.grad(lambda x, y: cnp.sum(x * y), argnums=1, static_argnums=1)(1.0, 2.0)


def test_keyword_arguments_are_traced_and_never_differentiated():
    def f(x, *, w, b=0.0):
        return cnp.sum(cnp.tanh(x * w) + b)

    x, w = np.array([0.1, 0.2]), np.array([2.0, 3.0])
    g = cr.grad(f)
    np.testing.assert_allclose(g(x, w=w), w * (1 - np.tanh(x * w) ** 2), rtol=1e-12)
    np.testing.assert_allclose(g(x, w=w, b=np.float64(1.0)), g(x, w=w), rtol=1e-12)
    np.testing.assert_allclose(cr.jit(f)(x, w=w), np.sum(np.tanh(x * w)), rtol=1e-12)
    jx = cr.jacfwd(f)(x, w=w)
    np.testing.assert_allclose(jx, g(x, w=w), rtol=1e-12)
    src = cr.jit(f).source(x, w=w)
    assert "def main(x, kw_w)" in src or "kw_w" in src
    with pytest.raises(ArgumentError, match="missing"):
        cr.jit(f)(x)
    with pytest.raises(ArgumentError, match="unexpected keyword|got an unexpected"):
        cr.jit(f)(x, w=w, c=1.0)


def test_a_differentiated_int_is_still_an_error():
    with pytest.raises(GradientError, match="integer"):
        cr.grad(lambda n: n * 2.0)(3)


def test_tape_fallback_keeps_static_values():
    def f(x, n, *, scale):
        if cnp.sum(x) > 0:  # Python control flow on values: the tape
            return cnp.sum(x ** n) * scale
        return cnp.sum(x)

    x = np.array([1.0, 2.0])
    g = cr.grad(f)
    np.testing.assert_allclose(g(x, 3, scale=2.0), 6 * x ** 2)
    np.testing.assert_allclose(g(x, 2, scale=np.float64(1.0)), 2 * x)
    np.testing.assert_allclose(g(-x, 2, scale=1.0), [1.0, 1.0])


def test_nested_transforms_pass_static_values_through():
    def f(x, n):
        return cnp.sum(cnp.sin(x) ** n)

    x = np.array([0.3, 0.6])
    h = cr.jacfwd(cr.grad(f))(x, 2)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(2 * x)), rtol=1e-12)
    inner = cr.jit(lambda x: cr.grad(f)(x, 2))(x)
    np.testing.assert_allclose(inner, np.sin(2 * x), rtol=1e-12)
