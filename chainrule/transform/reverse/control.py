"""Reverse mode through ``If`` and ``While`` without closures: the forward rewrites
and backward handlers that ``gradient.py`` puts in its tables.

The backward of a branch or of one loop iteration is built once, as a block, from
a sub-sweep; its *residuals* are the values it reads that the forward branch or
iteration computed. The forward keeps only those, as plain values:

* an ``If`` returns its result and the residuals of both branches (the branch not
  taken gives zeros for the other's); the backward is an ``If`` on the same
  condition whose branches are the two backward blocks, reading the residuals;
* a ``While`` counts its iterations and pushes each residual on a stack of its
  own (``ops/stack.py``; one array of rows made before the loop when its trip
  count is known then, ``stack_alloc``, else linked cells); the reverse loop runs
  the count down, pops one entry of each stack and runs the backward block,
  carrying the cotangent of the loop state and accumulating the cotangents of
  the values the loop reads.

What comes out is a program of arrays, stacks of arrays and loops, with no
closures: the gradient pass can differentiate it again (the stack ops have
VJP rules, ``rules/stack.py``), and so can ``jvp``, to any order. A residual
that is itself a function (the pullback of a module call) still goes on a
stack of functions; such a program has a first derivative only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import ops
from ...ir.nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    If,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from ...ir.op import OPS
from ...ir.types import ListType, TensorType, TupleType, has_float
from ...ir.visitor import block_free_vars, substitute_vars
from ...ops.stack import STACK_ALLOC, STACK_EMPTY, STACK_POP, STACK_PUSH, rows_pay
from ..ad.adjoint import has_function
from .revolve import RevolveTape, hoist_views, marker_of, revolve_backward, revolve_forward
from .sweep import Sweep, flat_vars

I64 = TensorType((), "i64")


def _backward_block(sweep: Sweep, sub: Sweep, ct: Var, inputs) -> Block:
    """The reverse sweep of ``sub`` seeded with ``ct``, as a block (not emitted)
    whose result is the tuple of the adjoints of ``inputs``."""
    b = sweep.b
    b.begin_block()
    sub.seed(ct)
    found = sub.backward()
    outs = [sub.adj.materialize(found.get(u), sweep.adjoint_type(u)) for u in inputs]
    return b.end_block(Tuple(outs))


def _residuals(block: Block, defined: set) -> list[Var]:
    """The values among ``defined`` that the backward ``block`` reads."""
    return [v for v in block_free_vars([block]) if v in defined]


# ops that make a view of their operand (no arithmetic, no copy on NumPy): a residual
# made by one from values the backward has is made again there rather than stacked
_VIEWS = frozenset({ops.permute_dims, ops.broadcast_to, *(OPS[name] for name in (
    "reshape", "expand_dims", "squeeze"))})


def _view(value) -> bool:
    """A view: an op of ``_VIEWS``, or an index by integers, slices and None."""
    return type(value) is Call and (value.callee in _VIEWS or value.callee is ops.index
                                    and len(value.args) == 1)


def _remade_views(backward: Block, residuals: list, bindings: list, defined: set) -> tuple:
    """``(backward, residuals)`` with the residuals that are views of other residuals or
    of values from before the loop (``x[1:]`` of a captured ``x``, the state's slice)
    made again at the start of the backward instead of pushed at every iteration: a
    push copies the view, a view costs nothing. ``defined``: what one iteration defines
    (its loop variables and ``bindings``), not available to the backward unless kept."""
    kept = set(residuals)
    remade: dict = {}
    lines = []
    for x in bindings:
        if x.var in kept and _view(x.value) and all(
                type(a) is not Var or a not in defined or a in kept for a in x.value.args):
            new = remade[x.var] = Var(x.var.name, x.var.type)
            args = [remade.get(a, a) for a in x.value.args]
            lines.append(Binding(new, Call(x.value.callee, args, x.value.attrs)))
    if not remade:
        return backward, residuals
    body = _substituted(backward, remade)
    return (Block(lines + list(body.bindings), body.result),
            [r for r in residuals if r not in remade])


def _substituted(block: Block, sub: dict) -> Block:
    """``block`` reading each residual from where the backward finds it."""
    if not sub:
        return block
    return substitute_vars(Function([], block, TupleType(())), sub).body


def _splice(sweep: Sweep, block: Block) -> list:
    """Emit the bindings of ``block`` here; returns its result's fields."""
    sweep.b.bindings.extend(block.bindings)
    return list(block.result.fields)


def _pullback(sweep: Sweep, sub: Sweep, ct_name: str, ct_type, inputs) -> Var:
    """Emit ``def <ct_name>_pullback(ct) -> (adjoints of inputs)`` from a sub-sweep."""
    b = sweep.b
    b.begin_block()
    ct = Var(ct_name, ct_type)
    sub.seed(ct)
    found = sub.backward()
    outs = [sub.adj.materialize(found.get(u), sweep.adjoint_type(u)) for u in inputs]
    body = b.end_block(Tuple(outs))
    return b.emit(Function([ct], body, TupleType([sweep.adjoint_type(u) for u in inputs])),
                  f"{ct_name}_pullback")


# -- If ----------------------------------------------------------------------------------


@dataclass
class _IfTape:
    inputs: list
    ct: Var
    backward: tuple  # the two backward blocks
    residuals: tuple  # the residuals of each branch
    saved: tuple  # where the forward left them


def _branch_inputs(sweep: Sweep, node: If) -> list[Var]:
    return [v for v in block_free_vars([node.then_block, node.else_block])
            if sweep.wants(v) and has_float(v.type)]


def if_forward(sweep: Sweep, binding: Binding):
    node: If = binding.value
    name = binding.var.name
    b = sweep.b
    inputs = _branch_inputs(sweep, node)
    ct = Var(f"{name}_ct", binding.var.type)
    built = []
    for block in (node.then_block, node.else_block):
        b.begin_block()
        sub = Sweep(sweep.ctx, block.bindings, block.result, inputs, inputs,
                    flat_vars(block.result), trace=sweep.trace, parent=sweep)
        result = sub.forward()
        backward = _backward_block(sweep, sub, ct, inputs)
        residuals = _residuals(backward, {x.var for x in b.bindings})
        built.append((b.end_block(result), backward, residuals))
    if any(has_function(r.type) for _, _, res in built for r in res):
        return _if_forward_closures(sweep, binding, inputs)
    residuals = (built[0][2], built[1][2])
    blocks = []
    for i, (frame, _, _) in enumerate(built):
        b.begin_block()
        b.bindings.extend(frame.bindings)
        slots = [r if i == k else sweep.adj.zeros(r.type)
                 for k in (0, 1) for r in residuals[k]]
        blocks.append(b.end_block(Tuple([frame.result, *slots])))
    pair = b.emit(If(sweep.copy.atom(node.cond), *blocks), f"{name}_branch")
    saved, k = ([], []), 1
    for side in (0, 1):
        for r in residuals[side]:
            saved[side].append(b.emit(TupleGetItem(pair, k), r.name))
            k += 1
    sweep.extra[binding.var] = _IfTape(inputs, ct, (built[0][1], built[1][1]), residuals,
                                       saved)
    return TupleGetItem(pair, 0)


def _if_forward_closures(sweep: Sweep, binding: Binding, inputs):
    """A branch whose backward reads a function (a module call's pullback): each
    branch returns its result and a pullback closure over what it computed."""
    node: If = binding.value
    name = binding.var.name
    branches = []
    for block in (node.then_block, node.else_block):
        sweep.b.begin_block()
        sub = Sweep(sweep.ctx, block.bindings, block.result, inputs, inputs,
                    flat_vars(block.result), trace=sweep.trace, parent=sweep)
        result = sub.forward()
        pb = _pullback(sweep, sub, f"{name}_ct", binding.var.type, inputs)
        branches.append(sweep.b.end_block(Tuple([result, pb])))
    pair = sweep.b.emit(If(sweep.copy.atom(node.cond), *branches), f"{name}_branch")
    sweep.pullbacks[binding.var] = sweep.b.emit(TupleGetItem(pair, 1), f"{name}_pullback")
    sweep.extra[binding.var] = inputs
    return TupleGetItem(pair, 0)


def if_backward(sweep: Sweep, binding: Binding, msg) -> None:
    tape = sweep.extra[binding.var]
    adj = sweep.adj
    name = sweep.new(binding.var).name
    if isinstance(tape, list):  # the closure form
        if not tape:
            return
        ct = adj.materialize(msg, binding.var.type)
        dins = sweep.b.emit(Call(sweep.pullbacks[binding.var], [ct]), f"{name}_dfree")
        inputs = tape
    else:
        if not tape.inputs:
            return
        sweep.b.bindings.append(Binding(tape.ct, adj.materialize(msg, binding.var.type)))
        blocks = [_substituted(tape.backward[side],
                               dict(zip(tape.residuals[side], tape.saved[side])))
                  for side in (0, 1)]
        cond = sweep.new(binding.value.cond)
        dins = sweep.b.emit(If(cond, *blocks), f"{name}_dfree")
        inputs = tape.inputs
    for u, part in zip(inputs, adj.split(dins, dins.type)):
        adj.accumulate(u, part, sweep.wants)


# -- While -------------------------------------------------------------------------------


@dataclass
class _LoopTape:
    inputs: list  # float loop variables, then the free variables the loop reads
    float_lvs: list
    free: list
    ct: Var  # the cotangent of the carry, read by the backward block
    backward: Block  # one iteration's backward, reading the residuals
    residuals: list
    trips: Var  # how many iterations ran
    saved: list  # one stack per residual


def _bound_in(blocks) -> dict:
    return {b.var: b.value for block in blocks for b in block.bindings}


def _is_one(x) -> bool:
    return isinstance(x, Constant) and x.data.ndim == 0 and x.data == 1


def known_trips(node: While):
    """``(start, stop)`` when the loop counts ``i`` from ``start`` up by one while
    ``less(i, stop)``, ``stop`` not changed by the loop (``fori_loop``, ``scan``): it
    then runs ``max(stop - start, 0)`` times, known before it starts. Else None."""
    cond = node.cond.result
    test = _bound_in([node.cond]).get(cond)
    if not (isinstance(test, Call) and test.callee is ops.less):
        return None
    i, stop = test.args
    lvs = list(node.loop_vars)
    if i not in lvs or not (isinstance(i.type, TensorType) and i.type.ndim == 0
                            and i.type.dtype.numpy.kind in "iu"):
        return None
    inner = _bound_in([node.cond, node.body])
    if isinstance(stop, Var) and (stop in lvs or stop in inner):
        return None
    result = node.body.result
    fields = list(result.fields) if isinstance(result, Tuple) else [result]
    step = inner.get(fields[lvs.index(i)]) if len(fields) == len(lvs) else None
    if not (isinstance(step, Call) and step.callee is ops.add
            and (step.args[0] is i and _is_one(step.args[1])
                 or step.args[1] is i and _is_one(step.args[0]))):
        return None
    return node.init[lvs.index(i)], stop


def _empty_stacks(sweep: Sweep, node: While, residuals, name: str) -> list:
    """One empty stack per residual: ``stack_alloc`` with room for every trip when the
    loop's trip count is known before it runs and the residual is an array large enough
    for rows to pay (``rows_pay``), else ``stack_empty``."""
    b = sweep.b
    bounds = known_trips(node) if any(rows_pay(r.type) for r in residuals) else None
    trips = None
    if bounds is not None:
        start, stop = (sweep.copy.atom(x) for x in bounds)
        trips = b.call(ops.subtract, [stop, start], None, f"{name}_rows")
    return [b.call(STACK_ALLOC, [trips], {"elem": r.type, "slot": r.name}, f"{r.name}_stack")
            if trips is not None and rows_pay(r.type)
            else b.call(STACK_EMPTY, [], {"elem": r.type}, f"{r.name}_stack")
            for r in residuals]


def _carry(node: While, atoms):
    return atoms[0] if len(node.loop_vars) == 1 else Tuple(atoms)


def while_forward(sweep: Sweep, binding: Binding):
    node: While = binding.value
    marker = marker_of(sweep, node)
    if marker is not None:  # a snapshot budget: binomial checkpointing
        return revolve_forward(sweep, binding, marker)
    name = binding.var.name
    b = sweep.b
    lvs = list(node.loop_vars)
    free = [v for v in block_free_vars([node.cond, node.body], lvs)
            if sweep.wants(v) and has_float(v.type)]
    float_lvs = [v for v in lvs if has_float(v.type)]
    inputs = float_lvs + free
    # one iteration = cond bindings + body bindings, from the loop variables to the next carry
    sub = Sweep(sweep.ctx, list(node.cond.bindings) + list(node.body.bindings),
                node.body.result, lvs + free, inputs, flat_vars(node.body.result),
                trace=sweep.trace, parent=sweep)
    new_lvs = [Var(v.name, v.type) for v in lvs]
    sub.bind_inputs(new_lvs)
    init = [sweep.copy.atom(i) for i in node.init]
    count = Var(f"{name}_count", I64)
    b.begin_block()
    sub.forward(node.cond.bindings)
    cond_block = b.end_block(sub.new(node.cond.result))
    b.begin_block()
    sub.forward(node.body.bindings)
    nxt = sub.new(node.body.result)
    ct = Var(f"{name}_ct", node.result_type)
    backward = _backward_block(sweep, sub, ct, inputs)
    defined = set(new_lvs) | {x.var for x in cond_block.bindings} | {x.var for x in b.bindings}
    residuals = _residuals(backward, defined)
    backward, residuals = _remade_views(backward, residuals,
                                        list(cond_block.bindings) + list(b.bindings), defined)
    stacks = [Var(f"{r.name}_stack", ListType(r.type)) for r in residuals]
    pushed = [b.call(STACK_PUSH, [s, r], None, f"{r.name}_stack")
              for s, r in zip(stacks, residuals)]
    counted = b.call(ops.add, [count, Constant(np.int64(1))], None, f"{name}_count")
    parts = list(nxt.fields) if isinstance(nxt, Tuple) else [nxt]
    body_block = b.end_block(Tuple(parts + [counted] + pushed))
    empties = _empty_stacks(sweep, node, residuals, name)
    loop = b.emit(While(new_lvs + [count] + stacks,
                        init + [Constant(np.int64(0))] + empties, cond_block, body_block),
                  f"{name}_loop")
    n = len(lvs)
    trips = b.emit(TupleGetItem(loop, n), f"{name}_trips")
    saved = [b.emit(TupleGetItem(loop, n + 1 + k), s.name) for k, s in enumerate(stacks)]
    sweep.extra[binding.var] = _LoopTape(inputs, float_lvs, free, ct, backward, residuals,
                                         trips, saved)
    finals = [b.emit(TupleGetItem(loop, i), v.name) for i, v in enumerate(lvs)]
    return finals[0] if n == 1 else Tuple(finals)


def while_backward(sweep: Sweep, binding: Binding, msg) -> None:
    node: While = binding.value
    tape: _LoopTape = sweep.extra[binding.var]
    if isinstance(tape, RevolveTape):
        return revolve_backward(sweep, binding, msg)
    if not tape.inputs:
        return
    adj, b = sweep.adj, sweep.b
    name = sweep.new(binding.var).name
    lvs = list(node.loop_vars)
    carry_type = node.result_type
    ct0 = adj.materialize(msg, carry_type)
    zeros_free = [adj.materialize(None, u.type) for u in tape.free]
    int_zeros = {v: adj.materialize(None, v.type) for v in lvs if not has_float(v.type)}
    k = Var(f"{name}_k", I64)
    stacks = [Var(s.name, s.type) for s in tape.saved]
    accs = [Var(f"{u.name}_acc", u.type) for u in tape.free]
    b.begin_block()
    more = b.call(ops.greater, [k, Constant(np.int64(0))], None, f"{name}_more")
    cond_block = b.end_block(more)
    b.begin_block()
    popped, rests = {}, []
    for s, r in zip(stacks, tape.residuals):
        top = b.call(STACK_POP, [s], None, f"{r.name}_top")
        popped[r] = b.emit(TupleGetItem(top, 0), r.name)
        rests.append(b.emit(TupleGetItem(top, 1), s.name))
    dparts = _splice(sweep, _substituted(tape.backward, popped))
    nf = len(tape.float_lvs)
    by_lv = dict(zip(tape.float_lvs, dparts[:nf]))
    new_ct = [by_lv[v] if v in by_lv else int_zeros[v] for v in lvs]
    new_accs = [adj.add(acc, part, u.type) for acc, part, u in zip(accs, dparts[nf:], tape.free)]
    counted = b.call(ops.subtract, [k, Constant(np.int64(1))], None, f"{name}_k")
    body_block = b.end_block(Tuple([counted, *rests, _carry(node, new_ct), *new_accs]))
    body_block = hoist_views(b, body_block, [k, *stacks, tape.ct, *accs])
    loop = b.emit(While([k, *stacks, tape.ct, *accs],
                        [tape.trips, *tape.saved, ct0, *zeros_free], cond_block, body_block),
                  f"{name}_reverse")
    at = 1 + len(stacks)
    dinit = b.emit(TupleGetItem(loop, at), f"{name}_dinit")
    parts = adj.split(dinit, carry_type) if len(lvs) > 1 else (dinit,)
    for init, v, part in zip(node.init, lvs, parts):
        if has_float(v.type):
            adj.accumulate(init, part, sweep.wants)
    for j, u in enumerate(tape.free):
        adj.accumulate(u, b.emit(TupleGetItem(loop, at + 1 + j), f"{u.name}_dloop"),
                       sweep.wants)
