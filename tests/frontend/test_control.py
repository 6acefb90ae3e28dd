"""cond / while_loop / fori_loop / scan: traced into If/While, equal to plain Python."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import TraceError
from chainrule.frontend import cond, fori_loop, scan, trace, while_loop

RNG = np.random.default_rng(1)


def traced_equals_python(f, *args):
    m = trace(f, *args)
    cr.verify(m)
    assert cr.parse(str(m)) == m, str(m)
    got = cr.run(m, *args)
    want = f(*args)  # no trace active: the combinators run in Python
    for g, w in zip(np.atleast_1d(np.asarray(got, dtype=object)),
                    np.atleast_1d(np.asarray(want, dtype=object))):
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float),
                                   rtol=1e-10)
    return m


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond(sign):
    def f(x):
        return cond(cnp.sum(x) > 0, lambda a: a * 2.0, lambda a: cnp.sin(a), x)

    m = traced_equals_python(f, sign * np.arange(1.0, 4.0))
    assert "if " in str(m)


def test_cond_pytree_and_closure():
    def f(x, y):
        def yes(p):
            return {"a": p[0] + y, "b": (p[1] * 2.0, 1.0)}

        def no(p):
            return {"a": p[0] - y, "b": (p[1], 2.0)}

        out = cond(x[0] > y, yes, no, (x, x * 3.0))
        return out["a"], out["b"][0], out["b"][1]

    for x0 in (5.0, -5.0):
        traced_equals_python(f, np.array([x0, 1.0]), 0.5)


def test_while_loop_newton():
    def f(a):
        return while_loop(lambda x: cnp.abs(x * x - a) > 1e-12,
                          lambda x: x - (x * x - a) / (2 * x), a)

    m = traced_equals_python(f, 2.0)
    assert "while True:" in str(m)
    assert abs(cr.run(m, 2.0) - np.sqrt(2.0)) < 1e-12


def test_while_loop_tuple_carry():
    def f(x):
        def body(c):
            i, v = c
            return i + 1, cnp.tanh(v) + x

        return while_loop(lambda c: c[0] < 7, body, (0, x))

    traced_equals_python(f, np.array([0.1, -0.2, 0.3]))


def test_fori_loop_dict_carry():
    W = RNG.normal(size=(3, 3)) * 0.5

    def f(x):
        def body(i, c):
            return {"x": c["x"] - 0.1 * cnp.tanh(c["x"] @ W), "n": c["n"] + i}

        return fori_loop(0, 100, body, {"x": x, "n": 0})

    m = trace(f, np.ones(3))
    got = cr.run(m, np.ones(3))
    want = f(np.ones(3))
    np.testing.assert_allclose(got["x"], want["x"])
    assert int(got["n"]) == want["n"] == 4950


def test_fori_loop_traced_bounds():
    def f(x, n):
        return fori_loop(1, n, lambda i, acc: acc * x + i, x * 0.0)

    m = trace(f, 1.5, np.int64(5))
    np.testing.assert_allclose(cr.run(m, 1.5, 5), f(1.5, 5))
    np.testing.assert_allclose(cr.run(m, 1.5, 2), f(1.5, 2))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn(reverse):
    W = RNG.normal(size=(4, 4)) * 0.4
    xs = RNG.normal(size=(6, 4))
    h0 = np.zeros(4)

    def rnn(W, xs, h0):
        def step(h, x_t):
            h = cnp.tanh(h @ W + x_t)
            return h, h

        return scan(step, h0, xs, reverse=reverse)

    m = trace(rnn, W, xs, h0)
    cr.verify(m)
    h, hs = cr.run(m, W, xs, h0)
    # plain NumPy reference
    ref_h, ref_hs = h0, [None] * 6
    for t in (range(5, -1, -1) if reverse else range(6)):
        ref_h = np.tanh(ref_h @ W + xs[t])
        ref_hs[t] = ref_h
    np.testing.assert_allclose(h, ref_h)
    np.testing.assert_allclose(hs, np.stack(ref_hs))
    py_h, py_hs = rnn(W, xs, h0)
    np.testing.assert_allclose(py_hs, np.stack(ref_hs))
    assert ".at[" in str(m)


def test_scan_pytree_xs_and_ys():
    def f(xs, ys):
        def step(c, inp):
            a, b = inp["a"], inp["b"]
            c = c + a * b
            return c, (c, a - b)

        return scan(step, 0.0, {"a": xs, "b": ys})

    xs, ys = RNG.normal(size=5), RNG.normal(size=5)
    m = trace(f, xs, ys)
    c, (cs, ds) = cr.run(m, xs, ys)
    pc, (pcs, pds) = f(xs, ys)
    np.testing.assert_allclose(c, pc)
    np.testing.assert_allclose(cs, pcs)
    np.testing.assert_allclose(ds, pds)


def test_weak_initial_value_is_retyped():
    def f(x):
        return fori_loop(0, 3, lambda i, s: s + x, 0)

    x = np.ones(3)
    m = trace(f, x)  # the loop variable starts as i64 (from 0), then becomes f64[3]
    assert m["main"].ret_type == cr.ir.TensorType((3,), "f64")
    np.testing.assert_allclose(cr.run(m, x), 3 * x)


def test_errors():
    def bad_struct(x):
        return cond(x > 0, lambda a: (a, a), lambda a: a, x)

    with pytest.raises(TraceError, match="different structures"):
        trace(bad_struct, 1.0)

    def bad_type(x):
        return while_loop(lambda c: cnp.sum(c) > 0, lambda c: cnp.sum(c), x)

    with pytest.raises(TraceError, match="cannot change"):
        trace(bad_type, np.ones(3))
