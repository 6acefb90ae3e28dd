"""Reverse mode, forward mode, linearize and transpose of programs with function
values: closures, calls of function values, functions passed to and returned by
module functions, recursion; without inlining first (Relay's approach: a function
value's adjoint is its environment's; partial evaluation + DCE then leave
first-order code)."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_directional

import chainrule as cr
from chainrule.backend.codegen.generate import compile_module
from chainrule.errors import ChainruleError, CompiledHigherOrderError, GradientError
from chainrule.transform import dce, gradient, jvp, linearize, optimize, transpose

NESTED_DEF = """
def cubed(x: f64[3]) -> f64[3]:
    y = power(x, 3.0)
    return y

def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    a = scaled(x)
    b = cubed(a)
    s = sum(b)
    return s
"""

# what the gradient pass writes: the closure's VJP version beside it, whose pullback
# returns the adjoint of its argument and of what it captures (w)
NESTED_DEF_ADJOINT = """
def main_adjoint(x: f64[3], w: f64[3]) -> tuple[f64, tuple[f64[3], f64[3]]]:
    def scaled_vjp(v: f64[3]) -> tuple[f64[3], Callable[[f64[3]], tuple[f64[3], tuple[f64[3]]]]]:
        y = multiply(v, w)
        def scaled_pullback(y_adjoint: f64[3]) -> tuple[f64[3], tuple[f64[3]]]:
            v_adjoint = multiply(y_adjoint, w)
            w_adjoint = multiply(y_adjoint, v)
            return (v_adjoint, (w_adjoint,))
        return (y, scaled_pullback)
    def scaled(v_1: f64[3]) -> f64[3]:
        y_1 = multiply(v_1, w)
        return y_1
    a_vjp = scaled_vjp(x)
    a_pullback = a_vjp[1]
    a = a_vjp[0]
    b_vjp = cubed_vjp(a)
    b_pullback = b_vjp[1]
    b = b_vjp[0]
    s = sum(b)
    s_adjoint = ones(shape=(), dtype=f64)
    b_adjoint = broadcast_to(s_adjoint, shape=(3,))
    b_dargs = b_pullback(b_adjoint)
    a_adjoint = b_dargs[0]
    a_dargs = a_pullback(a_adjoint)
    x_adjoint = a_dargs[0]
    lv10 = a_dargs[1]
    w_adjoint_1 = lv10[0]
    return (s, (x_adjoint, w_adjoint_1))
"""

# after partial evaluation and DCE: first-order code, no def left
NESTED_DEF_OPTIMIZED = """
def main_adjoint(x: f64[3], w: f64[3]) -> tuple[f64, tuple[f64[3], f64[3]]]:
    y = multiply(x, w)
    y_1 = power(y, 3.0)
    s = sum(y_1)
    lv9 = multiply(y, y)
    lv10 = multiply(3.0, lv9)
    v_adjoint = multiply(lv10, w)
    w_adjoint = multiply(lv10, x)
    return (s, (v_adjoint, w_adjoint))
"""

RETURNS_CLOSURE = """
def make(w: f64[3]) -> Callable[[f64[3]], f64[3]]:
    c = exp(w)
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, c)
        return y
    return scaled

def main(x: f64[3], w: f64[3]) -> f64:
    f = make(w)
    a = f(x)
    b = f(a)
    s = sum(b)
    return s
"""

RETURNS_CLOSURE_OPTIMIZED = """
def main_adjoint(x: f64[3], w: f64[3]) -> tuple[f64, tuple[f64[3], f64[3]]]:
    c = exp(w)
    y = multiply(x, c)
    y_1 = multiply(y, c)
    s = sum(y_1)
    v_adjoint = multiply(c, c)
    lv12 = add(y, y)
    w_adjoint = multiply(lv12, c)
    return (s, (v_adjoint, w_adjoint))
"""

PROGRAMS = {
    "nested def": NESTED_DEF,
    "called twice": """
def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        z = sin(y)
        return z
    a = scaled(x)
    b = scaled(a)
    s = sum(b)
    return s
""",
    "map-like": """
def apply2(f: Callable[[f64[3]], f64[3]], x: f64[3]) -> f64[3]:
    a = f(x)
    b = f(a)
    return b

def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        z = tanh(y)
        return z
    a = apply2(scaled, x)
    s = sum(a)
    return s
""",
    "returns a closure": RETURNS_CLOSURE,
    "closure of a closure": """
def main(x: f64[3], w: f64[3]) -> f64:
    def inner(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    def outer(v: f64[3]) -> f64[3]:
        a = inner(v)
        b = sin(a)
        c = multiply(b, x)
        return c
    r = outer(w)
    s = sum(r)
    return s
""",
    "closure through a branch": """
def main(x: f64[3], w: f64[3]) -> f64:
    def scaled(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    t = sum(x)
    big = greater(t, 1.0)
    if big:
        a = scaled(x)
        r = a
    else:
        b = exp(x)
        r = b
    s = sum(r)
    return s
""",
    "recursion with a function argument": """
def repeat(f: Callable[[f64[3]], f64[3]], x: f64[3], n: i64) -> f64[3]:
    stop = less_equal(n, 0)
    if stop:
        r = x
    else:
        y = f(x)
        m = subtract(n, 1)
        z = repeat(f, y, m)
        r = z
    return r

def main(x: f64[3], w: f64[3]) -> f64:
    def step(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        z = sin(y)
        return z
    a = repeat(step, x, 3)
    s = sum(a)
    return s
""",
}

RECURSIVE = {"recursion with a function argument"}
# reverse mode of a branch returns a pullback closure from each branch (the design of
# reverse/control.py): partial evaluation does not remove those
BRANCHES = RECURSIVE | {"closure through a branch"}


def _point(seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.2, 0.9, 3), rng.uniform(0.2, 0.9, 3)


def _finite_differences(module, x, w, dx, dw):
    return fd_directional(lambda *a: cr.run(module, *a), (x, w), (dx, dw))


def test_nested_def_before_after():
    g = gradient(cr.parse(NESTED_DEF), "main")
    cr.verify(g)
    assert str(cr.Module({"main_adjoint": g["main_adjoint"]})).strip() == \
        NESTED_DEF_ADJOINT.strip()
    after = dce(optimize(g), roots=["main_adjoint"])
    assert str(after).strip() == NESTED_DEF_OPTIMIZED.strip()
    assert "def " not in str(after).split("\n", 1)[1]


def test_a_returned_closure_before_after():
    g = gradient(cr.parse(RETURNS_CLOSURE), "main")
    cr.verify(g)
    text = str(g)
    # make's VJP returns the closure's VJP version; its pullback takes the closure's
    # adjoint: the adjoint of what it captured (c)
    assert ("def make_vjp(w: f64[3]) -> tuple[Callable[[f64[3]], tuple[f64[3], Callable"
            "[[f64[3]], tuple[f64[3], tuple[f64[3]]]]]], Callable[[tuple[f64[3]]], "
            "tuple[f64[3]]]]:") in text
    assert "f_dargs = f_pullback((lv12,))" in text
    after = dce(optimize(g), roots=["main_adjoint"])
    assert str(after).strip() == RETURNS_CLOSURE_OPTIMIZED.strip()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_of_function_values_matches_finite_differences(name):
    m = cr.parse(PROGRAMS[name])
    g = gradient(m, "main")
    cr.verify(g)
    assert cr.parse(str(g)) == g
    o = optimize(g)
    cr.verify(o)
    x, w = _point()
    for module in (g, o):
        value, (gx, gw) = cr.run(module, x, w, func="main_adjoint")
        compiled_value, (cx, cw) = compile_module(module, "main_adjoint")(x, w)
        np.testing.assert_allclose(value, cr.run(m, x, w))
        np.testing.assert_allclose((cx, cw), (gx, gw), rtol=1e-12)
        for k, e in enumerate(np.eye(3)):
            zero = np.zeros(3)
            np.testing.assert_allclose(gx[k], _finite_differences(m, x, w, e, zero), rtol=1e-6)
            np.testing.assert_allclose(gw[k], _finite_differences(m, x, w, zero, e), rtol=1e-6)
    body = str(dce(o, roots=["main_adjoint"]))
    if name not in BRANCHES:  # a first-order program reduces to first-order code
        assert body.count("def ") == 1, body


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jvp_and_linearize_of_function_values(name):
    m = cr.parse(PROGRAMS[name])
    x, w = _point(1)
    dx, dw = _point(2)
    fd = _finite_differences(m, x, w, dx, dw)
    jm = jvp(m, "main")
    cr.verify(jm)
    np.testing.assert_allclose(cr.run(jm, x, w, dx, dw, func="main_jvp")[1], fd, rtol=1e-6)
    if name in RECURSIVE:
        with pytest.raises(CompiledHigherOrderError, match="recursive module function"):
            linearize(m, "main")
        return
    lm = linearize(m, "main")
    cr.verify(lm)
    _, residuals = cr.run(lm, x, w, func="main_primal")
    tangent = cr.run(lm, *residuals, dx, dw, func="main_tangent")
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)


def test_transpose_of_a_linear_program_with_a_closure():
    m = cr.parse("""
def main(x: f64[3], w: f64[3]) -> f64[3]:
    def scale(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    a = scale(x)
    b = scale(a)
    return b
""")
    t = optimize(transpose(m, "main", linear=["x"]))
    assert str(cr.Module({"main_transpose": t["main_transpose"]})).strip() == """
def main_transpose(w: f64[3], cotangent: f64[3]) -> tuple[f64[3]]:
    y_ct = multiply(cotangent, w)
    x_ct = multiply(y_ct, w)
    return (x_ct,)
""".strip()
    w, ct = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 2.0])
    np.testing.assert_allclose(cr.run(t, w, ct, func="main_transpose")[0], ct * w * w)


def test_what_cannot_be_differentiated_says_what_and_where():
    curried = cr.parse("""
def main(x: f64[3]) -> f64:
    def make(v: f64[3]) -> Callable[[f64[3]], f64[3]]:
        def inner(u: f64[3]) -> f64[3]:
            y = multiply(u, v)
            return y
        return inner
    h = make(x)
    a = h(x)
    s = sum(a)
    return s
""")
    with pytest.raises(GradientError, match=r"a calls the function value h|h calls the "
                                            r"function value make"):
        gradient(curried, "main")
    chosen = cr.parse("""
def pick(w: f64[3], flag: bool) -> Callable[[f64[3]], f64[3]]:
    def a(v: f64[3]) -> f64[3]:
        y = multiply(v, w)
        return y
    def b(v: f64[3]) -> f64[3]:
        y = add(v, w)
        return y
    if flag:
        r = a
    else:
        r = b
    return r

def main(x: f64[3], w: f64[3]) -> f64:
    f = pick(w, True)
    z = f(x)
    s = sum(z)
    return s
""")
    with pytest.raises(GradientError, match="pick returns the function value r, which is "
                                            "not a local function"):
        gradient(chosen, "main")
    # function values inside tuples: tests/transform/reverse/test_closures_tuples.py
    for bad in (curried, chosen):  # the message never blames a loop or branch
        with pytest.raises(ChainruleError) as info:
            gradient(bad, "main")
        assert "derivative of a loop or branch" not in str(info.value)
