"""The text format round-trips: ``parse(str(m)) == m`` and ``str(parse(str(m))) == str(m)``
for every node kind, every constant dtype, symbolic dims, tuple and Callable types,
modules built with the Builder, and names that collide."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from programs import with_power

import chainrule as cr
from chainrule.ir import (
    ArrayIndex,
    Binding,
    Block,
    Builder,
    Call,
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    Module,
    Slice,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    While,
    get_op,
    parse_type,
)


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def roundtrip(m: Module) -> Module:
    """Check both round-trip properties and that the module verifies; return the re-parse."""
    cr.verify(m)
    printed = str(m)
    m2 = cr.parse(printed)
    assert cr.structural_equal(m2, m), printed
    assert m2 == m
    assert str(m2) == printed
    cr.verify(m2)
    return m2


def same_text(s: str) -> Module:
    """Text already in printed form parses and prints back to itself exactly."""
    s = text(s)
    m = cr.parse(s)
    assert str(m) == s
    roundtrip(m)
    return m


F32_3 = TensorType((3,), "f32")
F64 = TensorType((), "f64")
BOOL = TensorType((), "bool")


# -- op calls and attributes -------------------------------------------------------------------
def test_call_with_attributes_defaults_omitted():
    m = same_text("""
        def main(x: f32[2, 3]) -> f32[2]:
            a = sum(x, axis=(1,))
            b = sum(x, axis=(0, 1), keepdims=True)
            c = reshape(b, shape=(1,))
            d = add(a, c)
            return d
    """)
    call = m["main"].body.bindings[0].value
    assert call.attrs == {"axis": (1,), "keepdims": False}  # the default is kept in the IR
    assert "keepdims=False" not in str(m)


def test_attributes_are_normalized_when_parsed():
    m = cr.parse(text("""
        def main(x: f32[2, 3]) -> f32[2]:
            a = sum(x, axis=-1, keepdims=False)
            return a
    """))
    assert "a = sum(x, axis=(1,))" in str(m)
    roundtrip(m)


def test_dtype_and_string_attributes():
    same_text("""
        def main(x: f32[2, 3]) -> tuple[i64[2, 3], i64[3], f32[2, 3]]:
            a = astype(x, dtype=i64)
            b = arange(stop=3, dtype=i64)
            c = full_like(x, fill_value=0.5, dtype=f32)
            t = (a, b, c)
            return t
    """)


def test_index_prints_as_subscript():
    m = same_text("""
        def main(x: f32[3, 4, 5], i: i64[2]) -> f32[2, 1]:
            a = x[0, 1:3, None, i]
            b = x[::-1, :3:2]
            c = x[:, :, 0]
            d = x[i, None]
            e = x[0, 0, 0]
            f = a[:, 0]
            return f
    """)
    key = m["main"].body.bindings[0].value.attrs["key"]
    assert key == (0, Slice(1, 3, None), None, ArrayIndex(0))


def test_index_add_prints_as_at_add():
    m = same_text("""
        def main(x: f32[3, 4], i: i64[2], g: f32[2, 2]) -> f32[3, 4]:
            a = x.at[i, 1:3].add(g)
            b = a.at[0].add(1.5)
            return b
    """)
    assert m["main"].body.bindings[0].value.callee is get_op("index_add")


def test_index_with_constant_index_array():
    same_text("""
        def main(x: f64[5, 3], labels: i64[5]) -> f64[5]:
            a = x[i64([0, 1, 2, 3, 4]), labels]
            return a
    """)


# -- functions, calls, recursion, closures -----------------------------------------------------
def test_module_function_calls_and_self_recursion():
    same_text(with_power("""\
def main(x: f64) -> f64:
    y = pw(x, 5)
    z = helper(y)
    return z

def helper(a: f64) -> f64:
    b = negative(a)
    return b
"""))


def test_closure_capturing_outer_variable():
    m = same_text("""
        def main(x: f64[3], s: f64) -> f64[3]:
            def scale(v: f64[3]) -> f64[3]:
                w = multiply(v, s)
                return w
            a = scale(x)
            b = scale(a)
            return b
    """)
    fn = m["main"].body.bindings[0].value
    assert isinstance(fn, Function)
    assert isinstance(m["main"].body.bindings[0].var.type, FuncType)
    call = m["main"].body.bindings[1].value
    assert isinstance(call.callee, Var)


def test_function_values_as_arguments_and_callable_types():
    same_text("""
        def apply(f: Callable[[f64], f64], x: f64) -> f64:
            y = f(x)
            return y

        def main(x: f64) -> tuple[f64, Callable[[f64], f64]]:
            def g(z: f64) -> f64:
                w = exp(z)
                return w
            a = apply(g, x)
            t = (a, g)
            return t
    """)


def test_tuple_and_tuple_get_item():
    m = same_text("""
        def main(x: f32[3], y: f64) -> tuple[f32[3], tuple[f64, f32[3]], tuple[()]]:
            t = (x, y)
            u = t[0]
            v = t[1]
            w = (v, u)
            e = ()
            one = (u,)
            k = one[0]
            r = (k, w, e)
            return r
    """)
    assert isinstance(m["main"].body.bindings[1].value, TupleGetItem)


def test_split_tuple_result():
    same_text("""
        def main(x: f32[6]) -> f32[2]:
            t = split(x, indices_or_sections=(2, 4))
            a = t[1]
            return a
    """)


# -- control flow ------------------------------------------------------------------------------
def test_if_printed_with_branch_results():
    m = same_text("""
        def main(x: f64, c: bool) -> f64:
            if c:
                a = exp(x)
                r = a
            else:
                r = x
            y = add(r, 1.0)
            return y
    """)
    assert isinstance(m["main"].body.bindings[0].value, If)


def test_nested_if():
    same_text("""
        def main(x: f64, c: bool, d: bool) -> f64:
            if c:
                if d:
                    a = exp(x)
                    s = a
                else:
                    s = 2.0
                r = s
            else:
                r = x
            return r
    """)


def test_while_one_loop_variable():
    m = same_text("""
        def main(x: f64) -> f64:
            x1 = x
            while True:
                c = less(x1, 100.0)
                if not c:
                    break
                x2 = multiply(x1, 2.0)
                x1 = x2
            w = x1
            return w
    """)
    loop = m["main"].body.bindings[0].value
    assert isinstance(loop, While) and len(loop.loop_vars) == 1


def test_while_two_loop_variables():
    m = same_text("""
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
    """)
    loop = m["main"].body.bindings[0].value
    assert len(loop.loop_vars) == 2
    assert loop.result_type == TupleType([F64, TensorType((), "i64")])


def test_body_uses_condition_bindings_and_loop_in_branch():
    same_text("""
        def main(x: f64, flag: bool) -> f64:
            if flag:
                x0, k0 = x, 0
                while True:
                    d = less(k0, 3)
                    if not d:
                        break
                    e = exp(x0)
                    k1 = add(k0, 1)
                    x0, k0 = e, k1
                w = (x0, k0)
                v = w[0]
                r = v
            else:
                r = x
            return r
    """)


# -- constants ---------------------------------------------------------------------------------
def test_constants_of_each_dtype():
    m = same_text("""
        def main(x: f32[1, 2]) -> f32[1, 2]:
            a = 2.0
            b = f32(2.0)
            c = f16(0.5)
            d = 3
            e = i32(3)
            f = i8(-7)
            g = u8(200)
            h = True
            i = bool([True, False])
            j = u64(18446744073709551615)
            k = f32([[1.0, 2.0]])
            l = add(x, k)
            return l
    """)
    consts = {b.var.name: b.value for b in m["main"].body.bindings if isinstance(b.value, Constant)}
    assert consts["a"].data.dtype == np.float64 and consts["a"].data.shape == ()
    assert consts["b"].data.dtype == np.float32
    assert consts["d"].data.dtype == np.int64
    assert consts["g"].data.dtype == np.uint8 and consts["g"].data == 200
    assert consts["h"].data.dtype == np.bool_
    assert consts["j"].data == np.uint64(2**64 - 1)
    np.testing.assert_array_equal(consts["k"].data, np.array([[1.0, 2.0]], np.float32))


def test_constants_print_forms():
    b = Builder()
    x = b.param("x", F32_3)
    y = b.call(get_op("multiply"), [x, Constant(np.float32(2.0))])
    z = b.call(get_op("add"), [y, Constant(np.array([1, 2, 3], np.float32))])
    w = b.call(get_op("multiply"), [Constant(2.0), Constant(np.array(3, np.int64))])
    m = b.finish_module("main", Tuple([z, w]))
    s = str(m)
    assert "multiply(x, f32(2.0))" in s
    assert "add(lv0, f32([1.0, 2.0, 3.0]))" in s
    assert "multiply(2.0, 3)" in s
    roundtrip(m)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-300, 1.5e300,
                                   0.1, 1 / 3, 5e-324])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_special_float_constants_roundtrip_exactly(value, dtype):
    with np.errstate(over="ignore", under="ignore"):
        c = Constant(np.array([value, -value], dtype))
    b = Builder()
    x = b.param("x", TensorType((2,), c.type.dtype))
    m = b.finish_module("main", b.call(get_op("add"), [x, c]))
    m2 = roundtrip(m)
    got = m2["main"].body.bindings[0].value.args[1].data
    np.testing.assert_array_equal(got, c.data)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(c.data))


def test_negative_zero_is_not_zero():
    a = cr.parse("def f(x: f64) -> f64:\n    y = multiply(x, 0.0)\n    return y\n")
    b = cr.parse("def f(x: f64) -> f64:\n    y = multiply(x, -0.0)\n    return y\n")
    assert "-0.0" in str(b)
    assert not cr.structural_equal(a, b)


def test_nan_constants_are_equal():
    s = "def f(x: f64) -> f64:\n    y = add(x, nan)\n    return y\n"
    assert cr.parse(s) == cr.parse(s)


def test_empty_array_constants():
    m = same_text("""
        def main(x: f32[0, 3]) -> f32[0, 3]:
            a = add(x, f32([], shape=(0, 3)))
            b = i64([], shape=(0,))
            return a
    """)
    assert m["main"].body.bindings[1].value.data.shape == (0,)


def test_large_constants_hoisted_to_module_level():
    data = np.arange(40, dtype=np.float32).reshape(2, 20)
    b = Builder()
    x = b.param("x", TensorType((2, 20), "f32"))
    c = Constant(data)
    y = b.call(get_op("add"), [x, c])
    z = b.call(get_op("multiply"), [y, c])
    m = b.finish_module("main", z)
    s = str(m)
    assert s.startswith("c0 = f32([[0.0, 1.0,")
    assert s.count("c0 = ") == 1  # one constant object: one name
    assert "lv0 = add(x, c0)" in s and "lv1 = multiply(lv0, c0)" in s
    roundtrip(m)


def test_hoisted_constant_names_avoid_variable_names():
    big = Constant(np.arange(20, dtype=np.float32))
    b = Builder()
    x = b.param("c0", TensorType((20,), "f32"))
    y = b.call(get_op("add"), [x, big], name="c1")
    z = b.call(get_op("add"), [y, Constant(np.ones(20, np.float32))], name="c2")
    m = b.finish_module("main", z)
    s = str(m)
    m2 = roundtrip(m)
    np.testing.assert_array_equal(m2["main"].body.bindings[0].value.args[1].data, big.data)
    assert "def main(c0: f32[20])" in s


def test_large_constant_inside_a_tuple_operand_is_hoisted():
    big = ", ".join(f"{float(i)}" for i in range(20))
    m = roundtrip(cr.parse(f"""
c0 = f64([{big}])

def g(p: tuple[f64[20], tuple[f64[20], f64[20]]]) -> f64[20]:
    lv0 = p[0]
    return lv0

def main(x: f64[20]) -> f64[20]:
    lv0 = g((x, (c0, x)))
    return lv0
"""))
    assert str(m).count("c0 = f64([0.0, 1.0,") == 1 and "g((x, (c0, x)))" in str(m)

# -- types -------------------------------------------------------------------------------------
def test_ellipsis_is_expanded():
    m = cr.parse(text("""
        def main(x: f32[3, 4, 5]) -> f32[3, 4]:
            c = x[..., 0]
            return c
    """))
    assert "c = x[:, :, 0]" in str(m)
    roundtrip(m)


def test_symbolic_dims():
    m = same_text("""
        def main(x: f32[n, 3], y: f32[3]) -> f32[n, 3]:
            a = add(x, y)
            b = sum(a, axis=(1,))
            c = exp(a)
            return c
    """)
    assert m["main"].params[0].type == TensorType(("n", 3), "f32")


@pytest.mark.parametrize("t", [
    "f32", "f32[5, 5]", "i64[n]", "bool[2, m, 3]", "tuple[f64, i64[3]]", "tuple[()]",
    "tuple[tuple[f32], f16[0]]", "Callable[[f32[3], i64], tuple[f32, f32]]",
    "Callable[[], f64]", "u8[1]", "c64[2]",
])
def test_types_print_and_parse(t):
    import ast

    parsed = parse_type(ast.parse(t, mode="eval").body)
    assert repr(parsed) == t


# -- modules built with the Builder, names that collide ----------------------------------------
def test_builder_module_with_all_node_kinds():
    b = Builder()
    x = b.param("x", F64)
    c = b.param("c", BOOL)
    b.begin_block()
    e = b.call(get_op("exp"), [x])
    then_block = b.end_block(e)
    b.begin_block()
    else_block = b.end_block(x)
    r = b.emit(If(c, then_block, else_block), "r")
    lv = Var("acc", F64)
    b.begin_block()
    cond = b.call(get_op("less"), [lv, Constant(10.0)])
    cond_block = b.end_block(cond)
    b.begin_block()
    nxt = b.call(get_op("add"), [lv, Constant(1.0)])
    body_block = b.end_block(nxt)
    w = b.emit(While([lv], [r], cond_block, body_block), "w")
    t = b.emit(Tuple([w, r]))
    g = b.emit(TupleGetItem(t, 1))
    m = b.finish_module("main", g)
    s = str(m)
    assert "if c:" in s and "while True:" in s and "if not " in s
    roundtrip(m)


def test_colliding_hints():
    b = Builder()
    t = TensorType((3,), "f32")
    x = b.param("x", t)
    x2 = b.param("x", t)  # two parameters with the same hint
    v = b.call(get_op("add"), [x, x2], name="sum")  # an op name
    v = b.call(get_op("exp"), [v], name="sum")
    v = b.call(get_op("exp"), [v], name="main")  # a function name
    v = b.call(get_op("exp"), [v], name="f32")  # a dtype
    v = b.call(get_op("exp"), [v], name="x_1")  # what the renamer would pick
    v = b.call(get_op("exp"), [v], name="not an identifier")
    v = b.call(get_op("exp"), [v], name="if")  # a keyword
    v = b.call(get_op("exp"), [v], name="inf")
    v = b.call(get_op("exp"), [v], name="tuple")
    v = b.call(get_op("exp"), [v], name="helper")
    m = b.finish_module("main", v)
    b2 = Builder(m)
    y = b2.param("main", t)
    z = b2.call(GlobalVar("main"), [y, y], name="helper")
    m = b2.finish_module("helper", z)
    s = str(m)
    assert "def main(x: f32[3], x_1: f32[3])" in s
    assert "sum_1 = add(x, x_1)" in s
    assert "def helper(main_1: f32[3])" in s
    roundtrip(m)


def test_shadowing_names_in_nested_blocks_are_renamed():
    # hand-built: the same hint in both branches, in a loop and in a closure
    x = Var("x", F64)
    c = Var("c", BOOL)
    a1, a2, r = Var("a", F64), Var("a", F64), Var("a", F64)
    if_ = If(c, Block([Binding(a1, Call(get_op("exp"), [x]))], a1),
             Block([Binding(a2, Call(get_op("negative"), [x]))], a2))
    p = Var("a", F64)
    inner = Var("a", F64)
    fn = Function([p], Block([Binding(inner, Call(get_op("sin"), [p]))], inner), F64)
    f = Var("a", FuncType([F64], F64))
    out = Var("a", F64)
    body = Block([Binding(r, if_), Binding(f, fn), Binding(out, Call(f, [r]))], out)
    m = Module({"main": Function([x, c], body, F64)})
    roundtrip(m)


def test_default_names_when_hint_missing():
    b = Builder()
    x = b.param("x", F32_3)
    y = b.call(get_op("exp"), [x])
    z = b.call(get_op("exp"), [y])
    m = b.finish_module("main", z)
    assert "lv0 = exp(x)" in str(m) and "lv1 = exp(lv0)" in str(m)
    roundtrip(m)


def test_parse_then_print_keeps_function_order_and_docstrings_are_dropped():
    m = cr.parse(text('''
        def b(x: f64) -> f64:
            """doc"""
            y = exp(x)
            return y

        def a(x: f64) -> f64:
            y = b(x)
            return y
    '''))
    assert list(m.functions) == ["b", "a"]
    roundtrip(m)


def test_traced_module_roundtrips():
    import chainrule.numpy as cnp

    def f(x, y):
        h = cnp.tanh(x @ y + 1.0)
        return cnp.sum(h[0, ::2] * 2.0), h.T[None]

    m = cr.trace(f, np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    roundtrip(m)


def test_a_call_of_an_unregistered_op_is_refused_after_registered_ones():
    """The printer checks each op once per print; a copy of a registered op (same name,
    another object) would not read back as itself, wherever it stands."""
    import copy

    from chainrule.errors import ChainruleError
    from chainrule.ir import Builder, TensorType
    from chainrule.ir.op import OPS

    b = Builder()
    x = b.param("x", TensorType((3,), "f64"))
    y = b.call(OPS["sin"], [x])
    z = b.call(copy.copy(OPS["sin"]), [y])
    m = b.finish_module("main", b.call(OPS["sin"], [z]))
    with pytest.raises(ChainruleError, match="cannot print a call of Op\\(sin\\)"):
        str(m)


def test_builder_reserves_temporary_names():
    """``reserve_temps`` hands out ``lvN`` numbers that fresh names then skip (a replayed
    rule template names its temporaries itself)."""
    b = Builder(temp_start=5)
    x = b.param("x", F32_3)
    assert b.next_temp == 5
    assert b.reserve_temps(3) == 5
    assert b.next_temp == 8
    y = b.call(get_op("sin"), [x])
    assert y.name == "lv8" and b.next_temp == 9
