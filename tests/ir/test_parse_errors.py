"""``chainrule.parse`` refuses malformed text with a ``ParseError`` carrying the
line and column and naming the problem; nothing else escapes, whatever the input."""

from __future__ import annotations

import random
import re
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import with_power

import chainrule as cr
from chainrule.errors import ChainruleError, ParseError
from chainrule.ir import OPS


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def parse_error(src: str, line: int, col: int, *fragments: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        cr.parse(text(src))
    err = info.value
    assert (err.line, err.col) == (line, col), str(err)
    for f in fragments:
        assert f in err.message, err.message
    assert str(err).startswith(f"line {line}:{col}: ")
    return err


def test_parse_error_is_a_chainrule_error_and_a_syntax_error():
    assert issubclass(ParseError, ChainruleError) and issubclass(ParseError, SyntaxError)


def test_python_syntax_error():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = exp(x
            return y
    """, 2, 12, "invalid syntax", "never closed")


def test_bad_indentation():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = exp(x)
              return y
    """, 3, 6, "invalid syntax", "indent")


def test_unknown_op():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = foo(x)
            return y
    """, 2, 9, "unknown op or function 'foo'")


def test_unknown_name():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = exp(z)
            return y
    """, 2, 13, "name 'z' is not defined")


def test_unknown_name_in_return():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = exp(x)
            return w
    """, 3, 12, "name 'w' is not defined")


def test_shape_mismatch_names_op_and_shapes():
    parse_error("""
        def main(x: f32[3], z: f32[4]) -> f32[3]:
            y = add(x, z)
            return y
    """, 2, 5, "add", "f32[3], f32[4]", "do not broadcast")


def test_matmul_mismatch():
    parse_error("""
        def main(x: f32[2, 3], z: f32[4, 5]) -> f32[2, 5]:
            y = matmul(x, z)
            return y
    """, 2, 5, "matmul", "f32[2, 3]", "f32[4, 5]")


def test_name_assigned_twice():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = exp(x)
            y = exp(y)
            return y
    """, 3, 5, "'y' is assigned twice")


def test_parameter_reassigned():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            x = exp(x)
            return x
    """, 2, 5, "'x' is assigned twice")


def test_variable_named_like_an_op():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            exp = negative(x)
            return exp
    """, 2, 5, "'exp' is the name of an op")


def test_missing_return():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = exp(x)
    """, 1, 1, "function main must end with `return value`")


def test_return_not_last():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            return x
            y = exp(x)
            return y
    """, 2, 5, "return must be the last statement")


def test_missing_param_annotation():
    parse_error("""
        def main(x: f32[3], y) -> f32[3]:
            return x
    """, 1, 21, "parameter y of main needs a type")


def test_missing_return_annotation():
    parse_error("""
        def main(x: f32[3]):
            return x
    """, 1, 1, "function main needs a return type")


@pytest.mark.parametrize("annotation, col, fragment", [
    ("f33[3]", 13, "not a type: 'f33[3]'"),
    ("f32[3.5]", 17, "a dimension is an int or a name, not '3.5'"),
    ("f32[-1]", 17, "a dimension is an int or a name, not '-1'"),
    ("set[f32]", 13, "not a type"),
    ("Callable[f32, f32]", 13, "Callable[[params...], result]"),
    ("tuple[foo]", 19, "not a type: 'foo'"),
    ("3", 13, "not a type"),
])
def test_bad_types(annotation, col, fragment):
    parse_error(f"""
        def main(x: {annotation}) -> f32[3]:
            return x
    """, 1, col, fragment)


def test_declared_return_type_mismatch():
    parse_error("""
        def main(x: f32[3]) -> f64[3]:
            y = exp(x)
            return y
    """, 3, 5, "function main", "returns f32[3] but declares f64[3]")


def test_nested_expression_in_call_argument():
    parse_error("""
        def main(x: f32[3], y: f32[3], z: f32[3]) -> f32[3]:
            w = add(mul(x, y), z)
            return w
    """, 2, 13, "expected a variable or a constant, found 'mul(x, y)'",
        "one operation per line")


def test_python_operator_instead_of_op():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = x + x
            return y
    """, 2, 9, "one operation per line")


def test_if_without_else():
    parse_error("""
        def main(x: f64, c: bool) -> f64:
            if c:
                r = x
            return r
    """, 2, 5, "an if needs an else branch")


def test_if_branches_assign_different_names():
    parse_error("""
        def main(x: f64, c: bool) -> f64:
            if c:
                r = x
            else:
                s = x
            return r
    """, 5, 9, "both branches must assign the same name", "'r' and 's'")


def test_if_condition_not_bool():
    parse_error("""
        def main(x: f64) -> f64:
            if x:
                r = x
            else:
                r = x
            return r
    """, 2, 5, "if condition must be a bool scalar, got f64")


@pytest.mark.parametrize("src, line, col, fragment", [
    ("""
        def main(x: f64) -> f64:
            x1 = x
            while x1:
                x1 = x1
            w = x1
            return w
    """, 3, 5, "`while True:`"),
    ("""
        def main(x: f64) -> f64:
            x1 = x
            while True:
                y = exp(x1)
                x1 = y
            w = x1
            return w
    """, 3, 5, "no `if not cond: break`"),
    ("""
        def main(x: f64) -> f64:
            x1 = x
            while True:
                c = less(x1, 1.0)
                if not c:
                    break
                y = exp(x1)
                x1 = y
            return x1
    """, 3, 5, "a loop is followed by `name = x1`"),
    ("""
        def main(x: f64) -> f64:
            x1 = x
            while True:
                c = less(x1, 1.0)
                if not c:
                    break
                y = exp(x1)
                z = y
            w = x1
            return w
    """, 8, 9, "a loop body ends by assigning the loop variables: `x1 = ...`"),
    ("""
        def main(x: f64) -> f64:
            while True:
                c = less(x, 1.0)
                if not c:
                    break
                x1 = x
            w = x
            return w
    """, 2, 5, "a while loop must follow the assignment of its loop variables"),
    ("""
        def main(x: f64, n: i64) -> f64:
            x1, n1 = x
            while True:
                c = less(x1, 1.0)
                if not c:
                    break
                x1, n1 = x1, n1
            w = (x1, n1)
            return x
    """, 2, 5, "expected 2 initial values"),
])
def test_malformed_while(src, line, col, fragment):
    parse_error(src, line, col, fragment)


def test_unsupported_statements():
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            for i in x:
                pass
            return x
    """, 2, 5, "unsupported statement For")
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            x[0] = 1.0
            return x
    """, 2, 5, "assign to one name per line")


def test_module_level_errors():
    parse_error("""
        x = foo(1)
    """, 1, 1, "module-level assignments name constants")
    parse_error("""
        print(1)
    """, 1, 1, "unexpected Expr at module level")
    parse_error("""
        def f(x: f64) -> f64:
            return x

        def f(x: f64) -> f64:
            return x
    """, 4, 1, "function f is defined twice")
    parse_error("""
        def exp(x: f64) -> f64:
            return x
    """, 1, 1, "function name 'exp' is taken by an op")


def test_bad_attributes_and_constants():
    parse_error("""
        def main(x: f32[3]) -> f32:
            y = sum(x, axis=x)
            return y
    """, 2, 21, "an attribute must be a literal")
    parse_error("""
        def main(x: f32[3]) -> f32:
            y = sum(x, foo=1)
            return y
    """, 2, 5, "sum: unknown attribute(s) ['foo']")
    parse_error("""
        def main(x: i8[3]) -> i8[3]:
            y = add(x, i8(1000))
            return y
    """, 2, 16, "bad array constant")
    parse_error("""
        def main(x: f32[3]) -> f32[3]:
            y = permute_dims(x, axes=0)
            return y
    """, 2, 5, "permute_dims", "axes must be a tuple")
    parse_error("""
        def main(x: f32[6]) -> f32[3]:
            y = split(x, indices_or_sections=('a',))
            return y
    """, 2, 5, "split: indices must be ints")


def test_wrong_call_of_module_function():
    parse_error("""
        def g(x: f32[3]) -> f32[3]:
            return x

        def main(x: f32[3]) -> f32[3]:
            y = g(x, x)
            return y
    """, 5, 5, "function g takes 1 argument(s), got 2")


def test_non_string_input():
    with pytest.raises(ParseError, match="not bytes"):
        cr.parse(b"def main(x: f32) -> f32:\n    return x\n")


# -- fuzzing: nothing but ParseError escapes ---------------------------------------------------
VALID = [text(s) for s in [
    f"""
    c0 = f32([{", ".join(f"{float(i)}" for i in range(17))}])

    def main(x: f32[3, 4], i: i64[2]) -> f32[2, 1, 1]:
        a = x[0, 1:3, None]
        b = x[i, 1:3]
        c = x[::-1, :3:2]
        d = sum(x, axis=(1,), keepdims=True)
        e = x.at[i, 1:3].add(b)
        f = x[i, None, :2]
        g = f[:, :, 0]
        h = reshape(g, shape=(2, 1, 1))
        k = add(c0, f32(inf))
        return h
    """,
    with_power("""\
def main(x: f64) -> f64:
    y = pw(x, 5)
    return y
"""),
    """
    def main(x: f64[3], y: f64) -> tuple[f64[3], Callable[[f64[3]], f64[3]]]:
        def g(z: f64[3]) -> f64[3]:
            w = multiply(z, y)
            return w
        a = g(x)
        t = (a, g)
        u = t[0]
        s = split(u, indices_or_sections=3)
        v = concatenate(x, u, axis=0)
        return t
    """,
    """
    def main(x: f64, n: i64) -> tuple[f64, i64]:
        x1, n1 = x, n
        while True:
            c = greater(n1, 0)
            if not c:
                break
            x2 = multiply(x1, 2.0)
            n2 = subtract(n1, 1)
            x1, n1 = x2, n2
        w = (x1, n1)
        return w
    """,
    """
    def main(x: f32[n, 3], b: bool[3]) -> f32[n, 3]:
        a = where(b, x, 0.0)
        e = astype(a, dtype=f64)
        f = permute_dims(x, axes=(1, 0))
        g = squeeze(x, axis=None)
        h = expand_dims(x, axis=(0, -1))
        k = arange(start=1, stop=5, step=2)
        l = full(shape=(2, 3), fill_value=1.5, dtype=f32)
        return a
    """,
]]

TOKENS = ["x", "y", "0", "1", "-1", "None", "(", ")", "[", "]", ":", ",", "f32", "i64", "tuple",
          "Callable", "add", "sum", "axis=", "True", "...", "2.0", "if", "while", "break",
          "return", "=", "def", "*", ".at", "inf", "nan", "-", "keepdims=", "shape=", "'a'",
          "bool", "split", "concatenate", "permute_dims", "axes=", "(0,)", "1e400", "lambda",
          "**", "not", "\n", "    ", "#", "'''", "[]", "()", "n", "f32[3]", "x.at[0]"]


def mutate(rng: random.Random, src: str) -> str:
    lines = src.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        kind = rng.randrange(5)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            parts = re.split(r"(\W)", lines[i])
            j = rng.randrange(len(parts) + (kind == 3))
            if kind == 2:
                parts[j] = rng.choice(TOKENS)
            elif kind == 3:
                parts.insert(j, rng.choice(TOKENS))
            else:
                del parts[j]
            lines[i] = "".join(parts)
        if not lines:
            lines = [""]
    return "\n".join(lines)


def only_parse_errors(src: str) -> None:
    try:
        m = cr.parse(src)
    except ParseError as err:
        assert err.message
        return
    cr.verify(m)  # whatever parses is well formed
    assert str(cr.parse(str(m))) == str(m)


def test_mutation_fuzz_table():
    rng = random.Random(1234)
    for _ in range(1500):
        only_parse_errors(mutate(rng, rng.choice(VALID)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID) - 1), st.randoms(use_true_random=False))
def test_mutation_fuzz_hypothesis(which, rng):
    only_parse_errors(mutate(rng, VALID[which]))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="defmain(x:f32[3])->\n =,.0123456789exp sum add[]:\t#'\"", max_size=80))
def test_random_text(src):
    only_parse_errors(src)


ATTR_VALUES = ["None", "0", "1", "-1", "5", "2.5", "'a'", "()", "(0,)", "(0, 0)", "(1, 0)",
               "(-1,)", "((0,),)", "True", "f32", "inf", "nan", "(None,)", "('a',)", "1e300"]
ARG_LISTS = ["x", "x, x", "", "x, i", "b", "b, x, x", "s"]


BUILTIN_OPS = sorted(n for n, op in OPS.items()
                     if getattr(op.infer, "__module__", "").startswith("chainrule."))


@pytest.mark.parametrize("name", BUILTIN_OPS)
def test_every_op_with_odd_attributes_and_operands(name):
    op = OPS[name]
    calls = []
    for args in ARG_LISTS:
        calls.append(f"{name}({args})")
        for key in op.attrs:
            for v in ATTR_VALUES:
                calls.append(f"{name}({', '.join(a for a in (args, f'{key}={v}') if a)})")
    for call in calls:
        src = (f"def main(x: f32[2, 3], i: i64[2], b: bool[2, 3], s: f32) -> f32:\n"
               f"    y = {call}\n    return s\n")
        try:
            cr.parse(src)
        except ParseError as err:
            assert err.line == 2, (call, str(err))
