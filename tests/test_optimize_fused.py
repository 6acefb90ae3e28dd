"""optimize's fused simplify + cse sweep (transform/simplify_cse.py) emits the IR that
the separate passes do: the same text on the pass cases, gradients of random programs
and long chains; the cases it leaves to the separate passes are left to them."""

import textwrap

import numpy as np
import pytest
from pass_cases_dce_cse import CSE_CASES, DCE_CASES
from pass_cases_simplify import SIMPLIFY_CASES
from test_random_programs import make_program

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir.nodes import Module
from chainrule.transform.cse import cse_function
from chainrule.transform.dce import dce_function
from chainrule.transform.gradient import gradient
from chainrule.transform.optimize import MAX_ROUNDS, optimize_function
from chainrule.transform.simplify import MAX_SWEEPS, simplify_settled
from chainrule.transform.simplify_cse import simplify_and_share


def parse(text: str) -> Module:
    return cr.parse(textwrap.dedent(text))


def separate_passes(fn, max_rounds=MAX_ROUNDS):
    """optimize_function as it was before the fused sweep: the reference."""
    for _ in range(max_rounds):
        simplified, settled = simplify_settled(fn, MAX_SWEEPS)
        shared = cse_function(simplified)
        new = dce_function(shared)
        if new is fn:
            break
        fn = new
        if settled and shared is simplified:
            break
    return fn


def check_same(module: Module) -> None:
    for fn in module.functions.values():
        fused = simplify_and_share(fn)
        if fused is not None:
            simplified, settled = simplify_settled(fn, MAX_SWEEPS)
            assert settled
            shared = cse_function(simplified)
            assert str(fused[0]) == str(shared)
            assert fused[1] == (shared is not simplified)
            assert (fused[0] is fn) == (shared is fn)
        assert str(optimize_function(fn)) == str(separate_passes(fn))


CASES = [case[0] for cases in (SIMPLIFY_CASES, CSE_CASES, DCE_CASES)
         for case in cases.values()]


@pytest.mark.parametrize("text", CASES)
def test_pass_cases(text):
    check_same(parse(text))


def _gradient_of(f, *args):
    m = cr.trace(f, *args)
    g = gradient(m, "main", require_grads=list(m["main"].params))
    return Module({"main_adjoint": g["main_adjoint"]}, g.meta)


@pytest.mark.parametrize("seed", range(30))
def test_gradients_of_random_programs(seed):
    f, x, y = make_program(seed)
    check_same(cr.trace(f, x, y))
    check_same(_gradient_of(f, x, y))


def test_long_chain_gradient_is_fused():
    def chain(x, y):
        for _ in range(50):
            x = cnp.add(cnp.sin(cnp.tanh(cnp.multiply(x, y))), y)
        return cnp.sum(x)

    g = _gradient_of(chain, np.zeros(3), np.full(3, 0.5))
    assert simplify_and_share(g["main_adjoint"]) is not None
    check_same(g)


def test_duplicates_shared_and_rewritten_in_one_sweep():
    m = parse("""
        def main(x: f64[3], y: f64[3]) -> f64[3]:
            a = multiply(x, y)
            b = multiply(x, y)
            c = add(b, 0.0)
            d = negative(a)
            e = negative(c)
            f = multiply(d, 2.0)
            g = multiply(e, 2.0)
            h = subtract(f, g)
            return h
    """)
    fused, shared = simplify_and_share(m["main"])
    assert shared
    assert "b =" not in str(fused) and "e =" not in str(fused)
    check_same(m)


def test_left_to_the_separate_passes():
    # a commutative duplicate in the other order, then a rule reading operand positions
    swapped = parse("""
        def main(x: f64[3]) -> f64[3]:
            a = multiply(x, 2.0)
            b = multiply(2.0, x)
            c = negative(b)
            return c
    """)
    assert simplify_and_share(swapped["main"]) is None
    check_same(swapped)
    nested = parse("""
        def main(x: f64[3], c: bool) -> f64[3]:
            a = exp(x)
            if c:
                t = exp(x)
                r = t
            else:
                r = a
            return r
    """)
    assert simplify_and_share(nested["main"]) is None
    check_same(nested)
