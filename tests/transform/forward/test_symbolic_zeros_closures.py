"""Symbolic zeros through calls of closures in forward mode.

A closure's tangent is its dual (``transform/forward/closures.py``), taking every float
argument's tangent. A call passing a zero tangent gets a dual of its own for that
pattern, as calls of module functions get ``g_jvp_wrt_<positions>``: no zeros array
is passed and none multiplied. It is defined next to the full dual (so every call in
the closure's scope, in loops and branches too, sees it), once per pattern; a call
with no varying argument of a closure that reads no varying value is the primal call.
Before/After texts of the jvp pass, checks that the outputs verify and re-parse, and
tangents against central differences.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import chainrule as cr
from chainrule.transform.forward.jvp import jvp

RNG = np.random.default_rng(11)


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def forward(before: str, wrt: list[int]) -> tuple[cr.Module, cr.Module, str]:
    m = cr.parse(text(before))
    out = cr.verify(jvp(m, "main", wrt=wrt))
    assert cr.structural_equal(out, cr.parse(str(out)))
    return m, out, str(out["main_jvp"]).replace("def fn(", "def main_jvp(", 1)


def check_tangent(m: cr.Module, out: cr.Module, wrt: list[int]) -> None:
    """main_jvp's tangent against central differences of main along the tangents."""
    params = m["main"].params
    args = [RNG.normal(size=p.type.shape) if p.type.dtype.is_float else np.int64(3)
            for p in params]
    dots = [RNG.normal(size=params[i].type.shape) for i in wrt]
    got = cr.run(out, *args, *dots, func="main_jvp")[1]
    eps = 1e-6
    hi, lo = list(args), list(args)
    for i, d in zip(wrt, dots):
        hi[i] = args[i] + eps * d
        lo[i] = args[i] - eps * d
    fd = (cr.run(m, *hi, func="main") - cr.run(m, *lo, func="main")) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


CALLS = """
def main(x: f64[3], y: f64[3], w: f64[3]) -> f64:
    def g(a: f64[3], b: f64[3]) -> f64[3]:
        c = multiply(a, b)
        d = multiply(c, w)
        return d
    u = g(x, y)
    v = g(y, y)
    s = add(u, v)
    r = sum(s)
    return r
"""


def test_closure_call_passes_only_the_nonzero_tangents():
    # Before: one dual g_dual(a, b, a_dot, b_dot); u's call passed zeros((3,)) for b_dot
    # and v's call two zeros arrays, each multiplied in the dual's c_dot. Now u calls the
    # dual for its pattern, and v, varying nowhere (w is constant), is the primal call.
    m, out, got = forward(CALLS, [0])
    assert got.strip() == text("""
        def main_jvp(x: f64[3], y: f64[3], w: f64[3], x_dot: f64[3]) -> tuple[f64, f64]:
            def g(a: f64[3], b: f64[3]) -> f64[3]:
                c = multiply(a, b)
                d = multiply(c, w)
                return d
            def g_dual(a_1: f64[3], b_1: f64[3], a_dot: f64[3], b_dot: f64[3]) -> tuple[f64[3], f64[3]]:
                c_1 = multiply(a_1, b_1)
                lv5 = multiply(a_dot, b_1)
                lv6 = multiply(a_1, b_dot)
                c_dot = add(lv5, lv6)
                d_1 = multiply(c_1, w)
                d_dot = multiply(c_dot, w)
                return (d_1, d_dot)
            def g_dual_wrt_0(a_2: f64[3], b_2: f64[3], a_dot_1: f64[3]) -> tuple[f64[3], f64[3]]:
                c_2 = multiply(a_2, b_2)
                c_dot_1 = multiply(a_dot_1, b_2)
                d_2 = multiply(c_2, w)
                d_dot_1 = multiply(c_dot_1, w)
                return (d_2, d_dot_1)
            u_dual = g_dual_wrt_0(x, y, x_dot)
            u = u_dual[0]
            u_dot = u_dual[1]
            v = g(y, y)
            s = add(u, v)
            r = sum(s)
            r_dot = sum(u_dot)
            return (r, r_dot)
        """).strip()  # noqa: E501 - the printed IR's own line
    check_tangent(m, out, [0])
    optimized = cr.verify(cr.transform.Pipeline.parse("optimize")(out))
    assert "zeros(" not in str(optimized) and "def g_dual(" not in str(optimized)


def test_closure_reading_a_varying_value_gets_a_dual_with_no_argument_tangent():
    m, out, got = forward(CALLS, [0, 2])
    assert "def g_dual_wrt_none(a_2: f64[3], b_2: f64[3]) -> tuple[f64[3], f64[3]]:" in got
    assert "v_dual = g_dual_wrt_none(y, y)" in got
    assert "u_dual = g_dual_wrt_0(x, y, x_dot)" in got
    assert "zeros(" not in got
    check_tangent(m, out, [0, 2])


LOOP = """
def main(x: f64[3], y: f64[3], n: i64) -> f64:
    def g(a: f64[3], b: f64[3]) -> f64[3]:
        c = multiply(a, b)
        d = sin(c)
        return d
    s, i = x, 0
    while True:
        more = less(i, n)
        if not more:
            break
        i_1 = add(i, 1)
        s_1 = g(s, y)
        t_1 = g(y, s)
        u_1 = g(s, y)
        v_1 = add(s_1, t_1)
        w_1 = add(v_1, u_1)
        s, i = w_1, i_1
    state = (s, i)
    out = state[0]
    r = sum(out)
    return r
"""


def test_closure_called_in_a_loop_gets_its_pattern_duals_once():
    m, out, got = forward(LOOP, [0])
    assert got.count("def g_dual_wrt_0(") == 1 and got.count("def g_dual_wrt_1(") == 1
    assert got.count("= g_dual_wrt_0(s, y, s_dot)") == 2
    assert "zeros(" not in got
    check_tangent(m, out, [0])


NESTED = """
def main(x: f64[3], y: f64[3]) -> f64:
    def g(a: f64[3], b: f64[3]) -> f64[3]:
        def h(p: f64[3], q: f64[3]) -> f64[3]:
            e = multiply(p, q)
            return e
        c = h(a, b)
        d = h(b, b)
        f = add(c, d)
        return f
    u = g(x, y)
    v = g(y, x)
    s = add(u, v)
    r = sum(s)
    return r
"""


@pytest.mark.parametrize("wrt", [[0], [1], [0, 1]])
def test_closures_defined_in_closures(wrt):
    m, out, got = forward(NESTED, wrt)
    if wrt == [0]:
        # in g's dual for a varying `a`, h(b, b) varies nowhere: a primal call
        assert "def h_dual_wrt_0(" in got and "= h_3(b_3, b_3)" in got
    assert "zeros(" not in got
    check_tangent(m, out, wrt)
