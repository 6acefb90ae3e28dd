"""Element loops in native code (``chainrule.backend.numba.deferred``): chains of
elementwise ops, broadcasts, slices, transposes, concatenations and slice updates on
arrays past the small-array limit are computed in one loop nest per stored array,
reductions in the loops of what they reduce; results agree with the NumPy code within
``NATIVE_RTOL``, with NumPy's dtypes and NaN rules. Also the stacks of reverse mode
in native code: preallocated rows, a workspace reused between calls (and between
threads), popped rows read in place only when no push can follow."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from finite_differences import fd_grad

import chainrule as cr
import chainrule.numpy as cnp

pytest.importorskip("numba", reason="pip install 'chainrule[fast]' (numba)")

from chainrule.backend.codegen.generate import compile_module  # noqa: E402
from chainrule.backend.numba.deferred import deferrable_vars  # noqa: E402
from chainrule.backend.numba.loops import LoopProgram  # noqa: E402
from chainrule.backend.numba.programs import NATIVE_RTOL, program_source  # noqa: E402
from chainrule.transform import optimize  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.uniform(-1, 1, 37)
Y = RNG.uniform(-1, 1, 37)
A = RNG.uniform(-1, 1, (23, 19))
B = RNG.uniform(-1, 1, (19,))
C = RNG.uniform(-1, 1, (4, 23, 19))


def _flat(tree) -> list:
    if isinstance(tree, tuple):
        return [x for t in tree for x in _flat(t)]
    return [np.asarray(tree)]


def _agree(fn, *args) -> str:
    module = optimize(cr.trace(fn, *args))
    src = program_source(module, "main")
    got = LoopProgram(src, module["main"]).build()(*[np.asarray(a) for a in args])
    want = compile_module(module, "main")(*args)
    for g, w in zip(_flat(got), _flat(want), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w, src.text)
        rtol = NATIVE_RTOL if g.dtype != np.float32 else 4 * np.finfo(np.float32).eps
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-13, equal_nan=True,
                                   err_msg=src.text)
    return src.text


CASES = {
    "a chain": (lambda x, y: cnp.tanh(x * y + 1.0) * cnp.exp(-x) - y / 3.0, X, Y),
    "slices and concatenation": (
        lambda x, y: cnp.concatenate([x[:1], x[1:] * y[:-1], y[::3]]) * 2.0, X, Y),
    "a negative step and an integer": (lambda a: a[::-2, 3] + a[-1, ::-1][:12], A),
    "broadcasting and transposes": (lambda a, b: (a * b).T - b[:, None] + a.T * 0.5, A, B),
    "new axes and unit axes": (lambda x: cnp.reshape(x, (1, 37, 1)) * x[None, :, None], X),
    "where, comparisons, casts": (
        lambda x, y: cnp.where(x > y, x, -y) + (x == y) + (x > 0).astype(np.float64),
        X, Y),
    "integers": (lambda x: (x > 0).astype(np.int64) * 3 + cnp.arange(37), X),
    "float32": (lambda x: cnp.tanh(x) * np.float32(2.0) - x * x,
                X.astype(np.float32)),
    "sums over every set of axes": (
        lambda c: (cnp.sum(c * 2.0), cnp.sum(c * 2.0, axis=0), cnp.sum(c + 1.0, axis=1),
                   cnp.sum(c - 1.0, axis=2), cnp.sum(c * c, axis=(0, 2)),
                   cnp.sum(c * 3.0, axis=(1, 2), keepdims=True)), C),
    "mean and prod": (lambda a: (cnp.mean(a * 2.0, axis=1), cnp.mean(a + 1.0),
                                 cnp.prod(a * 0.5 + 1.0, axis=0),
                                 cnp.prod(a + 1.5, axis=1)), A),
    "max and min propagate NaN": (
        lambda a: (cnp.max(a * 2.0, axis=1), cnp.min(a - 1.0, axis=0),
                   cnp.max(a + 0.0), cnp.min(a * 1.0, axis=1, keepdims=True)),
        np.where(RNG.uniform(size=A.shape) < 0.05, np.nan, A)),
    "sums of integers and booleans": (lambda a: (cnp.sum(a > 0), cnp.sum(a > 0, axis=1),
                                                 cnp.mean((a > 0) * 1, axis=0)), A),
    "slice updates": (lambda x, y: cnp.zeros_like(x).at[3:30].add(y[:27] * 2.0)
                      .at[0].add(1.0).at[5:9].set(x[:4] - 1.0), X, Y),
    "stacks of small matrix products": (
        lambda c, a: (c[:, :, :5] @ a[:5, :3], a[None, :7, :4] @ c[:, :4, :6],
                      (c[:, :6, :6] @ c[:, :6, :6]) * 2.0, cnp.sum(c[:2, :5, :2] @ c[:2, :2, :9])),
        C, A),
    "a distance matrix's nearest": (
        lambda p, q: cnp.sum(cnp.min(cnp.sum(p * p, axis=1)[:, None] + cnp.sum(q * q, axis=1)
                                     - 2 * p @ q.T, axis=1)), A, A[:7] + 0.1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_element_loops_agree_with_the_numpy_code(name):
    fn, *args = CASES[name]
    _agree(fn, *args)


def test_a_chain_is_one_loop_with_no_temporaries():
    text = _agree(lambda x, y: cnp.sum(cnp.concatenate([x[:1], x[1:] * y[:-1]]) * 2.0 + y),
                  X, Y)
    assert "np.empty" not in text and "np.concatenate" not in text, text
    assert text.count("for ") == 2, text  # the sum's four accumulators and the remainder


def test_a_value_read_twice_is_stored_once():
    text = _agree(lambda x: (lambda t: t * t + t)(cnp.tanh(x) * 2.0), X)
    assert text.count("np.empty") == 2, text  # t, then the result


def test_a_long_chain_is_cut_into_stored_pieces():
    def chain(x):
        for k in range(100):
            x = x * 0.99 + k * 1e-3
        return x
    text = _agree(chain, X)
    assert 2 <= text.count("np.empty") <= 10, text


def test_values_read_once_by_element_readers_are_deferred():
    module = optimize(cr.trace(lambda x: cnp.sum(cnp.tanh(x) @ np.ones(37)) + x[3:] @ x[:-3],
                               X))
    fn = module["main"]
    deferred = deferrable_vars(fn)
    read_by = {a: b.value.callee.name for b in fn.body.bindings for a in b.value.args}
    assert deferred and all(read_by[v] in ("sum", "add") for v in deferred), str(module)
    assert {v for v, op in read_by.items() if op in ("sum", "add")} <= deferred


def _loop_loss(x, y):
    def step(_, s):
        return s + 0.1 * cnp.concatenate([x[:1], x[1:] * cnp.tanh(s[:-1])]) * y
    return cnp.sum(cr.fori_loop(0, 30, step, cnp.zeros_like(x)) ** 2)


BIG = RNG.uniform(0, 1, 4096)  # rows of 32 KiB: reverse mode stacks them in rows


def _compiled(transformed, *args):
    """The optimized program of ``transformed`` for ``args``, its function's name, and
    the arguments it takes."""
    entry, leaves = transformed.specialize(transformed.bind(args, {}))
    inputs = list(leaves) + list(entry.traced.lifted_values) + entry.guards.inputs()
    return entry.module, entry.tiers.func, inputs


def _both(transformed, *args):
    """(native code, NumPy code, the numba source) of ``transformed``'s program."""
    module, func, inputs = _compiled(transformed, *args)
    src = program_source(module, func)
    run = LoopProgram(src, module[func]).build()
    numpy_code = compile_module(module, func)

    def arguments(*a):
        return _compiled(transformed, *a)[2]
    return (lambda *a: run(*arguments(*a))), (lambda *a: numpy_code(*arguments(*a))), src


def _close(got, want, rtol=NATIVE_RTOL):
    for g, w in zip(_flat(got), _flat(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-13)


def test_reverse_mode_stacks_reuse_their_workspace():
    y = BIG[::-1].copy()
    native, numpy_code, src = _both(cr.jit(cr.grad(_loop_loss, argnums=(0, 1))), BIG, y)
    assert src.workspace, src.text  # the rows, allocated once and passed in
    first = native(BIG, y)
    _close(first, numpy_code(BIG, y))
    kept = tuple(np.copy(a) for a in _flat(first))
    for _ in range(3):  # the rows written by the call before are written again
        _close(native(BIG, y), first, rtol=0)
    _close(native(BIG * 0.5, y * 2.0), numpy_code(BIG * 0.5, y * 2.0))
    _close(first, kept, rtol=0)  # a result is not a view of the workspace


def test_the_workspace_is_not_shared_between_threads():
    native, numpy_code, _ = _both(cr.jit(cr.grad(_loop_loss, argnums=(0, 1))), BIG, BIG)
    inputs = [(BIG * s, BIG[::-1] * s) for s in (0.5, 1.0, 1.5, 2.0)]
    want = [numpy_code(*i) for i in inputs]
    got: dict = {}

    def work(k):
        for _ in range(5):
            got[k] = native(*inputs[k])
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        _close(got[k], want[k])


def test_native_gradient_of_a_loop_matches_central_differences():
    x, y = RNG.uniform(0, 1, 40), RNG.uniform(0, 1, 40)
    native, _, _ = _both(cr.jit(cr.grad(_loop_loss, argnums=(0, 1))), x, y)
    gx, gy = native(x, y)
    np.testing.assert_allclose(gx, fd_grad(_loop_loss, (x, y), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, fd_grad(_loop_loss, (x, y), 1), rtol=1e-6, atol=1e-8)


POP_THEN_PUSH = """
def main(x: f64[20]) -> f64[20]:
    s0 = stack_empty(elem=f64[20])
    s1 = stack_push(s0, x)
    t = stack_pop(s1)
    y = t[0]
    s2 = t[1]
    z = multiply(x, 2.0)
    s3 = stack_push(s2, z)
    u = stack_pop(s3)
    w = u[0]
    r = add(y, w)
    return r
"""


@pytest.mark.parametrize("order", ["push after pop", "pops last"])
def test_popped_rows_are_copied_when_a_push_may_follow(order):
    """A push after a pop writes the popped row's slot: the popped value is a copy. When
    every pop comes after every push (reverse mode's forward loop, then its reverse
    loop), popped rows are read in place."""
    text = POP_THEN_PUSH if order == "push after pop" else POP_THEN_PUSH.replace(
        "    y = t[0]\n    s2 = t[1]\n    z = multiply(x, 2.0)\n    s3 = stack_push(s2, z)\n"
        "    u = stack_pop(s3)\n", "    y = t[0]\n    u = t\n")
    module = cr.parse(text)
    src = program_source(module, "main")
    assert (".copy()" in src.text) == (order == "push after pop"), src.text
    x = np.arange(20.0)
    got = LoopProgram(src, module["main"]).build()(x)
    np.testing.assert_array_equal(got, compile_module(module, "main")(x))
    np.testing.assert_array_equal(got, x * 3 if order == "push after pop" else x * 2)


def test_a_concatenation_of_many_pieces_stays_one_call():
    """An element of a concatenation is a conditional per piece: past ``MAX_PIECES`` the
    pieces are joined by ``np.concatenate`` instead (an element text stays short)."""
    text = _agree(lambda x: cnp.concatenate([x[i:i + 1] * 2.0 for i in range(40)] + [x]) + 1.0,
                  X[:40])
    assert "np.concatenate" in text, text


@pytest.mark.parametrize("trips", ["3", "n"])
def test_preallocated_stacks_of_numbers(trips):
    """``stack_alloc`` of scalars: rows in the workspace when the trip count is a number
    known at compile time, else a buffer made at the call; pops give the pushes back in
    reverse order."""
    module = cr.parse(f"""
def main(x: f64, n: i64) -> f64:
    s0 = stack_alloc({trips}, elem=f64, slot='x')
    s1 = stack_push(s0, x)
    y = multiply(x, 2.0)
    s2 = stack_push(s1, y)
    t = stack_pop(s2)
    a = t[0]
    s3 = t[1]
    u = stack_pop(s3)
    b = u[0]
    r = subtract(a, b)
    return r
""")
    src = program_source(module, "main")
    assert bool(src.workspace) == (trips == "3"), src.text
    got = LoopProgram(src, module["main"]).build()(1.5, 3)
    assert got == compile_module(module, "main")(1.5, 3) == 1.5


@pytest.mark.parametrize("shapes", [((3, 2, 0), (3, 0, 4)), ((2, 0), (0, 4)), ((0,), (0,))])
def test_a_product_of_empty_sums_is_zeros(shapes):
    """Products over an empty inner dimension are 0 (numba's np.dot left them unwritten:
    garbage); repeated, since unwritten memory is sometimes zero."""
    a, b = (np.ones(s) for s in shapes)
    for _ in range(5):
        text = _agree(lambda a, b: (a @ b) + 1.0, a, b)
    assert "np.zeros" in text or "(0.0)" in text or "0.0" in text, text
