"""A 100,000-binding program traces, prints, parses, verifies, compares, rewrites and
runs: nothing recurses on program length, and every step stays fast."""

from __future__ import annotations

import inspect
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir import Mutator, Visitor, free_vars

N = 100_000


def chain(x):
    """N bindings: x = -exp(x*c) style, alternating ops so nothing folds away."""
    for _ in range(N // 4):
        x = cnp.multiply(x, 0.5)
        x = cnp.exp(x)
        x = cnp.negative(x)
        x = cnp.add(x, 1.0)
    return x


def reference(x):
    for _ in range(N // 4):
        x = -np.exp(x * 0.5) + 1.0
    return x


@contextmanager
def shallow_stack(extra=250):
    """Allow only `extra` frames beyond the current depth: recursion on length would fail."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + extra)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture(scope="module")
def traced():
    with shallow_stack():
        return cr.trace(chain, np.zeros(3))


def test_trace_print_parse_verify_run(traced):
    """Every stage works at 100,000 bindings (their speed is measured in
    benchmarks/transform_scaling.py, not asserted here: the machine is shared)."""
    x = np.linspace(-1, 1, 3)
    with shallow_stack():
        m = traced
        assert len(m["main"].body.bindings) == N
        text = str(m)
        assert text.count("\n") == N + 2
        m2 = cr.parse(text)
        cr.verify(m2)
        assert cr.structural_equal(m, m2)
        assert str(m2) == text
        got = cr.run(m2, x)
    np.testing.assert_allclose(got, reference(x), rtol=1e-12)


def test_ad_passes_on_long_programs(traced):
    """gradient, jvp (inside linearize) and transpose at 100,000 bindings: no recursion on
    length, every output verifies, and the reverse-mode derivative is right."""
    from chainrule.transform.forward.linearize import linearize
    from chainrule.transform.reverse.gradient import gradient
    from chainrule.transform.transpose.transpose import transpose

    x = np.linspace(-1, 1, 3)
    with shallow_stack():
        g = gradient(traced, "main", sens=True)
        cr.verify(g)
        lin = linearize(traced, "main")  # verified below, with its transpose
        tangent = lin["main_tangent"]
        t = transpose(lin, "main_tangent", linear=[tangent.params[-1].name])
        cr.verify(t)
        _, (dx,) = cr.run(g, x, np.ones(3), func="main_adjoint")
    slope, value = np.ones(3), x.copy()
    for _ in range(N // 4):  # d/dx of 1 - exp(x / 2), chained
        value = np.exp(value * 0.5)
        slope = slope * -0.5 * value
        value = 1.0 - value
    np.testing.assert_allclose(dx, slope, rtol=1e-9)


def test_visitors_and_mutator_on_long_programs(traced):
    class Count(Visitor):
        n = 0

        def visit_binding(self, binding):
            self.n += 1

    with shallow_stack():
        c = Count()
        c.visit_module(traced)
        assert c.n == N
        assert free_vars(traced["main"]) == []
        copy = Mutator(traced).run()
        cr.verify(copy)
        assert cr.structural_equal(copy, traced)


def test_long_loop_body_and_branch():
    """Long blocks nested in control flow are walked iteratively too."""
    n = 5_000
    body = "".join(f"        a{i + 1} = add(a{i}, 1.0)\n" for i in range(n))
    then = "".join(f"        b{i + 1} = multiply(b{i}, 1.0)\n" for i in range(n))
    text = (
        "def main(x: f64, c: bool) -> f64:\n"
        "    a0, k0 = x, 0\n"
        "    while True:\n"
        "        d = less(k0, 2)\n"
        "        if not d:\n"
        "            break\n"
        + body
        + "        k1 = add(k0, 1)\n"
        f"        a0, k0 = a{n}, k1\n"
        "    w = (a0, k0)\n"
        "    y = w[0]\n"
        "    if c:\n"
        "        b0 = y\n"
        + then
        + f"        r = b{n}\n"
        "    else:\n"
        "        r = y\n"
        "    return r\n"
    )
    with shallow_stack():
        m = cr.parse(text)
        cr.verify(m)
        assert str(cr.parse(str(m))) == str(m)
        assert cr.run(m, 0.0, True) == 2.0 * n
