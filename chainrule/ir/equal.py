"""Structural equality: same structure, types, ops, attributes and constants,
with variables matched by position of definition (names are ignored)."""

from __future__ import annotations

import numpy as np

from .nodes import (
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)


class _NotEqual(Exception):
    pass


def _constants_equal(a: Constant, b: Constant) -> bool:
    if a.type != b.type:
        return False
    if a.data is b.data:
        return True
    if not a.type.dtype.is_float:
        return bool(np.array_equal(a.data, b.data))
    # floats: NaN equals NaN, but 0.0 and -0.0 differ (1/x tells them apart); complex
    # numbers part by part
    if a.type.dtype[0] == "c":
        return _constants_equal(Constant(a.data.real), Constant(b.data.real)) and (
            _constants_equal(Constant(a.data.imag), Constant(b.data.imag)))
    return bool(np.array_equal(a.data, b.data, equal_nan=True)
                and np.array_equal(np.signbit(a.data), np.signbit(b.data)))


class _Matcher:
    def __init__(self):
        self.vars: dict[Var, Var] = {}

    def define(self, a: Var, b: Var) -> None:
        if a.type != b.type:
            raise _NotEqual
        self.vars[a] = b

    def expr(self, a, b) -> None:
        if type(a) is not type(b):
            raise _NotEqual
        if isinstance(a, Var):
            if self.vars.get(a) is not b:
                raise _NotEqual
        elif isinstance(a, Constant):
            if not _constants_equal(a, b):
                raise _NotEqual
        elif isinstance(a, GlobalVar):
            if a.name != b.name:
                raise _NotEqual
        elif isinstance(a, Tuple):
            if len(a.fields) != len(b.fields):
                raise _NotEqual
            for x, y in zip(a.fields, b.fields):
                self.expr(x, y)
        elif isinstance(a, TupleGetItem):
            if a.index != b.index:
                raise _NotEqual
            self.expr(a.tuple_value, b.tuple_value)
        elif isinstance(a, Call):
            if isinstance(a.callee, (Var, GlobalVar)):
                self.expr(a.callee, b.callee)
            elif a.callee is not b.callee:
                raise _NotEqual
            if a.attrs != b.attrs or len(a.args) != len(b.args):
                raise _NotEqual
            for x, y in zip(a.args, b.args):
                self.expr(x, y)
        elif isinstance(a, If):
            self.expr(a.cond, b.cond)
            self.block(a.then_block, b.then_block)
            self.block(a.else_block, b.else_block)
        elif isinstance(a, While):
            if len(a.loop_vars) != len(b.loop_vars):
                raise _NotEqual
            for x, y in zip(a.init, b.init):
                self.expr(x, y)
            for x, y in zip(a.loop_vars, b.loop_vars):
                self.define(x, y)
            self.block(a.cond, b.cond)
            self.block(a.body, b.body)
        elif isinstance(a, Function):
            self.function(a, b)
        else:
            raise _NotEqual

    def block(self, a: Block, b: Block) -> None:
        if len(a.bindings) != len(b.bindings):
            raise _NotEqual
        for x, y in zip(a.bindings, b.bindings):
            self.expr(x.value, y.value)
            self.define(x.var, y.var)
        self.expr(a.result, b.result)

    def function(self, a: Function, b: Function) -> None:
        if len(a.params) != len(b.params) or a.ret_type != b.ret_type or a.attrs != b.attrs:
            raise _NotEqual
        for x, y in zip(a.params, b.params):
            self.define(x, y)
        self.block(a.body, b.body)


def structural_equal(a, b) -> bool:
    """True when two modules, functions or blocks have the same structure.

    >>> import chainrule as cr
    >>> text = "def f(x: f32[3]) -> f32[3]:\\n    y = exp(x)\\n    return y\\n"
    >>> structural_equal(cr.parse(text), cr.parse(text.replace("y", "z")))
    True
    """
    m = _Matcher()
    try:
        if isinstance(a, Module):
            if not isinstance(b, Module) or list(a.functions) != list(b.functions):
                return False
            for name in a.functions:
                m.function(a.functions[name], b.functions[name])
        elif isinstance(a, Function):
            m.function(a, b)
        elif isinstance(a, Block):
            m.block(a, b)
        else:
            m.expr(a, b)
    except _NotEqual:
        return False
    return True
