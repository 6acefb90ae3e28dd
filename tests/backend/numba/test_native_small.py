"""Small arrays as their elements in native code (``chainrule.backend.numba.small``):
every element lowering (elementwise, reductions, shapes, products, indexing at static
and dynamic positions, updates), small values carried by loops, chosen by branches and
pushed on reverse mode's stacks, give the NumPy code's values within ``NATIVE_RTOL``,
with NumPy's dtypes; the written code holds them as scalars."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.nn as nn
import chainrule.numpy as cnp
from chainrule.scipy.special import logsumexp

pytest.importorskip("numba", reason="pip install 'chainrule[fast]' (numba)")

from chainrule.backend.codegen.generate import compile_module  # noqa: E402
from chainrule.backend.numba import small  # noqa: E402
from chainrule.backend.numba.loops import LoopProgram  # noqa: E402
from chainrule.backend.numba.programs import NATIVE_RTOL, program_source  # noqa: E402
from chainrule.transform import optimize  # noqa: E402

X6 = np.array([0.3, -1.2, 2.5, 0.7, -0.4, 1.1])
Y6 = np.array([-0.5, 0.8, 1.3, -2.0, 0.2, 0.9])
M = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6]])
N = np.array([[0.3, 0.1], [-0.2, 0.5], [0.7, -0.4]])
V3 = np.array([0.6, -0.1, 0.35])


def _flat(tree) -> list:
    if isinstance(tree, tuple):
        return [x for t in tree for x in _flat(t)]
    return [np.asarray(tree)]


def _native_and_numpy(fn, *args):
    module = optimize(cr.trace(fn, *args))
    src = program_source(module, "main")
    got = LoopProgram(src, module["main"]).build()(*[np.asarray(a) for a in args])
    with np.errstate(divide="ignore"):  # NumPy's log of 0 (logsumexp of -inf) warns
        want = compile_module(module, "main")(*args)
    return got, want, src.text


def _agree(fn, *args) -> str:
    got, want, text = _native_and_numpy(fn, *args)
    for g, w in zip(_flat(got), _flat(want), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w, text)
        rtol = NATIVE_RTOL if g.dtype != np.float32 else 4 * np.finfo(np.float32).eps
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-14, equal_nan=True,
                                   err_msg=text)
    return text


CASES = {
    "arithmetic and functions": (lambda x, y: cnp.exp(x) * y - cnp.sin(y) / (1 + x * x),
                                 X6, Y6),
    "a negative number as a base": (lambda x: (-2.0) ** cnp.round(x) + x, X6),
    "a constant array": (lambda x: x * np.array([-1.0, 2.0, -3.0, 4.0, 0.5, -0.5]), X6),
    "broadcasting": (lambda m, v: m * v + v[:, None][:2], M, V3),
    "comparisons and where": (lambda x, y: cnp.where(x > y, x, -y) + (x == y), X6, Y6),
    "integers and bools": (lambda x: cnp.sum((x > 0).astype(np.int64) * 3) + cnp.sum(x > 1),
                           X6),
    "float32": (lambda x: cnp.tanh(x) * np.float32(2.0) + x.sum(),
                X6.astype(np.float32)),
    "sum over axes": (lambda m: (cnp.sum(m, axis=0), cnp.sum(m, axis=1, keepdims=True),
                                 cnp.sum(m)), M),
    "mean, prod": (lambda m: (cnp.mean(m, axis=1), cnp.prod(m, axis=0), cnp.mean(m)), M),
    "max, min with NaN": (lambda m: (cnp.max(m, axis=1), cnp.min(m, axis=0), cnp.max(m)),
                          np.array([[0.5, np.nan, 0.1], [0.2, 0.4, -0.6]])),
    "logsumexp": (lambda m: (cnp.logaddexp(m, 0.0),
                             logsumexp(m, axis=1),
                             logsumexp(m)), M),
    "logsumexp of -inf": (lambda m: logsumexp(m * np.inf, axis=0),
                          -np.abs(M)),
    "softmax": (lambda m: (nn.softmax(m, dim=1), nn.log_softmax(m, dim=0)), M),
    "matmul 2-d 2-d": (lambda a, b: a @ b, M, N),
    "matmul 1-d 2-d, 2-d 1-d, 1-d 1-d": (lambda v, m: (v @ N, m @ v, v @ v), V3, M),
    "transpose, flip, reshape": (lambda m: (m.T * 2.0, cnp.flip(m, axis=1),
                                            cnp.flip(m), m.reshape(3, 2) + 1.0,
                                            cnp.expand_dims(m, 0) - 1.0), M),
    "concatenate": (lambda x, y: cnp.concatenate([x, -y, x[:2]]) * 1.5, X6, Y6),
    "broadcast_to": (lambda v: cnp.broadcast_to(v, (4, 3)) * 2.0, V3),
    "creation": (lambda x: x + cnp.zeros(6) + cnp.ones(6) * cnp.full(6, 2.5)
                 + cnp.arange(6.0), X6),
    "static indexing": (lambda m: (m[1, ::-1] * 2, m[None, 0], m[-1], m[:, 1:]), M),
    "a big array read at static positions": (lambda big: big[3, 1:4] * 2.0,
                                             np.arange(400.0).reshape(20, 20)),
    "updates at static positions": (
        lambda m, v: (m.at[1].add(3.0), m.at[:, 0].set(v[:2]), m.at[0, 1:].multiply(v[1:]),
                      m.at[1].min(0.0), m.at[:, 2].max(v[:2])), M, V3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_element_lowerings_agree_with_the_numpy_code(name):
    fn, *args = CASES[name]
    _agree(fn, *args)


def test_small_values_are_scalars_in_the_code():
    text = _agree(lambda x, m: cnp.sum(cnp.tanh(m @ x) * 2.0) + x[0], V3, M)
    assert "np." not in text.replace("np.tanh", ""), text  # no array made
    assert "= a0[0], a0[1], a0[2]" in text, text


def test_a_value_past_the_limit_stays_an_array():
    big = np.arange(float(small.SMALL_MAX + 1))
    text = _agree(lambda x: cnp.sum(cnp.sin(x) * 2.0), big)
    assert "a0[0], a0[1]" not in text and "in range(" in text, text  # a loop, not elements


def test_dynamic_indices_and_updates_in_a_loop():
    """x[i] and acc.at[i].add(...) at a loop's counter, negative ones included, on small
    values (selects) and a big one (reads)."""
    big = np.arange(60.0).reshape(20, 3)

    def f(x, big):
        def body(i, c):
            acc, s = c
            acc = acc.at[i].add(x[i] * x[-1 - i]) + big[i * 3, :].sum()
            return acc, s + big[i, 1] + x[i - 6]
        return cr.fori_loop(0, 6, body, (cnp.zeros(6), 0.0))

    _agree(f, X6, big)


def test_an_index_out_of_range_raises():
    def f(x, i):
        return x[i] * 2.0

    module = optimize(cr.trace(f, X6, 3))
    run = LoopProgram(program_source(module, "main"), module["main"]).build()
    assert run(X6, np.int64(-2)) == X6[-2] * 2.0
    with pytest.raises(IndexError):
        run(X6, np.int64(6))


def test_loops_and_branches_carry_small_values():
    def f(x, m):
        def cond(c):
            return c[1] < 5

        def body(c):
            v, k = c
            v = cnp.where(cnp.sum(v) > 0, cnp.tanh(m @ v.T).T[:2].sum() * v, v[::-1] - 0.5)
            return v, k + 1
        v, _ = cr.while_loop(cond, body, (x[:3], 0))
        return cr.cond(v[0] > 0, lambda: v * 2.0, lambda: -v)

    _agree(f, X6, np.ones((3, 3)) * 0.3)


@pytest.mark.parametrize("order", [1, 2])
def test_reverse_mode_stacks_of_small_values(order):
    """The residuals a loop's reverse mode pushes are small arrays: written into the
    stack's rows element by element, popped as elements."""
    def f(x):
        def body(i, h):
            return cnp.tanh(M @ cnp.concatenate([h, h[:1]]) + 0.1 * i) * h
        return cnp.sum(cr.fori_loop(0, 5, body, x[:2]) ** 2)

    g = cr.grad(f) if order == 1 else cr.jacfwd(cr.grad(f))
    module = optimize(cr.trace(g, X6))
    fn = module["main"]
    src = program_source(module, "main")
    got = LoopProgram(src, fn).build()(X6)
    np.testing.assert_allclose(got, compile_module(module, "main")(X6), rtol=NATIVE_RTOL,
                               atol=1e-14)
    assert "stack_room" in src.text or "stack_push" in src.text
