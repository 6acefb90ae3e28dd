"""The reverse loop computes views of loop-invariant values once, before it: the ``W.T``
of a matmul's backward is not made again at every iteration (Before/After)."""

from __future__ import annotations

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.testing import check_grads
from chainrule.transform.reverse.gradient import gradient

rng = np.random.default_rng(0)
W = rng.standard_normal((4, 4)) / 2
X = rng.standard_normal((3, 4))


def loss(w, x, budget=None):
    body = lambda i, h: h - 0.1 * cnp.tanh(h @ w)  # noqa: E731
    return cnp.sum(cr.fori_loop(0, 6, body, x, checkpoint=budget) ** 2)


def _reverse_loop_lines(text: str) -> tuple[list[str], list[str]]:
    """The lines before the last top-level loop of ``main_adjoint`` and inside it."""
    lines = text.split("def main_adjoint")[1].splitlines()
    start = max(i for i, line in enumerate(lines) if line == "    while True:")
    return lines[:start], lines[start:]


def test_transpose_of_an_invariant_is_hoisted_out_of_the_reverse_loop():
    for budget in (None, cr.Budget(snapshots=2)):
        before = cr.trace(lambda w, x, budget=budget: loss(w, x, budget), W, X)
        after = gradient(before)
        cr.verify(after)
        text = str(after)
        assert cr.parse(text) == after
        outside, inside = _reverse_loop_lines(text)
        assert any("permute_dims(w, axes=(1, 0))" in line for line in outside), text
        assert not any("permute_dims(w," in line for line in inside), text
        # the transpose of a value of the iteration stays in the loop
        assert any("permute_dims(" in line for line in inside), text


def test_hoisted_gradients_are_right():
    """Also grad of grad with respect to the weight the loop body reads (it escaped its
    trace before: the loop was emitted into the outer trace, which had captured X)."""
    want = cr.grad(lambda w: loss(w, X))(W)
    unrolled = cr.grad(lambda w: cnp.sum(_unrolled(w, X) ** 2))(W)
    np.testing.assert_allclose(want, unrolled, rtol=1e-12)
    check_grads(lambda w: loss(w, X), (W,), order=2, modes=("rev", "fwd"))


def test_a_loop_that_never_runs():
    """Hoisted views run even when the loop does not: they cannot fail."""
    f = lambda w: cnp.sum(cr.fori_loop(0, 0, lambda i, h: h @ w.T, X) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(W), np.zeros_like(W))


def _unrolled(w, x):
    for _ in range(6):
        x = x - 0.1 * cnp.tanh(x @ w)
    return x


def _ode(x, s):
    """GradBench's ode: views of a captured value (``x[1:]``) and of the state
    (``s[:-1]``) read by every iteration's backward."""
    def step(_, y):
        k = cnp.concatenate([x[:1], x[1:] * y[:-1]])
        return y + 0.1 * k * cnp.tanh(y)
    return cnp.sum(cr.fori_loop(0, 5, step, s) ** 2)


def test_views_are_made_again_by_the_backward_not_stacked():
    """A residual that is a view of a value from before the loop or of another residual
    is not pushed at every iteration (a copy a step): the backward makes the view again
    from what it has."""
    x, s = rng.uniform(0, 1, 9), rng.uniform(0, 1, 9)
    program = gradient(cr.trace(_ode, x, s))
    cr.verify(program)
    text = str(program)
    assert cr.parse(text) == program
    pushed = [line.split("stack_push(")[1] for line in text.splitlines()
              if "stack_push(" in line]
    assert len(pushed) == 3, text  # y, tanh(y), 0.1 k: not x[1:], not y[:-1]
    assert not any(p.startswith(("lv2", "lv3")) for p in pushed), text
    check_grads(_ode, (x, s), order=2)
    for k in (0, 1):
        np.testing.assert_allclose(cr.grad(_ode, argnums=k)(x, s),
                                   cr.jit(cr.grad(_ode, argnums=k))(x, s), rtol=1e-13)


def test_a_view_of_a_loop_variable_that_is_not_kept_is_pushed():
    """A view is made again in the backward only from what the backward has: a loop
    variable that is not itself a residual is not (its value is the iteration's)."""
    from chainrule import ops
    from chainrule.ir.indexing import Slice
    from chainrule.ir.nodes import Binding, Block, Call, Var
    from chainrule.ir.types import TensorType
    from chainrule.transform.reverse.control import _remade_views

    y = Var("y", TensorType((6,), "f64"))
    view = Var("v", TensorType((5,), "f64"))
    out = Var("o", TensorType((5,), "f64"))
    made = [Binding(view, Call(ops.index, [y], {"key": (Slice(None, 5, None),)}))]
    backward = Block([Binding(out, Call(ops.sin, [view], {}))], out)
    _, residuals = _remade_views(backward, [view], made, {y, view})
    assert residuals == [view]  # pushed: y is not in the backward
    again, residuals = _remade_views(backward, [view, y], made, {y, view})
    assert residuals == [y] and list(again.bindings[0].value.args) == [y]  # made from y
