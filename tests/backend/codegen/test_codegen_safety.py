"""The code generator: names from the IR never reach the source unchecked, errors are
chainrule's, modules compile once, and 100,000 bindings compile and run (split from
test_codegen.py)."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from codegen_helpers import CHAIN, RECURSIVE, parse, rng, same

import chainrule as cr
from chainrule.backend.codegen.generate import compile_module
from chainrule.backend.codegen.identifiers import safe_identifier
from chainrule.errors import ChainruleError, CodegenError, InterpretError
from chainrule.ir import (
    Binding,
    Block,
    Builder,
    Call,
    Constant,
    Function,
    GlobalVar,
    Module,
    TensorType,
    Var,
    get_op,
)

# -- names and safety --------------------------------------------------------------------


def test_malicious_names_never_reach_the_source():
    b = Builder()
    x = b.param("x; import os", TensorType((3,), "f64"))
    y = b.call(get_op("tanh"), [x], name="y = __import__('os')")
    z = b.call(get_op("add"), [y, x], name="np")
    w = b.call(get_op("multiply"), [z, z], name="lambda")
    u = b.call(get_op("exp"), [w], name="\uff58")  # fullwidth x: NFKC-equal to x
    v = b.call(get_op("add"), [u, x], name="x")
    fn = b.finish_function(v)
    m = Module({"main(); import os #": fn})
    f = compile_module(m, "main(); import os #")
    src = f.source
    tree = ast.parse(src)
    allowed = (ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Assign, ast.AugAssign,
               ast.Delete, ast.Return, ast.Name, ast.Load, ast.Store, ast.Del, ast.Call,
               ast.Attribute, ast.BinOp, ast.Add, ast.Mult, ast.keyword)
    for node in ast.walk(tree):
        assert isinstance(node, allowed), ast.dump(node)
        if isinstance(node, ast.Name):
            assert node.id.isascii() and node.id.isidentifier()
    assert "\uff58" not in src and "lambda" not in src
    names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
    assert "np" in names  # the variable named np was renamed
    # the variable named x: bound, or the comment naming it where it takes a dead
    # operand's buffer (``u += x__import_os  # x = u``)
    assert "x" in names or "  # x = " in src
    same(f(np.arange(3.0)), cr.run(m, np.arange(3.0), func="main(); import os #"))


def test_malicious_attribute_values_go_through_the_namespace():
    class EvilInt(int):
        def __repr__(self):
            return "0]; import os; x[0"

        __str__ = __repr__

    x = Var("x", TensorType((3, 4), "f64"))
    y = Var("y", TensorType((4,), "f64"))
    key = (EvilInt(1),)
    fn = Function([x], Block([Binding(y, Call(get_op("index"), [x], {"key": key}))], y),
                  y.type)
    m = Module({"main": fn})
    f = compile_module(m)
    assert "import" not in f.source
    data = rng.standard_normal((3, 4))
    same(f(data), data[1])


def test_safe_identifier():
    assert safe_identifier("lv0") == "lv0"
    assert safe_identifier("x; import os") == "x__import_os"
    assert safe_identifier("class") == "v"
    assert safe_identifier("0abc") == "v_0abc"
    assert safe_identifier(None) == "v"
    assert safe_identifier("\uff58") == "_"


# -- errors, caching ---------------------------------------------------------------------


def test_errors():
    m = cr.parse(RECURSIVE)
    f = compile_module(m)
    with pytest.raises(InterpretError):
        f(1.0)
    with pytest.raises(CodegenError):
        compile_module(m, "nope")
    bad = Module({"main": Function([], Block([Binding(Var("y", TensorType((), "f64")),
                                                       Call(GlobalVar("gone"), []))],
                                               Constant(1.0)), TensorType((), "f64"))})
    with pytest.raises(CodegenError):
        compile_module(bad)
    assert issubclass(CodegenError, ChainruleError)


def test_data_errors_are_chainrule_errors():
    m = parse("""
        def main(x: f64[3], i: i64[2]) -> f64[2]:
            y = x[i]
            return y
    """)
    with pytest.raises(InterpretError):
        compile_module(m)(np.zeros(3), np.array([0, 7]))


def test_compiled_once_per_module():
    m = cr.parse(CHAIN)
    assert compile_module(m).compiled is compile_module(m).compiled
    assert compile_module(m, inplace=False).compiled is not compile_module(m).compiled


# -- scale -----------------------------------------------------------------------------


def test_100k_bindings_compile_and_run():
    n = 100_000
    t = TensorType((4,), "f64")
    x = Var("x", t)
    bindings, prev = [], x
    tanh, add = get_op("tanh"), get_op("add")
    one = Constant(np.float64(1e-3))
    for i in range(n):
        v = Var(f"v{i}", t)
        call = Call(tanh, [prev]) if i % 2 else Call(add, [prev, one])
        bindings.append(Binding(v, call))
        prev = v
    m = Module({"main": Function([x], Block(bindings, prev), t)})
    f = compile_module(m)
    data = np.linspace(-1, 1, 4)
    same(f(data), cr.run(m, data))
