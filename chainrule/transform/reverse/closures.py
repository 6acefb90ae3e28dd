"""Reverse mode through function values: closures, calls of function values,
functions passed to and returned from module functions (Relay's approach).

Every value has an adjoint, a function value too: the adjoint of a closure is
the adjoint of its *environment*, a tuple with one entry per float value it
captures (its ``env``). On the forward sweep each closure ``f`` also gets its
*VJP version* ``f_vjp(args) -> (result, pullback)`` where
``pullback(dresult) -> (adjoints of the float parameters..., env adjoint)``.
A call ``y = f(x)`` of a function value runs ``f_vjp``; backward, its
pullback gives the adjoints of ``x`` and an env adjoint, accumulated into the
adjoint of ``f``; when the reverse sweep reaches ``f``'s definition, that
adjoint is split among the captured values. A function value passed to a
module function ``g`` is passed as its VJP version to ``g_vjp`` (specialized
by the env types of its function arguments), whose pullback returns the env
adjoints of those arguments; a module function returning a closure returns
its VJP version, and its pullback takes the closure's env adjoint.

Partial evaluation and DCE (``optimize``) then reduce first-order programs to
first-order code: no ``def`` is left
(tests/transform/reverse/test_closures_ad.py).
"""

from __future__ import annotations

from ...errors import GradientError
from ...ir.nodes import (
    Binding,
    Call,
    Function,
    GlobalVar,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from ...ir.types import FuncType, TensorType, TupleType, has_float
from ...ir.visitor import Mutator, free_vars, nested_blocks
from ..cleanup.inline import Inliner, callees, inlinable


def has_function(t) -> bool:
    if isinstance(t, TupleType):
        return any(has_function(f) for f in t.fields)
    return isinstance(t, FuncType)


def closure_env(fn: Function) -> list[Var]:
    """The captured values whose adjoints a closure's pullback returns."""
    return [v for v in free_vars(fn) if has_float(v.type)]


def _first_order(t, what: str) -> None:
    if has_function(t):
        raise GradientError(f"reverse mode: {what} has type {t!r}; a function value that "
                            f"takes or returns function values inside a tuple or a "
                            f"closure is not differentiated yet (pass the function itself)")


def vjp_closure_type(t: FuncType, env_type: TupleType) -> FuncType:
    """``(args) -> (result, pullback: dresult -> (float arg adjoints..., env adjoint))``."""
    floats = [p for p in t.params if has_float(p)]
    back = FuncType([t.ret], TupleType([*floats, env_type]))
    return FuncType(t.params, TupleType([t.ret, back]))


# -- scopes: the VJP version and env type of each function value -----------------------


def lookup(sweep, var: Var, table: str):
    """``var``'s entry in a per-sweep table, searching the enclosing sweeps."""
    s = sweep
    while s is not None:
        found = getattr(s, table).get(var)
        if found is not None:
            return found
        s = s.parent
    return None


def adjoint_type(sweep, v: Var):
    """The type of ``v``'s adjoint: its own type, or for a function value its env's."""
    if isinstance(v.type, FuncType):
        env = lookup(sweep, v, "env_types")
        if env is None:
            raise GradientError(f"reverse mode: the function value {v.name} comes from where "
                                f"its captured values are not known (a function value in a "
                                f"tuple, a loop or a branch result), so its adjoint cannot "
                                f"be formed")
        return env
    _first_order(v.type, f"{v.name}")
    return v.type


# -- forward ---------------------------------------------------------------------------


def function_forward(sweep, binding: Binding):
    """f = Function(params, body): the copy, and ``f_vjp`` beside it."""
    from .sweep import Sweep, flat_vars

    fn: Function = binding.value
    name = binding.var.name
    original = sweep.copy.value(fn)  # what irrelevant uses of f call
    try:
        for p in fn.params:
            _first_order(p.type, f"parameter {p.name} of the local function {name}")
        _first_order(fn.ret_type, f"the result of the local function {name}")
        env = closure_env(fn)
        env_type = TupleType([adjoint_type(sweep, u) for u in env])
    except GradientError as exc:  # an error only if a differentiated call needs f_vjp
        sweep.refused[binding.var] = str(exc)
        return original
    b = sweep.b
    floats = [p for p in fn.params if has_float(p.type)]
    params = [Var(p.name, p.type) for p in fn.params]
    b.begin_block()
    sub = Sweep(sweep.ctx, fn.body.bindings, fn.body.result, [*fn.params, *env],
                [*floats, *env], flat_vars(fn.body.result), trace=sweep.trace, parent=sweep)
    for old, new in zip(fn.params, params):
        sub.local[old] = new
    result = sub.forward()
    b.begin_block()
    ct = Var(f"{name}_ct", fn.ret_type)
    sub.seed(ct)
    found = sub.backward()
    outs = [sub.adj.materialize(found.get(p), p.type) for p in floats]
    denv = Tuple([sub.adj.materialize(found.get(u), t) for u, t in zip(env, env_type.fields)])
    ptype = FuncType([fn.ret_type], TupleType([*[p.type for p in floats], env_type]))
    pb_body = b.end_block(Tuple([*outs, denv]))
    pullback = b.emit(Function([ct], pb_body, ptype.ret), f"{name}_pullback")
    body = b.end_block(Tuple([result, pullback]))
    vtype = vjp_closure_type(fn.type, env_type)
    sweep.vjp_of[binding.var] = b.emit(Function(params, body, vtype.ret), f"{name}_vjp")
    sweep.env_types[binding.var] = env_type
    sweep.extra[binding.var] = env
    return original


def vjp_version(sweep, f: Var, where: str):
    """The VJP version of the function value ``f`` (an error saying why if it has none)."""
    found = lookup(sweep, f, "vjp_of")
    if found is None:
        reason = lookup(sweep, f, "refused")
        raise GradientError(
            f"reverse mode: {where} calls the function value {f.name}, which cannot be "
            f"differentiated: " + (reason or "it is not a local function, a parameter or a "
                                             "closure returned by a module function"))
    return found


def closure_call_forward(sweep, binding: Binding):
    """y = f(x) for a function value f:  (y, pullback) = f_vjp(x)."""
    call: Call = binding.value
    fvjp = vjp_version(sweep, call.callee, binding.var.name)
    pair = sweep.b.emit(Call(fvjp, [sweep.new(a) for a in call.args]),
                        f"{binding.var.name}_vjp")
    sweep.pullbacks[binding.var] = sweep.b.emit(TupleGetItem(pair, 1),
                                                f"{binding.var.name}_pullback")
    return TupleGetItem(pair, 0)


def global_call_forward(sweep, binding: Binding):
    """y = g(f, x) with function values among the arguments or the result: the call of
    ``g_vjp`` specialized by the env types of its function arguments."""
    call: Call = binding.value
    fn = sweep.ctx.module[call.callee.name]
    envs = []
    args = []
    for a, p in zip(call.args, fn.params):
        if isinstance(p.type, FuncType):
            if not isinstance(a, Var):
                raise GradientError(f"{binding.var.name}: a function argument must be a "
                                    f"variable")
            args.append(vjp_version(sweep, a, binding.var.name))
            envs.append(adjoint_type(sweep, a))
        else:
            _first_order(p.type, f"parameter {p.name} of {call.callee.name}")
            args.append(sweep.new(a))
    vname = sweep.ctx.vjp_name(call.callee.name, None, tuple(envs))
    pair = sweep.b.emit(Call(GlobalVar(vname), args), f"{binding.var.name}_vjp")
    sweep.pullbacks[binding.var] = sweep.b.emit(TupleGetItem(pair, 1),
                                                f"{binding.var.name}_pullback")
    if isinstance(binding.var.type, FuncType):  # a closure came back: its VJP version
        value = sweep.b.emit(TupleGetItem(pair, 0), binding.var.name)
        sweep.vjp_of[binding.var] = value
        sweep.env_types[binding.var] = sweep.ctx.result_envs[vname]
        return value
    return TupleGetItem(pair, 0)


def needs_vjp_call(sweep, binding: Binding) -> bool:
    """A module function call with function values among its arguments or result."""
    call = binding.value
    if not (isinstance(call, Call) and isinstance(call.callee, GlobalVar)):
        return False
    fn = sweep.ctx.module[call.callee.name]
    return any(has_function(p.type) for p in fn.params) or has_function(fn.ret_type)


# -- backward --------------------------------------------------------------------------


def function_backward(sweep, binding: Binding, msg) -> None:
    """f = Function(...): the adjoint of f (its env's) goes to the captured values."""
    env = sweep.extra.get(binding.var)
    if not env:
        return
    env_type = sweep.env_types[binding.var]
    for u, part in zip(env, sweep.adj.split(msg, env_type)):
        sweep.adj.accumulate(u, part, sweep.wants)


def closure_call_backward(sweep, binding: Binding, msg) -> None:
    """y = f(x):  (dx..., denv) = pullback(dy); denv adds to f's adjoint."""
    call: Call = binding.value
    adj = sweep.adj
    dresult = adj.materialize(msg, binding.var.type)
    name = sweep.new(binding.var).name
    d = sweep.b.emit(Call(sweep.pullbacks[binding.var], [dresult]), f"{name}_dargs")
    parts = adj.split(d, d.type)
    floats = [a for a, t in zip(call.args, call.callee.type.params) if has_float(t)]
    for a, part in zip(floats, parts):
        adj.accumulate(a, part, sweep.wants)
    adj.accumulate(call.callee, parts[-1], sweep.wants)


def result_env_type(ctx, fn: Function, name: str, param_envs: dict):
    """The env type of the closure a module function returns (known from its body: the
    result is a local function, or a function parameter)."""
    result = fn.body.result
    if not isinstance(result, Var):
        raise GradientError(f"reverse mode: {name} returns function values inside a tuple; "
                            f"return one function value")
    if result in param_envs:
        return param_envs[result]
    defs = {b.var: b.value for b in fn.body.bindings}
    types: dict = dict(param_envs)

    def env_of(v: Var):
        if v in types:
            return types[v]
        value = defs.get(v)
        if not isinstance(value, Function):
            raise GradientError(
                f"reverse mode: {name} returns the function value {v.name}, which is not a "
                f"local function of its body nor a parameter (say, one chosen by a branch): "
                f"its adjoint's type is not known where {name} is called")
        types[v] = TupleType([env_of(u) if isinstance(u.type, FuncType) else u.type
                              for u in closure_env(value)])
        return types[v]

    return env_of(result)


# -- function values inside tuples --------------------------------------------------------


def _in_tuple(t) -> bool:
    """A tuple type holding a function value (a function value by itself is not)."""
    return isinstance(t, TupleType) and has_function(t)


def _holds_function_tuples(fn: Function) -> bool:
    stack = [fn.body]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            if type(b.var.type) is not TensorType and _in_tuple(b.var.type):
                return True
            if type(b.value) in _NESTING:  # nested_blocks, only where there are some
                stack.extend(nested_blocks(b.value))
    return False


_NESTING = (If, While, Function)  # the values holding blocks


def forward_function_tuples(module: Module) -> Module:
    """Function values inside tuples made where the sweep sees them: a module function
    returning or taking such a tuple (``(closure, array)``) is inlined where it is
    called (when not recursive), and ``f = t[0]`` of a tuple literal ``t = (g, x)``
    becomes ``g`` itself, so each function value reaches its calls by itself (whose
    reverse mode is above: its VJP version, its env adjoint). Programs without such
    tuples are returned as they are; a tuple that stays (a branch's result, say) is
    still refused, saying where."""
    holders = {name for name, fn in module.functions.items() if _holds_function_tuples(fn)}
    if not holders:
        return module
    targets = inlinable(module) & {
        name for name, fn in module.functions.items()
        if _in_tuple(fn.ret_type) or any(_in_tuple(p.type) for p in fn.params)}
    funcs = {}
    for name, fn in module.functions.items():
        if name in holders or callees(fn) & targets:
            funcs[name] = _TupleForwarder(module, targets).function(fn)
        else:
            funcs[name] = fn
    return Module(funcs, module.meta)


class _TupleForwarder(Inliner):
    """``inline.Inliner`` that leaves calls of closures as calls (their reverse mode is
    the VJP version's, not an inlined copy)."""

    def rewrite(self, binding):
        v = binding.value
        if isinstance(v, Call) and isinstance(v.callee, Var):
            return Mutator.rewrite(self, binding)
        return super().rewrite(binding)


__all__ = ["adjoint_type", "closure_call_backward", "closure_call_forward", "closure_env",
           "function_backward", "function_forward", "global_call_forward", "has_function",
           "forward_function_tuples", "needs_vjp_call", "result_env_type", "vjp_closure_type",
           "vjp_version"]
