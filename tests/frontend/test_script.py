"""@script: Python source with control flow -> IR; values equal the plain Python function."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ParseError, TypeInferenceError
from chainrule.frontend import ScriptError, script, script_from_source, trace

RNG = np.random.default_rng(0)
W3 = RNG.normal(size=(3, 3)) * 0.5
LIMIT = 5.0


def check(sf, *args):
    """Module verifies, prints and parses back; interpreter == Python == reparsed script."""
    m = sf.module(*args)
    cr.verify(m)
    text = str(m)
    assert cr.parse(text) == m, text
    want = sf.python(*args)
    got = sf(*args)
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=1e-10, err_msg=text)
    again = script_from_source(text, name=sf.name if sf.name in m.functions else None)
    np.testing.assert_allclose(np.asarray(again(*args), dtype=float),
                               np.asarray(want, dtype=float), rtol=1e-10, err_msg=text)
    return m


# -- the examples of the issue ----------------------------------------------------------
@script
def slang(a, b):
    if a > 0:
        return a + b + 2 * a * b
    else:
        return cnp.sqrt(-a)


@pytest.mark.parametrize("a,b", [(2.0, 3.0), (-4.0, 1.0)])
def test_slang_both_branches(a, b):
    check(slang, a, b)


@script
def newton_sqrt(a):
    x = a
    while cnp.abs(x * x - a) > 1e-12:
        x = x - (x * x - a) / (2 * x)
    return x


def test_newton():
    check(newton_sqrt, 2.0)
    assert abs(newton_sqrt(2.0) - np.sqrt(2.0)) < 1e-12


@script
def hundred_steps(x, W):
    for _i in range(100):
        x = x - 0.1 * cnp.tanh(x @ W)
    return x


def test_for_loop_100_steps():
    check(hundred_steps, RNG.normal(size=3), W3)


# -- break, continue, return ---------------------------------------------------------------
@script
def with_break(x):
    s = 0.0
    for _i in range(10):
        if s > 5.0:
            break
        s = s + x
    return s


@script
def with_continue(x):
    s = x * 0.0
    for i in range(10):
        if i % 2 == 0:
            continue
        s = s + x * i
    return s


@script
def early_return(x):
    i = 0
    while i < 100:
        if x[i % 4] > 2.5:
            return x[i % 4] * 10.0
        x = x + 0.5
        i = i + 1
    return cnp.sum(x)


@script
def return_in_branch(x):
    if cnp.sum(x) > 0:
        return x * 2.0
    y = x - 1.0
    return y * y


def test_break():
    check(with_break, 1.5)
    check(with_break, -1.0)


def test_continue():
    check(with_continue, np.arange(3.0))


def test_early_return():
    check(early_return, np.array([0.0, 1.0, 2.0, -5.0]))
    check(early_return, np.array([-300.0, -100.0, -200.0, -500.0]))


def test_return_in_branch():
    check(return_in_branch, np.array([1.0, 2.0]))
    check(return_in_branch, np.array([-1.0, -2.0]))


# -- nesting ------------------------------------------------------------------------------
@script
def nested_loops(x):
    total = 0.0
    for i in range(4):
        j = 0
        while j < i:
            total = total + x[i] * x[j]
            j = j + 1
    return total


@script
def loop_in_branch(x, n):
    if n > 0:
        for _k in range(n):
            x = cnp.tanh(x) + 1.0
    else:
        x = -x
    return x


def test_nested_loops():
    check(nested_loops, np.arange(1.0, 5.0))


def test_loop_in_branch():
    check(loop_in_branch, np.array([0.5, -0.5]), 3)
    check(loop_in_branch, np.array([0.5, -0.5]), -1)


# -- calls and recursion -----------------------------------------------------------------
@script
def power(x, n) -> f64:  # noqa: F821 - an annotation read by @script
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


@script
def square_plus_cube(x):
    return power(x, 2) + power(x, 3)


def test_recursive_power():
    m = check(power, 1.5, 5)
    assert "power_fn(x, " in str(m)  # a call of the module function (power is an op name)
    check(square_plus_cube, 2.0)
    assert set(square_plus_cube.module(2.0).functions) == {"square_plus_cube", "power_fn"}


@script
def is_even(n) -> bool:  # noqa: F821
    if n == 0:
        return True
    return is_odd(n - 1)


@script
def is_odd(n) -> bool:  # noqa: F821
    if n == 0:
        return False
    return is_even(n - 1)


def test_mutual_recursion():
    assert bool(is_even(6)) and not bool(is_even(7))
    cr.verify(is_even.module(3))


# -- assignments, expressions ------------------------------------------------------------
@script
def tuple_assign(a, b):
    a, b = b, a
    (c, d), e = (a * 2.0, b), a + b
    c += 1.0
    pair = (c, d)
    return pair[0] * e, pair[1] - e if e > 0 else pair[1] + e


def test_tuple_assignment():
    check(tuple_assign, 1.0, 2.0)
    check(tuple_assign, -1.0, -2.0)


@script
def expressions(x: "f32[2, 3]", idx):  # noqa: F821, UP037 - read by @script
    n = x.shape[1] - 1
    y = x.T.reshape(6)[1:5] ** 2
    z = x[0, idx] + x[:, None, n].sum() / 3.0 - y.sum(axis=0)
    s = z.sum()
    ok = (s > 0) and not (s > 100.0) or (s < -100.0)
    return np.where(ok, z, -z) + LIMIT, cnp.maximum(x @ x.T, 0.0).mean()


def test_expressions_and_globals():
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    idx = np.array([2, 0])
    m = expressions.module(x, idx)
    assert str(m).startswith("def expressions(x: f32[2, 3], idx: i64[2])")
    got = expressions(x, idx)
    want = expressions.python(x, idx)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    assert cr.parse(str(m)) == m


def test_annotations_and_cache():
    @script
    def f(x: "f32[3]") -> "f32[3]":  # noqa: F821, UP037
        return x * 2

    m1 = f.module(np.ones(3, np.float32))
    assert f.module(np.zeros(3, np.float32)) is m1
    assert "def f(x: f32[3]) -> f32[3]:" in str(m1)
    np.testing.assert_allclose(f([1, 2, 3]), [2, 4, 6])

    @script
    def g(x):
        return x + 1

    assert g.module(np.ones(2)) is not g.module(np.ones(3))
    assert g.module(np.ones(2, np.float32))["g"].params[0].type == cr.ir.TensorType((2,), "f32")


# -- golden text ----------------------------------------------------------------------------
def test_golden_if():
    @script
    def relu_ish(x: "f64"):  # noqa: F821, UP037
        if x > 0:
            y = x * 2.0
        else:
            y = -x
        return y

    assert str(relu_ish.module(1.0)) == """\
def relu_ish(x: f64) -> f64:
    lv0 = greater(x, 0.0)
    if lv0:
        y_1 = multiply(x, 2.0)
        y = y_1
    else:
        y_2 = negative(x)
        y = y_2
    return y
"""


def test_golden_while():
    @script
    def halve(x: "f64"):  # noqa: F821, UP037
        while x > 1.0:
            x = x / 2.0
        return x

    assert str(halve.module(1.0)) == """\
def halve(x: f64) -> f64:
    x_2 = x
    while True:
        lv0 = greater(x_2, 1.0)
        if not lv0:
            break
        x_3 = divide(x_2, 2.0)
        x_2 = x_3
    x_1 = x_2
    return x_1
"""


# -- inside a trace -------------------------------------------------------------------------
def test_inline_into_trace():
    def f(x):
        return newton_sqrt(cnp.sum(x * x)) + power(x[0], 3)

    x = np.array([1.5, 2.0])
    m = trace(f, x)
    cr.verify(m)
    assert set(m.functions) == {"main", "power_fn"}
    assert "while" in str(m)
    np.testing.assert_allclose(cr.run(m, x), np.sqrt(np.sum(x * x)) + x[0] ** 3)
    assert cr.parse(str(m)) == m


# -- errors -------------------------------------------------------------------------------------
def _line_of(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn.python)
    for k, line in enumerate(lines):
        if text in line:
            return first + k, line.index(text) + 1
    raise AssertionError(text)


def test_unsupported_syntax_names_line_and_column():
    @script
    def bad(x):
        y = x + 1.0
        try:
            y = y * 2.0
        except ValueError:
            pass
        return y

    with pytest.raises(ParseError) as info:
        bad.module(1.0)
    line, col = _line_of(bad, "try:")
    err = info.value
    assert isinstance(err, ScriptError)
    assert (err.line, err.col) == (line, col)
    assert "`try` is not supported in @script functions" in str(err)
    assert f"test_script.py:{line}:{col}:" in str(err)


@pytest.mark.parametrize("body,what", [
    ("    return [v for v in x]\n", "a list comprehension is not supported"),
    ("    return (lambda v: v)(x)\n", "`lambda` is not supported"),
    ("    x[0] = 1.0\n    return x\n", "assignment to an element"),
    ("    for v in x:\n        pass\n    return x\n", "iterate over range(...) only"),
    ("    return undefined_name\n", "name `undefined_name` is not defined"),
    ("    print(x)\n    return x\n", "`print` is not supported"),
    ("    return np.fft(x)\n", "np.fft"),
    ("    y = x\n", "function f does not return a value"),
])
def test_errors_from_source(body, what):
    sf = script_from_source("import numpy as np\n\ndef f(x: f64[2]):\n" + body)
    with pytest.raises(ScriptError, match=re.escape(what)) as info:
        sf.module(np.ones(2))
    assert info.value.line is not None and info.value.line >= 3


def test_one_branch_assignment_used_after():
    sf = script_from_source("""
def f(x: f64):
    if x > 0:
        y = x
    return y
""")
    with pytest.raises(ScriptError, match=r"`y` may be undefined here: it is assigned only in "
                                         r"the then branch of the `if` at line 3") as info:
        sf.module(1.0)
    assert (info.value.line, info.value.col) == (5, 12)


def test_shape_errors_are_located():
    sf = script_from_source("def f(x: f64[2], y: f64[3]):\n    z = x * 2.0\n    return z + y\n")
    with pytest.raises(TypeInferenceError, match="add") as info:
        sf.module(np.ones(2), np.ones(3))
    assert isinstance(info.value, ScriptError) and info.value.line == 3


def test_recursion_needs_annotation():
    sf = script_from_source("def f(n: i64):\n    if n == 0:\n        return 1.0\n"
                            "    return f(n - 1) * 2.0\n")
    with pytest.raises(ScriptError, match="needs its return type"):
        sf.module(3)


def test_loop_type_change_is_an_error():
    sf = script_from_source("def f(x: f32[3]):\n    y = x\n    for i in range(3):\n"
                            "        y = y.sum()\n    return y\n")
    with pytest.raises(ScriptError, match="loop variable y has type f32\\[3\\]"):
        sf.module(np.ones(3, np.float32))
