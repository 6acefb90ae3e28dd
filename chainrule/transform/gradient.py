"""Reverse-mode AD as an IR pass: the Relax ``Gradient`` pass, extended.

``gradient(module, "main")`` adds ``main_adjoint``, which computes the
original result and then, binding by binding in reverse, one adjoint
variable per forward variable, returning ``(result, (adjoints...))``.
Beyond the seed: any number of module functions (a call ``y = g(a)``
becomes ``y, pullback = g_vjp(a)`` forward and ``pullback(dy)`` backward,
so recursion works), non-scalar targets with a cotangent parameter
(``sens=True``), intermediate variables in ``require_grads``.

>>> import chainrule as cr
>>> m = cr.parse(open("examples/add_sum.py").read())
>>> print(gradient(m, "main"))  # doctest: +NORMALIZE_WHITESPACE
def main(x: f32[5, 5], y: f32[5, 5]) -> f32:
    lv0 = add(x, y)
    gv0 = sum(lv0)
    return gv0
<BLANKLINE>
def main_adjoint(x: f32[5, 5], y: f32[5, 5]) -> tuple[f32, tuple[f32[5, 5], f32[5, 5]]]:
    lv0 = add(x, y)
    gv0 = sum(lv0)
    gv0_adjoint = ones(shape=(), dtype=f32)
    lv0_adjoint = broadcast_to(gv0_adjoint, shape=(5, 5))
    x_adjoint = lv0_adjoint
    y_adjoint = lv0_adjoint
    return (gv0, (x_adjoint, y_adjoint))
"""

from __future__ import annotations

from collections import ChainMap

from ..errors import CompiledHigherOrderError, GradientError, NoRuleError
from ..frontend.tracer import Trace, Traced
from ..ir.builder import Builder
from ..ir.nodes import (
    Binding,
    Call,
    Constant,
    Function,
    GlobalVar,
    Module,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.op import Op, get_op
from ..ir.types import FuncType, TensorType, TupleType, Type, has_float
from ..ir.visitor import Mutator, vars_used
from ..rules import NONDIFFERENTIABLE, VJP
from .adjoint import Adjoints, prune

# -- relevance ---------------------------------------------------------------------------


def relevant_vars(bindings, sources, targets) -> set[Var]:
    """Variables that depend on a source and that a target depends on (the rest
    is the seed's "irrelevant parts")."""
    needs = set(sources)
    for b in bindings:
        if has_float(b.var.type) and any(v in needs for v in vars_used(b.value)):
            needs.add(b.var)
    reaches = {t for t in targets if isinstance(t, Var)}
    for b in reversed(bindings):
        if b.var in reaches:
            reaches.update(vars_used(b.value))
    return needs & reaches


def missing_rules(bindings, relevant) -> list[str]:
    missing = {}
    for b in bindings:
        v = b.value
        if b.var in relevant and isinstance(v, Call) and isinstance(v.callee, Op):
            name = v.callee.name
            if name not in VJP and name not in NONDIFFERENTIABLE:
                missing.setdefault(name, []).append(b.var.name)
    return [f"{op} (at {', '.join(vs[:3])}{'...' if len(vs) > 3 else ''})"
            for op, vs in missing.items()]


_STACK_OPS = ("stack_empty", "stack_push", "stack_pop", "stack_nonempty")


def _refuse_closures(bindings, relevant, mode: str) -> None:
    """Closures and stacks in the differentiated part: a derivative program of
    control flow, which this pass does not differentiate again (yet)."""
    for b in bindings:
        v = b.value
        if (relevant is None or b.var in relevant) and isinstance(v, (Call, Function)) and (
                isinstance(v, Function) or isinstance(v.callee, Var)
                or (isinstance(v.callee, Op) and v.callee.name in _STACK_OPS)):
            raise CompiledHigherOrderError(
                f"{mode} mode of a program that holds closures or a stack ({b.var.name}): "
                f"this is a derivative of a loop or branch, and differentiating it again is "
                f"not compiled yet; grad/value_and_grad/vjp run such higher-order "
                f"derivatives on the tape instead")


def float_params(fn: Function) -> list[Var]:
    return [p for p in fn.params if has_float(p.type)]


def vjp_type(fn: Function) -> FuncType:
    """``g_vjp``: the same parameters -> (result, pullback: dresult -> dparams)."""
    back = FuncType([fn.ret_type], TupleType([p.type for p in float_params(fn)]))
    return FuncType([p.type for p in fn.params], TupleType([fn.ret_type, back]))


# -- the pass ----------------------------------------------------------------------------


class _Context:
    """Functions generated for one gradient request (``<g>_vjp``), shared by all sweeps."""

    def __init__(self, module: Module):
        self.module = module
        self.generated: dict[str, Function] = {}
        self.types: dict[str, FuncType] = {}
        self.forward_vars: set[Var] = set()  # copies of forward values: never renamed
        self.named: set[Var] = set()  # variables already named as someone's adjoint

    def vjp_name(self, name: str) -> str:
        vname = f"{name}_vjp"
        if vname not in self.types:
            if vname in self.module.functions:
                raise GradientError(f"the module already has a function named {vname}")
            self.types[vname] = vjp_type(self.module[name])
            self.generated[vname] = None  # reserve: recursion refers to it while it is built
            self.generated[vname] = build_vjp_function(self, name)
        return vname

    def new_trace(self, n_bindings: int) -> Trace:
        trace = Trace()
        trace.builder = Builder(self.module)
        trace.builder.extra_globals = self.types
        # fresh temporaries are numbered past the forward's, so names rarely collide
        trace.builder._counter = n_bindings
        return trace


# forward rewrites of relevant bindings holding control flow (gradient_control.py)
FORWARD_REWRITES: dict = {}


class _ForwardCopy(Mutator):
    """The forward sweep's copy: relevant calls of module functions become vjp
    calls, relevant control flow is rewritten (gradient_control.py)."""

    sweep: _Sweep

    def rewrite(self, binding):
        sweep, v = self.sweep, binding.value
        if binding.var in sweep.relevant:
            special = FORWARD_REWRITES.get(type(v))
            if special is not None:
                return special(sweep, binding)
            if (isinstance(v, Call) and isinstance(v.callee, GlobalVar)
                    and sweep.ctx.module[v.callee.name].attrs.get("checkpoint")):
                # store only the inputs; the backward sweep recomputes the rest
                return super().rewrite(binding)
            if isinstance(v, Call) and isinstance(v.callee, GlobalVar):
                vname = sweep.ctx.vjp_name(v.callee.name)
                pair = sweep.b.emit(Call(GlobalVar(vname), [self.atom(a) for a in v.args]),
                                    f"{binding.var.name}_vjp")
                sweep.pullbacks[binding.var] = sweep.b.emit(
                    TupleGetItem(pair, 1), f"{binding.var.name}_pullback")
                return TupleGetItem(pair, 0)
            if isinstance(v, Call) and isinstance(v.callee, Var):
                raise GradientError(
                    f"{binding.var.name}: differentiating calls of local function values "
                    f"({v.callee.name}) is not supported yet; define it at module level")
        return super().rewrite(binding)


class _Sweep:
    """One block differentiated: its forward copy, then its reverse sweep.

    ``inputs`` are the old variables whose adjoints the sweep returns (a
    function's parameters, or the free variables of a branch or loop body).
    Nested sweeps (branches, loop bodies) share the trace and the copy's
    substitution of their parent.
    """

    def __init__(self, ctx: _Context, bindings, result, inputs, sources, targets,
                 trace: Trace | None = None, parent: _Sweep | None = None):
        self.ctx = ctx
        self.bindings = list(bindings)
        self.result = result
        self.inputs = list(inputs)
        self.trace = trace or ctx.new_trace(len(self.bindings))
        self.b = self.trace.builder
        self.adj = Adjoints(self.trace)
        self.relevant = relevant_vars(self.bindings, sources, targets)
        self.pullbacks: dict[Var, Var] = {}
        self.extra: dict[Var, object] = {}  # per-binding data for backward handlers
        self.parent = parent
        _refuse_closures(self.bindings, self.relevant, "reverse")
        missing = missing_rules(self.bindings, self.relevant)
        if missing:
            raise NoRuleError("no VJP rule for: " + "; ".join(missing) +
                              " (register one with chainrule.rules.register_vjp)")
        self.copy = self._make_copy()

    def wants(self, v: Var) -> bool:
        return v in self.relevant

    # forward -------------------------------------------------------------------------
    def _make_copy(self) -> Mutator:
        copy = _ForwardCopy(self.ctx.module)
        copy.sweep = self
        copy.builder = self.b
        if self.parent is not None:
            self.local = {}
            copy.subst = ChainMap(self.local, self.parent.copy.subst)
        else:
            self.local = copy.subst
        return copy

    def bind_inputs(self, new_inputs) -> None:
        for old, new in zip(self.inputs, new_inputs):
            self.copy.subst[old] = new

    def forward(self, bindings=None):
        """Copy bindings (default: all) into the current block; returns the new result."""
        self.copy.emit_bindings(self.bindings if bindings is None else bindings)
        self.ctx.forward_vars.update(v for v in self.local.values() if isinstance(v, Var))
        return self.copy.atom(self.result)

    def new(self, atom):
        return self.copy.atom(atom)

    # backward ------------------------------------------------------------------------
    def seed(self, msg) -> None:
        """Start the reverse sweep with ``msg`` as the cotangent of the result."""
        self.adj.accumulate(self.result, msg, self.wants)

    def backward(self, keep: set[Var] = frozenset()) -> dict[Var, object]:
        """Sweep the bindings in reverse; returns the adjoint messages of ``keep``
        (required intermediate variables) and of the inputs."""
        adj = self.adj
        found = {}
        for binding in reversed(self.bindings):
            v = binding.var
            msg = adj.msgs.pop(v, None)
            if msg is None or v not in self.relevant:
                continue
            if isinstance(v.type, TensorType):
                msg = self.name_adjoint(v, msg)
            if v in keep:
                found[v] = msg
            handler = _BACKWARD.get(type(binding.value))
            if handler is None:
                raise GradientError(f"{v.name}: reverse mode through "
                                    f"{type(binding.value).__name__} is not supported")
            handler(self, binding, msg)
        for p in self.inputs:
            msg = adj.msgs.pop(p, None)
            if msg is not None and isinstance(p.type, TensorType):
                msg = self.name_adjoint(p, msg)
            found[p] = msg
        return found

    def name_adjoint(self, v: Var, msg):
        """Bind the adjoint of ``v`` to a variable named ``<v>_adjoint`` (one per adjoint)."""
        name = f"{self.new(v).name}_adjoint"
        ctx = self.ctx
        if isinstance(msg, Var) and msg not in ctx.named and msg not in ctx.forward_vars:
            msg.name = name
            ctx.named.add(msg)
            return msg
        var = self.b.emit(msg, name)
        ctx.named.add(var)
        return var


# -- backward handlers, one per binding kind --------------------------------------------


def _call_backward(sweep: _Sweep, binding: Binding, msg) -> None:
    call = binding.value
    adj = sweep.adj
    if isinstance(call.callee, GlobalVar):
        pullback = sweep.pullbacks.get(binding.var)
        if pullback is None:  # a checkpointed call: run its forward again, now
            vname = sweep.ctx.vjp_name(call.callee.name)
            name = sweep.new(binding.var).name
            pair = sweep.b.emit(Call(GlobalVar(vname), [sweep.new(a) for a in call.args]),
                                f"{name}_recompute")
            pullback = sweep.b.emit(TupleGetItem(pair, 1), f"{name}_pullback")
        fn = sweep.ctx.module[call.callee.name]
        dresult = adj.materialize(msg, binding.var.type)
        dargs = sweep.b.emit(Call(pullback, [dresult]), f"{sweep.new(binding.var).name}_dargs")
        floats = [i for i, p in enumerate(fn.params) if has_float(p.type)]
        parts = adj.split(dargs, dargs.type)
        for i, part in zip(floats, parts):
            adj.accumulate(call.args[i], part, sweep.wants)
        return
    op = call.callee
    if op.name in NONDIFFERENTIABLE:
        return
    dresult = adj.materialize(msg, binding.var.type)
    if isinstance(binding.var.type, TupleType):
        dout = tuple(adj.wrap(f) for f in adj.split(dresult, binding.var.type))
    else:
        dout = adj.wrap(dresult)
    out = Traced(sweep.trace, sweep.new(binding.var))
    args = [sweep.new(a) for a in call.args]
    start = len(sweep.b.bindings)
    partials = VJP[op.name](out, dout, *[adj.wrap(a) for a in args], **call.attrs)
    if len(partials) != len(args):
        raise GradientError(f"the VJP rule of {op.name} returned {len(partials)} cotangents "
                            f"for {len(args)} operands")
    fitted, dropped = [], False
    for old, new, p in zip(call.args, args, partials):
        if p is None:
            continue
        if not _wants_any(sweep, old):
            dropped = True
            continue
        fitted.append((old, adj.fit(p, _arg_type(new))))
    if dropped:  # work done only for a cotangent nobody needs
        prune(sweep.b.bindings, start, [f for _, f in fitted])
    for old, atom in fitted:
        adj.accumulate(old, atom, sweep.wants)


def _wants_any(sweep, atom) -> bool:
    if isinstance(atom, Tuple):
        return any(_wants_any(sweep, f) for f in atom.fields)
    return isinstance(atom, Var) and sweep.wants(atom)


def _arg_type(atom) -> Type:
    if isinstance(atom, Tuple):
        return TupleType(_arg_type(f) for f in atom.fields)
    return atom.type


def _tuple_backward(sweep: _Sweep, binding: Binding, msg) -> None:
    sweep.adj.accumulate(binding.value, msg, sweep.wants)


def _getitem_backward(sweep: _Sweep, binding: Binding, msg) -> None:
    tv = binding.value.tuple_value
    t = _arg_type(tv)
    parts = [None] * len(t.fields)
    parts[binding.value.index] = msg
    sweep.adj.accumulate(tv, tuple(parts), sweep.wants)


def _assign_backward(sweep: _Sweep, binding: Binding, msg) -> None:
    sweep.adj.accumulate(binding.value, msg, sweep.wants)


_BACKWARD = {
    Call: _call_backward,
    Tuple: _tuple_backward,
    TupleGetItem: _getitem_backward,
    Var: _assign_backward,
    Constant: lambda sweep, binding, msg: None,
}


def build_vjp_function(ctx: _Context, name: str) -> Function:
    """``<name>_vjp(params) -> (result, pullback)`` where ``pullback(dresult)``
    returns the adjoints of the float parameters; the pullback is a closure
    over the forward values it needs."""
    fn = ctx.module[name]
    floats = float_params(fn)
    sweep = _Sweep(ctx, fn.body.bindings, fn.body.result, fn.params, floats,
                   _flat_vars(fn.body.result))
    with sweep.trace:  # rules may trace (custom rules): nest under this trace
        return _build_vjp_body(sweep, fn, name, floats)


def _build_vjp_body(sweep: _Sweep, fn: Function, name: str, floats) -> Function:
    params = [Var(p.name, p.type) for p in fn.params]
    sweep.b.params = list(params)
    sweep.bind_inputs(params)
    result = sweep.forward()
    sweep.b.begin_block()
    dresult = Var(f"{name}_cotangent", fn.ret_type)
    sweep.seed(dresult)
    found = sweep.backward()
    outs = [sweep.adj.materialize(found[p], p.type) for p in floats]
    body = sweep.b.end_block(Tuple(outs))
    ptype = FuncType([fn.ret_type], TupleType([p.type for p in floats]))
    pullback = sweep.b.emit(Function([dresult], body, ptype.ret), f"{name}_pullback")
    return sweep.b.finish_function(Tuple([result, pullback]))


def _flat_vars(atom):
    if isinstance(atom, Tuple):
        out = []
        for f in atom.fields:
            out.extend(_flat_vars(f))
        return out
    return [atom] if isinstance(atom, Var) else []


def _resolve(fn: Function, name_or_var, func: str) -> Var:
    if isinstance(name_or_var, Var):
        return name_or_var
    matches = [p for p in fn.params if p.name == name_or_var]
    stack = [fn.body]
    while stack:
        block = stack.pop()
        matches += [b.var for b in block.bindings if b.var.name == name_or_var]
    if not matches:
        raise GradientError(
            f"gradient of {func}: no variable named {name_or_var!r}; parameters are "
            f"{[p.name for p in fn.params]}")
    if len(matches) > 1:
        raise GradientError(f"gradient of {func}: the name {name_or_var!r} is ambiguous")
    return matches[0]


def gradient(module: Module, func: str = "main", require_grads=None, target_index=None,
             sens: bool = False, name: str | None = None) -> Module:
    """Add ``<func>_adjoint`` returning ``(result, (adjoints of require_grads...))``.

    ``require_grads``: names (or Vars) of parameters or intermediate
    variables; default all float parameters. ``target_index`` picks a field
    of a tuple result as the target. ``sens=True`` adds a trailing
    ``cotangent`` parameter (the target's cotangent), for non-scalar targets.
    """
    fn = module[func]
    result = fn.body.result
    rtype = _arg_type(result)
    ttype = rtype
    if target_index is not None:
        if not isinstance(rtype, TupleType) or not 0 <= target_index < len(rtype.fields):
            raise GradientError(f"gradient of {func}: target_index {target_index} needs a "
                                f"tuple result, and {func} returns {rtype!r}")
        ttype = rtype.fields[target_index]
    if not sens and not (isinstance(ttype, TensorType) and ttype.shape == ()
                         and ttype.dtype.is_float):
        raise GradientError(
            f"gradient of {func}: the target must be a float scalar, but it is {ttype!r}; "
            f"reduce it (e.g. sum) or pass sens=True to supply its cotangent"
            + (" (or target_index to pick a tuple field)" if isinstance(ttype, TupleType) else ""))
    if require_grads is None:
        wanted = float_params(fn)
    else:
        if isinstance(require_grads, (str, Var)):
            require_grads = [require_grads]
        wanted = [_resolve(fn, r, func) for r in require_grads]
        seen = set()
        for v in wanted:
            if v in seen:
                raise GradientError(f"gradient of {func}: {v.name} is named twice in "
                                    f"require_grads")
            seen.add(v)
            if not has_float(v.type):
                raise GradientError(
                    f"gradient of {func}: {v.name} has type {v.type!r}; integer and bool "
                    f"values have no gradient")
    ctx = _Context(module)
    sweep = _Sweep(ctx, fn.body.bindings, result, fn.params, wanted, _flat_vars(result))
    with sweep.trace:  # rules may trace (custom rules): nest under this trace
        out_fn = _gradient_body(ctx, sweep, fn, wanted, result, rtype, ttype, target_index, sens)
    funcs = dict(module.functions)
    funcs.update(ctx.generated)
    funcs[name or f"{func}_adjoint"] = out_fn
    return Module(funcs, module.meta)


def _gradient_body(ctx, sweep, fn, wanted, result, rtype, ttype, target_index, sens):
    params = [Var(p.name, p.type) for p in fn.params]
    sweep.b.params = list(params)
    sweep.bind_inputs(params)
    new_result = sweep.forward()
    if sens:
        seed = sweep.b.param("cotangent", ttype)
        ctx.forward_vars.add(seed)  # a parameter of the interface: keep its name
    else:
        seed = sweep.b.call(get_op("ones"), [], {"shape": (), "dtype": ttype.dtype})
    if target_index is not None:
        parts = [None] * len(rtype.fields)
        parts[target_index] = seed
        seed = tuple(parts)
    sweep.seed(seed)
    found = sweep.backward(set(wanted))
    adjoints = []
    for v in wanted:
        msg = found.get(v)
        if msg is None and isinstance(v.type, TensorType):
            adjoints.append(sweep.adj.zeros(v.type, f"{sweep.new(v).name}_adjoint"))
        else:
            adjoints.append(sweep.adj.materialize(msg, v.type))
    return sweep.b.finish_function(Tuple([new_result, Tuple(adjoints)]))


def vjp_module(module: Module, func: str = "main") -> Module:
    """Add ``<func>_vjp(params) -> (result, pullback)``; ``pullback(cotangent)``
    returns the adjoints of the float parameters (a closure: no recomputation)."""
    ctx = _Context(module)
    ctx.vjp_name(func)
    funcs = dict(module.functions)
    funcs.update(ctx.generated)
    return Module(funcs, module.meta)


from . import gradient_control  # noqa: E402,F401  (registers If/While handlers)
