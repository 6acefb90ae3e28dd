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

from ... import ops
from ...emit.methods import ArrayMethods
from ...emit.trace import Trace
from ...errors import TransposeError
from ...ir.builder import Builder
from ...ir.collector import collector_paused
from ...ir.infer import arg_type, type_call
from ...ir.nodes import (
    Binding,
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
from ...ir.op import HANDLERS, Op
from ...ir.types import ListType, TensorType, TupleType, has_float
from ...ir.visitor import Mutator, block_free_vars, substitute_vars, vars_used
from ...ops.stack import STACK_EMPTY, STACK_NONEMPTY, STACK_POP, STACK_PUSH
from ...rules import VJP, NoDerivative
from ..ad import rule_templates
from ..ad.adjoint import Adjoints, add_vars, prune
from ..ad.rule_templates import Template
from ..base import OptionsPass, register_pass
from ..cleanup.partial_eval import holds_closures, partial_eval
from . import replay as transpose_replay
from .keys import template_key
from .linear import _fields, _linear_vars, _mentions
from .names import _bound_at, _held_by_none, _unread
from .replay import Handlers, add_handler


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
        if op in _LIKE and self.trace is not None and len(args) == 1:
            # only the type is needed: emit zeros/ones/full of it
            made, extra = _LIKE[op]
            new_attrs = {"shape": self.type.shape, "dtype": attrs.get("dtype") or self.type.dtype,
                         **{k: attrs.get(k) for k in extra}}
            return self.trace.wrap(self.trace.builder.call(made, [], new_attrs))
        types = []
        for a in args:
            if isinstance(a, Undefined):
                types.append(a.type)
            elif hasattr(a, "variable"):
                types.append(a.variable.type)
            else:
                arr = np.asarray(a)
                types.append(TensorType(arr.shape, arr.dtype))
        _, t = type_call(op, types, attrs)
        if isinstance(t, TupleType):
            return tuple(Undefined(f) for f in t.fields)
        return Undefined(t)


HANDLERS[Undefined] = 1000
# an op that needs only its operand's type -> (the op making it from a shape, its attrs)
_LIKE = {ops.zeros_like: (ops.zeros, ()), ops.ones_like: (ops.ones, ()),
         ops.full_like: (ops.full, ("fill_value",))}


def _check_linear(binding: Binding, linear_positions: list[int]) -> None:
    call = binding.value
    name = call.callee.name if isinstance(call.callee, Op) else str(call.callee)
    if not call.callee.linear_in(linear_positions):
        raise TransposeError(
            f"transpose: {binding.var.name} = {name}(...) is not linear in its linear "
            f"operand(s) at position(s) {linear_positions}; the program is not linear")


class _Transposer:
    """Transposes blocks: coefficients (non-linear bindings) first, then the
    linear bindings in reverse, accumulating cotangents (seed 002's accMap)."""

    def __init__(self, module: Module, trace: Trace, lin: set):
        self.trace = trace
        self.b = trace.builder
        self.lin = lin
        self.copy = Mutator(module)
        self.copy.builder = self.b
        self.fixed: set[Var] = set()  # coefficients and parameters: never renamed
        self.named: dict[Var, Var] = {}  # a cotangent the sweep emitted -> it named <v>_ct
        self.wants = lin.__contains__  # whether a variable takes a cotangent
        # op calls transposed as before replay what their rule emitted then
        # (recorded from a key's first expansion: a linear program is short next to the
        # program it was linearized from, and its keys come back as often)
        self.templates = (rule_templates.RuleTemplates(VJP, record_after=0)
                          if rule_templates.ENABLED else None)
        self.held: list = []  # the type objects whose identities template keys hold
        # op -> the handlers of its compiled templates (transpose/replay.py; none while
        # templates are disabled)
        self.handlers = Handlers()

    def coefficients(self, bindings, known: bool = False) -> None:
        """Copy the bindings that are not linear (all of ``bindings`` when ``known``)."""
        self.copy.emit_bindings(bindings if known else
                                [b for b in bindings if b.var not in self.lin])
        self.fixed.update(v for v in self.copy.subst.values() if isinstance(v, Var))

    def name_cotangent(self, v: Var, msg, others=()):
        """A cotangent the sweep computed is named after its variable, ``<v>_ct``; returns
        the message to use from here on. A variable bound a few bindings ago that nothing
        has read since, and that no other message (``others``) holds, is renamed where it
        is bound (``Builder.rebind``: nothing refers to it yet); any other is renamed when
        the function is finished (``substitute_vars``), which costs a pass over it."""
        if type(msg) is not Var or msg in self.fixed:
            return msg
        name = f"{v.name}_ct"
        frame = self.b.bindings
        if frame and frame[-1].var is msg:  # the common case: just emitted, so unread
            k = len(frame) - 1
            here = _held_by_none(msg, others)
        else:
            k = _bound_at(frame, msg)
            here = k >= 0 and _held_by_none(msg, others) and _unread(msg, frame, k + 1)
        if here:
            msg = self.b.rebind(k, name)
        else:
            self.named[msg] = Var(name, msg.type)
        self.fixed.add(msg)
        return msg

    def view(self, atom, adj):
        if isinstance(atom, Var) and atom in self.lin:
            return Undefined(atom.type, self.trace)
        if isinstance(atom, Tuple):
            return tuple(self.view(f, adj) for f in atom.fields)
        return adj.wrap(self.copy.atom(atom))

    def sweep(self, bindings, result, ct, inputs) -> list:
        """Cotangents (messages) of ``inputs`` given ``ct``, the result's cotangent: the
        linear bindings in reverse, each transposed into its operands' cotangents."""
        adj = Adjoints(self.trace)
        adj.accumulate(result, ct, self.wants)
        msgs = adj.msgs
        self.total = len(bindings)
        for k in range(len(bindings) - 1, -1, -1):
            binding = bindings[k]
            v = binding.var
            msg = msgs.pop(v, None)
            if msg is None or v not in self.lin:
                continue  # a coefficient, or nothing flows back through v
            msg = self.name_cotangent(v, msg, msgs.values())
            value = binding.value
            if type(value) is Call:  # a compiled template of its callee does it all
                handler = self.handlers.get(value.callee)
                if handler is not None and handler(self, v, msg, value, msgs, bindings, k):
                    continue
            self.left = k  # how far the sweep has to go (when to compile: replay.PAYBACK)
            backward = _HANDLERS.get(type(value))
            if backward is None:
                raise TransposeError(f"transpose: cannot transpose {type(value).__name__}")
            backward(self, adj, binding, msg)
        return [msgs.pop(u, None) for u in inputs]


def _transpose_call(tr: _Transposer, adj: Adjoints, binding: Binding, msg) -> None:
    """Transpose a call of an op: its VJP rule with the linear operands undefined, or
    what it emitted for a call alike before, replayed (``ad/rule_templates.py``; a
    template replayed often enough gets a compiled handler: ``replay.py``)."""
    v, value = binding.var, binding.value
    if not isinstance(value.callee, Op):
        raise TransposeError(f"transpose: {v.name} calls a function; inline it first")
    args = value.args
    keyed = template_key(tr, binding, msg) if tr.templates is not None else None
    if keyed is None:
        lin = tr.lin
        positions = [i for i, a in enumerate(args)
                     if (a in lin if type(a) is Var else _mentions(a, lin))]
        partials = _run_rule(tr, adj, binding, msg, positions)
    else:
        key, inputs, positions = keyed
        template = tr.templates.entries.get(key)
        if type(template) is Template:
            partials = template.replay(inputs, tr.b)
            if transpose_replay.pays(template, tr.left, tr.total):
                add_handler(tr.handlers, template, binding, msg, inputs, positions, add_vars)
        else:
            partials = tr.templates.expand(key, inputs, tr.trace, _run_rule,
                                           tr, adj, binding, msg, positions)
    _accumulate(tr, adj, args, positions, partials)


def _accumulate(tr: _Transposer, adj: Adjoints, args, positions, partials) -> None:
    """Add the ``partials`` of a call's operands at ``positions`` to their cotangents."""
    msgs, lin = adj.msgs, tr.lin
    for i, atom in zip(positions, partials):
        if atom is None:
            continue
        arg = args[i]
        if type(arg) is Var and arg in lin:  # accumulate, inlined for an array variable
            old = msgs.get(arg)
            if old is None:
                msgs[arg] = atom
                continue
            if type(arg.type) is TensorType:  # as Adjoints.add does
                msgs[arg] = (add_vars(tr.b, old, atom) if type(old) is Var and type(atom) is Var
                             else tr.b.call(ops.add, [old, atom], {}))
                continue
        adj.accumulate(arg, atom, tr.wants)




def _run_rule(tr: _Transposer, adj: Adjoints, binding: Binding, msg, positions) -> list:
    """The VJP rule of ``binding``'s op with its linear operands undefined: per linear
    position, its partial fitted to the operand's type (None for none); what the rule
    emitted for nothing is dropped."""
    _check_linear(binding, positions)  # a replayed key passed it: the same op, positions
    v, value = binding.var, binding.value
    if tr.templates is not None:
        tr.held.append((v.type, getattr(msg, "type", None),
                        *[getattr(tr.copy.atom(a), "type", None) for a in value.args]))
    g = adj.materialize(msg, v.type)
    g = tuple(adj.wrap(f) for f in adj.split(g, v.type)) if isinstance(
        v.type, TupleType) else adj.wrap(g)
    start = len(tr.b.bindings)
    partials = VJP[value.callee](Undefined(v.type, tr.trace), g,
                                 *[tr.view(a, adj) for a in value.args], **value.attrs)
    fitted = []
    for i in positions:
        p = partials[i]
        if isinstance(p, (Undefined, NoDerivative)) or (isinstance(p, tuple) and any(
                isinstance(e, Undefined) for e in p)):
            raise TransposeError(f"transpose: {v.name} = {value.callee.name}(...) "
                                 f"is not linear in operand {i}")
        # an operand may be a tuple literal (a pushed snapshot's tangent)
        fitted.append(None if p is None else adj.fit(p, arg_type(value.args[i])))
    prune(tr.b.bindings, start, [f for f in fitted if f is not None])
    return fitted


def _transpose_getitem(tr, adj, binding, msg) -> None:
    value = binding.value
    parts = [None] * len(value.tuple_value.type.fields)
    parts[value.index] = msg
    adj.accumulate(value.tuple_value, tuple(parts), tr.wants)


def _transpose_if(tr: _Transposer, adj: Adjoints, binding: Binding, msg) -> None:
    """Each branch transposed on its own, from the result's cotangent with its zero
    parts left symbolic. The ``If`` returns the cotangents of the linear free variables
    that are non-zero in at least one branch (zeros in a branch that sends none); one
    zero in both branches is no result at all, and with none left there is no ``If``."""
    node: If = binding.value
    if node.cond in tr.lin:
        raise TransposeError("transpose: a branch condition depends on a linear value")
    free = [u for u in block_free_vars([node.then_block, node.else_block]) if u in tr.lin]
    swept = []
    for blk in (node.then_block, node.else_block):
        tr.b.begin_block()
        tr.coefficients(blk.bindings)
        msgs = tr.sweep(blk.bindings, blk.result, msg, free)
        swept.append((tr.b.end_block(Tuple(())).bindings, msgs))
    live = [k for k in range(len(free)) if any(not _is_zero(m[k]) for _, m in swept)]
    if not live:
        return
    blocks = []
    for bindings, msgs in swept:
        tr.b.begin_block()
        tr.b.bindings.extend(bindings)  # the results' zeros go after the sweep's bindings
        sub = Adjoints(tr.trace)
        atoms = [sub.materialize(msgs[k], free[k].type) for k in live]
        blocks.append(tr.b.end_block(atoms[0] if len(atoms) == 1 else Tuple(atoms)))
    d = tr.b.emit(If(tr.copy.atom(node.cond), *blocks), f"{binding.var.name}_ct")
    parts = [d] if len(live) == 1 else adj.split(d, d.type)
    for k, part in zip(live, parts):
        adj.accumulate(free[k], part, tr.wants)


def _is_zero(msg) -> bool:
    """A symbolic zero: None, or a tuple message whose parts all are."""
    return msg is None or (isinstance(msg, tuple) and all(_is_zero(m) for m in msg))


def _transpose_while(tr: _Transposer, adj: Adjoints, binding: Binding, msg) -> None:
    """Replay the loop's non-linear part forward, saving its loop variables on a
    stack; then run the transposed body once per saved iteration, in reverse."""
    node: While = binding.value
    b = tr.b
    lvs = list(node.loop_vars)
    n = len(lvs)
    if node.cond.result in tr.lin:
        raise TransposeError("transpose: a loop condition depends on a linear value")
    nl = [i for i, v in enumerate(lvs) if v not in tr.lin]
    free = [u for u in block_free_vars([node.cond, node.body], lvs) if u in tr.lin]
    nxt = _fields(node.body.result, n)
    parts = adj.split(msg, node.result_type) if n > 1 else [msg]
    li, free = _carried_cotangents(node, tr.lin, [i for i, p in enumerate(parts)
                                                  if not _is_zero(p)], free)
    if not li:  # no cotangent flows into the loop: it sends none back
        return
    # 1. replay: the non-linear loop variables of every iteration, on a stack
    saved_t = TupleType([lvs[i].type for i in nl])
    stype = ListType(saved_t)
    empty = b.call(STACK_EMPTY, [], {"elem": saved_t}, f"{binding.var.name}_tape")
    replay_vars = [Var(lvs[i].name, lvs[i].type) for i in nl]
    st = Var(f"{binding.var.name}_tape", stype)
    for i, rv in zip(nl, replay_vars):
        tr.copy.subst[lvs[i]] = rv
    b.begin_block()
    tr.coefficients(node.cond.bindings)
    cond = b.end_block(tr.copy.atom(node.cond.result))
    b.begin_block()
    tr.coefficients(node.body.bindings)
    pack = b.emit(Tuple(replay_vars), f"{binding.var.name}_saved")
    pushed = b.call(STACK_PUSH, [st, pack], None, f"{binding.var.name}_tape")
    body = b.end_block(Tuple([tr.copy.atom(nxt[i]) for i in nl] + [pushed]))
    replay = b.emit(While(replay_vars + [st], [tr.copy.atom(node.init[i]) for i in nl] + [empty],
                          cond, body), f"{binding.var.name}_replay")
    tape = b.emit(TupleGetItem(replay, len(nl)), f"{binding.var.name}_tape")
    # 2. reverse: pop an iteration, recompute its coefficients, transpose its body
    ct_all = {i: adj.materialize(parts[i], lvs[i].type) for i in li}
    s = Var(f"{binding.var.name}_tape", stype)
    cts = [Var(f"{lvs[i].name}_ct", lvs[i].type) for i in li]
    accs = [Var(f"{u.name}_acc", u.type) for u in free]
    b.begin_block()
    more = b.call(STACK_NONEMPTY, [s], None, f"{binding.var.name}_more")
    rcond = b.end_block(more)
    b.begin_block()
    top = b.call(STACK_POP, [s], None, f"{binding.var.name}_top")
    saved = b.emit(TupleGetItem(top, 0), f"{binding.var.name}_saved")
    rest = b.emit(TupleGetItem(top, 1), f"{binding.var.name}_rest")
    for k, i in enumerate(nl):
        tr.copy.subst[lvs[i]] = b.emit(TupleGetItem(saved, k), lvs[i].name)
    tr.coefficients(node.cond.bindings)
    tr.coefficients(node.body.bindings)
    body_ct = Tuple(cts) if len(li) > 1 else cts[0]
    linear_next = Tuple([nxt[i] for i in li]) if len(li) > 1 else nxt[li[0]]
    inputs = [lvs[i] for i in li] + free
    msgs = tr.sweep(list(node.cond.bindings) + list(node.body.bindings), linear_next,
                    body_ct, inputs)
    sub = Adjoints(tr.trace)
    new_cts = [sub.materialize(m, lvs[i].type) for m, i in zip(msgs, li)]
    new_accs = [sub.add(acc, m, u.type) for acc, m, u in zip(accs, msgs[len(li):], free)]
    rbody = b.end_block(Tuple([rest, *new_cts, *new_accs]))
    zeros = [sub.materialize(None, u.type) for u in free]
    rev = b.emit(While([s, *cts, *accs], [tape, *[ct_all[i] for i in li], *zeros], rcond, rbody),
                 f"{binding.var.name}_transposed")
    for k, i in enumerate(li):
        adj.accumulate(node.init[i], b.emit(TupleGetItem(rev, 1 + k)), tr.wants)
    for k, u in enumerate(free):
        adj.accumulate(u, b.emit(TupleGetItem(rev, 1 + len(li) + k)), tr.wants)


def _carried_cotangents(node: While, lin: set, nonzero: list[int], free: list[Var]):
    """The linear loop variables whose cotangent can be non-zero in the transposed loop,
    and the linear free variables that can receive one: a fixed point from the carries
    whose cotangent flows in (``nonzero``), adding every linear loop variable the update
    of one of them reads through linear values (JAX's fixed point for ``while``). A
    carry outside it is no carry of the transposed loop, a free variable outside it no
    accumulator."""
    lvs = node.loop_vars
    sources = {u: frozenset([u]) for u in (*lvs, *free) if u in lin}
    for b in (*node.cond.bindings, *node.body.bindings):
        if b.var in lin:
            sources[b.var] = frozenset().union(*(sources.get(u, ()) for u in vars_used(b.value)))
    unknown = frozenset(sources)  # an update not spelled out as a field may read anything
    reads = [unknown if f is None else frozenset().union(*(sources.get(a, ()) for a in _atoms(f)))
             for f in _fields(node.body.result, len(lvs))]
    carried = {i for i in nonzero if lvs[i] in lin}
    stack = list(carried)
    while stack:
        read = reads[stack.pop()]
        for j, lv in enumerate(lvs):
            if j not in carried and lv in read:
                carried.add(j)
                stack.append(j)
    reached = frozenset().union(*(reads[i] for i in carried))
    return sorted(carried), [u for u in free if u in reached]


def _atoms(atom) -> list:
    if isinstance(atom, Tuple):
        return [a for f in atom.fields for a in _atoms(f)]
    return [atom] if isinstance(atom, Var) else []


_HANDLERS = {
    Call: _transpose_call,
    TupleGetItem: _transpose_getitem,
    Tuple: lambda tr, adj, binding, msg: adj.accumulate(binding.value, msg, tr.wants),
    Var: lambda tr, adj, binding, msg: adj.accumulate(binding.value, msg, tr.wants),
    Constant: lambda tr, adj, binding, msg: None,
    If: _transpose_if,
    While: _transpose_while,
}


@collector_paused
def transpose(module: Module, func: str = "main", linear=None, name: str | None = None) -> Module:
    """Add ``<func>_transpose`` (see the module docstring); ``linear`` names the
    parameters the function is linear in (default: all float parameters)."""
    fn = module[func]
    lin_params = _linear_params(fn, linear)
    lin, coefficients = set(lin_params), []
    # a function whose bindings are all op calls defines no closure (no second walk)
    closures = not _linear_vars(fn.body.bindings, lin, coefficients) and holds_closures(fn)
    if closures:  # apply the closures whose definition is known (Relay's way)
        module = partial_eval(module)
        fn = module[func]
        lin_params = _linear_params(fn, linear)
        lin, coefficients = set(lin_params), []
        _linear_vars(fn.body.bindings, lin, coefficients)
    # a function defining no closure before partial evaluation defines none after it
    for b in fn.body.bindings if closures else ():
        if isinstance(b.value, Function):
            raise TransposeError(
                f"transpose: {b.var.name} is a closure that partial evaluation could not "
                f"apply where it is defined (it is passed to a recursive function?); a "
                f"linear program with such closures is not transposed")
    trace = Trace(builder=Builder(module, temp_start=len(fn.body.bindings)))
    with trace:  # rules may trace (custom rules): nest under this trace
        tr = _Transposer(module, trace, lin)
        subst, others = tr.copy.subst, []
        for p in fn.params:  # Mutator.copy_var, inlined (a residual parameter per few bindings)
            if p not in lin:
                subst[p] = copied = typed_var(p.name, p.type)
                others.append(copied)
        ct = Var("cotangent", fn.ret_type)
        trace.builder.params = others + [ct]
        tr.fixed.add(ct)  # and the copied parameters, with the coefficients (in subst)
        tr.coefficients(coefficients, known=True)
        msgs = tr.sweep(fn.body.bindings, fn.body.result, ct, lin_params)
        for k, p in enumerate(lin_params):
            msgs[k] = tr.name_cotangent(p, msgs[k], msgs[:k] + msgs[k + 1:])
        adj = Adjoints(trace)
        outs = [adj.materialize(m, p.type) for m, p in zip(msgs, lin_params)]
        out = substitute_vars(trace.builder.finish_function(Tuple(outs)), tr.named)
    funcs = dict(module.functions)
    funcs[name or f"{func}_transpose"] = out
    return Module(funcs, module.meta)


def _linear_params(fn: Function, linear) -> list[Var]:
    """The parameters named by ``linear`` (default: all float parameters)."""
    if linear is None:
        return [p for p in fn.params if has_float(p.type)]
    names = [linear] if isinstance(linear, str) else list(linear)
    lin_params = [p for p in fn.params if p.name in names]
    if len(lin_params) != len(names):
        raise TransposeError(f"transpose: unknown parameter(s) in {names}; parameters "
                             f"are {[p.name for p in fn.params]}")
    return lin_params


class Transpose(OptionsPass):
    """Adds ``<func>_transpose`` for a function linear in ``linear`` (see ``transpose``)."""

    name = "transpose"
    function = staticmethod(transpose)


register_pass(Transpose)

__all__ = ["Transpose", "transpose", "Undefined"]
