"""Whole loops compiled by numba (chainrule/backend/numba/loops.py).

A program whose every binding has a numba form (the forward loop, the reverse loop of
its gradient with its residual stacks) runs as one numba function: its results agree
with the NumPy code within 1e-12, its gradients with finite differences, and a program
with an op numba cannot take stays NumPy code with the reason in its source. numba
compiles slowly, so few distinct kernels are compiled (one cache directory per run).
"""

from __future__ import annotations

import os
import re
from types import SimpleNamespace

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend import numba as nb
from chainrule.backend.numba.loops import loop_source
from chainrule.backend.numba.products import Refused, fill

needs_numba = pytest.mark.skipif(not nb.available(),
                                 reason="numba is not installed (pip install chainrule[fast])")


@pytest.fixture(scope="module", autouse=True)
def kernel_cache(tmp_path_factory):
    old = os.environ.get("CHAINRULE_CACHE_DIR")
    os.environ["CHAINRULE_CACHE_DIR"] = str(tmp_path_factory.mktemp("chainrule_cache"))
    yield
    if old is None:
        os.environ.pop("CHAINRULE_CACHE_DIR", None)
    else:
        os.environ["CHAINRULE_CACHE_DIR"] = old


@pytest.fixture
def numba_on():
    nb.use_numba(True)
    yield
    nb.use_numba(None)


def _loss(steps, body=None):
    body = body or (lambda i, x, w: x - 0.01 * cnp.tanh(x @ w))

    def loss(w, x):
        x = cr.fori_loop(0, steps, lambda i, x: body(i, x, w), x)
        return cnp.sum(x * x)

    return loss


def _loss_n(w, x, n):  # the trip count an argument: one kernel for every count
    x = cr.fori_loop(0, n, lambda i, x: x - 0.01 * cnp.tanh(x @ w), x)
    return cnp.sum(x * x)


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((6, 6)) * 0.4, rng.standard_normal((4, 6))


def _state(f, *args):
    return f.specialize(f.bind(args, {}))[0].tiers.compile().compiled.loop_program.state


@needs_numba
def test_gradient_equals_numpy_code_and_finite_differences(numba_on):
    w, x = _data()
    g = cr.jit(cr.grad(_loss_n), eager_compile=True)
    got = {n: g(w, x, np.int64(n)) for n in (0, 3, 40, 7)}  # changing trip counts
    assert _state(g, w, x, np.int64(3)) == "ready"
    nb.use_numba(False)
    ref = cr.jit(cr.grad(_loss_n), eager_compile=True)
    for n, value in got.items():
        np.testing.assert_allclose(value, ref(w, x, np.int64(n)), rtol=1e-12, atol=1e-13)
    d = np.random.default_rng(1).standard_normal(w.shape)
    eps = 1e-6
    fd = (_loss_n(w + eps * d, x, 40) - _loss_n(w - eps * d, x, 40)) / (2 * eps)
    np.testing.assert_allclose(np.sum(got[40] * d), fd, rtol=1e-6)


@needs_numba
def test_hvp_equals_numpy_code(numba_on):
    w, x = _data()
    v = np.ones_like(x)
    loss = _loss(40)
    h = cr.jit(lambda x, v: cr.hvp(lambda x: loss(w, x), (x,), (v,)), eager_compile=True)
    got = h(x, v)
    assert _state(h, x, v) == "ready"
    source = h.source(x, v)
    assert "def main(a0, a1, a2):" in source
    # the vectorizable tanh; residuals popped as views (no push follows a pop here)
    assert "vm.tanh(" in source and ".copy()" not in source.split("whole program")[1]
    # the residuals and the merged products' halves made element by element, in place
    assert re.search(r"\] = vm\.tanh\(v\d+\[v\d+, v\d+\]\)", source)
    nb.use_numba(False)
    ref = cr.jit(lambda x, v: cr.hvp(lambda x: loss(w, x), (x,), (v,)),
                 eager_compile=True)(x, v)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13)


def test_unsupported_op_falls_back_with_the_reason(numba_on):
    w, x = _data()
    loss = _loss(5, lambda i, x, w: x - 0.01 * cnp.cumsum(x @ w, axis=1))
    g = cr.jit(cr.grad(loss))
    mod = g.module(w, x)
    with pytest.raises(Refused, match="cumsum"):
        loop_source(mod, "main")
    if nb.available():
        assert "whole-loop numba: not used (op cumsum" in g.source(w, x)
    ref = cr.grad(loss)(w, x)
    np.testing.assert_allclose(g(w, x), ref, rtol=1e-12)


def test_a_program_without_loops_is_not_taken():
    w, x = _data()
    g = cr.jit(cr.grad(lambda w, x: cnp.sum(cnp.tanh(x @ w))))
    with pytest.raises(Refused, match="no loop"):
        loop_source(g.module(w, x), "main")


def _filled(text: str, shapes: dict) -> list:
    lines, names = [], iter(f"i{k}" for k in range(9))
    w = SimpleNamespace(shapes=shapes, fresh=lambda: next(names),
                        out=lambda depth, line: lines.append("    " * depth + line))
    var = SimpleNamespace(type=SimpleNamespace(shape=(4, 6)))
    fill(w, "b", "4 + ", "b[4:]", var, text, 0)
    return lines


def test_a_write_into_a_buffer_is_an_element_loop_only_when_elementwise():
    """Arithmetic and vm calls on arrays of the destination's shape and scalars: loops
    writing in place; np's ufuncs, **, broadcast or unknown operands: the array
    expression (numba's temporary and copy)."""
    shapes = {"v1": (4, 6), "v2": (4, 6), "v3": (), "v4": (6,)}
    assert _filled("(v1 * -0.01) * (1.0 - vm.tanh(v2 * v3))", shapes) == [
        "for i0 in range(4):", "    for i1 in range(6):",
        "        b[4 + i0, i1] = (v1[i0, i1] * -0.01) * (1.0 - vm.tanh(v2[i0, i1] * v3))"]
    for text in ("np.sin(v1) * v2", "v1 ** 2.0", "v1 + v4", "v1 + v9", "v1 + k0",
                 "np.float64(inf) * v1"):
        assert _filled(text, shapes) == [f"b[4:] = {text}"], text
