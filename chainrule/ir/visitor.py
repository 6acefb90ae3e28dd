"""Iterative visitor and mutator base classes.

Bindings are walked in loops; recursion only follows the nesting of blocks
(if branches, loop bodies, nested functions), never the length of a program.
"""

from __future__ import annotations

from operator import is_

import numpy as np

from .builder import Builder
from .nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
    typed_var,
)
from .op import Op
from .types import TensorType, TupleType


def nested_blocks(value):
    """The blocks directly inside a binding value."""
    blocks = _NESTED.get(type(value))
    return () if blocks is None else blocks(value)


_NESTED = {
    If: lambda value: (value.then_block, value.else_block),
    While: lambda value: (value.cond, value.body),
    Function: lambda value: (value.body,),
}


def all_bindings(blocks):
    """Every binding of ``blocks`` and of the blocks nested in them (any order)."""
    todo = list(blocks)
    while todo:
        for b in todo.pop().bindings:
            yield b
            todo.extend(nested_blocks(b.value))


def atoms_of(value):
    """The atoms a value reads directly (not inside nested blocks)."""
    t = type(value)  # exact types first: this runs once or twice per binding in every pass
    if t is Call:
        callee = value.callee
        out = [callee] if type(callee) is Var else []
        for a in value.args:
            if type(a) is Tuple:
                out.extend(_flat(a))
            else:
                out.append(a)
        return out
    if t is Var or t is Constant:
        return [value]
    if t is TupleGetItem:
        return _flat(value.tuple_value)
    if t is Tuple:
        return _flat(value)
    if t is If:
        return _flat(value.cond)
    if t is While:
        out = []
        for i in value.init:
            out.extend(_flat(i))
        return out
    return []


def _flat(x):
    if isinstance(x, Tuple):
        out = []
        for f in x.fields:
            out.extend(_flat(f))
        return out
    return [x]


def vars_used(value) -> list[Var]:
    """Every variable read by a value, including inside its nested blocks."""
    t = type(value)
    if t is Call and type(value.callee) is not Var:  # the common case: no nested block
        out = []
        for a in value.args:
            ta = type(a)
            if ta is Var:
                out.append(a)
            elif ta is Tuple:
                out.extend(x for x in _flat(a) if type(x) is Var)
        return out
    out = [a for a in atoms_of(value) if type(a) is Var]
    if t is not If and t is not While and t is not Function:
        return out
    stack = list(nested_blocks(value))
    while stack:
        block = stack.pop()
        for b in block.bindings:
            out.extend(a for a in atoms_of(b.value) if type(a) is Var)
            stack.extend(nested_blocks(b.value))
        out.extend(a for a in _flat(block.result) if type(a) is Var)
    return out


def block_free_vars(blocks, bound=()) -> list[Var]:
    """Variables the blocks read but do not bind (nor find in ``bound``), in
    first-use order: a closure's captures, or what a branch or loop body reads."""
    bound = set(bound)
    stack = list(blocks)
    while stack:
        block = stack.pop()
        for b in block.bindings:
            bound.add(b.var)
            if isinstance(b.value, While):
                bound.update(b.value.loop_vars)
            if isinstance(b.value, Function):
                bound.update(b.value.params)
            stack.extend(nested_blocks(b.value))
    seen: set[Var] = set()
    out: list[Var] = []
    for block in blocks:
        for v in vars_used(Function([], block, None)):
            if v not in bound and v not in seen:
                seen.add(v)
                out.append(v)
    return out


def free_vars(fn: Function) -> list[Var]:
    """Variables a function reads but does not bind (its closure), in first-use order."""
    return block_free_vars([fn.body], fn.params)


class Visitor:
    """Calls ``visit_binding`` on every binding, nested blocks included, in order."""

    def visit_module(self, module: Module) -> None:
        for name, fn in module.functions.items():
            self.visit_function(fn, name)

    def visit_function(self, fn: Function, name: str | None = None) -> None:
        self.visit_block(fn.body)

    def visit_block(self, block: Block) -> None:
        for b in block.bindings:
            self.visit_binding(b)
            for inner in nested_blocks(b.value):
                self.visit_block(inner)

    def visit_binding(self, binding: Binding) -> None:
        pass


class Mutator:
    """Rebuilds a function binding by binding through a Builder (types re-inferred).

    Subclasses override ``rewrite(binding)``: return a new value to bind to a
    fresh copy of the variable, or an atom to replace the variable by
    (substitution), or ``None`` to drop the binding. ``self.atom(x)`` maps an
    old atom to its replacement.
    """

    # True in a subclass whose ``rewrite`` copies every call of an op as ``value`` does
    # (operands substituted): the copy then skips ``rewrite`` for them
    copies_op_calls = False

    def __init__(self, module: Module):
        self.module = module
        self.subst: dict[Var, object] = {}
        self.builder = Builder(module)

    # -- mapping atoms -------------------------------------------------------
    def atom(self, x):
        t = type(x)
        if t is Var:
            return self.subst.get(x, x)
        if t is Tuple:
            return Tuple(self.atom(f) for f in x.fields)
        return x

    def copy_var(self, v: Var) -> Var:
        nv = typed_var(v.name, v.type)
        self.subst[v] = nv
        return nv

    def value(self, v):
        """Copy of a value with atoms substituted and nested blocks rewritten."""
        if type(v) is Call:
            callee = self.atom(v.callee) if type(v.callee) is Var else v.callee
            atom = self.atom
            return v.with_args(callee, [atom(a) for a in v.args])
        if isinstance(v, TupleGetItem):
            return TupleGetItem(self.atom(v.tuple_value), v.index)
        if isinstance(v, (Var, Constant, Tuple)):
            return self.atom(v)
        if isinstance(v, If):
            return If(self.atom(v.cond), self.block(v.then_block), self.block(v.else_block))
        if isinstance(v, While):
            init = [self.atom(i) for i in v.init]
            loop_vars = [self.copy_var(lv) for lv in v.loop_vars]
            return While(loop_vars, init, self.block(v.cond), self.block(v.body))
        if isinstance(v, Function):
            params = [self.copy_var(p) for p in v.params]
            return Function(params, self.block(v.body), v.ret_type)
        raise TypeError(f"unknown value {v!r}")

    def rewrite(self, binding: Binding):
        return self.value(binding.value)

    def block(self, block: Block) -> Block:
        """Rewrite a nested block."""
        self.builder.begin_block()
        self.emit_bindings(block.bindings)
        return self.builder.end_block(self.result(block.result))

    def result(self, r):
        return self.atom(r)

    def emit_bindings(self, bindings) -> None:
        b = self.builder
        cls = type(self)
        copying = (cls.copies_op_calls or (cls.rewrite is Mutator.rewrite
                                           and cls.value is Mutator.value)
                   ) and cls.atom is Mutator.atom
        for binding in bindings:
            old = binding.value
            if copying and type(old) is Call and type(old.callee) is Op:
                self.subst[binding.var] = self.copy_op_call(binding)
                continue
            new = self.rewrite(binding)
            if new is None:
                continue
            if isinstance(new, (Var, Constant)) and not isinstance(old, (Var, Constant)):
                self.subst[binding.var] = new
                continue
            if (type(new) is Call and type(old) is Call and new.callee is old.callee
                    and type(old.callee) is Op and new.attrs is old.attrs
                    and all(type(x) is not Tuple and x.type is y.type
                            for x, y in zip(new.args, old.args))):
                # the same op on operands of the same types: the type is the old one
                var = b.emit_typed(new, binding.var.type, binding.var.name)
            else:
                var = b.emit(new, binding.var.name)
            self.subst[binding.var] = var

    def copy_op_call(self, binding: Binding, args: list | None = None) -> Var:
        """Emit a copy of ``binding``, a call of an op, with its operands substituted
        through ``subst`` (or given as ``args``, already substituted); returns the new
        variable (the caller records it in ``subst``). Its type is the old one when the
        operands keep theirs (no inference). This is ``emit_bindings``' path for an op
        call (``value()`` and ``atom()`` inlined: most bindings are op calls), public for
        passes that copy one binding at a time (the jvp pass copies each primal binding
        before its tangent, having substituted the operands for its own use)."""
        old = binding.value
        if args is None:
            get = self.subst.get
            args = [get(a, a) if type(a) is Var else self.atom(a) for a in old.args]
        call = old.with_args(old.callee, args)
        builder = self.builder
        for new, a in zip(args, old.args):
            if type(new) is Tuple or new.type is not a.type:
                return builder.emit(call, binding.var.name)
        # the operands keep their types, so does the result: Builder.emit_typed, inlined
        var = typed_var(binding.var.name or builder.fresh_name(), binding.var.type)
        builder.bindings.append(Binding(var, call))
        return var

    def function(self, fn: Function) -> Function:
        params = [self.copy_var(p) for p in fn.params]
        self.builder.begin_block()
        self.emit_bindings(fn.body.bindings)
        body = self.builder.end_block(self.result(fn.body.result))
        return Function(params, body, fn.ret_type, fn.attrs)

    def run(self) -> Module:
        funcs = {}
        for name, fn in self.module.functions.items():
            self.subst = {}
            funcs[name] = self.function(fn)
        return Module(funcs, self.module.meta)


def substitute_vars(fn: Function, sub: dict) -> Function:
    """``fn`` with variables replaced through ``sub`` (Var -> Var) wherever they are
    bound or read, parameters and loop variables included; nodes that mention
    none of them are shared, not copied. Recursion follows block nesting only.

    Passes that choose a variable's final name only after emitting it (the
    adjoint of ``x`` is known to be final when the reverse sweep reaches ``x``)
    build the renamed variables and substitute them here, instead of renaming
    a node in place.
    """
    if not sub:
        return fn
    get = sub.get

    def atom(x):
        if type(x) is Tuple:
            fields = [atom(f) for f in x.fields]
            return x if all(map(is_, fields, x.fields)) else Tuple(fields)
        return get(x, x)

    def value(v):
        t = type(v)
        if t is Call:
            args = v.args
            callee = v.callee
            for a in args:
                if a in sub or type(a) is Tuple:
                    break
            else:
                if callee not in sub:
                    return v
            return v.with_args(get(callee, callee), [atom(a) for a in args])
        if t is Var:
            return get(v, v)
        if t is TupleGetItem:
            tv = v.tuple_value
            return TupleGetItem(sub[tv], v.index) if tv in sub else v
        if t is Tuple:
            return atom(v)
        if t is If:
            return If(atom(v.cond), block(v.then_block), block(v.else_block))
        if t is While:
            return While([get(lv, lv) for lv in v.loop_vars], [atom(i) for i in v.init],
                         block(v.cond), block(v.body))
        if t is Function:
            return function(v)
        return v

    def block(blk):
        bindings = []
        changed = False
        for b in blk.bindings:
            var, val = get(b.var, b.var), value(b.value)
            if var is b.var and val is b.value:
                bindings.append(b)
            else:
                bindings.append(Binding(var, val))
                changed = True
        result = atom(blk.result)
        if not changed and result is blk.result:
            return blk
        return Block(bindings, result)

    def function(f):
        return Function([get(p, p) for p in f.params], block(f.body), f.ret_type, f.attrs)

    return function(fn)


def largest_array(module: Module) -> int:
    """The most elements of one array value of ``module`` (parameters and bindings; a
    symbolic size counts as unbounded)."""
    from ..ir.visitor import nested_blocks

    largest, types = 1, []
    for fn in module.functions.values():
        types.extend(p.type for p in fn.params)
        blocks = [fn.body]
        while blocks:
            block = blocks.pop()
            for b in block.bindings:
                types.append(b.var.type)
                blocks.extend(nested_blocks(b.value))
    while types:
        t = types.pop()
        if isinstance(t, TupleType):
            types.extend(t.fields)
        elif isinstance(t, TensorType):
            if not all(isinstance(d, int) for d in t.shape):
                return 2**62
            largest = max(largest, int(np.prod(t.shape, dtype=np.int64)))
    return largest
