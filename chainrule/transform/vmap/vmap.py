"""Batching as an IR pass: ``vmap`` adds ``<func>_vmap``, the function applied to a
batch of inputs at once (JAX's ``vmap``).

``vmap(module, "f", in_axes, out_axes, axis_size)`` reads ``f`` as the program of
one lane (one example) and writes ``f_vmap``, whose parameters carry a batch
axis of ``axis_size`` lanes where ``in_axes`` says (an int per parameter, None
for a parameter shared by every lane; a nested tuple for a tuple parameter)
and whose results carry it where ``out_axes`` says.

Inside, every batched value has its batch axis in front. Each binding is
rewritten by the batching rule of its op (``chainrule.rules.batching``): most
fall out of the op's facts (elementwise ops broadcast, reductions shift their
axes); values no lane depends on are copied as they are. Control flow: a branch
on a batched predicate becomes a select of both branches (as JAX does) when
both are cheap and safe to run in every lane, a loop on a batched predicate
runs until every lane is done, each lane's carry frozen once its predicate is
false; other loops and branches batch their blocks. Function values (closures,
the pullbacks reverse mode stores) are batched in every argument and result,
stacks hold batched values, and calls of module functions call a copy batched
for the arguments' batching. Where no rule applies (an op without one, a
branch that may fail or not end in some lane) the pass emits a loop over the
lanes, each running the original code on its own slice: slower, never wrong.

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(w: f64[3], x: f64[3]) -> f64:
...     y = multiply(w, x)
...     s = sum(y)
...     return s
... ''')
>>> print(vmap(m, in_axes=(None, 0), axis_size=4))
def main(w: f64[3], x: f64[3]) -> f64:
    y = multiply(w, x)
    s = sum(y)
    return s
<BLANKLINE>
def main_vmap(w: f64[3], x: f64[4, 3]) -> f64[4]:
    y = multiply(w, x)
    s = sum(y, axis=(1,))
    return s
<BLANKLINE>
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...emit.trace import Trace, Traced
from ...errors import ArgumentError
from ...ir.builder import Builder
from ...ir.nodes import (
    Binding,
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
from ...ir.op import Op
from ...ir.types import FuncType, TensorType, TupleType
from ...ir.visitor import Mutator
from ...rules.batching import CannotBatch, batching_rule_of
from ..base import OptionsPass, register_pass
from .control import batch_if, batch_while, function_lanes, lane_loop
from .types import (
    BatchingError,
    any_batched,
    batched_type,
    effects_in,
    free_vars_of,
    full_bd,
    has_function,
    none_bd,
)


# -- the pass -----------------------------------------------------------------------------
class _Context:
    """One run of the pass: the module, the batch size, and the batched copies of the
    module functions made so far (one per batching of their arguments)."""

    def __init__(self, module: Module, size: int):
        self.module = module
        self.size = size
        self.generated: dict[str, Function] = {}
        self.types: dict[str, FuncType] = {}
        self.copies: dict[tuple, str] = {}

    def new_name(self, base: str) -> str:
        name, k = base, 1
        while name in self.module.functions or name in self.types:
            name, k = f"{base}_{k}", k + 1
        return name

    def batched_copy(self, name: str, arg_bds: tuple) -> str:
        """The module function ``name`` batched for arguments batched as ``arg_bds``,
        returning every result batched (so recursive calls know its type at once)."""
        key = (name, arg_bds)
        if key in self.copies:
            return self.copies[key]
        fn = self.module[name]
        new = self.copies[key] = self.new_name(f"{name}_vmap")
        self.types[new] = FuncType([batched_type(p.type, bd, self.size)
                                    for p, bd in zip(fn.params, arg_bds)],
                                   batched_type(fn.ret_type, full_bd(fn.ret_type), self.size))
        batcher = Batcher(self, len(fn.body.bindings))
        with batcher.trace:
            params = [batcher.builder.param(p.name, batched_type(p.type, bd, self.size))
                      for p, bd in zip(fn.params, arg_bds)]
            self.generated[new] = batcher.function(fn, params, list(arg_bds), attrs=fn.attrs)
        return new


class Batcher:
    """Batches the bindings of one function (and the blocks nested in it) into a builder.

    ``sub`` maps each variable of the lane program to its value in the batched one
    (a variable, constant or tuple of them), ``bds`` to its batching: True or False
    for an array (batched in front, or the same in every lane), a tuple for a tuple."""

    def __init__(self, ctx: _Context, temp_start: int = 0):
        self.ctx = ctx
        self.size = ctx.size
        self.module = ctx.module
        self.builder = Builder(ctx.module, ctx.types, temp_start=temp_start)
        self.trace = Trace(builder=self.builder)
        self.sub: dict = {}
        self.bds: dict = {}
        self.copier = Mutator(ctx.module)
        self.copier.builder = self.builder
        self.copier.subst = self.sub

    # -- environment ---------------------------------------------------------------
    def set(self, old: Var, atom, bd) -> None:
        self.sub[old] = atom
        self.bds[old] = bd

    def atom(self, x):
        """(batched value, batching) of an atom or tuple of atoms of the lane program."""
        if isinstance(x, Var):
            return self.sub[x], self.bds[x]
        if isinstance(x, Tuple):
            pairs = [self.atom(f) for f in x.fields]
            return Tuple([p[0] for p in pairs]), tuple(p[1] for p in pairs)
        return x, False

    def mark(self) -> tuple:
        return self.builder.mark()

    def restore(self, mark: tuple) -> None:
        """Drop what was emitted since ``mark`` (an attempt that is given up)."""
        self.builder.restore(mark)

    # -- emitting --------------------------------------------------------------------
    def call(self, op: Op, args, name=None, **attrs):
        return self.builder.call(op, list(args), attrs, name)

    def fields(self, atom, t: TupleType) -> list:
        """The field atoms of a tuple-valued atom."""
        if isinstance(atom, Tuple):
            return list(atom.fields)
        return [self.builder.emit(TupleGetItem(atom, i)) for i in range(len(t.fields))]

    def to_bd(self, atom, t, have, want):
        """``atom`` (lane type ``t``, batched as ``have``) batched as ``want``: arrays
        that no lane depends on are broadcast to every lane."""
        if have == want:
            return atom
        if isinstance(t, TensorType):
            if have:
                raise BatchingError(f"vmap: internal: cannot unbatch a value of type {t!r}")
            return self.call(ops.broadcast_to, [atom], shape=(self.size, *t.shape))
        if isinstance(t, TupleType):
            parts = self.fields(atom, t)
            return Tuple([self.to_bd(p, ft, h, w)
                          for p, ft, h, w in zip(parts, t.fields, have, want)])
        raise BatchingError(f"vmap: internal: a function value or stack of type {t!r} "
                            f"that is not batched")

    def lane(self, atom, t, bd, j):
        """Lane ``j`` (an i64 scalar) of a value batched as ``bd``."""
        if not any_batched(bd):
            return atom
        if isinstance(t, TensorType):
            return self.call(ops.index, [atom, j], key=(ops.indexing.ArrayIndex(0),))
        if isinstance(t, TupleType):
            parts = self.fields(atom, t)
            return Tuple([self.lane(p, ft, b, j) for p, ft, b in zip(parts, t.fields, bd)])
        raise CannotBatch(f"one lane of a batched function value or stack ({t!r})")

    def wrap(self, atom):
        """A value rules can apply ops to: a traced value, or a constant's array (ops on
        constants alone fold at once)."""
        if isinstance(atom, Tuple):
            return tuple(self.wrap(f) for f in atom.fields)
        if isinstance(atom, Constant):
            return atom.data
        return self.trace.wrap(atom) if isinstance(atom.type, TupleType) else Traced(
            self.trace, atom)

    def unwrap(self, value):
        if isinstance(value, tuple):
            return Tuple([self.unwrap(v) for v in value])
        if isinstance(value, Traced):
            return value.variable
        return self.trace.atom(value)  # an array a rule computed: a constant

    def copy(self, binding: Binding) -> None:
        """Copy a binding no lane depends on, as it is."""
        self.copier.emit_bindings([binding])
        self.bds[binding.var] = none_bd(binding.var.type)

    # -- bindings -----------------------------------------------------------------------
    def bindings(self, bindings) -> None:
        for binding in bindings:
            mark = self.mark()
            try:
                _HANDLERS[type(binding.value)](self, binding)
            except CannotBatch:
                self.restore(mark)
                self.lanes(binding)

    def lanes(self, binding: Binding) -> None:
        """The binding run once per lane, on each lane's slice of what it reads."""
        value = binding.value
        if isinstance(value, Function):
            return function_lanes(self, binding)
        free = free_vars_of(value)

        def emit(copier):
            copier.emit_bindings([binding])
            return copier.atom(binding.var)

        out = lane_loop(self, free, emit, binding.var.type, binding.var.name)
        self.set(binding.var, out, full_bd(binding.var.type))

    def function(self, fn: Function, params, param_bds, attrs=None) -> Function:
        """The batched function: ``params`` (already made) batched as ``param_bds``,
        every result batched; the lanes run one by one if the body cannot be batched."""
        for old, new, bd in zip(fn.params, params, param_bds):
            self.set(old, new, bd)
        self.builder.params = list(params)
        mark = self.mark()
        try:
            self.bindings(fn.body.bindings)
            res, bd = self.atom(fn.body.result)
            res = self.to_bd(res, fn.ret_type, bd, full_bd(fn.ret_type))
        except CannotBatch:
            self.restore(mark)
            res = self.body_lanes(fn)
        out = self.builder.finish_function(res)
        return Function(out.params, out.body, out.ret_type, attrs) if attrs else out

    def body_lanes(self, fn: Function):
        def emit(copier):
            copier.emit_bindings(fn.body.bindings)
            return copier.atom(fn.body.result)

        try:
            return lane_loop(self, list(fn.params), emit, fn.ret_type, "result")
        except CannotBatch as exc:
            raise BatchingError(f"vmap cannot batch this function: {exc}") from None


# -- handlers per kind of value -------------------------------------------------------------
class _RuleContext:
    """What a batching rule sees of the pass (see ``chainrule.rules.batching``)."""

    __slots__ = ("op", "size", "batcher")

    def __init__(self, op: Op, batcher: Batcher):
        self.op = op
        self.size = batcher.size
        self.batcher = batcher

    def emit(self, op: Op, *args, **attrs):
        return self.batcher.trace.apply(op, args, attrs)

    def batched_type(self, t):
        return batched_type(t, full_bd(t), self.size)

    def full(self, value, bd):
        """``value`` (Traced or a tuple of them) batched everywhere."""
        bt = self.batcher
        atom = bt.unwrap(value)
        t = atom.type if not isinstance(atom, Tuple) else _atom_type(atom)
        return bt.wrap(bt.to_bd(atom, _lane_type(t, bd, self.size), bd, full_bd(t)))

    def full_bd(self, value):
        if isinstance(value, tuple):
            return tuple(self.full_bd(v) for v in value)
        return True


def _atom_type(atom):
    if isinstance(atom, Tuple):
        return TupleType(_atom_type(f) for f in atom.fields)
    return atom.type


def _lane_type(t, bd, size):
    """The lane type of a value of batched type ``t`` batched as ``bd`` (arrays only)."""
    if isinstance(t, TupleType):
        return TupleType(_lane_type(f, b, size) for f, b in zip(t.fields, bd))
    if isinstance(t, TensorType) and bd:
        return TensorType(t.shape[1:], t.dtype)
    return t


def _call(bt: Batcher, binding: Binding) -> None:
    call = binding.value
    callee = call.callee
    pairs = [bt.atom(a) for a in call.args]
    args, bds = [p[0] for p in pairs], tuple(p[1] for p in pairs)
    if isinstance(callee, GlobalVar):
        return _global_call(bt, binding, args, bds)
    if isinstance(callee, Var):  # a function value: batched in every argument and result
        fn_atom, _ = bt.atom(callee)
        ftype = callee.type
        args = [bt.to_bd(a, t, bd, full_bd(t)) for a, t, bd in zip(args, ftype.params, bds)]
        out = bt.builder.emit(Call(fn_atom, args), binding.var.name)
        return bt.set(binding.var, out, full_bd(binding.var.type))
    rule = batching_rule_of(callee)
    if not any(any_batched(b) for b in bds) and not callee.effects and not has_function(
            binding.var.type):
        return bt.copy(binding)
    if rule is None:
        raise CannotBatch(f"no batching rule for {callee.name}")
    start = len(bt.builder.bindings)
    out, out_bd = rule(_RuleContext(callee, bt), [bt.wrap(a) for a in args], bds,
                       **call.attrs)
    atom = bt.unwrap(out)
    want = batched_type(binding.var.type, out_bd, bt.size)
    if _atom_type(atom) != want:
        raise BatchingError(f"vmap: the batching rule of {callee.name} gave {_atom_type(atom)!r}"
                            f" for {binding.var.name}, expected {want!r} (operands "
                            f"{', '.join(repr(_atom_type(a)) for a in args)}, batched {bds})")
    if isinstance(atom, Var) and len(bt.builder.bindings) > start:
        atom = bt.builder.rename_last(atom, binding.var.name)
    bt.set(binding.var, atom, out_bd)


def _global_call(bt: Batcher, binding: Binding, args, bds) -> None:
    name = binding.value.callee.name
    fn = bt.module[name]
    if not any(any_batched(b) for b in bds) and not has_function(fn.ret_type) and not any(
            has_function(p.type) for p in fn.params) and not effects_in([fn.body], bt.module):
        return bt.copy(binding)
    new = bt.ctx.batched_copy(name, bds)
    out = bt.builder.emit(Call(GlobalVar(new), args), binding.var.name)
    bt.set(binding.var, out, full_bd(binding.var.type))


def _tuple(bt: Batcher, binding: Binding) -> None:
    atom, bd = bt.atom(binding.value)
    bt.set(binding.var, atom, bd)


def _getitem(bt: Batcher, binding: Binding) -> None:
    node = binding.value
    atom, bd = bt.atom(node.tuple_value)
    if isinstance(atom, Tuple):
        field = atom.fields[node.index]
    else:
        field = bt.builder.emit(TupleGetItem(atom, node.index), binding.var.name)
    bt.set(binding.var, field, bd[node.index])


def _assign(bt: Batcher, binding: Binding) -> None:
    bt.set(binding.var, *bt.atom(binding.value))


def _function(bt: Batcher, binding: Binding) -> None:
    """A closure, batched in every parameter and its result."""
    fn: Function = binding.value
    b = bt.builder
    params = [Var(p.name, batched_type(p.type, full_bd(p.type), bt.size)) for p in fn.params]
    for old, new in zip(fn.params, params):
        bt.set(old, new, full_bd(old.type))
    b.begin_block()
    bt.bindings(fn.body.bindings)
    res, bd = bt.atom(fn.body.result)
    res = bt.to_bd(res, fn.ret_type, bd, full_bd(fn.ret_type))
    body = b.end_block(res)
    ret = batched_type(fn.ret_type, full_bd(fn.ret_type), bt.size)
    out = b.emit(Function(params, body, ret, fn.attrs), binding.var.name)
    bt.set(binding.var, out, True)


_HANDLERS = {
    Call: _call,
    Tuple: _tuple,
    TupleGetItem: _getitem,
    Var: _assign,
    Constant: _assign,
    Function: _function,
    If: batch_if,
    While: batch_while,
}


# -- the entry function -------------------------------------------------------------------
def _axes_per_param(axes, params, what: str) -> list:
    if axes is None or isinstance(axes, (int, np.integer)):
        return [axes] * len(params)
    if not isinstance(axes, (tuple, list)) or len(axes) != len(params):
        raise ArgumentError(f"vmap: {what} must be an int, None, or a tuple with one entry per "
                            f"parameter ({len(params)}), got {axes!r}")
    return list(axes)


def _check_axis(axis, t, what: str):
    """A normalized axis (or nested tuple of them) of the batched values of type ``t``."""
    if isinstance(t, TupleType):
        parts = axis if isinstance(axis, (tuple, list)) else [axis] * len(t.fields)
        if len(parts) != len(t.fields):
            raise ArgumentError(f"vmap: {what}: {axis!r} does not match {t!r}")
        return tuple(_check_axis(a, f, what) for a, f in zip(parts, t.fields))
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise ArgumentError(f"vmap: {what}: an axis is an int or None, got {axis!r}")
    if not isinstance(t, TensorType):
        raise ArgumentError(f"vmap: {what}: a value of type {t!r} cannot be mapped over an "
                            f"axis (give None)")
    if not -(t.ndim + 1) <= axis <= t.ndim:
        raise ArgumentError(f"vmap: {what}: axis {int(axis)} is out of range for a batched "
                            f"value of lane type {t!r} (rank {t.ndim + 1})")
    return int(axis) % (t.ndim + 1)


def _axis_bd(axis):
    if isinstance(axis, tuple):
        return tuple(_axis_bd(a) for a in axis)
    return axis is not None


def _outer_type(t, axis, size):
    """The parameter type of lane type ``t`` with its batch axis at ``axis``."""
    if isinstance(t, TupleType):
        return TupleType(_outer_type(f, a, size) for f, a in zip(t.fields, axis))
    if axis is None:
        return t
    shape = list(t.shape)
    shape.insert(axis, size)
    return TensorType(shape, t.dtype)


def _move(bt: Batcher, atom, t, axis, to_front: bool):
    if isinstance(t, TupleType):
        parts = bt.fields(atom, t)
        return Tuple([_move(bt, p, f, a, to_front) for p, f, a in zip(parts, t.fields, axis)])
    if axis is None or axis == 0:
        return atom
    ndim = t.ndim + 1
    perm = list(range(ndim))
    if to_front:
        perm.pop(axis)
        perm.insert(0, axis)
    else:
        perm.pop(0)
        perm.insert(axis, 0)
    return bt.call(ops.permute_dims, [atom], axes=tuple(perm))


def _lift_function(bt: Batcher, atom: Var):
    """An unbatched function value passed in, as a batched one: a loop over the lanes."""
    t: FuncType = atom.type
    params = [Var(f"arg{i}", batched_type(p, full_bd(p), bt.size)) for i, p in
              enumerate(t.params)]
    b = bt.builder
    b.begin_block()
    lane_params = [Var(f"arg{i}", p) for i, p in enumerate(t.params)]
    for lp, p in zip(lane_params, params):
        bt.set(lp, p, full_bd(lp.type))

    def emit(copier):
        return copier.builder.emit(Call(atom, [copier.atom(p) for p in lane_params]))

    res = lane_loop(bt, lane_params, emit, t.ret, "result")
    body = b.end_block(res)
    return b.emit(Function(params, body, batched_type(t.ret, full_bd(t.ret), bt.size)),
                  f"{atom.name}_lanes")


def vmap(module: Module, func: str = "main", in_axes=0, out_axes=0, axis_size=None) -> Module:
    """Add ``<func>_vmap``: ``func`` (the program of one lane) applied to ``axis_size``
    lanes at once, its parameters mapped over ``in_axes`` and results over
    ``out_axes`` (see the module docstring). Negative axes count from the end of the
    batched value; None is a value every lane shares (a parameter) or that no lane
    changes (a result, which must then not depend on the batched inputs)."""
    if isinstance(axis_size, str):  # a symbolic dimension (polymorphic_shapes), n or 3*n
        size = TensorType((axis_size,), "f64").shape[0]  # checked, canonical
    elif isinstance(axis_size, (bool, np.bool_)) or not isinstance(
            axis_size, (int, np.integer)) or axis_size < 0:
        raise ArgumentError(f"vmap: axis_size must be the number of lanes (an int >= 0, or a "
                            f"symbol), got {axis_size!r}")
    else:
        size = int(axis_size)
    fn = module[func]
    axes = [_check_axis(a, p.type, f"in_axes of parameter {p.name}")
            for a, p in zip(_axes_per_param(in_axes, fn.params, "in_axes"), fn.params)]
    ret_fields = fn.ret_type.fields if isinstance(fn.ret_type, TupleType) else None
    if ret_fields is not None and isinstance(out_axes, (tuple, list)):
        out_axis = tuple(_check_axis(a, f, "out_axes") for a, f in zip(out_axes, ret_fields))
        if len(out_axes) != len(ret_fields):
            raise ArgumentError(f"vmap: out_axes {out_axes!r} does not match the results "
                                f"{fn.ret_type!r}")
    else:
        out_axis = _check_axis(out_axes, fn.ret_type, "out_axes")
    ctx = _Context(module, size)
    name = ctx.new_name(f"{func}_vmap")
    ctx.types[name] = None  # reserved
    bt = Batcher(ctx, len(fn.body.bindings))
    with bt.trace:
        b = bt.builder
        params = [b.param(p.name, _outer_type(p.type, a, size)) for p, a in zip(fn.params, axes)]
        moved, bds = [], []
        for p, new, a in zip(fn.params, params, axes):
            if isinstance(p.type, FuncType):
                if a is not None:
                    raise ArgumentError(f"vmap: parameter {p.name} is a function: its in_axes "
                                        f"must be None")
                moved.append(_lift_function(bt, new))
                bds.append(True)
            elif has_function(p.type):
                raise ArgumentError(f"vmap: parameter {p.name} of type {p.type!r} holds "
                                    f"functions or stacks, which vmap cannot take")
            else:
                moved.append(_move(bt, new, p.type, a, to_front=True))
                bds.append(_axis_bd(a))
        lane_fn = Function(fn.params, fn.body, fn.ret_type)
        batched = _entry(bt, lane_fn, moved, bds, out_axis, params)
    ctx.generated[name] = batched
    funcs = dict(module.functions)
    funcs.update(ctx.generated)
    return Module(funcs, module.meta)


def _entry(bt: Batcher, fn: Function, moved, bds, out_axis, params) -> Function:
    """The batched body with its results' batch axes moved to ``out_axis``."""
    for old, new, bd in zip(fn.params, moved, bds):
        bt.set(old, new, bd)
    mark = bt.mark()
    try:
        bt.bindings(fn.body.bindings)
        res, bd = bt.atom(fn.body.result)
    except CannotBatch:
        bt.restore(mark)
        res = bt.body_lanes(fn)
        bd = full_bd(fn.ret_type)
    res = _out(bt, res, fn.ret_type, bd, out_axis)
    bt.builder.params = list(params)
    return bt.builder.finish_function(res)


def _out(bt: Batcher, atom, t, bd, axis):
    if isinstance(t, TupleType):
        parts = bt.fields(atom, t)
        return Tuple([_out(bt, p, f, b, a) for p, f, b, a in zip(parts, t.fields, bd, axis)])
    if has_function(t):
        raise BatchingError(f"vmap: the function returns a value of type {t!r} (functions "
                            f"and stacks cannot be returned from vmap)")
    if axis is None:
        if bd:
            raise BatchingError(f"vmap: a result of type {t!r} depends on the batched inputs, "
                                f"but its out_axes is None")
        return atom
    atom = bt.to_bd(atom, t, bd, True)
    return _move(bt, atom, t, axis, to_front=False)


class VmapPass(OptionsPass):
    """Adds ``<func>_vmap`` (batching; see ``vmap``)."""

    name = "vmap"
    function = staticmethod(vmap)


register_pass(VmapPass)

__all__ = ["BatchingError", "VmapPass", "vmap"]
