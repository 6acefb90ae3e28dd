"""Transposition of linear programs (seed 002's accMap).

``transpose(module, "f", linear=[...])`` adds ``f_transpose(other params...,
cotangent) -> (cotangents of the linear params)`` for an ``f`` linear in the
named parameters. Bindings that do not depend on them are coefficients,
copied first; the others are walked in reverse, each op transposed by its
VJP rule with the linear operands left undefined (a rule that needs an
undefined value means the program is not linear there: ``TransposeError``).
"""

from __future__ import annotations

import numpy as np

from ..errors import TransposeError
from ..frontend.array_methods import ArrayMethods
from ..frontend.tracer import Trace
from ..ir.builder import Builder
from ..ir.nodes import Binding, Call, Constant, Function, Module, Tuple, TupleGetItem, Var
from ..ir.op import Op, get_op
from ..ir.types import TensorType, TupleType, has_float
from ..ir.visitor import Mutator, nested_blocks, vars_used
from ..ops.common import HANDLERS
from ..rules import LINEAR, VJP
from .adjoint import Adjoints, prune


class Undefined(ArrayMethods):
    """A linear value with no primal value: what transposed rules must not touch.
    Ops applied to it give Undefined results (so a rule's other outputs still work)."""

    __slots__ = ("type", "trace")

    def __init__(self, type, trace=None):
        self.type = type
        self.trace = trace

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype.numpy

    def _cr_apply(self, op, args, attrs):
        if op.name in _LIKE and self.trace is not None and len(args) == 1:
            # only the type is needed: emit zeros/ones/full of it
            fill = {"zeros_like": ("zeros", {}), "ones_like": ("ones", {}),
                    "full_like": ("full", {"fill_value": attrs.get("fill_value")})}[op.name]
            new_attrs = {"shape": self.type.shape, "dtype": attrs.get("dtype") or self.type.dtype,
                         **fill[1]}
            return self.trace.wrap(self.trace.builder.call(get_op(fill[0]), [], new_attrs))
        types = []
        for a in args:
            if isinstance(a, Undefined):
                types.append(a.type)
            elif hasattr(a, "var"):
                types.append(a.var.type)
            else:
                arr = np.asarray(a)
                types.append(TensorType(arr.shape, arr.dtype))
        _, t = op.type_call(types, attrs)
        if isinstance(t, TupleType):
            return tuple(Undefined(f) for f in t.fields)
        return Undefined(t)


HANDLERS[Undefined] = 1000
_LIKE = ("zeros_like", "ones_like", "full_like")


def _check_linear(binding: Binding, linear_positions: list[int]) -> None:
    call = binding.value
    name = call.callee.name if isinstance(call.callee, Op) else str(call.callee)
    kind = LINEAR.get(name)
    if kind is None or (kind == "one" and len(linear_positions) > 1) or (
            isinstance(kind, tuple) and not set(linear_positions) <= set(kind)):
        raise TransposeError(
            f"transpose: {binding.var.name} = {name}(...) is not linear in its linear "
            f"operand(s) at position(s) {linear_positions}; the program is not linear")


def transpose(module: Module, func: str = "main", linear=None, name: str | None = None) -> Module:
    """Add ``<func>_transpose`` (see the module docstring); ``linear`` names the
    parameters the function is linear in (default: all float parameters)."""
    fn = module[func]
    if linear is None:
        lin_params = [p for p in fn.params if has_float(p.type)]
    else:
        names = [linear] if isinstance(linear, str) else list(linear)
        lin_params = [p for p in fn.params if p.name in names]
        if len(lin_params) != len(names):
            raise TransposeError(f"transpose: unknown parameter(s) in {names}; parameters "
                                 f"are {[p.name for p in fn.params]}")
    lin = set(lin_params)
    for b in fn.body.bindings:
        if nested_blocks(b.value):
            raise TransposeError(f"transpose: {b.var.name} holds control flow or a closure")
        if any(v in lin for v in vars_used(b.value)):
            lin.add(b.var)
    trace = Trace()
    with trace:  # rules may trace (custom rules): nest under this trace
        builder = trace.builder = Builder(module)
        builder._counter = len(fn.body.bindings)
        copy = Mutator(module)
        copy.builder = builder
        others = [copy.copy_var(p) for p in fn.params if p not in lin]
        ct = Var("cotangent", fn.ret_type)
        builder.params = others + [ct]
        copy.emit_bindings([b for b in fn.body.bindings if b.var not in lin])
        adj = Adjoints(trace)
        adj.accumulate(fn.body.result, ct, lin.__contains__)

        def view(atom):
            if isinstance(atom, Var) and atom in lin:
                return Undefined(atom.type, trace)
            if isinstance(atom, Tuple):
                return tuple(view(f) for f in atom.fields)
            return adj.wrap(copy.atom(atom))

        for binding in reversed(fn.body.bindings):
            v = binding.var
            msg = adj.msgs.pop(v, None)
            if v not in lin or msg is None:
                continue
            if isinstance(v.type, TensorType) and isinstance(msg, Var):
                msg.name = f"{v.name}_ct" if msg.name.startswith("lv") else msg.name
            value = binding.value
            if isinstance(value, Call):
                if not isinstance(value.callee, Op):
                    raise TransposeError(f"transpose: {v.name} calls a function; inline it first")
                positions = [i for i, a in enumerate(value.args) if _mentions(a, lin)]
                _check_linear(binding, positions)
                g = adj.materialize(msg, v.type)
                g = tuple(adj.wrap(f) for f in adj.split(g, v.type)) if isinstance(
                    v.type, TupleType) else adj.wrap(g)
                start = len(builder.bindings)
                partials = VJP[value.callee.name](Undefined(v.type, trace), g,
                                                  *[view(a) for a in value.args], **value.attrs)
                fitted = []
                for i in positions:
                    p = partials[i]
                    if isinstance(p, Undefined) or (isinstance(p, tuple) and any(
                            isinstance(e, Undefined) for e in p)):
                        raise TransposeError(f"transpose: {v.name} = {value.callee.name}(...) "
                                             f"is not linear in operand {i}")
                    if p is not None:
                        fitted.append((value.args[i], adj.fit(p, value.args[i].type)))
                prune(builder.bindings, start, [f for _, f in fitted])
                for arg, atom in fitted:
                    adj.accumulate(arg, atom, lin.__contains__)
            elif isinstance(value, TupleGetItem):
                parts = [None] * len(value.tuple_value.type.fields)
                parts[value.index] = msg
                adj.accumulate(value.tuple_value, tuple(parts), lin.__contains__)
            elif isinstance(value, (Tuple, Var)):
                adj.accumulate(value, msg, lin.__contains__)
            elif not isinstance(value, Constant):
                raise TransposeError(f"transpose: cannot transpose {type(value).__name__}")
        outs = [adj.materialize(adj.msgs.get(p), p.type) for p in lin_params]
        out = builder.finish_function(Tuple(outs))
    funcs = dict(module.functions)
    funcs[name or f"{func}_transpose"] = out
    return Module(funcs, module.meta)


def _mentions(atom, lin) -> bool:
    if isinstance(atom, Tuple):
        return any(_mentions(f, lin) for f in atom.fields)
    return isinstance(atom, Var) and atom in lin


__all__ = ["transpose", "Undefined", "Function"]
