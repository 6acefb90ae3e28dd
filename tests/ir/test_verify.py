"""``verify`` accepts well-formed modules and rejects malformed ones (built by hand,
since the Builder and the parser refuse them) with messages naming the problem."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.errors import VerifyError
from chainrule.ir import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    Module,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    While,
    get_op,
)

T = TensorType((3,), "f32")
T64 = TensorType((3,), "f64")
B = TensorType((), "bool")
add, exp, less = get_op("add"), get_op("exp"), get_op("less")


def module(params, bindings, result, ret=T, **others) -> Module:
    return Module({"main": Function(params, Block(bindings, result), ret), **others})


def bool_block():
    c = Var("c", B)
    return Block([Binding(c, Call(less, [Constant(1.0), Constant(2.0)]))], c), c


def rejects(m: Module, *fragments: str) -> str:
    with pytest.raises(VerifyError) as info:
        cr.verify(m)
    msg = str(info.value)
    assert msg.startswith("in function main: "), msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_accepts_well_formed_module_and_returns_it():
    m = cr.parse(
        "def main(x: f32[3], c: bool) -> f32[3]:\n"
        "    if c:\n"
        "        a = exp(x)\n"
        "        r = a\n"
        "    else:\n"
        "        r = x\n"
        "    return r\n"
    )
    assert cr.verify(m) is m


def test_unbound_variable():
    x, y, z = Var("x", T), Var("y", T), Var("z", T)
    rejects(module([x], [Binding(y, Call(add, [x, z]))], y), "variable z", "not bound")


def test_unbound_result():
    x, z = Var("x", T), Var("z", T)
    rejects(module([x], [], z), "variable z", "not bound")


def test_use_before_definition():
    x, y, z = Var("x", T), Var("y", T), Var("z", T)
    m = module([x], [Binding(z, Call(exp, [y])), Binding(y, Call(exp, [x]))], z)
    rejects(m, "variable y", "not bound")


def test_variable_bound_twice():
    x, y = Var("x", T), Var("y", T)
    m = module([x], [Binding(y, Call(exp, [x])), Binding(y, Call(exp, [x]))], y)
    rejects(m, "variable y is bound more than once")


def test_parameter_rebound():
    x = Var("x", T)
    rejects(module([x], [Binding(x, Call(exp, [x]))], x), "variable x is bound more than once")


def test_binding_type_disagrees_with_value():
    x, y = Var("x", T), Var("y", T64)
    rejects(module([x], [Binding(y, Call(exp, [x]))], x),
            "variable y has type f64[3] but its value has type f32[3]")


def test_shape_error_inside_call():
    x, y = Var("x", T), Var("y", T)
    w = Var("w", TensorType((4,), "f32"))
    rejects(module([x, w], [Binding(y, Call(add, [x, w]))], y),
            "binding of y", "add", "f32[3], f32[4]")


def test_if_condition_not_bool_scalar():
    x, y = Var("x", T), Var("y", T)
    rejects(module([x], [Binding(y, If(x, Block([], x), Block([], x)))], y),
            "binding of y", "if condition must be a bool scalar, got f32[3]")
    cv = Var("c", TensorType((2,), "bool"))
    rejects(module([x, cv], [Binding(y, If(cv, Block([], x), Block([], x)))], y),
            "bool scalar, got bool[2]")


def test_if_branches_of_different_types():
    x, y, c = Var("x", T), Var("y", T), Var("c", B)
    m = module([x, c], [Binding(y, If(c, Block([], x), Block([], Constant(np.float32(1)))))], y)
    rejects(m, "if branches differ in type: then f32[3], else f32")


def test_while_body_yields_wrong_types():
    x, y, lv = Var("x", T), Var("y", T), Var("lv", T)
    cond, _ = bool_block()
    m = module([x], [Binding(y, While([lv], [x], cond, Block([], Constant(1.0))))], y)
    rejects(m, "while body yields f64 but the loop variables have types f32[3]")


def test_while_two_loop_vars_body_wrong():
    x, n = Var("x", T), Var("n", TensorType((), "i64"))
    a, k = Var("a", T), Var("k", TensorType((), "i64"))
    cond, _ = bool_block()
    loop = While([a, k], [x, n], cond, Block([], Tuple([k, a])))
    w = Var("w", TupleType([T, TensorType((), "i64")]))
    rejects(module([x, n], [Binding(w, loop)], x), "while body yields tuple[i64, f32[3]]",
            "f32[3], i64")


def test_while_condition_not_bool():
    x, y, lv = Var("x", T), Var("y", T), Var("lv", T)
    rejects(module([x], [Binding(y, While([lv], [x], Block([], lv), Block([], lv)))], y),
            "while condition must be a bool scalar, got f32[3]")


def test_while_initial_value_type():
    x, y, lv = Var("x", T), Var("y", T64), Var("lv", T64)
    cond, _ = bool_block()
    rejects(module([x], [Binding(y, While([lv], [x], cond, Block([], lv)))], x),
            "loop variable lv has type f64[3] but its initial value has type f32[3]")


def test_function_returns_wrong_type():
    x, y = Var("x", T), Var("y", T)
    rejects(module([x], [Binding(y, Call(exp, [x]))], y, ret=T64),
            "returns f32[3] but declares f64[3]")


def test_non_atom_call_argument():
    x, z = Var("x", T), Var("z", T)
    m = module([x], [Binding(z, Call(add, [Call(exp, [x]), x]))], z)
    rejects(m, "argument", "of add is not an atom (A-normal form)")


def test_non_atom_result():
    x = Var("x", T)
    rejects(module([x], [], Call(exp, [x])), "Call where a variable or constant is expected")


def test_call_unknown_function():
    x, y = Var("x", T), Var("y", T)
    msg = rejects(module([x], [Binding(y, Call(GlobalVar("nope"), [x]))], y),
                  "binding of y: call to unknown function 'nope'")
    assert msg.count("in function main") == 1


def test_call_module_function_with_wrong_arguments():
    x, y = Var("x", T), Var("y", T)
    rejects(module([x], [Binding(y, Call(GlobalVar("main"), [x, x]))], y),
            "function main takes 1 argument(s), got 2")
    rejects(module([x], [Binding(y, Call(GlobalVar("main"), [Constant(np.ones(3))]))], y),
            "function main: argument 0 has type f64[3], expected f32[3]")


def test_calling_a_non_function():
    x, y = Var("x", T), Var("y", T)
    rejects(module([x], [Binding(y, Call(x, [x]))], y), "x has type f32[3]; it is not a function")


def test_branch_local_variable_used_outside():
    x, y, z, c, inner = Var("x", T), Var("y", T), Var("z", T), Var("c", B), Var("inner", T)
    branch = If(c, Block([Binding(inner, Call(exp, [x]))], inner), Block([], x))
    m = module([x, c], [Binding(y, branch), Binding(z, Call(add, [inner, y]))], z)
    rejects(m, "variable inner is used but not bound in scope")


def test_loop_variable_used_after_loop():
    x, y, z, lv = Var("x", T), Var("y", T), Var("z", T), Var("lv", T)
    cond, _ = bool_block()
    m = module([x], [Binding(y, While([lv], [x], cond, Block([], lv))),
                     Binding(z, Call(add, [lv, y]))], z)
    rejects(m, "variable lv is used but not bound in scope")


def test_loop_condition_variable_used_after_loop():
    x, y, lv = Var("x", T), Var("y", T), Var("lv", T)
    cond, c = bool_block()
    z = Var("z", B)
    m = module([x], [Binding(y, While([lv], [x], cond, Block([], lv))),
                     Binding(z, Call(get_op("logical_not"), [c]))], x)
    rejects(m, "variable c is used but not bound in scope")


def test_closure_parameter_used_outside():
    x, z, p = Var("x", T), Var("z", T), Var("p", T)
    g = Var("g", FuncType([T], T))
    m = module([x], [Binding(g, Function([p], Block([], p), T)),
                     Binding(z, Call(add, [p, x]))], z)
    rejects(m, "variable p is used but not bound in scope")


def test_variable_of_another_function():
    x, y = Var("x", T), Var("y", T)
    other = Function([x], Block([Binding(y, Call(exp, [x]))], y), T)
    x2 = Var("x", T)
    m = Module({"other": other, "main": Function([x2], Block([], y), T)})
    rejects(m, "variable y is used but not bound")


def test_tuple_get_item_errors():
    x, y = Var("x", T), Var("y", T)
    rejects(module([x], [Binding(y, TupleGetItem(x, 0))], y),
            "indexing [0] into a non-tuple of type f32[3]")
    t = Var("t", TupleType([T]))
    rejects(module([x], [Binding(t, Tuple([x])), Binding(y, TupleGetItem(t, 3))], y),
            "tuple index 3 out of range for tuple[f32[3]]")


def test_attributes_not_in_canonical_form():
    x = Var("x", T)
    s = Var("s", TensorType((), "f32"))
    m = module([x], [Binding(s, Call(get_op("sum"), [x], {"axis": 0, "keepdims": False}))], x)
    rejects(m, "attributes of sum are not in canonical form")


def test_not_a_binding_value_or_target():
    x, y = Var("x", T), Var("y", T)
    rejects(module([x], [Binding(y, 5)], y), "int is not a binding value")
    rejects(module([x], [Binding("y", Call(exp, [x]))], x), "is not a binding of a variable")


def test_module_entry_not_a_function():
    with pytest.raises(VerifyError, match="module entry 'main' is not a function"):
        cr.verify(Module({"main": 3}))


def test_verify_names_the_function():
    x, y = Var("x", T), Var("y", T)
    good = Function([x], Block([Binding(y, Call(exp, [x]))], y), T)
    x2, z = Var("x", T), Var("z", T)
    bad = Function([x2], Block([], z), T)
    with pytest.raises(VerifyError, match="in function second: variable z"):
        cr.verify(Module({"first": good, "second": bad}))
