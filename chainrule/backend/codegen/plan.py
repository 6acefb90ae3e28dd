"""The analysis behind code generation, per block: where each value dies (``del``),
which buffers an op may write its result into (``out=``, ``+=``), which transposes
fold into a matmul (``x @ W.T``). Used by ``codegen.py`` and ``codegen/split.py``."""

from __future__ import annotations

from ... import ops
from ...ir.nodes import Block, Call, Constant, Function, If, Tuple, Var, While
from ...ir.op import Op
from ...ir.types import TensorType
from ...ir.visitor import atoms_of, vars_used
from ...ops.indexing import advanced
from ..execution import Liveness


def _flat_vars(x) -> list[Var]:
    if type(x) is Var:
        return [x]
    if type(x) is Tuple:
        return [v for f in x.fields for v in _flat_vars(f)]
    return []


def _uses(value) -> set:
    """Variables a binding value reads, inside its nested blocks too."""
    t = type(value)
    if t is Call:  # the common case first, without building the list of atoms
        out = {a for a in value.args if type(a) is Var}
        if type(value.callee) is Var:
            out.add(value.callee)
        for a in value.args:
            if type(a) is Tuple:
                out.update(_flat_vars(a))
        return out
    if t is If or t is While or t is Function:
        return set(vars_used(value))
    return {a for a in atoms_of(value) if type(a) is Var}


def block_uses(block: Block) -> set:
    out = set(_flat_vars(block.result))
    for b in block.bindings:
        out |= _uses(b.value)
    return out


def _op_call(value, op: Op | None = None) -> bool:
    return (type(value) is Call and isinstance(value.callee, Op)
            and (op is None or value.callee is op))


def _fresh_result(call) -> bool:
    """The op never returns (a view of) an operand: reading a buffer there does not
    alias it (an ``index`` with an index array copies, as NumPy's advanced indexing)."""
    op = call.callee
    return not op.aliases or (op is ops.index and advanced(call.attrs.get("key", ())))


def _bufferable(t) -> bool:
    if type(t) is not TensorType:
        return isinstance(t, TensorType) and t.is_static and t.ndim >= 1
    shape = t.shape  # the common case, without the properties' calls
    return bool(shape) and all(isinstance(d, int) for d in shape)


class Plan:
    """Per-block decisions: what to delete where, which buffers to reuse, which
    transposes to fold into matmuls."""

    __slots__ = ("dels", "start_dels", "last", "owned", "inline", "uses", "carried")

    def __init__(self, n: int):
        self.uses: list[set] = []  # per binding (and the result): the variables read
        self.dels: list[list[Var]] = []
        self.start_dels: list[Var] = []
        self.last: dict[Var, int] = {}
        self.owned: set[Var] = set()
        self.inline: dict[Var, object] = {}  # a folded transpose -> what it transposes
        self.carried: dict = {}  # owned loop variables (carried_buffers)


def plan_block(block: Block, extra, exclude, keep_at_end, inplace: bool,
               carried: dict | None = None) -> Plan:
    """What to delete where in ``block``, which buffers to reuse (``inplace``), which
    transposes to fold into matmuls. ``carried``: for a loop body, the loop variables
    holding buffers of this function's own (``carried_buffers``), each to the variable
    the body carries into it."""
    bindings = block.bindings
    n = len(bindings)
    plan = Plan(n)
    inline = _inline_transposes(block)
    plan.inline = inline  # texts written when used: a name may change on the way
    uses = []
    for b in bindings:
        if b.var in inline:
            uses.append(set())
            continue
        s = _uses(b.value)
        if inline and not s.isdisjoint(inline):
            s = {inline.get(x, x) for x in s}
            s = {x for x in s if type(x) is Var}
        uses.append(s)
    uses.append(set(_flat_vars(block.result)))
    deletable = {b.var for b in bindings if b.var not in inline}
    deletable.difference_update(exclude)
    deletable.update(extra)
    live = Liveness([b.var for b in bindings], uses, deletable, keep_at_end, extra)
    plan.uses = uses
    plan.dels, plan.last, plan.start_dels = live.dels, live.last, live.never_used
    if inplace:
        plan.carried = carried or {}
        plan.owned = _owned(block, inline, uses, plan.carried)
    return plan


def _inline_transposes(block: Block) -> dict:
    """permute_dims of a 2-D array whose every use is a matmul operand: folded
    into the matmul as ``x @ W.T``."""
    perm = {}
    for b in block.bindings:
        v = b.value
        if (_op_call(v, ops.permute_dims) and len(v.args) == 1
                and type(v.args[0]) in (Var, Constant)
                and isinstance(v.args[0].type, TensorType) and v.args[0].type.ndim == 2
                and v.attrs.get("axes") in ((1, 0), [1, 0])):
            perm[b.var] = v.args[0]
    if not perm:
        return perm
    used = set()
    for b in block.bindings:
        v = b.value
        if _op_call(v, ops.matmul):
            for a in v.args:
                if type(a) is not Var:
                    for x in _flat_vars(a):
                        perm.pop(x, None)
                elif a in perm:
                    used.add(a)
            continue
        for x in _uses(v):
            perm.pop(x, None)
    for x in _flat_vars(block.result):
        perm.pop(x, None)
    return {p: src for p, src in perm.items() if p in used}


def _owned(block: Block, inline, uses, carried: dict) -> set:
    """Variables of this block holding a buffer that this function allocated and
    that nothing else can see: only read as operands of ops returning fresh arrays
    (and, in a loop body, the ``carried`` loop variables, whose new values may leave
    the body as what it carries into them)."""
    owned = set(carried)
    op_calls = []  # per binding: whether it calls an op
    bufferable: dict[int, bool] = {}  # by id of a type (a program has few distinct ones)
    for b in block.bindings:
        v = b.value
        is_op = type(v) is Call and isinstance(v.callee, Op)
        op_calls.append(is_op)
        if is_op and v.callee.fresh:
            t = b.var.type
            fits = bufferable.get(id(t))
            if fits is None:
                fits = bufferable[id(t)] = _bufferable(t)
            if fits:
                owned.add(b.var)
    if not owned:
        return owned
    for i, b in enumerate(block.bindings):
        v = b.value
        if inline and b.var in inline:
            continue
        if op_calls[i] and _fresh_result(v):
            for a in v.args:
                if type(a) is not Var:
                    owned.difference_update(_flat_vars(a))
            continue
        owned.difference_update(uses[i])
    owned.difference_update(uses[-1] - set(carried.values()))
    return owned


def carried_buffers(w: While) -> dict:
    """The loop variables of ``w`` that may be updated in place (a scan's stacked
    outputs, written a row per step): arrays read in the body only by ops that return
    fresh arrays, never read by the condition, each carried from a fresh array of the
    body that nothing else reads as a view and no other loop variable gets. Maps each
    to the body variable carried into it; the loop starts them from copies."""
    result = w.body.result
    fields = list(result.fields) if type(result) is Tuple else [result]
    if len(fields) != len(w.loop_vars):
        return {}
    cond_uses = block_uses(w.cond)
    candidates = {}
    for lv, new in zip(w.loop_vars, fields):
        if (type(new) is Var and new is not lv and fields.count(new) == 1
                and _bufferable(lv.type) and lv not in cond_uses
                and lv.type == new.type):
            candidates[lv] = new
    while candidates:  # drop those whose buffer the body may alias, until none is left
        uses = [_uses(b.value) for b in w.body.bindings] + [set(_flat_vars(result))]
        owned = _owned(w.body, {}, uses, candidates)
        kept = {lv: new for lv, new in candidates.items() if lv in owned and new in owned}
        if kept == candidates:
            return kept
        candidates = kept
    return {}
