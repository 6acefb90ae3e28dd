"""Reverse mode of a loop under a snapshot budget: binomial checkpointing (revolve).

A loop whose first initial value is marked ``loop_checkpoint(x, trips,
snapshots=c)`` (``fori_loop(..., checkpoint=cr.Budget(...))`` and friends) keeps
no residuals. Its forward copy runs the plain body and pushes snapshots of the
carry (the iteration number on one stack, the carry on another) where
``revolve_next`` says, at most ``c`` at a time (``ops/stack_schedule.py``). The
reverse loop, for each iteration ``j`` from the last down:

1. takes the snapshot on top (iteration ``p <= j``; dropped from the stacks when
   ``p == j``, its last use);
2. advances from ``p`` to ``j`` with the plain body, pushing the snapshots that
   ``revolve_next`` places on the way;
3. runs iteration ``j`` once more keeping its residuals, and its backward right
   after it (the sweep of ``reverse/control.py``, with no stacks in between).

Everything is loops, branches and stacks of arrays: the result differentiates
again like any other program (the budget applies to the first derivative; the
next reverse mode stores what it needs of this one).
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass

import numpy as np

from ... import ops
from ...ir.nodes import Binding, Block, Call, Constant, If, Tuple, TupleGetItem, Var, While
from ...ir.types import ListType, TensorType, TupleType, has_float
from ...ir.visitor import Mutator, block_free_vars, vars_used
from ...ops.stack import STACK_EMPTY, STACK_POP, STACK_PUSH
from ...ops.stack_schedule import LOOP_CHECKPOINT, REVOLVE_NEXT
from .sweep import Sweep, flat_vars

I64 = TensorType((), "i64")


def marker_of(sweep: Sweep, node: While):
    """The ``loop_checkpoint`` call that marks the loop's first initial value, if any."""
    first = node.init[0] if node.init else None
    if not isinstance(first, Var):
        return None
    for b in reversed(sweep.bindings):
        if b.var is first:
            v = b.value
            if isinstance(v, Call) and v.callee is LOOP_CHECKPOINT:
                return v
            return None
    return None


def row_buffers(node: While) -> dict:
    """The loop variables the loop only writes rows into (``scan``'s outputs), by
    position: each is read once, by ``index_add(buffer, row, ...)`` whose result is the
    next value of that variable and nothing else. No iteration reads them, and the
    backward of a write does not read the buffer (its row's cotangent is a row of the
    buffer's): snapshots leave them out, advancing does not write them, and the rerun
    iteration is given the final buffers, whose write the clean-up passes drop."""
    result = node.body.result
    fields = list(result.fields) if isinstance(result, Tuple) else [result]
    if len(fields) != len(node.loop_vars):
        return {}
    reads: dict = {}
    for v in vars_used(node.cond.result) + [a for b in node.cond.bindings
                                              for a in vars_used(b.value)]:
        reads[v] = reads.get(v, 0) + 2  # read by the condition: not a buffer
    writer = {}
    for b in node.body.bindings:
        for a in vars_used(b.value):
            reads[a] = reads.get(a, 0) + 1
        v = b.value
        if isinstance(v, Call) and v.callee is ops.index_add and isinstance(v.args[0], Var):
            writer[v.args[0]] = b.var
    for a in vars_used(result):
        reads[a] = reads.get(a, 0) + 1
    out = {}
    for k, lv in enumerate(node.loop_vars):
        w = writer.get(lv)
        if k and w is not None and fields[k] is w and reads.get(lv) == 1 and reads.get(w) == 1:
            out[k] = w
    return out


# ops that only make a view (no arithmetic, cannot fail): safe to run once before a loop
# even when the loop runs zero times
_VIEWS = ("permute_dims", "matrix_transpose")


def hoist_views(b, body: Block, inside) -> Block:
    """``body`` without its views of loop-invariant values (the ``W.T`` of a matmul's
    backward), which are emitted here, before the loop, once: a transpose per iteration
    costs a Python call and an array object each time. ``inside``: the loop variables."""
    inside, kept = set(inside), []
    for x in body.bindings:
        v = x.value
        if (isinstance(v, Call) and getattr(v.callee, "name", None) in _VIEWS
                and not any(isinstance(a, Var) and a in inside for a in v.args)):
            b.bindings.append(x)
        else:
            kept.append(x)
            inside.add(x.var)
    return body if len(kept) == len(body.bindings) else Block(kept, body.result)


@dataclass
class RevolveTape:
    inputs: list
    float_lvs: list
    free: list
    snapshots: int
    trips: Var
    index_stack: Var
    carry_stack: Var
    depth: Var
    buffers: dict  # position -> the binding that writes rows into it (row_buffers)
    finals: list  # the forward's final carry (the rerun reads the buffers from it)


def _i64(k: int) -> Constant:
    return Constant(np.int64(k))


def _mark(b, first, trips, budget: int, name: str):
    """``loop_checkpoint(first, trips, snapshots=budget)``: the loops this module emits
    carry the user's budget on, so that the reverse mode of this reverse mode (grad of
    grad, jacrev of grad) checkpoints them too instead of storing every iteration."""
    return b.call(LOOP_CHECKPOINT, [first, trips], {"snapshots": budget}, name)


def _plain_copy(sweep: Sweep, node: While, carry: list, buffers=None) -> list:
    """Emit one iteration of ``node``'s body on ``carry`` (no residuals kept); returns
    the next carry's atoms. With ``buffers`` (``row_buffers``), ``carry`` holds the other
    loop variables only, the rows are not written, and neither are they returned."""
    buffers = buffers or {}
    core = [v for k, v in enumerate(node.loop_vars) if k not in buffers]
    skip = set(buffers.values())
    m = Mutator(sweep.ctx.module)
    m.builder = sweep.b
    m.subst = ChainMap(dict(zip(core, carry)), sweep.copy.subst)
    m.emit_bindings([b for b in list(node.cond.bindings) + list(node.body.bindings)
                     if b.var not in skip])
    fields = node.body.result.fields if len(node.loop_vars) > 1 else [node.body.result]
    return [m.atom(f) for k, f in enumerate(fields) if k not in buffers]


def _plain_cond(sweep: Sweep, node: While, carry: list):
    m = Mutator(sweep.ctx.module)
    m.builder = sweep.b
    m.subst = ChainMap(dict(zip(node.loop_vars, carry)), sweep.copy.subst)
    m.emit_bindings(node.cond.bindings)
    return m.atom(node.cond.result)


def _maybe_push(sweep: Sweep, take, pos, carry, idx, vals, depth, last, budget: int):
    """``if take: push (pos, carry)``; returns (idx, vals, depth, next position)."""
    b = sweep.b
    b.begin_block()
    idx1 = b.call(STACK_PUSH, [idx, pos], None, "snapshot_at")
    # the carry bound to a variable first: transpose accumulates into operands by variable
    snap = b.emit(Tuple(carry), "carry")
    vals1 = b.call(STACK_PUSH, [vals, snap], None, "snapshot")
    depth1 = b.call(ops.add, [depth, _i64(1)], None, "snapshots")
    free = b.call(ops.subtract, [_i64(budget), depth1], None, "free")
    nxt = b.call(REVOLVE_NEXT, [pos, last, free], None, "next_snapshot")
    then = b.end_block(Tuple([idx1, vals1, depth1, nxt]))
    b.begin_block()
    stay = b.end_block(Tuple([idx, vals, depth, _i64(-1)]))
    out = b.emit(If(take, then, stay), "snapshot_taken")
    return [b.emit(TupleGetItem(out, k)) for k in range(4)]


def revolve_forward(sweep: Sweep, binding: Binding, marker: Call):
    node: While = binding.value
    name = binding.var.name
    b = sweep.b
    budget = marker.attrs["snapshots"]
    lvs = list(node.loop_vars)
    free = [v for v in block_free_vars([node.cond, node.body], lvs)
            if sweep.wants(v) and has_float(v.type)]
    float_lvs = [v for v in lvs if has_float(v.type)]
    trips_known = sweep.copy.atom(marker.args[1])
    init = [_mark(b, sweep.copy.atom(marker.args[0]), trips_known, budget, lvs[0].name)]
    init += [sweep.copy.atom(i) for i in node.init[1:]]
    buffers = row_buffers(node)
    carry = [Var(v.name, v.type) for v in lvs]
    kept = [c for k, c in enumerate(carry) if k not in buffers]  # what a snapshot holds
    carry_t = TupleType([c.type for c in kept])
    t, nxt, depth = Var(f"{name}_t", I64), Var(f"{name}_next", I64), Var(f"{name}_depth", I64)
    idx = Var(f"{name}_snapshot_at", ListType(I64))
    vals = Var(f"{name}_snapshot", ListType(carry_t))
    last = b.call(ops.subtract, [trips_known, _i64(1)], None, f"{name}_last")  # -2: unknown
    b.begin_block()
    cond_block = b.end_block(_plain_cond(sweep, node, carry))
    b.begin_block()
    # the last iteration's carry too (revolve holds it as the state it tapes first)
    at_next = b.call(ops.equal, [t, nxt], None, f"{name}_at_next")
    at_last = b.call(ops.equal, [t, last], None, f"{name}_at_last")
    take = b.call(ops.logical_or, [at_next, at_last], None, f"{name}_take")
    idx1, vals1, depth1, nxt1 = _maybe_push(sweep, take, t, kept, idx, vals, depth, last,
                                            budget)
    nxt2 = b.call(ops.where, [take, nxt1, nxt], None, f"{name}_next")
    after = _plain_copy(sweep, node, carry)
    t1 = b.call(ops.add, [t, _i64(1)], None, f"{name}_t")
    body_block = b.end_block(Tuple(after + [t1, nxt2, depth1, idx1, vals1]))
    empty_idx = b.call(STACK_EMPTY, [], {"elem": I64}, f"{name}_snapshot_at")
    empty_vals = b.call(STACK_EMPTY, [], {"elem": carry_t}, f"{name}_snapshot")
    loop = b.emit(While(carry + [t, nxt, depth, idx, vals],
                        init + [_i64(0), _i64(0), _i64(0), empty_idx, empty_vals],
                        cond_block, body_block), f"{name}_loop")
    n = len(lvs)
    get = lambda k, hint: b.emit(TupleGetItem(loop, k), hint)  # noqa: E731
    finals = [get(i, v.name) for i, v in enumerate(lvs)]
    sweep.extra[binding.var] = RevolveTape(
        float_lvs + free, float_lvs, free, budget, get(n, f"{name}_trips"),
        get(n + 3, f"{name}_snapshot_at"), get(n + 4, f"{name}_snapshot"),
        get(n + 2, f"{name}_depth"), buffers, finals)
    return finals[0] if n == 1 else Tuple(finals)


def revolve_backward(sweep: Sweep, binding: Binding, msg) -> None:
    node: While = binding.value
    tape: RevolveTape = sweep.extra[binding.var]
    if not tape.inputs:
        return
    adj, b = sweep.adj, sweep.b
    name = sweep.new(binding.var).name
    lvs = list(node.loop_vars)
    carry_type = node.result_type
    ct0 = adj.materialize(msg, carry_type)
    zeros_free = [adj.materialize(None, u.type) for u in tape.free]
    int_zeros = {v: adj.materialize(None, v.type) for v in lvs if not has_float(v.type)}
    j = Var(f"{name}_j", I64)
    idx, vals = Var(tape.index_stack.name, tape.index_stack.type), Var(
        tape.carry_stack.name, tape.carry_stack.type)
    depth = Var(f"{name}_depth", I64)
    ct = Var(f"{name}_ct", carry_type)
    accs = [Var(f"{u.name}_acc", u.type) for u in tape.free]
    b.begin_block()
    cond_block = b.end_block(b.call(ops.greater_equal, [j, _i64(0)], None, f"{name}_more"))
    b.begin_block()
    # 1. the snapshot on top, dropped at its last use
    top_idx = b.call(STACK_POP, [idx], None, "snapshot_at_top")
    top_val = b.call(STACK_POP, [vals], None, "snapshot_top")
    p = b.emit(TupleGetItem(top_idx, 0), "p")
    x_p = b.emit(TupleGetItem(top_val, 0), "x_p")
    last_use = b.call(ops.equal, [p, j], None, "last_use")
    b.begin_block()
    dropped = b.end_block(Tuple([b.emit(TupleGetItem(top_idx, 1)), b.emit(
        TupleGetItem(top_val, 1)), b.call(ops.subtract, [depth, _i64(1)])]))
    b.begin_block()
    kept = b.end_block(Tuple([idx, vals, depth]))
    left = b.emit(If(last_use, dropped, kept), "snapshots_left")
    idx0, vals0, depth0 = [b.emit(TupleGetItem(left, k)) for k in range(3)]
    # 2. advance from p to j, placing snapshots
    free0 = b.call(ops.subtract, [_i64(tape.snapshots), depth0], None, "free")
    nxt0 = b.call(REVOLVE_NEXT, [p, j, free0], None, "next_snapshot")
    pos = Var("pos", I64)
    core = [v for k, v in enumerate(lvs) if k not in tape.buffers]
    carry = [Var(v.name, v.type) for v in core]
    a_idx, a_vals = Var(idx.name, idx.type), Var(vals.name, vals.type)
    a_depth, a_nxt = Var("depth", I64), Var("next_snapshot", I64)
    b.begin_block()
    a_cond = b.end_block(b.call(ops.less, [pos, j], None, "advancing"))
    b.begin_block()
    after = _plain_copy(sweep, node, carry, tape.buffers)
    pos1 = b.call(ops.add, [pos, _i64(1)], None, "pos")
    at_next = b.call(ops.equal, [pos1, a_nxt], None, "at_next")
    before_j = b.call(ops.less, [pos1, j], None, "before_j")
    take = b.call(ops.logical_and, [at_next, before_j], None, "take")
    i1, v1, d1, n1 = _maybe_push(sweep, take, pos1, after, a_idx, a_vals, a_depth, j,
                                 tape.snapshots)
    n2 = b.call(ops.where, [take, n1, a_nxt], None, "next_snapshot")
    a_body = b.end_block(Tuple(after + [pos1, i1, v1, d1, n2]))
    x_parts = [b.emit(TupleGetItem(x_p, k), v.name) for k, v in enumerate(core)]
    x_parts[0] = _mark(b, x_parts[0], b.call(ops.subtract, [j, p], None, "steps"),
                       tape.snapshots, lvs[0].name)
    advance = b.emit(While(carry + [pos, a_idx, a_vals, a_depth, a_nxt],
                           x_parts + [p, idx0, vals0, depth0, nxt0], a_cond, a_body),
                     "advance")
    n, nk = len(lvs), len(core)
    x_core = iter([b.emit(TupleGetItem(advance, k), v.name) for k, v in enumerate(core)])
    x_j = [tape.finals[k] if k in tape.buffers else next(x_core) for k in range(n)]
    idx2, vals2, depth2 = [b.emit(TupleGetItem(advance, nk + k)) for k in (1, 2, 3)]
    # 3. iteration j again, with its residuals, and its backward
    sub = Sweep(sweep.ctx, list(node.cond.bindings) + list(node.body.bindings),
                node.body.result, lvs + tape.free, tape.inputs, flat_vars(node.body.result),
                trace=sweep.trace, parent=sweep)
    sub.bind_inputs(x_j)
    sub.forward(node.cond.bindings)
    sub.forward(node.body.bindings)
    sub.seed(ct)
    found = sub.backward()
    dparts = [sub.adj.materialize(found.get(u), u.type) for u in tape.inputs]
    nf = len(tape.float_lvs)
    by_lv = dict(zip(tape.float_lvs, dparts[:nf]))
    new_ct = [by_lv[v] if v in by_lv else int_zeros[v] for v in lvs]
    new_accs = [adj.add(acc, part, u.type) for acc, part, u in zip(accs, dparts[nf:], tape.free)]
    j1 = b.call(ops.subtract, [j, _i64(1)], None, f"{name}_j")
    ct_next = new_ct[0] if n == 1 else Tuple(new_ct)
    body_block = b.end_block(Tuple([j1, idx2, vals2, depth2, ct_next, *new_accs]))
    body_block = hoist_views(b, body_block, [j, idx, vals, depth, ct, *accs])
    start = _mark(b, b.call(ops.subtract, [tape.trips, _i64(1)], None, f"{name}_last"),
                  tape.trips, tape.snapshots, f"{name}_last")
    loop = b.emit(While([j, idx, vals, depth, ct, *accs],
                        [start, tape.index_stack, tape.carry_stack, tape.depth, ct0,
                         *zeros_free], cond_block, body_block), f"{name}_reverse")
    dinit = b.emit(TupleGetItem(loop, 4), f"{name}_dinit")
    parts = adj.split(dinit, carry_type) if n > 1 else (dinit,)
    for init, v, part in zip(node.init, lvs, parts):
        if has_float(v.type):
            adj.accumulate(init, part, sweep.wants)
    for k, u in enumerate(tape.free):
        adj.accumulate(u, b.emit(TupleGetItem(loop, 5 + k), f"{u.name}_dloop"), sweep.wants)
