"""Forward mode as an IR pass: dual numbers (seeds 001 and 002).

``jvp(module, "f")`` adds ``f_jvp(primals..., tangents...) -> (result,
result_tangent)``, with one tangent parameter ``<p>_dot`` per float
parameter. Each binding is copied, followed by its tangent, computed by the
op's JVP rule (one linear map per operand, applied to the non-zero
tangents). A call of a module function ``g`` becomes a call of ``g_jvp``, or
of ``g_jvp_wrt_<positions>`` when only some of its tangents are non-zero.

A zero tangent is a symbolic zero (an absent message, ``adjoint.py``): no
rule runs for a binding whose operand tangents are all zero, no map for a
zero operand, and a zeros array is made only where a value must exist (a
loop carry or branch result that varies on one side, a returned tangent).
Loops carry tangents only for the loop variables that can vary (a fixed
point over the body); see docs/ad_passes.md, "Symbolic zeros".
"""

from __future__ import annotations

from ...emit.trace import Trace
from ...errors import GradientError, NoRuleError
from ...ir.builder import Builder
from ...ir.collector import collector_paused
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
from ...ir.types import FuncType, TensorType, TupleType, has_float
from ...ir.visitor import Mutator, block_free_vars, nested_blocks, substitute_vars, vars_used
from ...rules import JVP, has_jvp
from ..ad.adjoint import Adjoints
from ..ad.rule_templates import new_templates
from ..base import OptionsPass, register_pass
from ..reverse.ops import arg_type_of
from .closures import STACK_FORWARD, closure_call_forward, dual_type, function_forward, has_function
from .ops import _op_forward


def jvp_type(fn: Function, wrt=None) -> FuncType:
    """The type of ``fn``'s jvp: its parameters, then a tangent for each float one (or
    for those at the positions ``wrt``), returning ``(result, result tangent)``."""
    if wrt is None:
        return dual_type(fn.type)
    params = [p.type for p in fn.params]
    return FuncType(params + [dual_type(params[i]) for i in wrt],
                    TupleType([fn.ret_type, dual_type(fn.ret_type)]))


def _float_positions(fn: Function) -> tuple:
    return tuple(i for i, p in enumerate(fn.params) if has_float(p.type))


class _Context:
    def __init__(self, module: Module):
        self.module = module
        self.generated: dict[str, Function] = {}
        self.types: dict[str, FuncType] = {}
        # each generated loop -> how many of its loop variables are primal (for linearize)
        self.loop_splits: dict[Var, int] = {}
        self.named: dict[Var, Var] = {}  # a tangent the rules emitted -> it named <v>_dot
        # (function, positions with a tangent or None for every float one) -> its jvp's name
        self.names: dict[tuple, str] = {}
        self.zero_result: set[str] = set()  # generated jvps whose result tangent is zero
        # the JVP rules' recorded expansions (this run's: ad/rule_templates.py)
        self.templates = new_templates(JVP, module)

    def jvp_name(self, name: str, wrt=None, jname: str | None = None) -> str:
        """The jvp of module function ``name`` taking tangents for the float parameters
        at positions ``wrt`` only (None: all of them): the others are symbolic zeros, so
        a call passing zero tangents gets a version of ``name`` without their products
        (one per pattern of non-zero tangents, as JAX's jvp of a call does)."""
        fn = self.module[name]
        if wrt is not None and tuple(sorted(wrt)) == _float_positions(fn):
            wrt = None
        key = (name, None if wrt is None else tuple(sorted(wrt)))
        if key in self.names:
            return self.names[key]
        if jname is None:
            jname = f"{name}_jvp" if wrt is None else f"{name}_jvp_wrt" + (
                "".join(f"_{i}" for i in key[1]) or "_none")
            if jname in self.names.values():  # the entry's partial jvp took the plain name
                jname = f"{name}_jvp_full"
        if jname in self.module.functions:
            raise GradientError(f"the module already has a function named {jname}")
        self.names[key] = jname
        self.types[jname] = jvp_type(fn, key[1])
        self.generated[jname] = None
        sweep = _ForwardSweep(self, fn, None if wrt is None else set(key[1]))
        with sweep.trace:  # rules may trace (custom rules): nest under this trace
            self.generated[jname] = substitute_vars(sweep.run(), self.named)
        if sweep.zero_result:
            self.zero_result.add(jname)
        return jname


def callees(block) -> set:
    """The callees of the calls in ``block`` (nested blocks included)."""
    out: set = set()
    add = out.add
    stack = [block]
    while stack:
        for b in stack.pop().bindings:
            value = b.value
            if type(value) is Call:  # the common case first: no nested block
                add(value.callee)
            else:
                stack.extend(nested_blocks(value))
    return out


class _ForwardSweep:
    def __init__(self, ctx: _Context, fn: Function, wrt=None):
        self.wrt = wrt  # parameter positions with a tangent parameter (None: every float)
        self.ctx = ctx
        self.fn = fn
        self.trace = Trace(builder=Builder(ctx.module, ctx.types,
                                           temp_start=len(fn.body.bindings)))
        self.b = self.trace.builder
        self.adj = Adjoints(self.trace)
        self.tangents: dict[Var, object] = {}  # absent: a symbolic zero (see Adjoints)
        self.closures: dict = {}  # a closure defined here -> its duals (forward/closures.py)
        self.zero_result = False
        # each distinct callee checked once (a long program calls a few ops many times)
        missing = sorted(c.name for c in callees(fn.body) if isinstance(c, Op)
                         and not has_jvp(c) and c not in STACK_FORWARD)
        if missing:
            raise NoRuleError(f"no JVP rule for: {', '.join(missing)} "
                              f"(register one with chainrule.rules.register_jvp)")

    def tangent(self, atom):
        if isinstance(atom, Var):
            return self.tangents.get(atom)
        if isinstance(atom, Tuple):
            parts = tuple(self.tangent(f) for f in atom.fields)
            return None if all(p is None for p in parts) else parts
        return None

    def run(self) -> Function:
        fn, b = self.fn, self.b
        params = [Var(p.name, p.type) for p in fn.params]
        moving = [p for i, p in enumerate(fn.params)
                  if has_float(p.type) and (self.wrt is None or i in self.wrt)]
        dots = [Var(f"{p.name}_dot", dual_type(p.type)) for p in moving]
        b.params = params + dots
        copy = self.copy = Mutator(self.ctx.module)
        copy.builder = b
        for old, new in zip(fn.params, params):
            copy.subst[old] = new
        for p, d in zip(moving, dots):
            self.tangents[p] = d
        self.bindings(fn.body.bindings)
        result = copy.atom(fn.body.result)
        dresult = self.new_tangent(fn.body.result)
        # the result's tangent is returned: a zero one becomes an array here, once
        self.zero_result = dresult is None and isinstance(fn.ret_type, TensorType)
        dresult = self.adj.materialize(dresult, fn.ret_type)
        return b.finish_function(Tuple([result, dresult]))

    def bindings(self, bindings) -> None:
        for binding in bindings:
            value = binding.value
            if (type(value) is Call and type(value.callee) is Op
                    and value.callee not in STACK_FORWARD):
                _op_forward(self, binding)  # _call_forward's common case, dispatched here
                continue
            handler = _FORWARD.get(type(value))
            if handler is None:
                raise GradientError(f"{binding.var.name}: forward mode through "
                                    f"{type(binding.value).__name__} is not supported")
            handler(self, binding)

    def has_tangent_inputs(self, blocks, bound=()) -> bool:
        return any(v in self.tangents for v in block_free_vars(blocks, bound))

    def new_tangent(self, atom):
        return self.tangent(atom)

    def copy_binding(self, binding: Binding):
        self.copy.emit_bindings([binding])
        return self.copy.atom(binding.var)

    def set_tangent(self, old: Var, msg, new: Var, start: int | None = None) -> None:
        """Record a tangent; a variable the rule just emitted is named ``<v>_dot``."""
        if msg is None:
            return
        if (start is not None and type(msg) is Var and type(old.type) is TensorType
                and msg not in self.ctx.named):
            frame = self.b.bindings
            if len(frame) > start and frame[-1].var is msg:
                # the rule's last binding, which nothing reads yet: named at once
                msg = self.b.rebind(len(frame) - 1, f"{new.name}_dot")
            elif any(b.var is msg for b in frame[start:]):
                self.ctx.named[msg] = Var(f"{new.name}_dot", msg.type)
        self.tangents[old] = msg


def _call_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    call = binding.value
    callee = call.callee
    if type(callee) is Op or isinstance(callee, Op):
        stack = STACK_FORWARD.get(callee)  # the stacks of reverse-mode loops
        return _op_forward(sweep, binding) if stack is None else stack(sweep, binding)
    tangents = [sweep.tangent(a) for a in call.args]
    if isinstance(callee, GlobalVar) and (any(t is not None for t in tangents) or (
            has_function(sweep.ctx.module[callee.name].ret_type))):
        fn = sweep.ctx.module[callee.name]
        # only the non-zero tangents are passed: the callee's jvp for that pattern
        wrt = [i for i, (t, p) in enumerate(zip(tangents, fn.params))
               if t is not None and has_float(p.type)]
        jname = sweep.ctx.jvp_name(callee.name, wrt)
        args = [sweep.copy.atom(a) for a in call.args]
        dargs = [sweep.adj.materialize(tangents[i], fn.params[i].type) for i in wrt]
        pair = sweep.b.emit(Call(GlobalVar(jname), args + dargs), f"{binding.var.name}_jvp")
        new = sweep.b.emit(TupleGetItem(pair, 0), binding.var.name)
        sweep.copy.subst[binding.var] = new
        if jname not in sweep.ctx.zero_result:
            sweep.set_tangent(binding.var, sweep.b.emit(TupleGetItem(pair, 1)), new)
        return
    if isinstance(callee, Var):
        return closure_call_forward(sweep, binding)
    sweep.copy_binding(binding)  # a call of a module function with zero tangents


def _tuple_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    new = sweep.copy_binding(binding)
    sweep.set_tangent(binding.var, sweep.tangent(binding.value), new)


def _getitem_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    new = sweep.copy_binding(binding)
    t = sweep.tangent(binding.value.tuple_value)
    if t is None:
        return
    # the tuple may be a literal Tuple (a pullback's result), which has no .type
    parts = sweep.adj.split(t, arg_type_of(binding.value.tuple_value))
    sweep.set_tangent(binding.var, parts[binding.value.index], new)


def _assign_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    new = sweep.copy_binding(binding)
    sweep.set_tangent(binding.var, sweep.tangent(binding.value), new)


def _atom_vars(atom) -> list:
    if isinstance(atom, Tuple):
        return [v for f in atom.fields for v in _atom_vars(f)]
    return [atom] if isinstance(atom, Var) else []


def _nonzero_in(bindings, is_nonzero, local: set) -> None:
    """Add to ``local`` the variables of ``bindings`` whose tangent may be non-zero,
    given ``is_nonzero`` for the variables they read: a value depending on no
    non-zero tangent has a zero one (an over-approximation of what the sweep finds,
    so a value this calls zero surely is)."""
    for binding in bindings:
        value = binding.value
        if not has_float(binding.var.type):
            continue
        if isinstance(value, Call) and isinstance(value.callee, Op) and (
                not value.callee.differentiable and value.callee not in STACK_FORWARD):
            continue
        if isinstance(value, Call) and isinstance(value.callee, GlobalVar) and has_function(
                binding.var.type):
            local.add(binding.var)  # a returned closure always has its dual
        elif any(v in local or is_nonzero(v) for v in vars_used(value)):
            local.add(binding.var)


def _nonzero_result(sweep: _ForwardSweep, block, local: set) -> bool:
    _nonzero_in(block.bindings, sweep.tangents.__contains__, local)
    return any(v in local or v in sweep.tangents for v in _atom_vars(block.result))


def _carried_tangents(sweep: _ForwardSweep, node: While, init_tangents) -> list[bool]:
    """Which loop variables carry a tangent: those entering with a non-zero one, and,
    to a fixed point, those the body makes depend on one (JAX's fixpoint on the
    non-zero carries); the rest stay symbolic zeros, never a zeros array per
    iteration. Loop variables holding functions carry their duals whenever the loop
    is differentiated at all (a dual cannot be made up later)."""
    lvs = list(node.loop_vars)
    carried = [has_float(v.type) and (t is not None or has_function(v.type))
               for v, t in zip(lvs, init_tangents)]
    res = node.body.result
    parts = list(res.fields) if isinstance(res, Tuple) and len(lvs) > 1 else (
        [res] if len(lvs) == 1 else [res] * len(lvs))
    while True:
        local = {v for v, c in zip(lvs, carried) if c}
        _nonzero_in(node.cond.bindings, sweep.tangents.__contains__, local)
        _nonzero_in(node.body.bindings, sweep.tangents.__contains__, local)
        new = [c or (has_float(v.type) and any(
            u in local or u in sweep.tangents for u in _atom_vars(p)))
            for c, v, p in zip(carried, lvs, parts)]
        if new == carried:
            return carried
        carried = new


def _if_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    """Each branch computes its result and the result's tangent."""
    node: If = binding.value
    if not has_function(binding.var.type) and not (
            _nonzero_result(sweep, node.then_block, set())
            or _nonzero_result(sweep, node.else_block, set())):
        sweep.copy_binding(binding)  # a zero tangent in both branches: none is made
        return
    b, t = sweep.b, binding.var.type
    blocks = []
    for block in (node.then_block, node.else_block):
        b.begin_block()
        sweep.bindings(block.bindings)
        res = sweep.copy.atom(block.result)
        dres = sweep.adj.materialize(sweep.tangent(block.result), t)
        blocks.append(b.end_block(Tuple([res, dres])))
    pair = b.emit(If(sweep.copy.atom(node.cond), *blocks), f"{binding.var.name}_pair")
    new = b.emit(TupleGetItem(pair, 0), binding.var.name)
    sweep.copy.subst[binding.var] = new
    sweep.tangents[binding.var] = b.emit(TupleGetItem(pair, 1), f"{binding.var.name}_dot")


def _while_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    """The loop carries the tangents of its float loop variables too."""
    node: While = binding.value
    lvs = list(node.loop_vars)
    init_tangents = [sweep.tangent(i) for i in node.init]
    if all(t is None for t in init_tangents) and not sweep.has_tangent_inputs(
            [node.cond, node.body], lvs):
        sweep.copy_binding(binding)
        return
    carried = _carried_tangents(sweep, node, init_tangents)
    if not any(carried):
        sweep.copy_binding(binding)
        return
    b, adj = sweep.b, sweep.adj
    floats = [v for v, c in zip(lvs, carried) if c]
    new_lvs = [Var(v.name, v.type) for v in lvs]
    dots = [Var(f"{v.name}_dot", dual_type(v.type)) for v in floats]
    for old, new in zip(lvs, new_lvs):
        sweep.copy.subst[old] = new
    for old, d in zip(floats, dots):
        sweep.tangents[old] = d
    init = [sweep.copy.atom(i) for i in node.init]
    dinit = [adj.materialize(t, v.type) for t, v, c in zip(init_tangents, lvs, carried) if c]
    b.begin_block()
    sweep.bindings(node.cond.bindings)
    cond = b.end_block(sweep.copy.atom(node.cond.result))
    b.begin_block()
    sweep.bindings(node.body.bindings)
    res = node.body.result
    parts = list(res.fields) if isinstance(res, Tuple) and len(lvs) > 1 else (
        [res] if len(lvs) == 1 else list(adj.split(res, node.result_type)))
    nxt = [sweep.copy.atom(p) for p in parts]
    dnxt = [adj.materialize(sweep.tangent(p), v.type) for p, v, c in zip(parts, lvs, carried)
            if c]
    body = b.end_block(Tuple(nxt + dnxt))
    loop = b.emit(While(new_lvs + dots, init + dinit, cond, body), f"{binding.var.name}_loop")
    sweep.ctx.loop_splits[loop] = len(lvs)  # for linearize: which loop variables are primal
    finals = [b.emit(TupleGetItem(loop, i), v.name) for i, v in enumerate(lvs)]
    tangents = {v: b.emit(TupleGetItem(loop, len(lvs) + k), f"{v.name}_dot")
                for k, v in enumerate(floats)}
    full = [tangents.get(v) for v in lvs]
    if len(lvs) == 1:
        sweep.copy.subst[binding.var] = finals[0]
        sweep.tangents[binding.var] = full[0]
    else:
        sweep.copy.subst[binding.var] = b.emit(Tuple(finals), binding.var.name)
        sweep.tangents[binding.var] = tuple(full)


_FORWARD = {
    If: _if_forward,
    While: _while_forward,
    Call: _call_forward,
    Tuple: _tuple_forward,
    TupleGetItem: _getitem_forward,
    Var: _assign_forward,
    Constant: lambda sweep, binding: sweep.copy_binding(binding),
    Function: function_forward,
}


def jvp_with_loop_splits(module: Module, func: str = "main", wrt=None) -> tuple[Module, dict]:
    """``jvp`` and, for each loop it generated, the number of its primal loop
    variables (the rest carry tangents): what ``linearize`` unzips by."""
    ctx = _Context(module)
    fn = module[func]
    if wrt is not None:
        wrt = sorted({i for i in wrt if 0 <= i < len(fn.params) and has_float(fn.params[i].type)})
    # tangents for some parameters only: the others are constants of the derivative
    ctx.jvp_name(func, wrt, f"{func}_jvp")
    funcs = dict(module.functions)
    funcs.update(ctx.generated)
    splits = {ctx.named.get(v, v): n for v, n in ctx.loop_splits.items()}
    return Module(funcs, module.meta), splits


@collector_paused
def jvp(module: Module, func: str = "main", wrt=None) -> Module:
    """Add ``<func>_jvp(primals..., tangents...) -> (result, result_tangent)``, with
    a tangent parameter for each float parameter (or for those at the positions
    ``wrt``: the others are constants of the derivative).

    >>> import chainrule as cr
    >>> m = cr.parse('''
    ... def f(a: f64, b: f64) -> f64:
    ...     t1 = add(a, b)
    ...     t2 = multiply(2.0, a)
    ...     t3 = multiply(t2, b)
    ...     t4 = add(t1, t3)
    ...     return t4
    ... ''')
    >>> print(jvp(m, "f")["f_jvp"].params)
    (%a: f64, %b: f64, %a_dot: f64, %b_dot: f64)
    """
    return jvp_with_loop_splits(module, func, wrt)[0]


class JVPPass(OptionsPass):
    """Adds ``<func>_jvp`` (forward mode, dual numbers; see ``jvp``)."""

    name = "jvp"
    function = staticmethod(jvp)


register_pass(JVPPass)
