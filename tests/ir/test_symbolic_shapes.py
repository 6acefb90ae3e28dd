"""Symbolic dimensions end to end: ``f64[n, 3]`` in every pass, in the text format,
in the interpreter and in generated code (sizes bound from the arguments once per
call, checked), and ``polymorphic_shapes``: one compile for every batch size."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import compile_module
from chainrule.errors import ArgumentError, ChainruleError, InterpretError, TypeInferenceError
from chainrule.transform import gradient, jvp, linearize, optimize, transpose

MEAN = """
def main(x: f64[n, 3], w: f64[3]) -> f64:
    y = multiply(x, w)
    m = mean(y, axis=(0,))
    s = sum(m)
    return s
"""

MEAN_ADJOINT = """
def main(x: f64[n, 3], w: f64[3]) -> f64:
    y = multiply(x, w)
    m = mean(y, axis=(0,))
    s = sum(m)
    return s

def main_adjoint(x: f64[n, 3], w: f64[3]) -> tuple[f64, tuple[f64[n, 3], f64[3]]]:
    y = multiply(x, w)
    m = mean(y, axis=(0,))
    s = sum(m)
    lv5 = ones(shape=(n, 1), dtype=f64)
    lv6 = sum(lv5, axis=(0,), keepdims=True)
    lv7 = divide(f64([1.0, 1.0, 1.0]), lv6)
    y_adjoint = broadcast_to(lv7, shape=(n, 3))
    x_adjoint = multiply(y_adjoint, w)
    lv10 = multiply(lv7, x)
    w_adjoint = collapse_sum_to(lv10, shape=(3,))
    return (s, (x_adjoint, w_adjoint))
"""


def _both(module, *args, func="main"):
    """The interpreter's and the generated code's results (they must agree)."""
    a = cr.run(module, *args, func=func)
    b = compile_module(module, func)(*args)
    return a, b


def _close(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_gradient_of_a_mean_over_a_symbol_before_after():
    """Before: the gradient pass raised a NumPy error counting the elements of n."""
    after = optimize(gradient(cr.parse(MEAN), "main"))
    assert str(after).strip() == MEAN_ADJOINT.strip()
    assert cr.parse(str(after)) == after
    rng = np.random.default_rng(0)
    w = rng.random(3)
    for n in (1, 7, 1000):
        x = rng.random((n, 3))
        got, compiled = _both(after, x, w, func="main_adjoint")
        _close(got, compiled)
        value, (gx, gw) = got
        np.testing.assert_allclose(value, np.sum(np.mean(x * w, axis=0)))
        np.testing.assert_allclose(gx, np.broadcast_to(w / n, (n, 3)))
        np.testing.assert_allclose(gw, np.mean(x, axis=0))


def test_broadcast_to_a_symbolic_shape_runs_and_prints_the_symbol():
    text = """
def main(x: f64[n, 3], w: f64[3]) -> f64[n, 3]:
    y = broadcast_to(w, shape=(n, 3))
    return y
"""
    m = cr.parse(text)
    assert str(m).strip() == text.strip()  # the symbol prints bare, and parses back
    assert cr.parse("""
def main(x: f64[n, 3], w: f64[3]) -> f64[n, 3]:
    y = broadcast_to(w, shape=('n', 3))
    return y
""") == m
    w = np.array([1.0, 2.0, 3.0])
    for n in (1, 4):
        got, compiled = _both(m, np.zeros((n, 3)), w)
        _close(got, np.broadcast_to(w, (n, 3)))
        _close(compiled, got)
    source = compile_module(m).source
    assert "n = x.shape[0]" in source and "(n, 3)" in source


def test_one_symbol_one_size_per_call():
    m = cr.parse("""
def main(x: f64[n], y: f64[n]) -> f64[n]:
    z = add(x, y)
    return z
""")
    for run in (lambda *a: cr.run(m, *a), compile_module(m)):
        with pytest.raises(InterpretError, match="dimension n"):
            run(np.ones(3), np.ones(4))


def test_unbound_symbol_in_an_attribute_is_named():
    m = cr.parse("""
def main(w: f64[3]) -> f64[m, 3]:
    y = broadcast_to(w, shape=(m, 3))
    return y
""")
    with pytest.raises(InterpretError, match="symbolic dimension m is not bound"):
        cr.run(m, np.ones(3))
    with pytest.raises(ChainruleError, match="symbol"):
        compile_module(m)(np.ones(3))


def test_jvp_linearize_transpose_keep_symbols():
    m = cr.parse("""
def main(x: f64[n, 3], w: f64[3]) -> f64[3]:
    y = multiply(x, w)
    z = tanh(y)
    m = mean(z, axis=(0,))
    return m
""")
    rng = np.random.default_rng(1)
    w, dw, ct = rng.random(3), rng.random(3), rng.random(3)
    for n in (1, 5):
        x, dx = rng.random((n, 3)), rng.random((n, 3))
        h = 1e-6
        fd = (cr.run(m, x + h * dx, w + h * dw) - cr.run(m, x - h * dx, w - h * dw)) / (2 * h)
        jm = optimize(jvp(m, "main"))
        _close(*_both(jm, x, w, dx, dw, func="main_jvp"))
        np.testing.assert_allclose(cr.run(jm, x, w, dx, dw, func="main_jvp")[1], fd, rtol=1e-6)
        lm = optimize(linearize(m, "main"))
        _, res = cr.run(lm, x, w, func="main_primal")
        tangent = cr.run(lm, *res, dx, dw, func="main_tangent")
        np.testing.assert_allclose(tangent, fd, rtol=1e-6)
        tm = optimize(transpose(lm, "main_tangent", linear=["x_dot", "w_dot"]))
        assert "shape=(n, 1)" in str(tm)
        cx, cw = _both(tm, *res, ct, func="main_tangent_transpose")[1]
        # <ct, J t> == <J^T ct, t>
        np.testing.assert_allclose(ct @ tangent, np.sum(cx * dx) + cw @ dw, rtol=1e-10)


def _mlp_loss(x, w1, b1, w2):
    h = cnp.tanh(x @ w1 + b1)
    return cnp.mean((h @ w2) ** 2) + 0.1 * cnp.sum(cnp.var(h, axis=0))


def test_one_compile_serves_every_batch_size_with_the_static_gradients():
    rng = np.random.default_rng(2)
    w1, b1, w2 = rng.normal(size=(3, 8)), rng.normal(size=8), rng.normal(size=(8, 2))
    poly = cr.value_and_grad(_mlp_loss, argnums=(0, 1, 2, 3),
                             polymorphic_shapes=["(batch, 3)", None, None, None])
    static = cr.value_and_grad(_mlp_loss, argnums=(0, 1, 2, 3))
    for n in (1, 7, 1000):
        x = rng.normal(size=(n, 3))
        (v, g), (vs, gs) = poly(x, w1, b1, w2), static(x, w1, b1, w2)
        np.testing.assert_allclose(v, vs, rtol=1e-12)
        for a, b in zip(g, gs):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    assert len(poly.cache) == 1 and len(static.cache) == 3
    (entry,) = poly.cache.values()
    assert "x: f64[batch, 3]" in str(entry.module)


def test_grad_and_jit_take_polymorphic_shapes():
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3, 2))
    g = cr.grad(lambda x, w: cnp.sum(cnp.mean(x @ w, axis=0) ** 2), argnums=1,
                polymorphic_shapes=("(b, 3)", None))
    f = cr.jit(lambda x: cnp.sum(x, axis=0) / x.shape[1], polymorphic_shapes="b, ...")
    for n in (1, 7, 1000):
        x = rng.normal(size=(n, 3))
        m = np.mean(x @ w, axis=0)
        np.testing.assert_allclose(g(x, w), np.outer(np.mean(x, axis=0), 2 * m), rtol=1e-10)
        np.testing.assert_allclose(f(x), x.sum(0) / 3)
    assert len(f.cache) == 1
    assert str(f.module(np.ones((4, 3)))).startswith("def main(x: f64[b, 3]) -> f64[3]:")


def test_script_annotated_with_a_symbol_differentiates_once_for_every_n():
    @cr.script
    def loss(x: "f64[n, 3]", w: "f64[3]") -> "f64":  # noqa: F821, UP037 - read by @script
        y = x * w
        return cnp.sum(cnp.mean(y, axis=0) ** 2)

    vg = cr.value_and_grad(loss, argnums=(0, 1))
    rng = np.random.default_rng(4)
    w = rng.random(3)
    for n in (1, 7, 1000):
        x = rng.random((n, 3))
        value, (gx, gw) = vg(x, w)
        m = np.mean(x * w, axis=0)
        np.testing.assert_allclose(value, np.sum(m ** 2))
        np.testing.assert_allclose(gx, np.broadcast_to(2 * m * w / n, (n, 3)))
        np.testing.assert_allclose(gw, 2 * m * np.mean(x, axis=0))
        np.testing.assert_allclose(loss(x, w), value)
    assert len(vg.cache) == 1
    with pytest.raises(ChainruleError, match="axis 1 is 2"):
        cr.grad(loss)(np.ones((4, 2)), w)


def test_reshape_with_symbolic_sizes():
    rng = np.random.default_rng(5)
    cases = {
        "(n, 6) -> (n, 2, 3)": (lambda x: cnp.sum(cnp.reshape(x, (x.shape[0], 2, 3)) ** 2), 6),
        "(n, 6) -> (-1, 3, 2)": (lambda x: cnp.sum(cnp.reshape(x, (-1, 3, 2))[:, 0] ** 3), 6),
        "(n, 2, 3) -> (-1, 6)": (lambda x: cnp.sum(cnp.reshape(
            cnp.reshape(x, (-1, 2, 3)), (-1, 6)) * cnp.arange(6.0)), 6),
    }
    for name, (f, k) in cases.items():
        poly = cr.value_and_grad(f, polymorphic_shapes=[f"(n, {k})"])
        for n in (1, 4):
            x = rng.random((n, k))
            (v, g), (vs, gs) = poly(x), cr.value_and_grad(f)(x)
            np.testing.assert_allclose(v, vs, err_msg=name)
            np.testing.assert_allclose(g, gs, err_msg=name)
        assert len(poly.cache) == 1, name
    # flattening gives 3*n elements (tests/ir/test_symbolic_exprs.py); a size that is no
    # multiple, or a different product, is an error naming both
    with pytest.raises(TypeInferenceError, match=r"cannot infer -1 in \(2, -1\) for f64\[n, 3\]"):
        cr.jit(lambda x: cnp.reshape(x, (2, -1)), polymorphic_shapes=["(n, 3)"])(np.ones((2, 3)))
    with pytest.raises(TypeInferenceError, match=r"\(3\*n elements\) into \(n, 2\)"):
        cr.jit(lambda x: cnp.reshape(x, (x.shape[0], 2)),
               polymorphic_shapes=["(n, 3)"])(np.ones((2, 3)))


def test_indexing_broadcast_concatenate_and_reductions_over_symbols():
    fns = {
        "row": lambda x: cnp.sum(x[0] * x[-1]),
        "column": lambda x: cnp.sum(cnp.sin(x[:, 1])),
        "index array": lambda x: cnp.sum(x[np.array([0, 0])] ** 2),
        "broadcast": lambda x: cnp.sum(cnp.broadcast_to(x[:, :1], x.shape) * x),
        "concatenate": lambda x: cnp.sum(cnp.concatenate([x, 2 * x[:, :2]], axis=1) ** 2),
        "stack": lambda x: cnp.sum(cnp.stack([x, x * 2], axis=0) ** 2),
        "max/min": lambda x: cnp.sum(cnp.max(x, axis=0)) + cnp.min(x),
        "var/std": lambda x: cnp.sum(cnp.var(x, axis=0)) + cnp.std(x),
        "mean": lambda x: cnp.mean(x ** 2) + cnp.sum(cnp.mean(x, axis=0, keepdims=True)),
        "softmax": lambda x: cnp.sum(cnp.exp(x) / cnp.sum(cnp.exp(x), axis=0) * x),
        "cumsum": lambda x: cnp.sum(cnp.cumsum(x, axis=0) ** 2),
        "gram": lambda x: cnp.sum((x.T @ x) ** 2),
        "sort": lambda x: cnp.sum(cnp.sort(x, axis=0) * cnp.arange(3.0)),
        "prod of a static axis": lambda x: cnp.sum(cnp.prod(x, axis=1)),
    }
    rng = np.random.default_rng(6)
    for name, f in fns.items():
        poly = cr.value_and_grad(f, polymorphic_shapes=["(n, 3)"])
        for n in (1, 4, 9):
            x = rng.random((n, 3)) + 0.5
            (v, g), (vs, gs) = poly(x), cr.value_and_grad(f)(x)
            np.testing.assert_allclose(v, vs, rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(g, gs, rtol=1e-10, atol=1e-13, err_msg=name)
        assert len(poly.cache) == 1, name


def test_what_symbols_cannot_do_says_why():
    x = np.ones((3, 3))
    # a slice whose length needs a min/max of the symbol and a bound (x[:2] of n)
    with pytest.raises(TypeInferenceError, match=r"slicing the symbolic dimension n with x\[:2\]"):
        cr.jit(lambda x: x[:2], polymorphic_shapes=["(n, 3)"])(x)


def test_polymorphic_shape_specifications_are_checked():
    f = cr.jit(lambda x, y: x + y, polymorphic_shapes=["(n, 3)", "(n, 3)"])
    for _ in range(2):  # the second call takes the fast path: it must not skip the check
        np.testing.assert_allclose(f(np.ones((3, 3)), np.ones((3, 3))), 2.0)
    with pytest.raises(ArgumentError, match="dimension n is 4 in argument 1 but 3"):
        f(np.ones((3, 3)), np.ones((4, 3)))
    with pytest.raises(ArgumentError, match="axis 1 is 4"):
        f(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ArgumentError, match="does not match"):
        f(np.ones(3), np.ones(3))
    with pytest.raises(ArgumentError, match="bad dimension"):
        cr.jit(lambda x: x, polymorphic_shapes=["(n, 3.5)"])
    g = cr.jit(lambda x: x * 2.0, polymorphic_shapes=["_, b"])
    np.testing.assert_allclose(g(np.ones((2, 5))), 2.0)
    assert str(g.module(np.ones((2, 5)))).startswith("def main(x: f64[2, b])")


def test_einsum_with_a_symbolic_batch_dimension():
    """One program for every batch size, gradients equal to the static ones; merging a
    symbolic dimension with another into one axis is a clear error."""
    def loss(x, w):
        return cnp.sum(cnp.tanh(cnp.einsum("bi,ij->bj", x, w)) ** 2)

    poly = cr.grad(loss, argnums=(0, 1), polymorphic_shapes=["(b, 3)", None])
    static = cr.grad(loss, argnums=(0, 1))
    w = np.random.RandomState(0).rand(3, 4)
    for n in (1, 7, 100):
        x = np.random.RandomState(n).rand(n, 3)
        for got, want in zip(poly(x, w), static(x, w)):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    batched = cr.jit(lambda x, y: cnp.einsum("bij,bjk->bik", x, y),
                     polymorphic_shapes=["(b, 2, 3)", "(b, 3, 4)"])
    x, y = np.ones((5, 2, 3)), np.ones((5, 3, 4))
    np.testing.assert_allclose(batched(x, y), np.einsum("bij,bjk->bik", x, y))
    merged = cr.jit(lambda x, w: cnp.einsum("bcx,xd->bcd", x, w),
                    polymorphic_shapes=["(b, c, 3)", None])
    with pytest.raises(ChainruleError, match="symbolic dimension"):
        merged(np.ones((2, 5, 3)), np.ones((3, 4)))
