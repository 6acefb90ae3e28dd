"""The clean-up passes' shortcuts for large programs give the programs the plain
algorithm gives: ``optimize`` stops after a round in which simplify settled and
cse shared nothing (the next round would change nothing)."""

from __future__ import annotations

import numpy as np
import pytest
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir.nodes import Module
from chainrule.transform.cse import cse_function
from chainrule.transform.dce import dce_function
from chainrule.transform.gradient import gradient
from chainrule.transform.inline import inline
from chainrule.transform.optimize import MAX_ROUNDS, optimize
from chainrule.transform.simplify import MAX_SWEEPS, simplify_function


def rounds_until_unchanged(module: Module) -> Module:
    """optimize as the plain fixed-point loop: rounds until one changes nothing."""
    module = inline(module)
    out = {}
    for name, fn in module.functions.items():
        for _ in range(MAX_ROUNDS):
            new = dce_function(cse_function(simplify_function(fn, MAX_SWEEPS)))
            if new is fn:
                break
            fn = new
        out[name] = fn
    return Module(out, module.meta)


def gradient_program(f, args) -> Module:
    def loss(*a):
        return cnp.sum(f(*a) * np.linspace(0.5, 1.5, np.size(f(*args))).reshape(
            np.shape(f(*args))))

    m = cr.trace(loss, *args)
    main = m["main"]
    return gradient(m, "main", require_grads=list(main.params))


def chain(x, y):
    for k in range(40):
        z = x * y if k % 3 else x - 0.0 * y
        x = cnp.sin(cnp.tanh(z) + y) * 1.0
        x = cnp.negative(-x) if k % 5 == 0 else x ** 2 / 2.0
    return cnp.sum(x + cnp.exp(x) + cnp.exp(x))  # exp(x) twice: cse shares it


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_optimize_equals_the_plain_fixed_point_on_every_op(name):
    f, args = CATALOG[name]
    try:
        m = gradient_program(f, args)
    except cr.ChainruleError:
        pytest.skip("no gradient program")
    assert cr.structural_equal(optimize(m), rounds_until_unchanged(m))


def test_optimize_equals_the_plain_fixed_point_on_a_long_chain():
    x, y = np.linspace(-1, 1, 4), np.full(4, 0.5)
    m = gradient_program(lambda a, b: chain(a, b), (x, y))
    for program in (m, cr.trace(chain, x, y)):
        got = optimize(program)
        assert cr.structural_equal(got, rounds_until_unchanged(program))
        cr.verify(got)
