"""``batch_loops``: a loop's weight-gradient accumulation as one contraction after it.

The reverse sweep of a loop accumulates the gradient of a value the loop reads,
``W_acc = W_acc + transpose(x_k) @ g_k`` at each step ``k``: ``x_k`` is a residual
the forward loop stored (popped from its stack), ``g_k`` is computed in the step.
A hundred (64x16) @ (16x64) products cost more than one (64x1600) @ (1600x64) on the
same numbers, so this pass pushes ``g_k`` on a stack of its own in the step (its
room allocated before the loop: the trip count is known then) and adds, after
the loop, one ``stack_contract`` of the stored residuals with the stacked values:
``sum_k transpose(x_k) @ g_k``, a single matrix product over the steps. The sum runs
in another order, so results change by rounding only.

It fires on a top-level ``while`` of a function (never one nested in another loop:
``checkpoint_every`` recomputes segments there) whose trip count is known when it
starts (it counts ``k`` down from a value to 0, as every reverse sweep does, or ``i``
up by one to a bound that does not change, as ``fori_loop`` and ``scan`` do), whose
cond and body are straight-line code (no nested loop or branch: binomial
checkpointing's reverse loop has both), and on each loop-carried accumulator ``acc``
that the loop reads only in ``acc + t``, where ``t`` (read nowhere else) is a sum of
products ``matmul(u, v)`` of 2-D operands (either maybe a ``permute_dims``), each
operand a residual popped from a stack the loop pops once per step, or a value of the
step (not one the loop only reads from outside). The stacks it adds may hold at most
as many bytes per step as the residual stacks the loop already pops, so batching at
most doubles what the sweep keeps, and each at most ``MAX_STEP_BYTES`` (16 KiB) per
step: larger steps' products are efficient already (no gain measured on 64 KiB steps).
Loop-carried values that become dead (a residual stack popped only for the
accumulation) are dropped from the loop.

It is a lowering: ``stack_contract`` has no derivative rules, so it runs on a program
about to run, never on one that is differentiated again. The numba backend runs it
before compiling a program whole (``backend.numba_backend.compile_loops``), where the
contraction reads the stacks' buffers in place: the gradient of the 100-step loop of
``benchmarks/fusion.py`` ran 10-17% faster. Generated NumPy code does not run it by
default: there, the residuals of small steps are linked cells that the kernel first
copies into one array, and the gradient measured 3-20% slower than the per-step
products (``Pipeline(["batch_loops"])`` applies it to any module).

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(xs: list[f64[2, 3]], n: i64, g0: f64[2, 3]) -> f64[3, 3]:
...     z = zeros(shape=(3, 3), dtype=f64)
...     k, s, g, acc = n, xs, g0, z
...     while True:
...         more = greater(k, 0)
...         if not more:
...             break
...         top = stack_pop(s)
...         x = top[0]
...         rest = top[1]
...         xt = permute_dims(x, axes=(1, 0))
...         term = matmul(xt, g)
...         acc_1 = add(acc, term)
...         g_1 = tanh(g)
...         k_1 = subtract(k, 1)
...         k, s, g, acc = k_1, rest, g_1, acc_1
...     r = (k, s, g, acc)
...     w = r[3]
...     return w
... ''')
>>> print(batch_loops(m))
def main(xs: list[f64[2, 3]], n: i64, g0: f64[2, 3]) -> f64[3, 3]:
    g_stack = stack_alloc(n, elem=f64[2, 3], slot='g')
    k, g, g_stack_1 = n, g0, g_stack
    while True:
        more = greater(k, 0)
        if not more:
            break
        g_1 = tanh(g)
        k_1 = subtract(k, 1)
        g_stack_2 = stack_push(g_stack_1, g)
        k, g, g_stack_1 = k_1, g_1, g_stack_2
    r = (k, g, g_stack_1)
    g_stack_3 = r[2]
    w = stack_contract(xs, g_stack_3, spec='ji,jk->ik', reads='tb', out=f64[3, 3])
    return w
<BLANKLINE>
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ... import ops
from ...errors import TypeInferenceError
from ...ir.nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from ...ir.op import REQUIRED
from ...ir.types import ListType, TensorType
from ...ir.visitor import atoms_of, nested_blocks, vars_used
from ...ops.common import define
from ...ops.stack import ROW_POOL, STACK_ALLOC, STACK_POP, STACK_POP_OR_ZERO, STACK_PUSH, RowStack
from ...ops.stack_schedule import LOOP_CHECKPOINT, REVOLVE_NEXT
from ..base import Pass, register_pass
from ..cleanup.dce import dce_function
from ..reverse.control import known_trips

I64 = TensorType((), "i64")
_POPS = (STACK_POP, STACK_POP_OR_ZERO)
# ops that mark a checkpointed loop (binomial checkpointing): never batched
_CHECKPOINTED = (LOOP_CHECKPOINT, REVOLVE_NEXT)
# Batching pays where one step's product is small enough for BLAS's call overhead to
# dominate it: the numba gradient of the 100-step loop ran 0.386 -> 0.332x hand-written
# NumPy with 4 KiB steps (16x32), 0.58 -> 0.50x with 8 KiB ones (16x64); with 64 KiB
# steps (64x128) no gain stood out of the noise (0.72-0.91x either way at load 3-5),
# for a 6.5 MB stack more
MAX_STEP_BYTES = 16384


# -- the op ------------------------------------------------------------------------------


def _spec_parts(spec: str):
    ins, arrow, out = spec.partition("->")
    parts = ins.split(",")
    if not arrow or len(parts) != 2:
        return None
    return parts[0], parts[1], out


def _contract_type(types, attrs):
    a, b = types
    if not all(isinstance(t, ListType) and isinstance(t.elem, TensorType) for t in (a, b)):
        raise TypeInferenceError(f"stack_contract: operands are stacks of arrays, got {a!r} "
                                 f"and {b!r}")
    spec, reads = attrs["spec"], attrs["reads"]
    parts = _spec_parts(spec) if isinstance(spec, str) else None
    if parts is None or not (isinstance(reads, str) and len(reads) == 2
                             and set(reads) <= {"t", "b"}):
        raise TypeInferenceError(f"stack_contract: spec must be 'ab,cd->ef' (one einsum term "
                                 f"per pair of elements) and reads two of 't'/'b', got "
                                 f"spec={spec!r}, reads={reads!r}")
    sa, sb, out = parts
    sizes: dict = {}
    for letters, t in ((sa, a.elem), (sb, b.elem)):
        if len(letters) != t.ndim or not letters.isalpha() or len(set(letters)) != t.ndim:
            raise TypeInferenceError(f"stack_contract: {letters!r} does not name the "
                                     f"{t.ndim} axes of {t!r} once each (spec {spec!r})")
        for c, d in zip(letters, t.shape):
            if sizes.setdefault(c, d) != d:
                raise TypeInferenceError(f"stack_contract: axis {c!r} is {sizes[c]} and {d} "
                                         f"(spec {spec!r}, {a!r}, {b!r})")
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise TypeInferenceError(f"stack_contract: output {out!r} of spec {spec!r} names an "
                                 f"axis twice or one no operand has")
    if a.elem.dtype != b.elem.dtype:
        raise TypeInferenceError(f"stack_contract: elements of one dtype, got {a!r}, {b!r}")
    result = TensorType(tuple(sizes[c] for c in out), a.elem.dtype)
    if attrs["out"] != result:
        raise TypeInferenceError(f"stack_contract: out={attrs['out']!r}, but spec {spec!r} "
                                 f"on {a!r} and {b!r} gives {result!r}")
    return result


def step_rows(s, read: str):
    """The elements of stack ``s`` in the order a loop's steps meet them, as one array
    (None for an empty stack): ``read='t'``, popped (top first); ``'b'``, pushed (bottom
    first). Rows of a ``RowStack`` are a view; linked cells are copied into a pooled
    buffer (memory the process already touched: a fresh one faults once per 4 KiB)."""
    if type(s) is RowStack:
        rows = s.rows[2][:s.depth]
        return None if not len(rows) else rows[::-1] if read == "t" else rows
    top_first = []
    while s is not None and type(s) is not RowStack:
        x, s = s
        top_first.append(x)
    if s is not None:  # cells pushed on a full RowStack: its rows are below them
        top_first.extend(s.rows[2][:s.depth][::-1])
    if not top_first:
        return None
    if read == "b":
        top_first.reverse()
    first = np.asarray(top_first[0])
    buf = ROW_POOL.take((len(top_first), *first.shape), first.dtype)[0]
    np.stack(top_first, out=buf)
    return buf


def contract_rows(a_rows, b_rows, spec: str):
    """``sum_k einsum(spec, a_rows[k], b_rows[k])`` over the shorter one's rows: one
    matrix product when the contracted axes lead both operands (``ji,jk->ik``), else
    ``tensordot`` or ``einsum`` on the stacked operands."""
    sa, sb, out = _spec_parts(spec)
    m = min(len(a_rows), len(b_rows))
    a_rows, b_rows = a_rows[:m], b_rows[:m]
    shared = [c for c in sa if c in sb and c not in out]
    free_a, free_b = [c for c in sa if c not in shared], [c for c in sb if c not in shared]
    if "".join(free_a + free_b) != out:
        return np.einsum(f"Z{sa},Z{sb}->{out}", a_rows, b_rows)
    axes_a = [0] + [1 + sa.index(c) for c in shared]
    axes_b = [0] + [1 + sb.index(c) for c in shared]
    lead = list(range(len(axes_a)))
    if axes_a == lead and axes_b == lead:
        rows = m * int(np.prod(a_rows.shape[1:len(lead)], dtype=np.int64))
        ka = int(np.prod(a_rows.shape[len(lead):], dtype=np.int64))
        kb = int(np.prod(b_rows.shape[len(lead):], dtype=np.int64))
        prod = a_rows.reshape(rows, ka).T @ b_rows.reshape(rows, kb)
        return prod.reshape(a_rows.shape[len(lead):] + b_rows.shape[len(lead):])
    return np.tensordot(a_rows, b_rows, axes=(axes_a, axes_b))


def _contract_kernel(a, b, spec, reads, out):
    ra, rb = step_rows(a, reads[0]), step_rows(b, reads[1])
    if ra is None or rb is None:  # an empty stack stands for zeros (tangents, cotangents)
        return np.zeros(out.shape, out.dtype.numpy)
    return contract_rows(ra, rb, spec)


STACK_CONTRACT = define(
    "stack_contract", _contract_type, _contract_kernel, 2,
    {"spec": REQUIRED, "reads": REQUIRED, "out": REQUIRED},
    internal=True, fresh=True, aliases=False,
    doc="stack_contract(a, b, spec, reads): sum over a loop's steps k of "
        "einsum(spec, a_k, b_k), where a_k is the element of stack a the k-th step meets: "
        "popped ('t': k from the top) or pushed ('b': k from the bottom); a missing element "
        "is zero. What batch_loops puts after a loop for its accumulation.")


# -- the pass ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Term:
    """One product ``matmul(u, v)`` of an accumulation, by the operands it stacks."""

    a: object  # ("pop", loop variable index) or ("step", Var)
    b: object
    spec: str
    var: Var  # the product's variable


def _fields(node: While) -> list:
    r = node.body.result
    return list(r.fields) if len(node.loop_vars) > 1 else [r]


def _is_int(c, value: int) -> bool:
    return type(c) is Constant and c.data.ndim == 0 and c.data == value


def counted_down(node: While, defs: dict | None = None) -> int | None:
    """The index of ``k`` when the loop runs ``while k > 0: k = k - 1`` (a reverse sweep):
    it then runs ``max(k0, 0)`` times, ``k0`` the initial ``k``."""
    if defs is None:
        defs = {b.var: b.value for b in node.body.bindings}
    cond = node.cond
    if len(cond.bindings) != 1 or cond.result is not cond.bindings[0].var:
        return None
    test = cond.bindings[0].value
    if not (type(test) is Call and test.callee is ops.greater and _is_int(test.args[1], 0)):
        return None
    k = test.args[0]
    if k not in node.loop_vars:
        return None
    at = node.loop_vars.index(k)
    step = defs.get(_fields(node)[at])
    if not (type(step) is Call and step.callee is ops.subtract and step.args[0] is k
            and _is_int(step.args[1], 1)):
        return None
    return at


def _straight(node: While) -> bool:
    """No nested loop, branch or function; no checkpointing op."""
    return not any(nested_blocks(b.value) or (type(b.value) is Call
                                               and b.value.callee in _CHECKPOINTED)
        for blk in (node.cond, node.body) for b in blk.bindings)


class _LoopFacts:
    """What one straight-line counted loop defines and reads."""

    def __init__(self, node: While):
        self.node = node
        self.lvs = list(node.loop_vars)
        self.fields = _fields(node)
        self.defs = {b.var: b.value for blk in (node.cond, node.body) for b in blk.bindings}
        self.reads: Counter = Counter()
        for blk in (node.cond, node.body):
            for b in blk.bindings:
                self.reads.update(a for a in atoms_of(b.value) if type(a) is Var)
        self.reads.update(a for f in self.fields for a in atoms_of(f) if type(a) is Var)
        self.reads.update(a for a in atoms_of(node.cond.result) if type(a) is Var)

    def call_of(self, v, op):
        value = self.defs.get(v)
        return value if type(value) is Call and value.callee is op else None

    def source(self, y):
        """("pop", q) for a residual popped from loop variable ``q`` once per step,
        ("step", y) for a value of the step, None for one the loop only reads."""
        got = self.defs.get(y)
        if type(got) is TupleGetItem and got.index == 0:
            pop = self.defs.get(got.tuple_value)
            if type(pop) is Call and pop.callee in _POPS and pop.args[0] in self.lvs:
                q = self.lvs.index(pop.args[0])
                rest = self.defs.get(self.fields[q])
                if (type(rest) is TupleGetItem and rest.index == 1
                        and rest.tuple_value is got.tuple_value):
                    return ("pop", q)
        if y in self.defs or y in self.lvs:
            return ("step", y)
        return None

    def operand(self, x):
        """``x`` as (source, letters of its axes for the product's "ij"/"jk" names)."""
        perm = self.call_of(x, ops.permute_dims)
        axes = (0, 1)
        if perm is not None and perm.args[0].type.ndim == 2:
            axes, x = tuple(perm.attrs["axes"]), perm.args[0]
        return self.source(x), axes

    def term(self, t):
        mm = self.call_of(t, ops.matmul)
        if mm is None or self.reads[t] != 1 or any(
                not (isinstance(a.type, TensorType) and a.type.ndim == 2
                     and a.type.dtype == t.type.dtype) for a in mm.args):
            return None
        letters = []
        for x, names in zip(mm.args, ("ij", "jk")):
            src, axes = self.operand(x)
            if src is None:
                return None
            own = [""] * 2
            for i, ax in enumerate(axes):
                own[ax] = names[i]
            letters.append((src, "".join(own)))
        (sa, la), (sb, lb) = letters
        return _Term(sa, sb, f"{la},{lb}->ik", t)

    def terms(self, t) -> list | None:
        """The products summed into ``t``, each read only there; None if not all are."""
        add = self.call_of(t, ops.add)
        if add is not None and self.reads[t] == 1 and all(type(a) is Var for a in add.args):
            parts = [self.terms(a) for a in add.args]
            return None if None in parts else parts[0] + parts[1]
        one = self.term(t)
        return None if one is None else [one]

    def accumulation(self, p: int):
        """The products ``acc`` (loop variable ``p``) accumulates, or None."""
        acc, nxt = self.lvs[p], self.fields[p]
        if not (isinstance(acc.type, TensorType) and acc.type.dtype.numpy.kind == "f"
                and acc.type.is_static and type(nxt) is Var and self.reads[nxt] == 1
                and self.reads[acc] == 1):
            return None
        add = self.call_of(nxt, ops.add)
        if add is None or acc not in add.args:
            return None
        t = add.args[1] if add.args[0] is acc else add.args[0]
        terms = self.terms(t) if type(t) is Var and t is not acc else None
        if not terms or any(tm.var.type != acc.type for tm in terms):
            return None
        return terms

    def popped_bytes(self) -> int:
        return sum(_nbytes(v.type.elem) for v in self.lvs if isinstance(v.type, ListType)
                   and any(type(c) is Call and c.callee in _POPS and c.args[0] is v
                           for c in self.defs.values()))


def _nbytes(t) -> int:
    if isinstance(t, TensorType) and t.is_static:
        return t.dtype.numpy.itemsize * int(np.prod(t.shape, dtype=np.int64))
    return 0


def _needed(node: While, roots) -> set:
    """The variables of ``node``'s cond and body that computing ``roots`` reads."""
    defs = {b.var: b.value for blk in (node.cond, node.body) for b in blk.bindings}
    seen: set = set()
    todo = [a for r in roots for a in atoms_of(r) if type(a) is Var]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in defs:
            todo.extend(a for a in atoms_of(defs[v]) if type(a) is Var)
    return seen


def _prune(node: While, live: set) -> tuple[While, list[int]]:
    """``node`` without the loop-carried values nothing needs (``live``: the indices
    read after the loop); returns it and the kept indices."""
    lvs, fields = list(node.loop_vars), _fields(node)
    live = set(live)
    while True:
        needed = _needed(node, [node.cond.result] + [fields[i] for i in live])
        more = {i for i, v in enumerate(lvs) if v in needed} - live
        if not more:
            break
        live |= more
    kept = sorted(live)
    if len(kept) < 2 or len(kept) == len(lvs):  # a loop of one variable has no tuple
        return node, list(range(len(lvs)))
    body = Block(node.body.bindings, Tuple([fields[i] for i in kept]))
    return While([lvs[i] for i in kept], [node.init[i] for i in kept], node.cond, body), kept


def _zero(x, top_defs: dict) -> bool:
    """Whether ``x`` is zeros (an accumulator's usual start)."""
    if type(x) is Constant:
        return not np.any(x.data)
    value = top_defs.get(x)
    return type(value) is Call and value.callee is ops.zeros


def _trips(node: While, facts: _LoopFacts, name: str, pre: list):
    """The atom of the loop's trip count (bindings computing it go on ``pre``), or None."""
    k = counted_down(node, facts.defs)
    if k is not None:
        return node.init[k]
    bounds = known_trips(node)
    if bounds is None:
        return None
    trips = Var(f"{name}_rows", I64)
    pre.append(Binding(trips, Call(ops.subtract, [bounds[1], bounds[0]])))
    return trips


def _reads_after(loop_var: Var, later: list, result) -> dict | None:
    """Positions in ``later`` of ``loop_var[i]`` bindings, by ``i``; None when the loop's
    value is read any other way."""
    out: dict = {}
    for j, b in enumerate(later):
        v = b.value
        if type(v) is TupleGetItem and v.tuple_value is loop_var:
            out.setdefault(v.index, []).append(j)
        elif loop_var in vars_used(v):
            return None
    return None if loop_var in atoms_of(result) else out


def _batch_loop(bs: list, i: int, result):
    """Batch the accumulations of the loop ``bs[i]``: the new bindings and where to go on
    scanning them, or None when it does not fire."""
    b = bs[i]
    node: While = b.value
    if len(node.loop_vars) < 2 or not _straight(node):
        return None
    top_defs = {x.var: x.value for x in bs[:i]}
    if any(type(top_defs.get(a)) is Call and top_defs[a].callee in _CHECKPOINTED
           for a in node.init):
        return None
    later = bs[i + 1:]
    reads = _reads_after(b.var, later, result)
    if reads is None:
        return None
    facts = _LoopFacts(node)
    pre: list = []
    accs = {p: t for p in reads if (t := facts.accumulation(p))}
    trips = _trips(node, facts, b.var.name, pre) if accs else None
    if trips is None:
        return None
    steps = list(dict.fromkeys(src[1] for terms in accs.values() for tm in terms
                               for src in (tm.a, tm.b) if src[0] == "step"))
    extra = [_nbytes(y.type) for y in steps]
    if 0 in extra or sum(extra) > facts.popped_bytes() or max(extra) > MAX_STEP_BYTES:
        return None  # a symbolic shape, more memory than the residuals take, large steps
    keep = [p for p in range(len(node.loop_vars)) if p not in accs]
    lvs = [node.loop_vars[p] for p in keep]
    init = [node.init[p] for p in keep]
    fields = [facts.fields[p] for p in keep]
    pushes, at = [], {}
    for y in steps:
        kind = ListType(y.type)
        alloc, carried, pushed = (Var(f"{y.name}_stack", kind) for _ in range(3))
        pre.append(Binding(alloc, Call(STACK_ALLOC, [trips], {"elem": y.type, "slot": y.name})))
        pushes.append(Binding(pushed, Call(STACK_PUSH, [carried, y])))
        at[y] = len(lvs)
        lvs.append(carried)
        init.append(alloc)
        fields.append(pushed)
    loop = While(lvs, init, node.cond, Block(node.body.bindings + tuple(pushes), Tuple(fields)))
    moved = {p: keep.index(p) for p in reads if p in keep}
    loop, kept = _prune(loop, set(moved.values()) | set(at.values()))
    out_var = Var(b.var.name, loop.result_type)
    post = []
    stacks = {}
    for y in steps:
        stacks[y] = Var(f"{y.name}_stack", ListType(y.type))
        post.append(Binding(stacks[y], TupleGetItem(out_var, kept.index(at[y]))))
    dropped = set()
    for p, terms in accs.items():
        acc_type = node.loop_vars[p].type
        first, *others = reads[p]
        final = later[first].var
        zero = _zero(node.init[p], top_defs)
        total = None if zero else node.init[p]
        for k, tm in enumerate(terms):
            args = [node.init[s[1]] if s[0] == "pop" else stacks[s[1]] for s in (tm.a, tm.b)]
            reads_of = "".join("t" if s[0] == "pop" else "b" for s in (tm.a, tm.b))
            part = final if zero and len(terms) == 1 else Var(tm.var.name, acc_type)
            post.append(Binding(part, Call(STACK_CONTRACT, args, {
                "spec": tm.spec, "reads": reads_of, "out": acc_type})))
            if total is None:
                total = part
                continue
            var = final if k == len(terms) - 1 else Var(f"{final.name}_partial", acc_type)
            post.append(Binding(var, Call(ops.add, [total, part])))
            total = var
        dropped.add(first)
        for j in others:  # the same final read twice (no cse ran): the same value
            later[j] = Binding(later[j].var, final)
    rest = []
    for j, x in enumerate(later):
        if j in dropped:
            continue
        v = x.value
        if type(v) is TupleGetItem and v.tuple_value is b.var:
            x = Binding(x.var, TupleGetItem(out_var, kept.index(moved[v.index])))
        rest.append(x)
    head = bs[:i] + pre + [Binding(out_var, loop)] + post
    return head + rest, len(head)


def _calls(fn: Function, names: set) -> bool:
    """Whether ``fn`` calls one of the functions ``names`` (checkpointed segments: a
    program with ``checkpoint_every`` is left alone whole, its tail loop included)."""
    todo = [fn.body]
    while todo:
        block = todo.pop()
        for b in block.bindings:
            if type(b.value) is Call and getattr(b.value.callee, "name", None) in names \
                    and type(b.value.callee) is GlobalVar:
                return True
            todo.extend(nested_blocks(b.value))
    return False


def batch_function(fn: Function) -> Function:
    """``fn`` with the accumulations of its top-level loops batched (see the module
    docstring); the same object when none fires."""
    bs = list(fn.body.bindings)
    i, changed = 0, False
    while i < len(bs):
        done = _batch_loop(bs, i, fn.body.result) if type(bs[i].value) is While else None
        if done is None:
            i += 1
            continue
        (bs, i), changed = done, True
    if not changed:
        return fn
    return dce_function(Function(fn.params, Block(bs, fn.body.result), fn.ret_type, fn.attrs))


class BatchLoops(Pass):
    """Accumulations ``acc + x_k^T @ g_k`` of counted loops as one contraction after the
    loop, over stacks of the step's values (see the module docstring)."""

    name = "batch_loops"

    def run(self, module: Module) -> Module:
        marked = {n for n, f in module.functions.items() if f.attrs.get("checkpoint")}
        funcs = {name: fn if name in marked or _calls(fn, marked) else batch_function(fn)
                 for name, fn in module.functions.items()}
        if all(funcs[n] is f for n, f in module.functions.items()):
            return module
        return Module(funcs, module.meta)


register_pass(BatchLoops)


def batch_loops(module: Module) -> Module:
    """Run the ``batch_loops`` pass on ``module`` (the same object when it does not fire)."""
    return BatchLoops()(module)
