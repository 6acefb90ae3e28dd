"""``batch_loops`` (chainrule/transform/lowering/loop_batching.py): a loop's accumulation
``acc + x_k^T @ g_k`` as one ``stack_contract`` after the loop.

Before/After as IR text (the output verifies and parses back); results of the compiled
(batched) programs against the interpreted (unbatched) ones within 1e-12 and against
finite differences, for ``fori_loop``, ``scan`` and ``while_loop``, at orders 1-3 (grad,
grad of grad, hvp); the loops it must leave alone (checkpointed, an accumulator the
step reads, a trip count not known when the loop starts, stacks larger than the
residuals); the kernel of ``stack_contract`` on every kind of stack; numba's form.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend import numba as nb
from chainrule.backend.codegen.generate import compile_module
from chainrule.backend.interpret import Interpreter
from chainrule.errors import ChainruleError
from chainrule.ir.types import TensorType
from chainrule.ir.verify import verify
from chainrule.ops.stack import ROW_POOL, STACK_PUSH, RowStack
from chainrule.transform import get_pass
from chainrule.transform.lowering.loop_batching import STACK_CONTRACT, batch_loops

REVERSE_SWEEP = '''
def main(xs: list[f64[4, 3]], dxs: list[f64[4, 3]], n: i64, g0: f64[4, 3],
         w0: f64[3, 3]) -> tuple[f64[3, 3], f64[3, 3], f64[4, 3]]:
    z = zeros(shape=(3, 3), dtype=f64)
    k, s, ds, g, acc, acc_dot = n, xs, dxs, g0, z, w0
    while True:
        more = greater(k, 0)
        if not more:
            break
        top = stack_pop(s)
        x = top[0]
        rest = top[1]
        dtop = stack_pop_or_zero(ds, elem=f64[4, 3])
        dx = dtop[0]
        drest = dtop[1]
        dg = multiply(g, x)
        xt = permute_dims(x, axes=(1, 0))
        dxt = permute_dims(dx, axes=(1, 0))
        w_adj = matmul(xt, g)
        t1 = matmul(dxt, g)
        t2 = matmul(xt, dg)
        w_adj_dot = add(t1, t2)
        acc_1 = add(acc, w_adj)
        acc_dot_1 = add(w_adj_dot, acc_dot)
        g_1 = tanh(g)
        k_1 = subtract(k, 1)
        k, s, ds, g, acc, acc_dot = k_1, rest, drest, g_1, acc_1, acc_dot_1
    r = (k, s, ds, g, acc, acc_dot)
    w_bar = r[4]
    w_bar_dot = r[5]
    g_end = r[3]
    return (w_bar, w_bar_dot, g_end)
'''

BATCHED = '''\
def main(xs: list[f64[4, 3]], dxs: list[f64[4, 3]], n: i64, g0: f64[4, 3], w0: f64[3, 3]) -> \
tuple[f64[3, 3], f64[3, 3], f64[4, 3]]:
    g_stack = stack_alloc(n, elem=f64[4, 3], slot='g')
    dg_stack = stack_alloc(n, elem=f64[4, 3], slot='dg')
    k, s, g, g_stack_1, dg_stack_1 = n, xs, g0, g_stack, dg_stack
    while True:
        more = greater(k, 0)
        if not more:
            break
        top = stack_pop(s)
        x = top[0]
        rest = top[1]
        dg = multiply(g, x)
        g_1 = tanh(g)
        k_1 = subtract(k, 1)
        g_stack_2 = stack_push(g_stack_1, g)
        dg_stack_2 = stack_push(dg_stack_1, dg)
        k, s, g, g_stack_1, dg_stack_1 = k_1, rest, g_1, g_stack_2, dg_stack_2
    r = (k, s, g, g_stack_1, dg_stack_1)
    g_stack_3 = r[3]
    dg_stack_3 = r[4]
    w_bar = stack_contract(xs, g_stack_3, spec='ji,jk->ik', reads='tb', out=f64[3, 3])
    t1 = stack_contract(dxs, g_stack_3, spec='ji,jk->ik', reads='tb', out=f64[3, 3])
    w_bar_dot_partial = add(w0, t1)
    t2 = stack_contract(xs, dg_stack_3, spec='ji,jk->ik', reads='tb', out=f64[3, 3])
    w_bar_dot = add(w_bar_dot_partial, t2)
    g_end = r[2]
    return (w_bar, w_bar_dot, g_end)
'''


def _stack(values):
    s = None
    for x in values:
        s = STACK_PUSH.kernel(s, x)
    return s


def _rows_stack(values):
    """A stack of rows (``stack_alloc``'s, when they fill ROW_MIN_TOTAL), whatever their
    size."""
    s = RowStack(ROW_POOL.take((len(values), *values[0].shape), np.float64), 0)
    for x in values:
        s = s.push(x)
    assert type(s) is RowStack
    return s


def test_reverse_sweep_before_after():
    m = cr.parse(REVERSE_SWEEP)
    out = batch_loops(m)
    assert str(out) == BATCHED
    verify(out)
    assert str(cr.parse(str(out))) == BATCHED  # the text parses back
    assert str(get_pass("batch_loops")(m)) == BATCHED  # registered by name


def test_reverse_sweep_values_match_the_loop():
    m = cr.parse(REVERSE_SWEEP)
    rng = np.random.default_rng(0)
    n = 5
    x_rows = [rng.standard_normal((4, 3)) for _ in range(n)]
    dx_rows = [rng.standard_normal((4, 3)) for _ in range(n - 2)]  # shorter: zeros below
    args = (_stack(x_rows), _stack(dx_rows), np.int64(n), rng.standard_normal((4, 3)),
            rng.standard_normal((3, 3)))
    want = Interpreter(m).call_function(m["main"], args, {})
    out = batch_loops(m)
    for run in (Interpreter(out).call_function(out["main"], args, {}),
                compile_module(out, "main")(*args)):
        for got, ref in zip(run, want):
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


UP_COUNT = '''
def main(xs: list[f64[2, 3]], a: i64, b: i64, g0: f64[2, 3]) -> f64[3, 3]:
    z = zeros(shape=(3, 3), dtype=f64)
    i, s, g, acc = a, xs, g0, z
    while True:
        c = less(i, b)
        if not c:
            break
        top = stack_pop(s)
        x = top[0]
        rest = top[1]
        xt = permute_dims(x, axes=(1, 0))
        term = matmul(xt, g)
        acc_1 = add(acc, term)
        g_1 = sin(g)
        i_1 = add(i, 1)
        i, s, g, acc = i_1, rest, g_1, acc_1
    r = (i, s, g, acc)
    w = r[3]
    return w
'''


def test_counting_up_to_a_bound_fires_with_its_trip_count():
    out = batch_loops(cr.parse(UP_COUNT))
    text = str(out)
    assert "r_rows = subtract(b, a)" in text and "stack_alloc(r_rows" in text
    assert "stack_contract(xs, g_stack_3, spec='ji,jk->ik', reads='tb'" in text
    verify(out)
    rng = np.random.default_rng(1)
    args = (_stack([rng.standard_normal((2, 3)) for _ in range(6)]), np.int64(2), np.int64(6),
            rng.standard_normal((2, 3)))
    m = cr.parse(UP_COUNT)
    np.testing.assert_allclose(compile_module(out, "main")(*args),
                               Interpreter(m).call_function(m["main"], args, {}),
                               rtol=1e-12)


@pytest.mark.parametrize("change, instead", [
    ("        g_1 = sin(g)\n", "        acc_half = sum(acc)\n        g_1 = add(g, acc_half)\n"),
    ("        acc_1 = add(acc, term)\n", "        acc_2 = multiply(acc, 0.5)\n"
                                         "        acc_1 = add(acc_2, term)\n"),
    ("        c = less(i, b)\n", "        c = stack_nonempty(s)\n"),
    ("        term = matmul(xt, g)\n", "        term = matmul(xt, g)\n        big = sum(term)\n"
                                      "        g_2 = multiply(g, big)\n"),
])
def test_left_alone(change, instead):
    """An accumulator the step reads, one scaled each step (data-dependent), a loop whose
    trip count is unknown when it starts (a while_loop's forward loop), a product the
    step also reads: the same module back."""
    m = cr.parse(UP_COUNT.replace(change, instead))
    verify(m)
    assert batch_loops(m) is m


def test_not_when_the_stack_outgrows_the_residuals():
    """The step's value is 20 times the popped residual: its stack would hold more than
    the sweep already keeps. The same loop on a residual as large fires."""
    text = (UP_COUNT.replace("g0: f64[2, 3]", "g0: f64[2, 60]")
            .replace("-> f64[3, 3]", "-> f64[3, 60]")
            .replace("shape=(3, 3)", "shape=(3, 60)"))
    m = cr.parse(text)
    assert batch_loops(m) is m
    wide = cr.parse(text.replace("list[f64[2, 3]]", "list[f64[2, 3]]").replace(
        "xs: list[f64[2, 3]]", "xs: list[f64[2, 3]], ys: list[f64[2, 60]]").replace(
        "        top = stack_pop(s)\n", "        top = stack_pop(s)\n        topy = stack_pop(t)\n"
        "        resty = topy[1]\n").replace("i, s, g, acc = a, xs, g0, z",
                                          "i, s, t, g, acc = a, xs, ys, g0, z").replace(
        "i, s, g, acc = i_1, rest, g_1, acc_1", "i, s, t, g, acc = i_1, rest, resty, g_1, acc_1")
        .replace("r = (i, s, g, acc)\n    w = r[3]", "r = (i, s, t, g, acc)\n    w = r[4]"))
    assert "stack_contract" in str(batch_loops(wide))
    # steps over MAX_STEP_BYTES (16 KiB): their products are efficient already
    huge = cr.parse(str(wide).replace(", 60]", ", 1400]").replace("(3, 60)", "(3, 1400)"))
    assert batch_loops(huge) is huge


# -- programs the API makes --------------------------------------------------------------


def _body(x, w):
    return x - 0.1 * cnp.tanh(x @ w)


def _fori(w, x):
    return cnp.sum(cr.fori_loop(0, 7, lambda i, x: _body(x, w), x) ** 2)


def _scan(w, x):
    y, _ = cr.scan(lambda c, _: (_body(c, w), None), x, None, length=7)
    return cnp.sum(y ** 2)


def _while(w, x):
    _, y = cr.while_loop(lambda s: s[0] < 7, lambda s: (s[0] + 1, _body(s[1], w)), (0, x))
    return cnp.sum(y ** 2)


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((6, 6)) * 0.4, rng.standard_normal((4, 6)),
            rng.standard_normal((6, 6)))


def _programs(f, w, x, d):
    """order -> (function of w, x, d, how many products it batches)"""
    return {
        "grad": (lambda w, x, d: cr.grad(f)(w, x), 1),
        "grad of grad": (lambda w, x, d: cr.grad(
            lambda w: cnp.sum(cr.grad(f)(w, x) ** 2))(w), 3),
        "hvp": (lambda w, x, d: cr.hvp(lambda w: f(w, x), (w,), (d,)), 2),
    }


@pytest.mark.parametrize("loop", [_fori, _scan, _while], ids=["fori_loop", "scan", "while_loop"])
@pytest.mark.parametrize("order", ["grad", "grad of grad", "hvp"])
def test_batched_equals_unbatched_and_finite_differences(loop, order):
    w, x, d = _data()
    fn, batched = _programs(loop, w, x, d)[order]
    module = cr.jit(fn).module(w, x, d)  # the optimized program
    out = batch_loops(module)
    verify(out)
    assert str(out).count("stack_contract(") == batched
    assert str(cr.parse(str(out))) == str(out)
    got = compile_module(out, "main")(w, x, d)
    unbatched = compile_module(module, "main")(w, x, d)
    np.testing.assert_allclose(got, unbatched, rtol=1e-12, atol=1e-14)
    interpreted = Interpreter(out).call_function(out["main"], (w, x, d), {})
    np.testing.assert_allclose(interpreted, unbatched, rtol=1e-12, atol=1e-14)
    # the derivative of the order below, by central differences along d
    eps = 1e-6
    below = {"grad": lambda w: loop(w, x),
             "grad of grad": lambda w: cnp.sum(cr.grad(loop)(w, x) ** 2),
             "hvp": lambda w: cr.grad(loop)(w, x)}[order]
    fd = (np.asarray(below(w + eps * d)) - np.asarray(below(w - eps * d))) / (2 * eps)
    along = np.asarray(got) if order == "hvp" else np.sum(np.asarray(got) * d)
    np.testing.assert_allclose(along, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("checkpoint", [{"checkpoint_every": 3},
                                        {"checkpoint": cr.Budget(snapshots=2)}],
                         ids=["every", "revolve"])
def test_checkpointed_loops_are_not_batched(checkpoint):
    w, x, _ = _data()

    def loss(w, x):
        return cnp.sum(cr.fori_loop(0, 7, lambda i, x: _body(x, w), x, **checkpoint) ** 2)

    module = cr.jit(cr.grad(loss)).module(w, x)
    assert batch_loops(module) is module
    np.testing.assert_allclose(compile_module(module, "main")(w, x), cr.grad(_fori)(w, x),
                               rtol=1e-12)


# -- the kernel ----------------------------------------------------------------------------


@pytest.mark.parametrize("kinds", ["cells", "rows", "mixed"])
def test_stack_contract_kernel_pairs_popped_with_pushed(kinds):
    rng = np.random.default_rng(2)
    n = 6
    xs = [rng.standard_normal((5, 3)) for _ in range(n)]  # pushed forward: x_0 .. x_5
    gs = [rng.standard_normal((5, 4)) for _ in range(n)]  # g_k pairs with x_k
    a = _rows_stack(xs) if kinds in ("rows", "mixed") else _stack(xs)
    b = _rows_stack(gs[::-1]) if kinds == "rows" else _stack(gs[::-1])  # pushed in reverse
    out = TensorType((3, 4), "f64")
    want = sum(x.T @ g for x, g in zip(xs, gs))
    got = STACK_CONTRACT.kernel(a, b, "ji,jk->ik", "tb", out)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # another einsum, and a popped stack shorter than the other (zeros below it)
    got = STACK_CONTRACT.kernel(_stack(xs[2:]), b, "ji,jk->ik", "tb", out)
    np.testing.assert_allclose(got, sum(x.T @ g for x, g in zip(xs[2:], gs[2:])), rtol=1e-12)
    got = STACK_CONTRACT.kernel(b, a, "jk,ji->ki", "bt", TensorType((4, 3), "f64"))
    np.testing.assert_allclose(got, want.T, rtol=1e-12)
    got = STACK_CONTRACT.kernel(a, b, "ij,ik->jk", "tb", out)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.any(STACK_CONTRACT.kernel(None, b, "ji,jk->ik", "tb", out))


def test_stack_contract_type_errors_name_the_problem():
    with pytest.raises(ChainruleError, match="does not name the 2 axes"):
        cr.parse('''
def main(a: list[f64[2, 3]], b: list[f64[2, 3]]) -> f64[3, 3]:
    c = stack_contract(a, b, spec='j,jk->ik', reads='tb', out=f64[3, 3])
    return c
''')
    with pytest.raises(ChainruleError, match="out="):
        cr.parse('''
def main(a: list[f64[2, 3]], b: list[f64[2, 3]]) -> f64[3, 3]:
    c = stack_contract(a, b, spec='ji,jk->ik', reads='tb', out=f64[3, 2])
    return c
''')


# -- numba ---------------------------------------------------------------------------------

needs_numba = pytest.mark.skipif(not nb.available(), reason="numba is not installed")


@pytest.fixture
def numba_cache(tmp_path):
    old = os.environ.get("CHAINRULE_CACHE_DIR")
    os.environ["CHAINRULE_CACHE_DIR"] = str(tmp_path)
    nb.use_numba(True)
    yield
    nb.use_numba(None)
    if old is None:
        os.environ.pop("CHAINRULE_CACHE_DIR", None)
    else:
        os.environ["CHAINRULE_CACHE_DIR"] = old


@needs_numba
@pytest.mark.parametrize("layout", ["x @ w", "w @ x"])
def test_numba_whole_loop_contracts_in_place(numba_cache, layout):
    """``x @ w``: the rows of both stacks line up (the pushed one fills from the end), one
    np.dot; ``w @ x`` (``g_k @ x_k^T``): one np.dot per step. Both agree with NumPy code."""
    w, x, _ = _data()
    x = x.T.copy() if layout == "w @ x" else x

    def loss(w, x):
        step = (lambda x: x - 0.1 * cnp.tanh(w @ x)) if layout == "w @ x" else (
            lambda x: _body(x, w))
        return cnp.sum(cr.fori_loop(0, 7, lambda i, x: step(x), x) ** 2)

    g = cr.jit(cr.grad(loss), eager_compile=True)
    got = g(w, x)
    numba_text = g.source(w, x).split("whole program")[1]
    assert "stack_room_down(" in numba_text  # the pushed rows fill from the end
    assert ("for " in numba_text.split("min(")[1]) == (layout == "w @ x")
    nb.use_numba(False)
    np.testing.assert_allclose(got, cr.jit(cr.grad(loss))(w, x), rtol=1e-12, atol=1e-14)


@needs_numba
def test_numba_makes_products_sharing_an_operand_as_one(numba_cache):
    """The HVP's forward loop multiplies x and dx (carried) by W, its reverse loop g and
    dg (made in the step) by W.T: each pair is one (8, 6) @ (6, 6) product whose left
    operand's halves are written where they are made (no copy), its results halves."""
    w, x, _ = _data()
    v = np.random.default_rng(3).standard_normal(x.shape)

    def hvp(x, v):
        return cr.hvp(lambda x: _fori(w, x), (x,), (v,))

    h = cr.jit(hvp, eager_compile=True)
    got = h(x, v)
    numba_text = h.source(x, v).split("whole program")[1]
    assert numba_text.count("np.empty((8, 6), np.float64)") == 3  # before, in each loop
    assert numba_text.count("np.dot(") == 2 and "[:4] = a" in numba_text
    nb.use_numba(False)
    np.testing.assert_allclose(got, cr.jit(hvp)(x, v), rtol=1e-12, atol=1e-14)
