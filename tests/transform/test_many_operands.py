"""Every pass stays linear in the program's size for ops with many operands (stack,
concatenate, einsum, tuples of many values): the work per operand, counted as Python
function calls (the same count on any machine, however loaded), does not grow with
the number of operands. ``grad`` of ``sum(stack([x_1 ... x_N]))`` was quadratic (the
reverse sweep scanned what a rule emitted once per completed operand)."""

from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import CompiledModule
from chainrule.ir import parse
from chainrule.transform.cleanup.optimize import optimize
from chainrule.transform.forward.jvp import jvp
from chainrule.transform.forward.linearize import linearize
from chainrule.transform.reverse.gradient import gradient
from chainrule.transform.transpose.transpose import transpose
from chainrule.transform.vmap.vmap import vmap


def _calls(fn) -> int:
    profile = cProfile.Profile()
    profile.enable()
    try:
        fn()
    finally:
        profile.disable()
    return pstats.Stats(profile).total_calls


PROGRAMS = {
    "stack": lambda *xs: cnp.sum(cnp.stack(xs)),
    "concatenate": lambda *xs: cnp.sum(cnp.concatenate(xs) ** 2),
    "einsum": lambda *xs: cnp.sum(cnp.einsum(",".join("i" * len(xs[:24])) + "->i",
                                             *xs[:24])) + cnp.sum(cnp.stack(xs)),
    "tuple": lambda *xs: cnp.sum(cnp.stack(tuple(x * 2.0 for x in xs))),
}

STAGES = {
    "gradient": lambda m, lin: gradient(m, "main"),
    "jvp": lambda m, lin: jvp(m, "main"),
    "linearize": lambda m, lin: linearize(m, "main"),
    "transpose": lambda m, lin: transpose(lin, "main_tangent", linear=[
        p.name for p in lin["main_tangent"].params if p.name.endswith("_dot")]),
    "vmap": lambda m, lin: vmap(m, "main", in_axes=(0,) * len(m["main"].params),
                                axis_size=2),
    "optimize": lambda m, lin: optimize(m),
    "print and parse": lambda m, lin: parse(str(m)),
    "codegen": lambda m, lin: CompiledModule(m),
}


@pytest.mark.parametrize("stage", sorted(STAGES))
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_work_per_operand_does_not_grow(program, stage):
    if stage == "transpose" and program == "einsum":
        pytest.skip("einsum is linear in each operand, not jointly: nothing to transpose")
    per_operand = []
    for n in (200, 800):
        xs = [np.full(2, float(i)) for i in range(n)]
        m = cr.trace(PROGRAMS[program], *xs)
        lin = linearize(m, "main") if stage == "transpose" else None
        per_operand.append(_calls(lambda m=m, lin=lin: STAGES[stage](m, lin)) / n)
    # 4x the operands: the same work per operand (quadratic would be 4x as much)
    assert per_operand[1] < 1.25 * per_operand[0], per_operand


def test_gradient_of_a_large_stack_is_right():
    n = 3000
    xs = [np.float64(i) for i in range(n)]
    grads = cr.grad(lambda *xs: cnp.sum(cnp.stack(xs) ** 2), argnums=tuple(range(n)))(*xs)
    assert np.allclose(grads, 2 * np.arange(n))
