"""Binomial checkpointing of loops (``checkpoint=cr.Budget(...)``): the schedule is
revolve's (checked against the recursion that defines it), the derivatives are those
of storing everything at every order, and the number of steps run again is the one
revolve predicts."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.errors import InvalidValueError
from chainrule.frontend import ScriptError
from chainrule.ops.stack_schedule import revolve_cost, revolve_split
from chainrule.testing.steps import count_runs as count_calls
from chainrule.testing.steps import counted_tanh

W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]])
X = np.array([0.3, -0.2, 0.5])
V = np.array([1.0, 0.5, -0.3])


@lru_cache(None)
def fewest_advances(steps: int, snapshots: int) -> int:
    """The recursion revolve solves: reverse ``steps`` steps from a snapshot at the first
    with ``snapshots`` snapshots in all (that one included)."""
    if steps <= 1:
        return 0
    if snapshots <= 1:
        return steps * (steps - 1) // 2
    return min(m + fewest_advances(steps - m, snapshots - 1) + fewest_advances(m, snapshots)
               for m in range(1, steps))


@pytest.mark.parametrize("snapshots", [1, 2, 3, 4, 6])
def test_schedule_is_optimal(snapshots):
    for steps in range(1, 60):
        best = fewest_advances(steps, snapshots)
        assert revolve_cost(steps, snapshots) == best, (steps, snapshots)
        m = revolve_split(steps, snapshots)
        if steps > 1 and snapshots > 1:
            assert (m + fewest_advances(steps - m, snapshots - 1)
                    + fewest_advances(m, snapshots)) == best, (steps, snapshots, m)


def step(i, h):
    return counted_tanh(h @ W) * 1.1 + 0.01 * i


def fori(n, budget):
    return lambda x: cnp.sum(cr.fori_loop(0, n, step, x, checkpoint=budget) ** 2)


def while_(n, budget):
    def f(x):
        def body(c):
            i, h = c
            return i + 1, step(i, h)

        return cnp.sum(cr.while_loop(lambda c: c[0] < n, body, (0, x), checkpoint=budget)[1] ** 2)

    return f


def scan(n, budget):
    xs = np.linspace(-1.0, 1.0, n)

    def f(x):
        def body(h, t):
            h = counted_tanh(h @ W) * 1.1 + 0.01 * t
            return h, cnp.sum(h)

        h, ys = cr.scan(body, x, xs, checkpoint=budget)
        return cnp.sum(ys ** 2) + cnp.sum(h)

    return f


LOOPS = {"fori_loop": fori, "while_loop": while_, "scan": scan}


@pytest.mark.parametrize("kind", sorted(LOOPS))
@pytest.mark.parametrize("snapshots", [1, 2, 3, 5, 40])
def test_gradient_equals_storing_everything(kind, snapshots):
    make = LOOPS[kind]
    want = cr.grad(make(17, None))(X)
    got = cr.grad(make(17, cr.Budget(snapshots=snapshots)))(X)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", sorted(LOOPS))
def test_higher_orders_under_a_budget(kind):
    make = LOOPS[kind]
    plain, budgeted = make(9, None), make(9, cr.Budget(snapshots=2))
    h = cr.hessian(plain)(X)
    np.testing.assert_allclose(cr.jacrev(cr.grad(budgeted))(X), h, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(cr.hvp(budgeted, (X,), (V,)), h @ V, rtol=1e-11, atol=1e-13)
    third = lambda f: cr.grad(lambda x: cr.grad(lambda x: cr.grad(f)(x) @ V)(x) @ V)(X)
    np.testing.assert_allclose(third(budgeted), third(plain), rtol=1e-10, atol=1e-12)


def count_runs(f, x) -> int:
    return count_calls(cr.grad(f), x)


@pytest.mark.parametrize("n,snapshots", [(10, 1), (10, 2), (30, 3), (100, 4), (100, 10)])
def test_steps_run_again_as_revolve_predicts(n, snapshots):
    """fori_loop (trip count known): the forward sweep places revolve's snapshots (and
    keeps the last carry, the state revolve tapes first), so the reverse sweep advances
    T(n, c) - (n - 1) steps: T(n, c) + n + 1 runs in all, one more than revolve (whose
    forward sweep tapes the last step). A while_loop keeps only its first carry and
    advances T(n, c). Every step also runs once forward and once taped."""
    budget = cr.Budget(snapshots=snapshots)
    best = fewest_advances(n, snapshots) if n <= 100 else revolve_cost(n, snapshots)
    assert count_runs(fori(n, budget), X) == best + n + 1
    assert count_runs(while_(n, budget), X) == 2 * n + best
    assert count_runs(fori(n, None), X) == 2 * n - n  # stored: the forward only


def test_budget_in_bytes_and_errors():
    carry = 8 + 3 * 8  # the counter and the f64[3] carry
    f = fori(12, cr.Budget(bytes=3 * carry))
    text = str(cr.trace(f, X))
    assert "loop_checkpoint(0, 12, snapshots=3)" in text and cr.parse(text) == cr.trace(f, X)
    np.testing.assert_allclose(cr.grad(f)(X), cr.grad(fori(12, None))(X), rtol=1e-13)
    with pytest.raises(InvalidValueError, match="snapshots=k or bytes=n"):
        cr.Budget()
    with pytest.raises(InvalidValueError, match="integer >= 1"):
        cr.Budget(snapshots=0)
    with pytest.raises(InvalidValueError, match="chainrule.Budget"):
        cr.grad(fori(3, 5))(X)
    with pytest.raises(cr.frontend.control.TraceError, match="not both"):
        cr.fori_loop(0, 3, step, cr.trace(lambda x: x, X) and X, checkpoint_every=2,
                     checkpoint=cr.Budget(snapshots=2))


def test_budget_on_plain_values_runs_the_loop():
    """Outside a trace the loops just run; the budget has nothing to keep."""
    out = cr.fori_loop(0, 3, lambda i, h: np.tanh(h @ W), X, checkpoint=cr.Budget(snapshots=1))
    want = X
    for _ in range(3):
        want = np.tanh(want @ W)
    np.testing.assert_allclose(out, want)


def test_reverse_program_prints_as_python():
    """Before/After: the marked loop, and its reverse mode (snapshots, advance, rerun)."""
    from chainrule.transform.reverse.gradient import gradient

    before = cr.trace(fori(4, cr.Budget(snapshots=2)), X)
    text = str(before)
    assert "lv0 = loop_checkpoint(0, 4, snapshots=2)" in text.replace("lv1 =", "lv0 =")
    after = gradient(before)
    cr.verify(after)
    out = str(after)
    for line in ("stack_push(", "revolve_next(", "snapshot_top = stack_pop(",
                 "advancing = less(pos,"):
        assert line in out, out
    assert cr.parse(out) == after
    assert ops.tanh is not None


BUDGET3 = cr.Budget(snapshots=3)


@cr.script
def script_budgeted(x, w, n):
    for _i in BUDGET3.range(n):
        x = x - 0.1 * cnp.tanh(x @ w)
    return cnp.sum(x * x)


@cr.script
def script_stored(x, w, n):
    for _i in range(n):
        x = x - 0.1 * cnp.tanh(x @ w)
    return cnp.sum(x * x)


def test_script_loop_under_a_budget():
    """``for i in budget.range(n)`` in @script: a plain range in Python, checkpointed
    under the budget when compiled."""
    assert script_budgeted.python(X, W, 7) == pytest.approx(script_stored.python(X, W, 7))
    text = str(cr.trace(lambda x: script_budgeted(x, W, 17), X))
    assert "loop_checkpoint(0, 17, snapshots=3)" in text
    for n in (0, 1, 17):
        np.testing.assert_allclose(cr.grad(script_budgeted)(X, W, n),
                                   cr.grad(script_stored)(X, W, n), rtol=1e-13, atol=1e-15)
    h = cr.hessian(lambda x: script_stored(x, W, 9))(X)
    np.testing.assert_allclose(cr.hessian(lambda x: script_budgeted(x, W, 9))(X), h,
                               rtol=1e-11)


@cr.script
def script_while_budgeted(x, w, n):
    k = 0
    while BUDGET3.test(k < n):
        x = cnp.tanh(x @ w) * 1.1
        k = k + 1
    return cnp.sum(x * x)


@cr.script
def script_while_stored(x, w, n):
    k = 0
    while k < n:
        x = cnp.tanh(x @ w) * 1.1
        k = k + 1
    return cnp.sum(x * x)


def test_script_while_loop_under_a_budget():
    """``while budget.test(c):`` in @script: the plain test in Python; compiled, a while
    loop checkpointed under the budget, scheduled online as ``while_loop`` (its trip count
    is known at its end)."""
    assert script_while_budgeted.python(X, W, 5) == pytest.approx(
        script_while_stored.python(X, W, 5))
    text = str(cr.trace(lambda x: script_while_budgeted(x, W, 17), X))
    assert "loop_checkpoint(x, -1, snapshots=3)" in text, text
    for n in (0, 1, 17):
        np.testing.assert_allclose(cr.grad(script_while_budgeted)(X, W, n),
                                   cr.grad(script_while_stored)(X, W, n), rtol=1e-13, atol=1e-15)
    h = cr.hessian(lambda x: script_while_stored(x, W, 9))(X)
    np.testing.assert_allclose(cr.hessian(lambda x: script_while_budgeted(x, W, 9))(X), h,
                               rtol=1e-11)
    with pytest.raises(ScriptError, match="condition only"):
        cr.trace(cr.script(_two_tests), np.float64(0.5))


def _two_tests(x):
    while BUDGET3.test(x < 1.0, 2):
        x = x * 2.0
    return x


def test_scan_snapshots_hold_the_carry_only():
    """Before/After: under a budget, a scan's snapshots hold its carry (the step counter
    and h), not the output rows written so far; the rows are not written while advancing.
    Measured: the peak of the gradient is a few output buffers, not one per snapshot."""
    from chainrule.transform.reverse.gradient import gradient

    n, width = 400, 64
    rng = np.random.default_rng(1)
    w = rng.standard_normal((width, width)) / 8
    xs = rng.standard_normal(n)

    def f(x, budget):
        h, ys = cr.scan(lambda h, t: (cnp.tanh(h @ w) + 0.1 * t, h * 2.0), x, xs,
                        checkpoint=budget)
        return cnp.sum(ys ** 2) + cnp.sum(h)

    x0 = rng.standard_normal(width)
    text = str(gradient(cr.trace(lambda x: f(x, cr.Budget(snapshots=10)), x0)))
    assert f"stack_empty(elem=tuple[i64, f64[{width}]])" in text, text
    assert f"f64[{n}, {width}]]" not in text
    g = cr.grad(lambda x: f(x, cr.Budget(snapshots=10)), eager_compile=True)
    np.testing.assert_allclose(g(x0), cr.grad(lambda x: f(x, None))(x0), rtol=1e-12)
    import gc
    import tracemalloc

    g(x0)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        g(x0)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 5 * n * width * 8, peak  # ten snapshots of the rows would be 10 buffers
