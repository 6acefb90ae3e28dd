"""The clean-up passes' shortcuts for large programs give the programs the plain
algorithms give: simplify runs no sweep only to confirm that nothing changes, and
``optimize`` stops after a round in which simplify settled and cse shared nothing
(the next round would change nothing)."""

from __future__ import annotations

import numpy as np
import pytest
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir.nodes import Function, Module
from chainrule.transform.cleanup.cse import cse_function
from chainrule.transform.cleanup.dce import dce_function
from chainrule.transform.cleanup.inline import inline
from chainrule.transform.cleanup.optimize import MAX_ROUNDS, optimize
from chainrule.transform.cleanup.simplify import MAX_SWEEPS, _Simplifier, simplify_function
from chainrule.transform.reverse.gradient import gradient


def sweeps_until_unchanged(fn: Function) -> Function:
    """simplify as the plain fixed-point loop: sweeps until one changes nothing."""
    for _ in range(MAX_SWEEPS):
        s = _Simplifier()
        body = s.block(fn.body)
        if body is not fn.body:
            fn = Function(fn.params, body, fn.ret_type, fn.attrs)
        if not s.changed:
            break
    return fn


def rounds_until_unchanged(module: Module) -> Module:
    """optimize as the plain fixed-point loop: rounds until one changes nothing."""
    module = inline(module)
    out = {}
    for name, fn in module.functions.items():
        for _ in range(MAX_ROUNDS):
            new = dce_function(cse_function(sweeps_until_unchanged(fn)))
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
    fn = m["main_adjoint"]
    assert cr.structural_equal(simplify_function(fn), sweeps_until_unchanged(fn))


def test_optimize_equals_the_plain_fixed_point_on_a_long_chain():
    x, y = np.linspace(-1, 1, 4), np.full(4, 0.5)
    m = gradient_program(lambda a, b: chain(a, b), (x, y))
    for program in (m, cr.trace(chain, x, y)):
        got = optimize(program)
        assert cr.structural_equal(got, rounds_until_unchanged(program))
        cr.verify(got)
        for fn in program.functions.values():
            assert cr.structural_equal(simplify_function(fn), sweeps_until_unchanged(fn))


TEXTS = [  # rewrites that build new values: a cast, a broadcast, a negation after a cast
    """
def main(x: f64, y: f64[3]) -> f64[3]:
    z = zeros(shape=(3,), dtype=f64)
    a = add(x, z)
    b = multiply(a, 1.0)
    c = negative(b)
    d = negative(c)
    e = multiply(d, y)
    return e
""", """
def main(x: f32[3], y: f64[3]) -> f64[3]:
    m = full(shape=(3,), fill_value=-1.0, dtype=f64)
    n = multiply(x, m)
    n2 = multiply(n, m)
    b = add(n2, y)
    return b
""", """
def main(x: f64[1], y: f64[4, 3]) -> f64[4, 3]:
    o = ones(shape=(4, 3), dtype=f64)
    a = multiply(x, o)
    b = broadcast_to(a, shape=(4, 3))
    c = broadcast_to(b, shape=(4, 3))
    d = multiply(c, y)
    e = power(d, 1.0)
    f = power(e, 2.0)
    return f
"""]


@pytest.mark.parametrize("text", TEXTS)
def test_simplify_sweeps_again_only_when_a_rewrite_was_unfinished(text):
    m = cr.parse(text)
    fn = m["main"]
    assert cr.structural_equal(simplify_function(fn), sweeps_until_unchanged(fn))
    assert cr.structural_equal(optimize(m), rounds_until_unchanged(m))
