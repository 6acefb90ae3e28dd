"""The machinery of the ``gradient`` pass: one ``Sweep`` per differentiated
block (its forward copy, then its reverse sweep), the backward handlers of
straight-line bindings, and ``<g>_vjp`` functions for called module functions.

The dispatch tables (which handler runs for a binding's kind, which forward
rewrite for control flow) are built in ``gradient.py`` and handed to the
``Context``, with the handling of function values (``reverse/closures.py``:
closures, calls of function values, their adjoints' types); ``reverse/control.py``
provides the handlers of ``If`` and ``While``. Nothing here imports those modules.
"""

from __future__ import annotations

from collections import ChainMap, Counter

from ...emit.trace import Trace
from ...errors import GradientError
from ...ir.builder import Builder
from ...ir.nodes import (
    Binding,
    Call,
    Constant,
    Function,
    GlobalVar,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    typed_var,
)
from ...ir.op import Op
from ...ir.types import FuncType, TensorType, TupleType, Type, has_float
from ...ir.visitor import Mutator, atoms_of, nested_blocks, substitute_vars
from ...rules import VJP
from ..ad.adjoint import Adjoints
from ..ad.rule_templates import new_templates
from .ops import arg_type_of, op_backward
from .relevance import analyze_relevance, check_relevant


def float_params(fn: Function, wrt=None) -> list[Var]:
    """The float parameters of ``fn`` (of those at positions ``wrt``, when given)."""
    params = fn.params if wrt is None else [fn.params[i] for i in wrt]
    return [p for p in params if has_float(p.type)]


def vjp_type(fn: Function, vjp_closure_type, wrt=None, envs=(), result_env=None) -> FuncType:
    """``g_vjp``: the same parameters -> (result, pullback: dresult -> dparams). A
    function parameter takes a VJP version and its adjoint is its env's (``envs``: one
    env type per function parameter); a closure result comes back as its VJP version,
    its adjoint of type ``result_env`` (``vjp_closure_type``: reverse/closures.py)."""
    param_envs = _param_envs(fn, envs)
    params = [vjp_closure_type(p.type, param_envs[p]) if p in param_envs else p.type
              for p in fn.params]
    dparams = [param_envs.get(p, p.type) for p in float_params(fn, wrt)]
    ret, dret = fn.ret_type, fn.ret_type
    if isinstance(ret, FuncType):
        ret, dret = vjp_closure_type(ret, result_env), result_env
    back = FuncType([dret], TupleType(dparams))
    return FuncType(params, TupleType([ret, back]))


def _param_envs(fn: Function, envs) -> dict:
    """The env type of each function parameter of ``fn`` (one per, in order)."""
    fparams = [p for p in fn.params if isinstance(p.type, FuncType)]
    if len(fparams) != len(envs):
        raise GradientError(f"reverse mode: {len(envs)} env types for the "
                            f"{len(fparams)} function parameters")
    return dict(zip(fparams, envs))


# -- the pass ----------------------------------------------------------------------------


class Context:
    """What one gradient request shares across its sweeps: the generated functions
    (``<g>_vjp``), the dispatch tables, and the names chosen for adjoints.

    ``backward`` maps a binding value's type to its backward handler
    ``handler(sweep, binding, msg)``; ``forward_rewrites`` maps a value type to
    ``rewrite(sweep, binding)`` for relevant control flow on the forward sweep;
    ``closures`` handles function values (the functions of ``reverse/closures.py``).
    """

    def __init__(self, module: Module, backward: dict, forward_rewrites: dict, closures):
        self.module = module
        self.backward = backward
        self.forward_rewrites = forward_rewrites
        self.closures = closures
        self.generated: dict[str, Function] = {}
        self.types: dict[str, FuncType] = {}
        self.forward_vars: set[Var] = set()  # copies of forward values: never renamed
        self.named: set[Var] = set()  # variables named as someone's adjoint
        # an emitted variable -> the same value under its name as an adjoint, for the
        # adjoints known to be final only after the variable was read
        self.renames: dict[Var, Var] = {}
        self.specializations: dict = {}  # (function, env types) -> its vjp's name
        self.result_envs: dict[str, Type] = {}  # vjp name -> env type of its closure result
        # the VJP rules' recorded expansions (this run's: ad/rule_templates.py)
        self.templates = new_templates(VJP, module)
        self.handlers: dict = {}  # template key -> its handler (reverse/replay.py)

    def finish(self, fn: Function) -> Function:
        """``fn`` with the adjoint names chosen during the sweeps given to its variables."""
        return substitute_vars(fn, self.renames)

    def vjp_name(self, name: str, wrt=None, envs=()) -> str:
        """``<name>_vjp``, built on first use; its pullback returns the adjoints of the
        float parameters (of those at positions ``wrt``: the rest are constants).
        ``envs``: the env types of the function values passed for its function
        parameters (one specialization each: ``<name>_vjp_1``...)."""
        key = (name, envs)
        vname = self.specializations.get(key)
        if vname is None:
            vname = f"{name}_vjp"
            k = 0
            while vname in self.types:
                k += 1
                vname = f"{name}_vjp_{k}"
            if vname in self.module.functions:
                raise GradientError(f"the module already has a function named {vname}")
            fn = self.module[name]
            result_env = None
            if isinstance(fn.ret_type, FuncType):
                result_env = self.closures.result_env_type(self, fn, name,
                                                           _param_envs(fn, envs))
                self.result_envs[vname] = result_env
            self.specializations[key] = vname
            self.types[vname] = vjp_type(fn, self.closures.vjp_closure_type, wrt, envs,
                                         result_env)
            self.generated[vname] = None  # reserve: recursion refers to it while it is built
            self.generated[vname] = self.finish(build_vjp_function(self, name, wrt, envs))
        return vname

    def new_trace(self, n_bindings: int) -> Trace:
        # fresh temporaries are numbered past the forward's, so names rarely collide
        return Trace(builder=Builder(self.module, self.types, temp_start=n_bindings))


class ForwardCopy(Mutator):
    """The forward sweep's copy: relevant calls of module functions become vjp
    calls, relevant control flow is rewritten (reverse/control.py)."""

    sweep: Sweep

    plain = 0  # > 0 while copying a closure's body as it is (no derivative)
    copies_op_calls = True  # an op's forward value is computed as it was

    def rewrite(self, binding):
        sweep, v = self.sweep, binding.value
        if self.plain:
            return super().rewrite(binding)
        t = type(v)
        if t is Function or (t is Call and type(v.callee) is not Op):
            closures = sweep.ctx.closures
            if t is Function:
                return closures.function_forward(sweep, binding)
            if type(v.callee) is Var and (binding.var in sweep.relevant or self.atom(
                    v.callee) is closures.lookup(sweep, v.callee, "vjp_of")):
                return closures.closure_call_forward(sweep, binding)
            if type(v.callee) is GlobalVar and closures.needs_vjp_call(sweep, binding):
                return closures.global_call_forward(sweep, binding)
        if binding.var in sweep.relevant:
            special = sweep.ctx.forward_rewrites.get(t)
            if special is not None:
                return special(sweep, binding)
            if t is Call and type(v.callee) is GlobalVar:
                if sweep.ctx.module[v.callee.name].attrs.get("checkpoint"):
                    # store only the inputs; the backward sweep recomputes the rest
                    return super().rewrite(binding)
                vname = sweep.ctx.vjp_name(v.callee.name)
                pair = sweep.b.emit(Call(GlobalVar(vname), [self.atom(a) for a in v.args]),
                                    f"{binding.var.name}_vjp")
                sweep.pullbacks[binding.var] = sweep.b.emit(
                    TupleGetItem(pair, 1), f"{binding.var.name}_pullback")
                return TupleGetItem(pair, 0)
        return super().rewrite(binding)

    def value(self, v):
        if type(v) is Function:  # a closure copied as it is (its VJP version is beside)
            self.plain += 1
            try:
                return super().value(v)
            finally:
                self.plain -= 1
        return super().value(v)


class Sweep:
    """One block differentiated: its forward copy, then its reverse sweep.

    ``inputs`` are the old variables whose adjoints the sweep returns (a
    function's parameters, or the free variables of a branch or loop body).
    Nested sweeps (branches, loop bodies) share the trace and the copy's
    substitution of their parent.
    """

    def __init__(self, ctx: Context, bindings, result, inputs, sources, targets,
                 trace: Trace | None = None, parent: Sweep | None = None):
        self.ctx = ctx
        self.bindings = list(bindings)
        self.result = result
        self.inputs = list(inputs)
        self.trace = trace or ctx.new_trace(len(self.bindings))
        self.b = self.trace.builder
        self.adj = Adjoints(self.trace)
        self.shared = False  # whether the forward block is the original (Sweep.forward)
        self.relevant, uses, checks, self.only_ops = analyze_relevance(
            self.bindings, sources, targets)
        self.wants = self.relevant.__contains__  # whether a variable needs an adjoint
        self.pullbacks: dict[Var, Var] = {}
        self.extra: dict[Var, object] = {}  # per-binding data for backward handlers
        self.parent = parent
        # function values (reverse/closures.py): their VJP versions and env types, the
        # reason a closure has no VJP version
        self.vjp_of: dict[Var, Var] = {}
        self.env_types: dict[Var, Type] = {}
        self.refused: dict[Var, str] = {}
        self.adj.type_of = self.adjoint_type
        check_relevant(self.bindings, checks)
        self.copy = self._make_copy()
        # contributions each adjoint still expects (straight-line uses only; the others
        # are named when the sweep reaches them), and adjoints named as they were made
        self.expected = uses
        self.named_early: dict[Var, Var] = {}
        self.completing: list | None = None  # see backward

    def adjoint_type(self, v: Var) -> Type:
        """The type of ``v``'s adjoint (a function value's is its env's)."""
        if isinstance(v.type, FuncType):
            return self.ctx.closures.adjoint_type(self, v)
        return v.type

    # forward -------------------------------------------------------------------------
    def _make_copy(self) -> Mutator:
        copy = ForwardCopy(self.ctx.module)
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
        """Copy bindings (default: all) into the current block; returns the new result.

        A block of op calls whose inputs are bound to themselves (``gradient`` passes a
        straight-line function's own parameters) is not copied: its copy would be the
        same bindings (nodes are immutable), so the new function shares them."""
        if (bindings is None and self.only_ops and self.parent is None
                and all(self.copy.subst.get(p) is p for p in self.inputs)):
            self.shared = True
            self.b.bindings.extend(self.bindings)
            forward_vars = self.ctx.forward_vars
            forward_vars.update(self.inputs)
            forward_vars.update([b.var for b in self.bindings])
            return self.result
        self.copy.emit_bindings(self.bindings if bindings is None else bindings)
        self.ctx.forward_vars.update(self.local.values())  # (only variables are looked up)
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
        msgs, found = self.adj.msgs, {}
        frame = self.b.bindings  # handlers open nested blocks but return to this one
        for binding in reversed(self.bindings):
            v = binding.var
            msg = msgs.pop(v, None)
            if msg is None or v not in self.relevant:
                continue  # nothing flows back through v, or v needs no adjoint
            msg = self.named(v, msg)
            if v in keep:
                found[v] = msg
            # the operands whose adjoints this binding completes: named as they are made
            self.completing = self.completed(binding.value)
            start = len(frame)
            self.backward_of(binding)(self, binding, msg)
            if self.completing:
                self._name_done(self.completing, frame, start)
        for p in self.inputs:
            found[p] = self.named(p, msgs.pop(p, None))
        return found

    def backward_of(self, binding: Binding):
        """The backward handler of ``binding``'s value: ``handler(sweep, binding, msg)``."""
        handler = self.ctx.backward.get(type(binding.value))
        if handler is None:
            raise GradientError(f"{binding.var.name}: reverse mode through "
                                f"{type(binding.value).__name__} is not supported")
        return handler

    def named(self, v: Var, msg):
        """``v``'s adjoint under its name ``<v>_adjoint`` (``name_adjoint``), unless it
        got that name already, as it was made."""
        if msg is None or type(v.type) is not TensorType or self.named_early.get(v) is msg:
            return msg
        return self.name_adjoint(v, msg)

    def completed(self, value) -> list | None:
        """The operands of ``value`` whose last expected contribution it makes (counted
        down in ``expected``: straight-line uses only), or None."""
        expected = self.expected
        if not expected:
            return None
        done = None
        for u in value.args if type(value) is Call else atoms_of(value):
            n = expected.get(u)
            if n is None:
                continue
            if n > 1:
                expected[u] = n - 1
            else:
                del expected[u]
                done = [u] if done is None else done + [u]
        return done

    def _name_done(self, done: list, frame: list, start: int) -> None:
        """Name the adjoints of ``done`` (operands whose last contribution arrived) that
        are variables the rule emitted in ``frame[start:]`` and nothing read yet."""
        msgs = self.adj.msgs
        end = len(frame)
        subst = self.copy.subst.get  # self.new, inlined (``done`` holds variables)
        if len(done) == 1 and end > start:  # the common case: the rule's last binding
            u = done[0]
            m = msgs.get(u)
            if type(m) is Var and frame[-1].var is m and type(u.type) is TensorType:
                new = self.b.rebind(end - 1, f"{subst(u, u).name}_adjoint")
                msgs[u] = self.named_early[u] = new
                self.ctx.named.add(new)
                return
        # what the rule emitted, indexed once: an op with many operands (stack of n
        # values) completes n adjoints at once, so each lookup must not scan the frame
        emitted = _Emitted(frame, start, end)
        shared = Counter(id(msgs.get(w)) for w in done) if len(done) > 1 else None
        for u in done:
            m = msgs.get(u)
            if type(m) is not Var or type(u.type) is not TensorType:
                continue
            k = emitted.position.get(m)
            if k is None:
                continue
            if shared is not None and shared[id(m)] > 1:
                continue  # one variable for two adjoints: named when the sweep reaches them
            if emitted.read_after(k, m):
                continue
            new = self.b.rebind(k, f"{subst(u, u).name}_adjoint")
            msgs[u] = self.named_early[u] = new
            self.ctx.named.add(new)

    def name_adjoint(self, v: Var, msg):
        """The adjoint of ``v`` as a variable named ``<v>_adjoint`` (one per adjoint): a
        variable the sweep emitted gets that name when the function is finished
        (``Context.finish``); a forward value or one named already is copied."""
        name = f"{self.copy.subst.get(v, v).name}_adjoint"  # self.new(v), for a variable
        ctx = self.ctx
        if (type(msg) is Var and msg not in ctx.named and msg not in ctx.renames
                and msg not in ctx.forward_vars):
            ctx.renames[msg] = typed_var(name, msg.type)
            return msg
        # a copy of a variable has its type (Builder.emit would infer just that)
        var = (self.b.emit_typed(msg, msg.type, name) if type(msg) is Var
               else self.b.emit(msg, name))
        ctx.named.add(var)
        return var


class _Emitted:
    """The bindings a rule emitted, ``frame[start:end]``: where each variable is bound,
    the last binding that reads it, and the last that holds a nested block."""

    __slots__ = ("position", "last_read", "last_nested")

    def __init__(self, frame: list, start: int, end: int):
        self.position: dict[Var, int] = {}
        self.last_read: dict[Var, int] = {}
        self.last_nested = -1
        for k in range(start, end):
            b = frame[k]
            self.position[b.var] = k
            v = b.value
            if type(v) is Call and type(v.callee) is Op and not any(
                    type(a) is Tuple for a in v.args):
                reads = v.args
            else:
                reads = atoms_of(v)
                if nested_blocks(v):
                    self.last_nested = k
            for a in reads:
                if type(a) is Var:
                    self.last_read[a] = k

    def read_after(self, k: int, m: Var) -> bool:
        """Whether a binding after the one at ``k`` reads ``m`` or holds a nested block."""
        return self.last_nested > k or self.last_read.get(m, -1) > k


# -- backward handlers of straight-line bindings ----------------------------------------


def _call_backward(sweep: Sweep, binding: Binding, msg) -> None:
    call = binding.value
    adj = sweep.adj
    if type(call.callee) is Var:
        sweep.ctx.closures.closure_call_backward(sweep, binding, msg)
        return
    if isinstance(call.callee, GlobalVar):
        pullback = sweep.pullbacks.get(binding.var)
        if pullback is None:  # a checkpointed call: run its forward again, now
            vname = sweep.ctx.vjp_name(call.callee.name)
            name = sweep.new(binding.var).name
            pair = sweep.b.emit(Call(GlobalVar(vname), [sweep.new(a) for a in call.args]),
                                f"{name}_recompute")
            pullback = sweep.b.emit(TupleGetItem(pair, 1), f"{name}_pullback")
        fn = sweep.ctx.module[call.callee.name]
        dresult = adj.materialize(msg, sweep.adjoint_type(binding.var))
        dargs = sweep.b.emit(Call(pullback, [dresult]), f"{sweep.new(binding.var).name}_dargs")
        floats = [i for i, p in enumerate(fn.params) if has_float(p.type)]
        parts = adj.split(dargs, dargs.type)
        for i, part in zip(floats, parts):
            adj.accumulate(call.args[i], part, sweep.wants)
        return
    op_backward(sweep, binding, msg)


def _tuple_backward(sweep: Sweep, binding: Binding, msg) -> None:
    sweep.adj.accumulate(binding.value, msg, sweep.wants)


def _getitem_backward(sweep: Sweep, binding: Binding, msg) -> None:
    tv = binding.value.tuple_value
    t = arg_type_of(tv)
    parts = [None] * len(t.fields)
    parts[binding.value.index] = msg
    sweep.adj.accumulate(tv, tuple(parts), sweep.wants)


def _assign_backward(sweep: Sweep, binding: Binding, msg) -> None:
    sweep.adj.accumulate(binding.value, msg, sweep.wants)


STRAIGHT_LINE_BACKWARD = {
    Call: _call_backward,
    Tuple: _tuple_backward,
    TupleGetItem: _getitem_backward,
    Var: _assign_backward,
    Constant: lambda sweep, binding, msg: None,
}


def build_vjp_function(ctx: Context, name: str, wrt=None, envs=()) -> Function:
    """``<name>_vjp(params) -> (result, pullback)`` where ``pullback(dresult)``
    returns the adjoints of the float parameters; the pullback is a closure
    over the forward values it needs. ``envs``: see ``vjp_type``."""
    fn = ctx.module[name]
    floats = float_params(fn, wrt)
    sweep = Sweep(ctx, fn.body.bindings, fn.body.result, fn.params, floats,
                   flat_vars(fn.body.result))
    with sweep.trace:  # rules may trace (custom rules): nest under this trace
        return _build_vjp_body(sweep, fn, name, floats, envs)


def _build_vjp_body(sweep: Sweep, fn: Function, name: str, floats, envs=()) -> Function:
    vtype = vjp_type(fn, sweep.ctx.closures.vjp_closure_type, None, envs,
                     sweep.ctx.result_envs.get(f"{name}_vjp"))
    params = [Var(p.name, t) for p, t in zip(fn.params, vtype.params)]
    param_envs = _param_envs(fn, envs)
    for old, new in zip(fn.params, params):
        if old in param_envs:  # it holds the VJP version of the argument
            sweep.vjp_of[old] = new
            sweep.env_types[old] = param_envs[old]
    sweep.b.params = list(params)
    sweep.bind_inputs(params)
    result = sweep.forward()
    dret = fn.ret_type
    if isinstance(fn.ret_type, FuncType):  # a closure: its VJP version goes out
        result = sweep.ctx.closures.vjp_version(sweep, fn.body.result, f"the result of {name}")
        dret = sweep.adjoint_type(fn.body.result)
    sweep.b.begin_block()
    dresult = Var(f"{name}_cotangent", dret)
    sweep.seed(dresult)
    found = sweep.backward()
    types = [sweep.adjoint_type(p) for p in floats]
    outs = [sweep.adj.materialize(found[p], t) for p, t in zip(floats, types)]
    body = sweep.b.end_block(Tuple(outs))
    pullback = sweep.b.emit(Function([dresult], body, TupleType(types)), f"{name}_pullback")
    return sweep.b.finish_function(Tuple([result, pullback]))


def flat_vars(atom):
    if isinstance(atom, Tuple):
        out = []
        for f in atom.fields:
            out.extend(flat_vars(f))
        return out
    return [atom] if isinstance(atom, Var) else []


