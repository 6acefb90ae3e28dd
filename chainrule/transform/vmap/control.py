"""Control flow under ``vmap``, and the loop over lanes every other case falls back to.

- A branch on an unbatched predicate batches both blocks (their results joined:
  batched if either is). On a batched predicate it becomes a select of both
  branches, run in every lane (as JAX does), when both are *safe everywhere*:
  no loops, calls, effects, data-dependent indexing or factorizations that a
  lane not taking the branch could make fail or run forever; otherwise each
  lane runs the branch alone.
- A loop on an unbatched predicate carries batched values where its body makes
  them batched (a fixed point over the carry). On a batched predicate it runs
  while any lane's predicate holds; each iteration recomputes the predicates
  and a lane whose predicate is false keeps its carry (``where``), so every lane
  ends with the carry it would have alone. This needs a body safe everywhere
  (the frozen lanes run it too) and no stack in the carry (a frozen lane would
  push); otherwise each lane runs the loop alone.
- ``lane_loop``: a ``While`` over the lanes; each iteration takes lane ``j`` of
  every batched value the code reads (``index``), runs the original code on it,
  and writes its results into row ``j`` of buffers (``index_set``): the batched
  results. It needs array results and array inputs (not function values).
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...ir.indexing import ArrayIndex
from ...ir.nodes import Call, Constant, Function, If, Tuple, TupleGetItem, Var, While
from ...ir.op import Op
from ...ir.types import TensorType, TupleType
from ...ir.visitor import Mutator
from ...rules.batching import CannotBatch
from .types import any_batched, batched_type, effects_in, free_vars_of, full_bd, has_function, join


def _op_is_safe(op: Op, call: Call) -> bool:
    # a kernel that may raise on values (a factorization of a matrix a lane never meant to
    # factor, the stacks of reverse mode) is not run in lanes that do not take the branch
    if op.effects or op.raises_on_values:
        return False
    key = call.attrs.get("key")
    if key is not None and any(type(k) is ArrayIndex for k in key):
        return False  # an index array another lane computed may be out of bounds here
    if op is ops.power:  # integers to negative integer powers raise
        return not all(a.type.dtype.is_int for a in call.args if hasattr(a, "type"))
    return True


def safe_everywhere(blocks) -> bool:
    """Whether running ``blocks`` in a lane whose predicate says not to is harmless:
    straight-line code (and branches of it) of ops that cannot fail on values."""
    stack = list(blocks)
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            if isinstance(v, (While, Function)):
                return False
            if isinstance(v, Call):
                if not isinstance(v.callee, Op) or not _op_is_safe(v.callee, v):
                    return False
            if isinstance(v, If):
                stack.extend((v.then_block, v.else_block))
    return True


# -- branches ---------------------------------------------------------------------------------
def batch_if(bt, binding) -> None:
    node: If = binding.value
    cond, cond_bd = bt.atom(node.cond)
    blocks = (node.then_block, node.else_block)
    t = binding.var.type
    if not cond_bd and _unbatched_inputs(bt, binding) and not effects_in(blocks, bt.module) \
            and not has_function(t):
        return bt.copy(binding)
    if cond_bd:
        if not safe_everywhere(blocks) or has_function(t):
            raise CannotBatch("a branch on a batched predicate that is not safe in every lane")
        results = []
        for block in blocks:  # both branches, in every lane
            bt.bindings(block.bindings)
            results.append(bt.atom(block.result))
        (a, abd), (b_, bbd) = results
        out = _select(bt, cond, a, abd, b_, bbd, t)
        if isinstance(out, Var):
            out = bt.builder.rename_last(out, binding.var.name)
        return bt.set(binding.var, out, full_bd(t))
    b = bt.builder
    built = []
    for block in blocks:
        b.begin_block()
        bt.bindings(block.bindings)
        res, bd = bt.atom(block.result)
        built.append((b.end_block(res), bd))
    want = join(built[0][1], built[1][1])
    fixed = []
    for block, bd in built:
        if bd != want:  # reopen the block to broadcast its result to the joined batching
            b.begin_block()
            b.bindings.extend(block.bindings)
            res = bt.to_bd(block.result, t, bd, want)
            block = b.end_block(res)
        fixed.append(block)
    out = b.emit(If(cond, fixed[0], fixed[1]), binding.var.name)
    bt.set(binding.var, out, want)


def _unbatched_inputs(bt, binding) -> bool:
    for v in free_vars_of(binding.value):
        if any_batched(bt.bds[v]) or has_function(v.type):
            return False
    return True


def _select(bt, cond, a, abd, b, bbd, t):
    """where(cond, a, b) per array of a value of lane type ``t`` (cond batched: (B,))."""
    if isinstance(t, TupleType):
        fa, fb = bt.fields(a, t), bt.fields(b, t)
        return Tuple([_select(bt, cond, x, xb, y, yb, f)
                      for x, xb, y, yb, f in zip(fa, abd, fb, bbd, t.fields)])
    c = cond
    if t.ndim:
        c = bt.call(ops.expand_dims, [cond], axis=tuple(range(1, 1 + t.ndim)))
    out = bt.call(ops.where, [c, a, b])
    if out.type.shape != (bt.size, *t.shape):  # both unbatched scalars broadcast already
        out = bt.call(ops.broadcast_to, [out], shape=(bt.size, *t.shape))
    return out


# -- loops ------------------------------------------------------------------------------------
def _parts(bt, atom, bd, n: int):
    """The ``n`` carried (atom, batching) pairs of a loop body's result."""
    if n == 1:
        return [(atom, bd)]
    return list(zip(bt.fields(atom, _type(atom)), bd))


def _type(atom):
    if isinstance(atom, Tuple):
        return TupleType([_type(f) for f in atom.fields])
    return atom.type


def batch_while(bt, binding) -> None:
    node: While = binding.value
    lvs = list(node.loop_vars)
    inits = [bt.atom(i) for i in node.init]
    blocks = (node.cond, node.body)
    if _unbatched_inputs(bt, binding) and not effects_in(blocks, bt.module) and not any(
            has_function(v.type) for v in lvs):
        return bt.copy(binding)
    n = len(lvs)
    res = node.body.result
    out_atoms = list(res.fields) if n > 1 and isinstance(res, Tuple) else None
    same = [out_atoms is not None and out_atoms[i] is lv or n == 1 and res is lv
            for i, lv in enumerate(lvs)]
    bds = [join(bd, _functions_bd(v.type)) for (_, bd), v in zip(inits, lvs)]
    frozen = False  # the predicate is batched: lanes are frozen when done
    b = bt.builder
    for _attempt in range(2 * n + 4):
        mark = bt.mark()
        new_lvs = [Var(v.name, batched_type(v.type, bd, bt.size)) for v, bd in zip(lvs, bds)]
        for v, nv, bd in zip(lvs, new_lvs, bds):
            bt.set(v, nv, bd)
        b.begin_block()
        bt.bindings(node.cond.bindings)
        cond, cond_bd = bt.atom(node.cond.result)
        if cond_bd and not frozen:
            bt.restore(mark)
            if not safe_everywhere(blocks) or any(
                    has_function(v.type) for v, s in zip(lvs, same) if not s):
                raise CannotBatch("a loop on a batched predicate whose body is not safe in "
                                  "every lane, or that carries a stack")
            frozen = True
            bds = [bd if s else full_bd(v.type) for v, bd, s in zip(lvs, bds, same)]
            continue
        if frozen:
            any_lane = bt.call(ops.reduction.any, [cond], axis=None, keepdims=False)
            cond_block = b.end_block(any_lane)
            b.begin_block()
            pred = cond  # each lane's predicate (the condition block's values reach the body)
        else:
            cond_block = b.end_block(cond)
            b.begin_block()
        bt.bindings(node.body.bindings)
        body_atom, body_bd = bt.atom(res)
        parts = _parts(bt, body_atom, body_bd, n)
        grown = [join(bd, pbd) for bd, (_, pbd) in zip(bds, parts)]
        if grown != bds:  # the body batches a carry: carry it batched from the start
            bt.restore(mark)
            bds = grown
            continue
        outs = []
        for v, nv, bd, (atom, pbd), s in zip(lvs, new_lvs, bds, parts, same):
            atom = bt.to_bd(atom, v.type, pbd, bd)
            if frozen and not s:
                atom = _select(bt, pred, atom, bd, nv, bd, v.type)
            outs.append(atom)
        body_block = b.end_block(outs[0] if n == 1 else Tuple(outs))
        init = [bt.to_bd(a, v.type, ibd, bd) for (a, ibd), v, bd in zip(inits, lvs, bds)]
        loop = b.emit(While(new_lvs, init, cond_block, body_block), binding.var.name)
        return bt.set(binding.var, loop, bds[0] if n == 1 else tuple(bds))
    raise CannotBatch("the batching of a loop's carry does not settle")


def _functions_bd(t):
    """Function values and stacks are always batched; arrays start unbatched."""
    if isinstance(t, TupleType):
        return tuple(_functions_bd(f) for f in t.fields)
    return not isinstance(t, TensorType)


# -- the loop over lanes ------------------------------------------------------------------------
def _leaves(t, path=()):
    if isinstance(t, TupleType):
        out = []
        for i, f in enumerate(t.fields):
            out.extend(_leaves(f, (*path, i)))
        return out
    if not isinstance(t, TensorType):
        raise CannotBatch(f"a loop over lanes cannot return a value of type {t!r}")
    return [(path, t)]


def _leaf_atom(bt, atom, path):
    for i in path:
        atom = atom.fields[i] if isinstance(atom, Tuple) else bt.builder.emit(
            TupleGetItem(atom, i))
    return atom


def _assemble(t, values, path=()):
    if isinstance(t, TupleType):
        return Tuple([_assemble(f, values, (*path, i)) for i, f in enumerate(t.fields)])
    return values[path]


def lane_loop(bt, free, emit, out_type, name: str):
    """Run ``emit(copier)`` (which copies lane code with the copier's substitution and
    returns its result atom, of type ``out_type``) once per lane, with each variable
    of ``free`` bound to its lane; returns the batched result (every array batched)."""
    b, size = bt.builder, bt.size
    leaves = _leaves(out_type)
    i64 = np.dtype(np.int64)
    j = Var("lane", TensorType((), "i64"))
    bufs = [Var(f"{name}_lanes", TensorType((size, *t.shape), t.dtype)) for _, t in leaves]
    init = [Constant(np.int64(0))] + [
        b.call(ops.zeros, [], {"shape": (size, *t.shape), "dtype": t.dtype}) for _, t in leaves]
    if isinstance(size, str):  # a symbolic lane count: counted when the program runs
        count = b.call(ops.sum, [b.call(ops.ones, [], {"shape": (size,), "dtype": "i64"})])
    else:
        count = Constant(np.asarray(size, i64))
    b.begin_block()
    more = b.call(ops.less, [j, count])
    cond = b.end_block(more)
    b.begin_block()
    sub = {}
    for v in free:
        atom, bd = bt.sub[v], bt.bds[v]
        sub[v] = bt.lane(atom, v.type, bd, j)
    copier = Mutator(bt.module)
    copier.builder = b
    copier.subst = sub
    result = emit(copier)
    written = [b.call(ops.index_set, [buf, _leaf_atom(bt, result, path), j],
                      {"key": (ArrayIndex(0),)}) for buf, (path, _) in zip(bufs, leaves)]
    nxt = b.call(ops.add, [j, Constant(np.int64(1))])
    body = b.end_block(Tuple([nxt, *written]))
    loop = b.emit(While([j, *bufs], init, cond, body), f"{name}_loop")
    values = {path: b.emit(TupleGetItem(loop, k + 1), name)
              for k, (path, _) in enumerate(leaves)}
    return _assemble(out_type, values)


def function_lanes(bt, binding) -> None:
    """A closure whose body cannot be batched: batched parameters, and a body that
    runs the original one lane by lane."""
    fn: Function = binding.value
    b = bt.builder
    params = [Var(p.name, batched_type(p.type, full_bd(p.type), bt.size)) for p in fn.params]
    for old, new in zip(fn.params, params):
        bt.set(old, new, full_bd(old.type))
    free = list(fn.params) + free_vars_of(binding.value)
    b.begin_block()

    def emit(copier):
        copier.emit_bindings(fn.body.bindings)
        return copier.atom(fn.body.result)

    res = lane_loop(bt, free, emit, fn.ret_type, "result")
    body = b.end_block(res)
    ret = batched_type(fn.ret_type, full_bd(fn.ret_type), bt.size)
    out = b.emit(Function(params, body, ret, fn.attrs), binding.var.name)
    bt.set(binding.var, out, True)


__all__ = ["batch_if", "batch_while", "function_lanes", "lane_loop", "safe_everywhere"]
