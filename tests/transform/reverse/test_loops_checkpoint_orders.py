"""Budgets at every order: grad of grad, hvp, jacrev of grad and third derivatives through
loops under ``checkpoint=cr.Budget(...)`` equal storing everything and finite differences,
and reverse over reverse keeps the budget (its peak memory does not grow with the trip
count). The loops revolve emits carry the budget on (``loop_checkpoint`` marks), so the
next reverse mode checkpoints them in turn."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir.nodes import Call, While
from chainrule.ir.visitor import nested_blocks
from chainrule.testing import check_grads
from chainrule.transform.reverse.gradient import gradient

W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]])
X = np.array([0.3, -0.2, 0.5])
V = np.array([1.0, 0.5, -0.3])


def fori(n, budget, w=W):
    return lambda x: cnp.sum(cr.fori_loop(
        0, n, lambda i, h: cnp.tanh(h @ w + 0.2 * x) * 1.1, x, checkpoint=budget) ** 2)


def while_(n, budget):
    def f(x):
        def body(c):
            i, h = c
            return i + 1, cnp.sin(h @ W) * 1.2 + 0.1 * x

        return cnp.sum(cr.while_loop(lambda c: c[0] < n, body, (0, x), checkpoint=budget)[1]
                       ** 3)

    return f


def scan(n, budget):
    xs = np.linspace(-1.0, 1.0, n)

    def f(x):
        def body(h, t):
            h = cnp.tanh(h @ W + 0.1 * x) * 1.1 + 0.01 * t
            return h, cnp.sum(h * h)

        h, ys = cr.scan(body, x, xs, checkpoint=budget)
        return cnp.sum(ys ** 2) + cnp.sum(h)

    return f


LOOPS = {"fori_loop": fori, "while_loop": while_, "scan": scan}


def third(f):
    """The third derivative of f contracted with V three times, by reverse^3."""
    return cr.grad(lambda x: cr.grad(lambda x: cr.grad(f)(x) @ V)(x) @ V)(X)


@pytest.mark.parametrize("kind", sorted(LOOPS))
@pytest.mark.parametrize("snapshots", [1, 3])
def test_second_order_equals_storing_everything(kind, snapshots):
    plain, budgeted = LOOPS[kind](8, None), LOOPS[kind](8, cr.Budget(snapshots=snapshots))
    h = cr.hessian(plain)(X)
    gg = cr.grad(lambda x: cr.grad(budgeted)(x) @ V)(X)  # reverse over reverse
    np.testing.assert_allclose(gg, h @ V, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(cr.jacrev(cr.grad(budgeted))(X), h, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(cr.hvp(budgeted, (X,), (V,)), h @ V, rtol=1e-11, atol=1e-13)
    rof = cr.grad(lambda x: cr.jvp(budgeted, (x,), (V,))[1])(X)  # reverse over forward
    np.testing.assert_allclose(rof, h @ V, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("kind", sorted(LOOPS))
def test_third_order_equals_storing_everything(kind):
    plain, budgeted = LOOPS[kind](6, None), LOOPS[kind](6, cr.Budget(snapshots=2))
    np.testing.assert_allclose(third(budgeted), third(plain), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(LOOPS))
def test_finite_differences_under_a_budget(kind):
    check_grads(LOOPS[kind](6, cr.Budget(snapshots=2)), (X,), order=2, modes=("rev", "fwd"))


def test_reverse_equals_linearize_and_transpose():
    """vjp by the gradient pass and by linearize + transpose: through a budgeted loop, and
    through the gradient of a loop storing everything (the stack ops are linear). The
    gradient of a budgeted loop does not transpose yet (see docs/loops.md)."""
    for f, ct in ((fori(7, cr.Budget(snapshots=2)), 1.0), (cr.grad(fori(7, None)), V)):
        _, pullback = cr.vjp(f, X)
        _, lin = cr.linearize(f, X)
        np.testing.assert_allclose(cr.linear_transpose(lin, X)(ct)[0], pullback(ct)[0],
                                   rtol=1e-11)


def _loops(block, defs=None):
    """(name, marked) for every While in ``block``, nested ones included."""
    defs = dict(defs or {})
    out = []
    for b in block.bindings:
        defs[b.var] = b.value
        if isinstance(b.value, While):
            first = defs.get(b.value.init[0])
            out.append((b.var.name, isinstance(first, Call)
                        and getattr(first.callee, "name", "") == "loop_checkpoint"))
        for nb in nested_blocks(b.value):
            out += _loops(nb, defs)
    return out


def test_every_loop_of_a_budgeted_gradient_carries_the_budget():
    """Before/After: the first reverse mode marks the loops it emits (forward with its
    snapshots, reverse, advance), and so does the second; each stage verifies, prints as
    Python and reads back."""
    g = cr.grad(fori(5, cr.Budget(snapshots=2)))
    before = cr.trace(lambda x: g(x) @ V, X)
    text = str(before)
    assert "loop_checkpoint(" in text and "snapshots=2)" in text, text
    first = _loops(before["main"].body)
    assert len(first) == 3 and all(marked for _, marked in first), first
    after = gradient(before)
    cr.verify(after)
    assert cr.parse(str(after)) == after
    second = [x for fn in after.functions.values() for x in _loops(fn.body)]
    assert len(second) > len(first) and all(marked for _, marked in second), second


def _peak(fn) -> int:
    fn()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_reverse_over_reverse_keeps_the_budget():
    """The measured peak of grad of grad through a budgeted loop (carry 16x16 f64, 2 KiB)
    stays flat when the trip count grows 4x (every level keeps at most c snapshots of its
    loop's carry; a carry of the first reverse loop holds its snapshot stack, shared: see
    docs/loops.md for the bound), while storing everything grows with it."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 16)) / 4
    x0, v = rng.standard_normal(16), rng.standard_normal(16)

    def peak(n, budget):
        g = cr.grad(fori(n, budget, w), eager_compile=True)
        gg = cr.grad(lambda x: g(x) @ v, eager_compile=True)
        return _peak(lambda: gg(x0))

    small, large = peak(40, cr.Budget(snapshots=3)), peak(160, cr.Budget(snapshots=3))
    stored = peak(160, None)
    assert large < 1.5 * small, (small, large)
    assert large < stored / 3, (large, stored)
