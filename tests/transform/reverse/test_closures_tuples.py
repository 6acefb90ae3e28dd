"""Function values inside tuples: closures stored in a tuple and called later, a module
function returning ``(closure, array)``. The gradient pass forwards such tuples to the
calls (``reverse.closures.forward_function_tuples``: a tuple literal's field is the
function itself; a non-recursive module function returning such a tuple is inlined
where it is called) and differentiates each function value by itself; jvp and
linearize carry the tuples as they are. All compile (no tape), agree with finite
differences, and optimize to first-order code."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_directional

import chainrule as cr
from chainrule.backend.codegen.generate import compile_module
from chainrule.errors import ChainruleError, CompiledHigherOrderError
from chainrule.transform import dce, gradient, jvp, linearize, optimize

STORED = """
def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    def shifted(v: f64[3]) -> f64[3]:
        y = sin(v)
        z = add(y, w)
        return z
    t = (scaled, x, shifted)
    f = t[0]
    g = t[2]
    a = f(x)
    b = g(a)
    e = t[1]
    c = multiply(b, e)
    s = sum(c)
    return s
"""

STORED_ADJOINT = """\
def main_adjoint(x: f64[3], w: f64[3]) -> tuple[f64, tuple[f64[3], f64[3]]]:
    y = multiply(x, w)
    y_1 = sin(y)
    z = add(y_1, w)
    c = multiply(z, x)
    s = sum(c)
    lv9 = cos(y)
    v_adjoint = multiply(x, lv9)
    v_adjoint_1 = multiply(v_adjoint, w)
    w_adjoint = multiply(v_adjoint, x)
    x_adjoint = add(z, v_adjoint_1)
    w_adjoint_1 = add(x, w_adjoint)
    return (s, (x_adjoint, w_adjoint_1))
"""

RETURNS_PAIR = """
def make(w: f64[3]) -> tuple[Callable[[f64[3]], f64[3]], f64[3]]:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        z = tanh(y)
        return z
    u = exp(w)
    r = (scaled, u)
    return r

def main(x: f64[3], w: f64[3]) -> f64:
    p = make(w)
    f = p[0]
    u = p[1]
    a = f(x)
    b = f(a)
    c = multiply(b, u)
    s = sum(c)
    return s
"""

NESTED = """
def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    inner = (scaled, w)
    outer = (inner, x)
    i = outer[0]
    f = i[0]
    a = f(x)
    b = exp(a)
    s = sum(b)
    return s
"""

PROGRAMS = {"stored and called later": STORED, "returns (closure, array)": RETURNS_PAIR,
            "a tuple in a tuple": NESTED}


def _point(seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.2, 0.9, 3), rng.uniform(0.2, 0.9, 3)


def _fd(module, x, w, dx, dw):
    return fd_directional(lambda *a: cr.run(module, *a), (x, w), (dx, dw))


def test_stored_closures_before_after():
    after = optimize(gradient(cr.parse(STORED), "main"))
    assert str(dce(after, roots=["main_adjoint"])) == STORED_ADJOINT


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_compiles_and_matches_finite_differences(name):
    m = cr.parse(PROGRAMS[name])
    g = cr.verify(gradient(m, "main"))
    assert cr.parse(str(g)) == g
    o = cr.verify(optimize(g))
    x, w = _point(0)
    for module in (g, o):
        value, (gx, gw) = compile_module(module, "main_adjoint")(x, w)
        np.testing.assert_allclose(value, cr.run(m, x, w))
        for k, e in enumerate(np.eye(3)):
            zero = np.zeros(3)
            np.testing.assert_allclose(gx[k], _fd(m, x, w, e, zero), rtol=1e-6)
            np.testing.assert_allclose(gw[k], _fd(m, x, w, zero, e), rtol=1e-6)
    # a first-order program reduces to first-order code: no def is left
    assert str(dce(o, roots=["main_adjoint"])).count("def ") == 1


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jvp_and_linearize_match_finite_differences(name):
    m = cr.parse(PROGRAMS[name])
    x, w = _point(1)
    dx, dw = _point(2)
    fd = _fd(m, x, w, dx, dw)
    jm = cr.verify(jvp(m, "main"))
    np.testing.assert_allclose(compile_module(jm, "main_jvp")(x, w, dx, dw)[1], fd, rtol=1e-6)
    lm = cr.verify(linearize(m, "main"))
    _, residuals = cr.run(lm, x, w, func="main_primal")
    np.testing.assert_allclose(cr.run(lm, *residuals, dx, dw, func="main_tangent"), fd,
                               rtol=1e-6)


def test_vjp_module_of_a_function_returning_a_closure_in_a_tuple():
    from chainrule.transform.reverse.gradient import vjp_module

    m = cr.parse(RETURNS_PAIR)
    vm = cr.verify(optimize(vjp_module(m, "main")))
    x, w = _point(3)
    out, pullback = compile_module(vm, "main_vjp")(x, w)
    gx, gw = pullback(np.float64(2.0))
    np.testing.assert_allclose(gx, 2 * np.array([_fd(m, x, w, e, np.zeros(3)) for e in
                                                 np.eye(3)]), rtol=1e-6)


def test_programs_without_such_tuples_are_untouched():
    from chainrule.transform.reverse.closures import forward_function_tuples

    m = cr.parse("""
def main(x: f64[3]) -> f64:
    t = (x, x)
    a = t[0]
    s = sum(a)
    return s
""")
    assert forward_function_tuples(m) is m


def test_a_tuple_of_functions_chosen_by_a_branch_is_still_refused():
    m = cr.parse("""
def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    def shifted(v: f64[3]) -> f64[3]:
        y = add(v, w)
        return y
    t0 = sum(x)
    big = greater(t0, 1.0)
    if big:
        p = (scaled, x)
        r = p
    else:
        q = (shifted, x)
        r = q
    f = r[0]
    a = f(x)
    s = sum(a)
    return s
""")
    with pytest.raises(CompiledHigherOrderError, match=r"reverse mode through r: "
                                                       r"tuple\[Callable"):
        gradient(m, "main")
    with pytest.raises(ChainruleError) as info:
        gradient(m, "main")
    assert "derivative of a loop or branch" not in str(info.value)
