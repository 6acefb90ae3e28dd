"""Loops that fill an array a row per step (``scan``'s stacked outputs, the adjoint of
``xs[t]`` summed over a loop's steps) update it in place in the generated code: work
linear in the loop's length, where a copy of the whole array per step made it
quadratic. In place only where nothing else can see the array: the results are the
interpreter's, the caller's arrays are never written, and a body reading the array
through a view keeps its copy."""

from __future__ import annotations

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp


def _scan(xs):
    def step(c, x):
        c = c * 0.9 + cnp.sin(x)
        return c, c * 2.0
    return cr.scan(step, 0.0, xs)[1]


def _loop_text(source: str) -> str:
    """The generated code of the first loop's body."""
    body = source[source.index("while True:"):]
    return body[:body.index("\n    lv")] if "\n    lv" in body else body


def test_a_scan_writes_its_stacked_output_in_place():
    xs = np.linspace(0.0, 1.0, 7)
    f = cr.jit(_scan, eager_compile=True)
    text = _loop_text(f.source(xs))
    assert "copy=True" not in text and "np.zeros" not in text
    want = cr.jit(_scan, backend="interpret")(xs)
    np.testing.assert_allclose(f(xs), want, rtol=1e-15)
    np.testing.assert_allclose(f(xs), want, rtol=1e-15)  # the constant start is intact


def test_the_gradient_of_a_scan_adds_rows_in_place():
    loss = lambda xs: cnp.sum(_scan(xs) ** 2)  # noqa: E731
    xs = np.linspace(0.0, 1.0, 7)
    g = cr.jit(cr.grad(loss), eager_compile=True)
    source = g.source(xs)
    reverse = source[source.rindex("while True:"):]
    assert "np.zeros" not in reverse and "copy=True" not in reverse.split("return")[0]
    want = cr.jit(cr.grad(loss), backend="interpret")(xs)
    np.testing.assert_allclose(g(xs), want, rtol=1e-12)
    eps = 1e-6
    fd = np.array([(loss(xs + e) - loss(xs - e)) / (2 * eps) for e in np.eye(7) * eps])
    np.testing.assert_allclose(g(xs), fd, rtol=1e-6)


def test_a_buffer_read_through_a_view_keeps_its_copy():
    """The body reads the previous row (a view of the buffer) after writing the new one:
    updating in place would change what the view shows."""
    def f(x0):
        def body(c):
            i, buf = c
            prev = buf[i - 1]
            buf = buf.at[i].set(prev * 2.0 + 1.0)
            return i + 1, buf + 0.0 * prev
        return cr.while_loop(lambda c: c[0] < 5, body, (1, x0))[1]

    x0 = np.zeros((5, 2))
    got = cr.jit(f, eager_compile=True)(x0)
    np.testing.assert_allclose(got, cr.jit(f, backend="interpret")(x0))
    assert not x0.any()  # the caller's array is not written


def test_the_callers_array_is_never_written():
    def f(buf, v):
        return cr.fori_loop(0, 4, lambda i, b: b.at[i].add(v), buf)

    buf = np.zeros(4)
    out = cr.jit(f, eager_compile=True)(buf, 3.0)
    np.testing.assert_allclose(out, [3.0, 3.0, 3.0, 3.0])
    assert not buf.any()
    np.testing.assert_allclose(cr.jit(f, eager_compile=True)(buf, 1.0), [1.0] * 4)
