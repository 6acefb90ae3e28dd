"""Golden Before/After tests of the gradient pass: the seed's examples (Relax
Gradient, shared/seeds/000) and the extensions (module calls, target_index), plus
numerical checks of the adjoint functions and the error messages."""

import numpy as np
import pytest
from finite_differences import fd_grad
from programs import with_power

import chainrule as cr
from chainrule.errors import GradientError, NoRuleError
from chainrule.transform.reverse.gradient import gradient

BEFORE = {
"irrelevant": """
def main(x: f32[5, 5], y: f32[5, 5]) -> f32:
    lv0 = add(x, y)
    lv1 = subtract(x, y)
    lv2 = sum(lv1)
    gv0 = sum(lv0)
    return gv0
""",
"tuple": """
def main(x: f32[3], y: f32[3]) -> f32:
    c = (x, y)
    d = c[0]
    e = c[1]
    f = multiply(d, e)
    g = sum(f)
    return g
""",
"getitem_partial": """
def main(x: f32[3], y: f32[3]) -> f32:
    t = (x, y)
    u = (t, x)
    a = u[0]
    b = a[1]
    s = sum(b)
    return s
""",
"const": """
def main(x: f32[3]) -> f32:
    a = add(x, f32([1.0, 2.0, 3.0]))
    b = multiply(a, f32(2.0))
    s = sum(b)
    return s
""",
"assign_multi": """
def main(x: f64[3]) -> f64:
    a = x
    b = multiply(a, x)
    c = add(b, x)
    s = sum(c)
    return s
""",
"unreached": """
def main(x: f64[3], y: f64[3]) -> f64:
    s = sum(x)
    return s
""",
"target_index": """
def main(x: f64[3]) -> tuple[f64, f64[3]]:
    s = sum(x)
    e = exp(x)
    r = (s, e)
    return r
""",
"split": """
def main(x: f64[4]) -> f64:
    parts = split(x, indices_or_sections=2)
    a = parts[1]
    s = sum(a)
    return s
""",
"calls": """
def sq(a: f64[3]) -> f64[3]:
    b = multiply(a, a)
    return b

def main(x: f64[3]) -> f64:
    y = sq(x)
    s = sum(y)
    return s
""",
}


AFTER = {
    'irrelevant': """\
def main(x: f32[5, 5], y: f32[5, 5]) -> f32:
    lv0 = add(x, y)
    lv1 = subtract(x, y)
    lv2 = sum(lv1)
    gv0 = sum(lv0)
    return gv0

def main_adjoint(x: f32[5, 5], y: f32[5, 5]) -> tuple[f32, tuple[f32[5, 5], f32[5, 5]]]:
    lv0 = add(x, y)
    lv1 = subtract(x, y)
    lv2 = sum(lv1)
    gv0 = sum(lv0)
    gv0_adjoint = ones(shape=(), dtype=f32)
    lv0_adjoint = broadcast_to(gv0_adjoint, shape=(5, 5))
    x_adjoint = lv0_adjoint
    y_adjoint = lv0_adjoint
    return (gv0, (x_adjoint, y_adjoint))
""",
    'tuple': """\
def main(x: f32[3], y: f32[3]) -> f32:
    c = (x, y)
    d = c[0]
    e = c[1]
    f = multiply(d, e)
    g = sum(f)
    return g

def main_adjoint(x: f32[3], y: f32[3]) -> tuple[f32, tuple[f32[3], f32[3]]]:
    c = (x, y)
    d = c[0]
    e = c[1]
    f = multiply(d, e)
    g = sum(f)
    g_adjoint = ones(shape=(), dtype=f32)
    f_adjoint = broadcast_to(g_adjoint, shape=(3,))
    d_adjoint = multiply(f_adjoint, e)
    e_adjoint = multiply(f_adjoint, d)
    x_adjoint = d_adjoint
    y_adjoint = e_adjoint
    return (g, (x_adjoint, y_adjoint))
""",
    'getitem_partial': """\
def main(x: f32[3], y: f32[3]) -> f32:
    t = (x, y)
    u = (t, x)
    a = u[0]
    b = a[1]
    s = sum(b)
    return s

def main_adjoint(x: f32[3], y: f32[3]) -> tuple[f32, tuple[f32[3], f32[3]]]:
    t = (x, y)
    u = (t, x)
    a = u[0]
    b = a[1]
    s = sum(b)
    s_adjoint = ones(shape=(), dtype=f32)
    b_adjoint = broadcast_to(s_adjoint, shape=(3,))
    y_adjoint = b_adjoint
    x_adjoint = zeros(shape=(3,), dtype=f32)
    return (s, (x_adjoint, y_adjoint))
""",
    'const': """\
def main(x: f32[3]) -> f32:
    a = add(x, f32([1.0, 2.0, 3.0]))
    b = multiply(a, f32(2.0))
    s = sum(b)
    return s

def main_adjoint(x: f32[3]) -> tuple[f32, tuple[f32[3]]]:
    a = add(x, f32([1.0, 2.0, 3.0]))
    b = multiply(a, f32(2.0))
    s = sum(b)
    s_adjoint = ones(shape=(), dtype=f32)
    b_adjoint = broadcast_to(s_adjoint, shape=(3,))
    a_adjoint = multiply(b_adjoint, f32(2.0))
    x_adjoint = a_adjoint
    return (s, (x_adjoint,))
""",
    'assign_multi': """\
def main(x: f64[3]) -> f64:
    a = x
    b = multiply(a, x)
    c = add(b, x)
    s = sum(c)
    return s

def main_adjoint(x: f64[3]) -> tuple[f64, tuple[f64[3]]]:
    a = x
    b = multiply(a, x)
    c = add(b, x)
    s = sum(c)
    s_adjoint = ones(shape=(), dtype=f64)
    c_adjoint = broadcast_to(s_adjoint, shape=(3,))
    b_adjoint = c_adjoint
    a_adjoint = multiply(b_adjoint, x)
    lv7 = multiply(b_adjoint, a)
    lv8 = add(c_adjoint, lv7)
    x_adjoint = add(lv8, a_adjoint)
    return (s, (x_adjoint,))
""",
    'unreached': """\
def main(x: f64[3], y: f64[3]) -> f64:
    s = sum(x)
    return s

def main_adjoint(x: f64[3], y: f64[3]) -> tuple[f64, tuple[f64[3], f64[3]]]:
    s = sum(x)
    s_adjoint = ones(shape=(), dtype=f64)
    x_adjoint = broadcast_to(s_adjoint, shape=(3,))
    y_adjoint = zeros(shape=(3,), dtype=f64)
    return (s, (x_adjoint, y_adjoint))
""",
    'target_index': """\
def main(x: f64[3]) -> tuple[f64, f64[3]]:
    s = sum(x)
    e = exp(x)
    r = (s, e)
    return r

def main_adjoint(x: f64[3]) -> tuple[tuple[f64, f64[3]], tuple[f64[3]]]:
    s = sum(x)
    e = exp(x)
    r = (s, e)
    s_adjoint = ones(shape=(), dtype=f64)
    x_adjoint = broadcast_to(s_adjoint, shape=(3,))
    return (r, (x_adjoint,))
""",
    'split': """\
def main(x: f64[4]) -> f64:
    parts = split(x, indices_or_sections=(2,))
    a = parts[1]
    s = sum(a)
    return s

def main_adjoint(x: f64[4]) -> tuple[f64, tuple[f64[4]]]:
    parts = split(x, indices_or_sections=(2,))
    a = parts[1]
    s = sum(a)
    s_adjoint = ones(shape=(), dtype=f64)
    a_adjoint = broadcast_to(s_adjoint, shape=(2,))
    lv5 = zeros(shape=(2,), dtype=f64)
    x_adjoint = concatenate(lv5, a_adjoint)
    return (s, (x_adjoint,))
""",
    'calls': """\
def sq(a: f64[3]) -> f64[3]:
    b = multiply(a, a)
    return b

def main(x: f64[3]) -> f64:
    y = sq(x)
    s = sum(y)
    return s

def sq_vjp(a: f64[3]) -> tuple[f64[3], Callable[[f64[3]], tuple[f64[3]]]]:
    b = multiply(a, a)
    def sq_pullback(b_adjoint: f64[3]) -> tuple[f64[3]]:
        lv1 = multiply(b_adjoint, a)
        lv2 = multiply(b_adjoint, a)
        a_adjoint = add(lv1, lv2)
        return (a_adjoint,)
    return (b, sq_pullback)

def main_adjoint(x: f64[3]) -> tuple[f64, tuple[f64[3]]]:
    y_vjp = sq_vjp(x)
    y_pullback = y_vjp[1]
    y = y_vjp[0]
    s = sum(y)
    s_adjoint = ones(shape=(), dtype=f64)
    y_adjoint = broadcast_to(s_adjoint, shape=(3,))
    y_dargs = y_pullback(y_adjoint)
    x_adjoint = y_dargs[0]
    return (s, (x_adjoint,))
""",
}

KWARGS = {"target_index": {"target_index": 0}}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_golden(name):
    before = cr.parse(BEFORE[name])
    after = gradient(before, "main", **KWARGS.get(name, {}))
    cr.verify(after)
    assert str(after) == AFTER[name]
    assert cr.parse(AFTER[name]) == after
    assert str(before) == str(cr.parse(BEFORE[name]))  # the input is not mutated


def _numeric_grad(module, args, i):
    def f(*xs):
        out = cr.run(module, *xs)
        return out[0] if isinstance(out, tuple) else out  # target_index 0

    return fd_grad(f, [np.asarray(a, np.float64) for a in args], i)


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_golden_values(name):
    text = BEFORE[name].replace("f32", "f64")
    before = cr.parse(text)
    after = gradient(before, "main", **KWARGS.get(name, {}))
    fn = before["main"]
    rng = np.random.default_rng(0)
    args = [rng.uniform(0.5, 1.5, p.type.shape) for p in fn.params]
    value, grads = cr.run(after, *args, func="main_adjoint")
    expected = cr.run(before, *args)
    if isinstance(expected, tuple):
        np.testing.assert_allclose(value[0], expected[0])
    else:
        np.testing.assert_allclose(value, expected)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, _numeric_grad(before, args, i), rtol=1e-6, atol=1e-8)


def test_multiple_uses_accumulate():
    m = cr.parse(BEFORE["assign_multi"])
    _, (g,) = cr.run(gradient(m), np.array([1.0, 2.0, 3.0]), func="main_adjoint")
    np.testing.assert_allclose(g, 2 * np.array([1.0, 2.0, 3.0]) + 1)


def test_sens_parameter_for_nonscalar_target():
    m = cr.parse("""
def main(x: f64[3]) -> f64[3]:
    y = exp(x)
    return y
""")
    adj = gradient(m, sens=True)
    assert [p.name for p in adj["main_adjoint"].params] == ["x", "cotangent"]
    x, ct = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    _, (gx,) = cr.run(adj, x, ct, func="main_adjoint")
    np.testing.assert_allclose(gx, ct * np.exp(x))


def test_intermediate_variable_gradient():
    m = cr.parse("""
def main(x: f64[3]) -> f64:
    a = exp(x)
    b = multiply(a, a)
    s = sum(b)
    return s
""")
    adj = gradient(m, require_grads=["a", "x"])
    x = np.array([0.1, 0.2, 0.3])
    _, (ga, gx) = cr.run(adj, x, func="main_adjoint")
    np.testing.assert_allclose(ga, 2 * np.exp(x))
    np.testing.assert_allclose(gx, 2 * np.exp(2 * x))


def test_recursive_module_function():
    m = cr.parse(with_power("""\
def main(x: f64) -> f64:
    y = pw(x, 3)
    return y
"""))
    adj = gradient(m)
    cr.verify(adj)
    assert "pw_vjp" in adj.functions  # the recursion differentiates through itself
    value, (g,) = cr.run(adj, 1.5, func="main_adjoint")
    assert value == pytest.approx(1.5 ** 3)
    assert g == pytest.approx(3 * 1.5 ** 2)
    assert cr.parse(str(adj)) == adj


# -- errors ---------------------------------------------------------------------------


def test_error_target_not_scalar():
    m = cr.parse("def main(x: f32[3]) -> f32[3]:\n    y = exp(x)\n    return y\n")
    with pytest.raises(GradientError, match=r"float scalar.*f32\[3\].*sens=True"):
        gradient(m)


def test_error_integer_target():
    m = cr.parse("def main(x: i64[3]) -> i64:\n    y = sum(x)\n    return y\n")
    with pytest.raises(GradientError, match="float scalar"):
        gradient(m)


def test_error_unknown_variable():
    m = cr.parse(BEFORE["unreached"])
    with pytest.raises(GradientError, match=r"no variable named 'z'.*\['x', 'y'\]"):
        gradient(m, require_grads=["z"])


def test_error_named_twice():
    m = cr.parse(BEFORE["unreached"])
    with pytest.raises(GradientError, match="x is named twice"):
        gradient(m, require_grads=["x", "x"])


def test_error_integer_input():
    m = cr.parse("""
def main(x: f64[3], n: i64[3]) -> f64:
    c = astype(n, dtype=f64)
    y = multiply(x, c)
    s = sum(y)
    return s
""")
    with pytest.raises(GradientError, match=r"n has type i64\[3\].*no gradient"):
        gradient(m, require_grads=["n"])
    adj = gradient(m)  # default: the float parameters only
    assert len(adj["main_adjoint"].ret_type.fields[1].fields) == 1


@pytest.fixture
def user_ops():
    """Register throwaway ops for a test and remove them after (the registry is global)."""
    from chainrule.ir import Op, register_op
    from chainrule.ir.op import OPS
    from chainrule.rules import VJP

    made = []

    def make(name, kernel):
        register_op(Op(name, lambda types, attrs: types[0], kernel, {}, 1))
        made.append(name)

    yield make
    for name in made:
        OPS.pop(name, None)
        VJP.pop(name, None)


def test_error_no_vjp_lists_every_op(user_ops):
    user_ops("mystery_a", lambda x: x)
    user_ops("mystery_b", lambda x: x)
    m = cr.parse("""
def main(x: f64[3]) -> f64:
    a = mystery_a(x)
    b = mystery_b(a)
    c = mystery_a(b)
    s = sum(c)
    return s
""")
    with pytest.raises(NoRuleError, match=r"mystery_a \(at a, c\).*mystery_b \(at b\)"):
        gradient(m)


def test_register_vjp_for_user_op(user_ops):
    from chainrule.rules import register_vjp

    user_ops("cube", lambda x: x ** 3)
    register_vjp("cube", lambda z, g, x: (g * 3 * x * x,))
    m = cr.parse("def main(x: f64[2]) -> f64:\n    c = cube(x)\n    s = sum(c)\n    return s\n")
    _, (g,) = cr.run(gradient(m), np.array([1.0, 2.0]), func="main_adjoint")
    np.testing.assert_allclose(g, [3.0, 12.0])
