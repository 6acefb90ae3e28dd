"""Reverse mode through ``If`` and ``While``, as closures and stacks: the
forward rewrites and backward handlers that ``gradient.py`` puts in its tables.

An ``If`` on the forward sweep becomes an ``If`` whose branches return
``(result, pullback)``: each branch's pullback is a closure over the values
that branch computed, mapping the result's cotangent to the cotangents of
the free variables the branches read (the same type for both branches, so
the branch taken is remembered by the closure itself).

A ``While`` carries one more loop variable, a stack: each iteration pushes
the pullback of that iteration (a closure over the values it computed). The
backward sweep is a loop that pops the stack and runs the pullbacks in
reverse order, carrying the cotangent of the loop state and accumulating the
cotangents of the free variables the loop reads. The trip count is the
stack's depth, so data-dependent loops need no bound.
"""

from __future__ import annotations

from ..ir.nodes import Binding, Call, Function, If, Tuple, TupleGetItem, Var, While
from ..ir.types import FuncType, ListType, TupleType, has_float
from ..ir.visitor import block_free_vars
from ..ops.stack import STACK_EMPTY, STACK_NONEMPTY, STACK_POP, STACK_PUSH
from .gradient_sweep import Sweep, flat_vars


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


def if_forward(sweep: Sweep, binding: Binding):
    node: If = binding.value
    name = binding.var.name
    inputs = [v for v in block_free_vars([node.then_block, node.else_block])
              if sweep.wants(v) and has_float(v.type)]
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
    inputs = sweep.extra[binding.var]
    if not inputs:
        return
    adj = sweep.adj
    ct = adj.materialize(msg, binding.var.type)
    name = sweep.new(binding.var).name
    dins = sweep.b.emit(Call(sweep.pullbacks[binding.var], [ct]), f"{name}_dfree")
    for u, part in zip(inputs, adj.split(dins, dins.type)):
        adj.accumulate(u, part, sweep.wants)


# -- While -------------------------------------------------------------------------------


def _carry(node: While, atoms):
    return atoms[0] if len(node.loop_vars) == 1 else Tuple(atoms)


def while_forward(sweep: Sweep, binding: Binding):
    node: While = binding.value
    name = binding.var.name
    b = sweep.b
    lvs = list(node.loop_vars)
    free = [v for v in block_free_vars([node.cond, node.body], lvs)
            if sweep.wants(v) and has_float(v.type)]
    float_lvs = [v for v in lvs if has_float(v.type)]
    inputs = float_lvs + free
    carry_type = node.result_type
    pb_type = FuncType([carry_type], TupleType([u.type for u in inputs]))
    # one iteration = cond bindings + body bindings, from the loop variables to the next carry
    sub = Sweep(sweep.ctx, list(node.cond.bindings) + list(node.body.bindings),
                 node.body.result, lvs + free, inputs, flat_vars(node.body.result),
                 trace=sweep.trace, parent=sweep)
    new_lvs = [Var(v.name, v.type) for v in lvs]
    stack = Var(f"{name}_stack", ListType(pb_type))
    sub.bind_inputs(new_lvs)
    init = [sweep.copy.atom(i) for i in node.init]
    empty = b.call(STACK_EMPTY, [], {"elem": pb_type}, f"{name}_tape")
    b.begin_block()
    sub.forward(node.cond.bindings)
    cond_block = b.end_block(sub.new(node.cond.result))
    b.begin_block()
    sub.forward(node.body.bindings)
    nxt = sub.new(node.body.result)
    pb = _pullback(sweep, sub, f"{name}_ct", carry_type, inputs)
    pushed = b.call(STACK_PUSH, [stack, pb], None, f"{name}_stack")
    parts = list(nxt.fields) if isinstance(nxt, Tuple) else [nxt]
    body_block = b.end_block(Tuple(parts + [pushed]))
    loop = b.emit(While(new_lvs + [stack], init + [empty], cond_block, body_block),
                  f"{name}_loop")
    n = len(lvs)
    sweep.pullbacks[binding.var] = b.emit(TupleGetItem(loop, n), f"{name}_tape")
    sweep.extra[binding.var] = (inputs, float_lvs, free)
    finals = [b.emit(TupleGetItem(loop, i), v.name) for i, v in enumerate(lvs)]
    return finals[0] if n == 1 else Tuple(finals)


def while_backward(sweep: Sweep, binding: Binding, msg) -> None:
    node: While = binding.value
    inputs, float_lvs, free = sweep.extra[binding.var]
    if not inputs:
        return
    adj, b = sweep.adj, sweep.b
    name = sweep.new(binding.var).name
    lvs = list(node.loop_vars)
    carry_type = node.result_type
    ct0 = adj.materialize(msg, carry_type)
    zeros_free = [adj.materialize(None, u.type) for u in free]
    int_zeros = {v: adj.materialize(None, v.type) for v in lvs if not has_float(v.type)}
    tape = sweep.pullbacks[binding.var]
    s = Var(f"{name}_tape", tape.type)
    ct = Var(f"{name}_ct", carry_type)
    accs = [Var(f"{u.name}_acc", u.type) for u in free]
    b.begin_block()
    more = b.call(STACK_NONEMPTY, [s], None, f"{name}_more")
    cond_block = b.end_block(more)
    b.begin_block()
    top = b.call(STACK_POP, [s], None, f"{name}_top")
    pb = b.emit(TupleGetItem(top, 0), f"{name}_pullback")
    rest = b.emit(TupleGetItem(top, 1), f"{name}_rest")
    d = b.emit(Call(pb, [ct]), f"{name}_d")
    dparts = adj.split(d, d.type)
    by_lv = dict(zip(float_lvs, dparts[:len(float_lvs)]))
    new_ct = [by_lv[v] if v in by_lv else int_zeros[v] for v in lvs]
    new_accs = [adj.add(acc, part, u.type)
                for acc, part, u in zip(accs, dparts[len(float_lvs):], free)]
    body_block = b.end_block(Tuple([rest, _carry(node, new_ct), *new_accs]))
    loop = b.emit(While([s, ct, *accs], [tape, ct0, *zeros_free], cond_block, body_block),
                  f"{name}_reverse")
    dinit = b.emit(TupleGetItem(loop, 1), f"{name}_dinit")
    parts = adj.split(dinit, carry_type) if len(lvs) > 1 else (dinit,)
    for init, v, part in zip(node.init, lvs, parts):
        if has_float(v.type):
            adj.accumulate(init, part, sweep.wants)
    for k, u in enumerate(free):
        adj.accumulate(u, b.emit(TupleGetItem(loop, 2 + k), f"{u.name}_dloop"), sweep.wants)
