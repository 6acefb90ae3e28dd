"""Forward mode through closures and stacks: what reverse mode of loops and
branches produces, so ``jvp`` of a gradient (hvp, hessians) stays compiled.

The tangent of a function value is its *dual*: a closure taking the
arguments and their tangents and returning the result and its tangent; it
captures the tangents of the values the function closes over, so their
variation is carried along. A stack of functions has a stack of duals as its
tangent: every push, pop and empty stack is mirrored on it.
"""

from __future__ import annotations

from ...errors import CompiledHigherOrderError
from ...ir.infer import arg_type
from ...ir.nodes import Binding, Call, Function, Tuple, TupleGetItem, Var
from ...ir.types import FuncType, ListType, TupleType, has_float
from ...ir.visitor import nested_blocks
from ...ops.stack import (
    STACK_ADD,
    STACK_ALLOC,
    STACK_EMPTY,
    STACK_NONEMPTY,
    STACK_POP,
    STACK_POP_OR_ZERO,
    STACK_PUSH,
)
from ...ops.stack_schedule import LOOP_CHECKPOINT, REVOLVE_NEXT
from ..ad.adjoint import has_function


def dual_type(t):
    """The type of a value's tangent: the same for arrays; for a function, its
    dual ``(args, arg tangents) -> (result, result tangent)``; for a stack of
    functions, a stack of their duals."""
    if isinstance(t, TupleType):
        return TupleType(dual_type(f) for f in t.fields)
    if isinstance(t, FuncType):
        return FuncType(list(t.params) + [dual_type(p) for p in t.params if has_float(p)],
                        TupleType([t.ret, dual_type(t.ret)]))
    if isinstance(t, ListType):
        return ListType(dual_type(t.elem))
    return t


class _ClosureSite:
    """Where a closure's duals are defined: the block that defines it (open while a call
    of it can be met, calls being lexically inside it), its full dual, and its duals per
    pattern of non-zero argument tangents."""

    __slots__ = ("fn", "primal", "frame", "dual", "by_pattern")

    def __init__(self, fn: Function, primal: Var, frame: list, dual: Var):
        self.fn = fn
        self.primal = primal
        self.frame = frame
        self.dual = dual
        self.by_pattern: dict[tuple, Var] = {}


def _float_positions(fn: Function) -> tuple:
    return tuple(i for i, p in enumerate(fn.params) if has_float(p.type))


def _dual_function(sweep, fn: Function, wrt: tuple) -> Function:
    """``fn``'s dual taking tangents for the float parameters at positions ``wrt``
    only (the others are symbolic zeros), over a copy of the same body."""
    b = sweep.b
    params = [Var(p.name, p.type) for p in fn.params]
    moving = [fn.params[i] for i in wrt]
    dots = [Var(f"{p.name}_dot", dual_type(p.type)) for p in moving]
    for old in _bound_inside(fn):  # a tangent of an earlier sweep of this body
        sweep.tangents.pop(old, None)
    for old, p in zip(fn.params, params):
        sweep.copy.subst[old] = p
    for old, d in zip(moving, dots):
        sweep.tangents[old] = d
    b.begin_block()
    sweep.bindings(fn.body.bindings)
    result = sweep.copy.atom(fn.body.result)
    dresult = sweep.adj.materialize(sweep.tangent(fn.body.result), fn.ret_type)
    body = b.end_block(Tuple([result, dresult]))
    ret = TupleType([fn.ret_type, dual_type(fn.ret_type)])
    return Function(params + dots, body, ret)


def _bound_inside(fn: Function) -> list[Var]:
    """The variables a function binds: its parameters, and everything its body binds
    (nested blocks, loop variables and nested functions' parameters included)."""
    out = list(fn.params)
    stack = [fn.body]
    while stack:
        block = stack.pop()
        for bnd in block.bindings:
            out.append(bnd.var)
            out.extend(getattr(bnd.value, "loop_vars", ()))
            if isinstance(bnd.value, Function):
                out.extend(bnd.value.params)
            stack.extend(nested_blocks(bnd.value))
    return out


def function_forward(sweep, binding: Binding) -> None:
    """f = Function(params, body);  f_dot = its dual, over the same body (a call that
    passes zero tangents gets a dual of its own, ``closure_call_forward``)."""
    fn: Function = binding.value
    new = sweep.copy_binding(binding)
    dual = sweep.b.emit(_dual_function(sweep, fn, _float_positions(fn)), f"{new.name}_dual")
    sweep.tangents[binding.var] = dual
    sweep.closures[binding.var] = _ClosureSite(fn, new, sweep.b.bindings, dual)


def _pattern_dual(sweep, site: _ClosureSite, wrt: tuple) -> Var:
    """The dual of a closure for one pattern of non-zero argument tangents, made once
    and defined next to its full dual (so every call in scope of the closure sees it).
    The body is swept again: what that sweep binds (the body's tangents, the closures
    defined in it) is forgotten after it, the body's variables being its own."""
    hit = site.by_pattern.get(wrt)
    if hit is not None:
        return hit
    saved = (dict(sweep.tangents), dict(sweep.copy.subst), dict(sweep.closures))
    try:
        fn = _dual_function(sweep, site.fn, wrt)
    finally:
        for table, old in zip((sweep.tangents, sweep.copy.subst, sweep.closures), saved):
            table.clear()
            table.update(old)
    suffix = "".join(f"_{i}" for i in wrt) or "_none"
    var = Var(f"{site.primal.name}_dual_wrt{suffix}", fn.type)
    at = next(k for k, bnd in enumerate(site.frame) if bnd.var is site.dual) + 1
    site.frame.insert(at, Binding(var, fn))  # the frame is still being built: no IR node
    site.by_pattern[wrt] = var
    return var


def closure_call_forward(sweep, binding: Binding) -> None:
    """y = f(x);  (y, y_dot) = f_dual(x, x_dot), with the dual for the pattern of
    non-zero tangents of the call when ``f`` is a closure defined here: no zeros array
    is passed for an argument whose tangent is zero, and a call with none, of a closure
    that reads no varying value, is the primal call."""
    call: Call = binding.value
    dual = sweep.tangents.get(call.callee)
    if dual is None:
        raise CompiledHigherOrderError(
            f"forward mode through a call of {call.callee.name}, a function value whose "
            f"derivative is unknown here (a parameter?); the API falls back to the tape")
    fn_type = call.callee.type
    floats = [i for i, t in enumerate(fn_type.params) if has_float(t)]
    wrt = tuple(i for i in floats if sweep.tangent(call.args[i]) is not None)
    site = sweep.closures.get(call.callee)
    if site is not None and wrt != tuple(floats):
        if not wrt and not sweep.has_tangent_inputs([site.fn.body], site.fn.params):
            sweep.copy_binding(binding)  # nothing varies in the call: no tangent
            return
        dual = _pattern_dual(sweep, site, wrt)
    else:
        wrt = tuple(floats)
    args = [sweep.copy.atom(a) for a in call.args]
    dargs = [sweep.adj.materialize(sweep.tangent(call.args[i]), fn_type.params[i])
             for i in wrt]
    pair = sweep.b.emit(Call(dual, args + dargs), f"{binding.var.name}_dual")
    new = sweep.b.emit(TupleGetItem(pair, 0), binding.var.name)
    sweep.copy.subst[binding.var] = new
    sweep.tangents[binding.var] = sweep.b.emit(TupleGetItem(pair, 1), f"{binding.var.name}_dot")


def _stack_empty(sweep, binding: Binding) -> None:
    """A new stack of arrays has a symbolic zero tangent (it becomes an empty stack of
    tangents only when a non-zero tangent is pushed); a stack of functions has an
    empty stack of duals, mirrored push for push."""
    sweep.copy_binding(binding)
    elem = binding.value.attrs["elem"]
    if has_function(elem):
        sweep.tangents[binding.var] = sweep.b.call(STACK_EMPTY, [],
                                                   {"elem": dual_type(elem)},
                                                   f"{binding.var.name}_dot")


def _stack_tangent(sweep, s):
    """The tangent of stack ``s``: an empty stack for zero, except for stacks of
    functions, whose duals cannot be made up."""
    ds = sweep.tangent(s)
    if ds is None and not has_function(s.type.elem):
        return sweep.b.call(STACK_EMPTY, [], {"elem": s.type.elem}, f"{s.name}_dot")
    return ds


def _stack_push(sweep, binding: Binding) -> None:
    new = sweep.copy_binding(binding)
    s, x = binding.value.args
    if sweep.tangent(s) is None and sweep.tangent(x) is None and not has_function(
            s.type.elem):
        return  # a zero pushed on a zero stack: still a zero stack, no array made
    ds = _stack_tangent(sweep, s)
    if ds is None:
        raise CompiledHigherOrderError(f"forward mode: the stack {s.name} has no tangent")
    dx = sweep.adj.materialize(sweep.tangent(x), arg_type(x))
    sweep.tangents[binding.var] = sweep.b.call(STACK_PUSH, [ds, dx], None,
                                               f"{new.name}_dot")


def _stack_pop(sweep, binding: Binding) -> None:
    """A stack of array tangents may be the empty zero: it is popped with
    ``stack_pop_or_zero``; a stack of duals mirrors its primal exactly."""
    new = sweep.copy_binding(binding)
    s = binding.value.args[0]
    ds = sweep.tangent(s)
    if ds is None:
        if not has_function(s.type.elem):
            return  # popping a zero stack: a zero top and a zero rest
        raise CompiledHigherOrderError("forward mode: a popped stack has no tangent")
    if has_function(s.type.elem):
        dot = sweep.b.call(STACK_POP, [ds], None, f"{new.name}_dot")
    else:
        dot = sweep.b.call(STACK_POP_OR_ZERO, [ds], {"elem": s.type.elem}, f"{new.name}_dot")
    sweep.tangents[binding.var] = dot


def _stack_add(sweep, binding: Binding) -> None:
    """out = a + b, element by element: its tangent is da + db."""
    new = sweep.copy_binding(binding)
    a, b = binding.value.args
    da, db = sweep.tangent(a), sweep.tangent(b)
    if da is None or db is None:
        dot = da if db is None else db
    else:
        dot = sweep.b.call(STACK_ADD, [da, db], None, f"{new.name}_dot")
    if dot is not None:
        sweep.tangents[binding.var] = dot


def _same_tangent(sweep, binding: Binding) -> None:
    """loop_checkpoint(x, trips) is x: so is its tangent."""
    sweep.copy_binding(binding)
    dx = sweep.tangent(binding.value.args[0])
    if dx is not None:
        sweep.tangents[binding.var] = dx


STACK_FORWARD = {
    LOOP_CHECKPOINT: _same_tangent,
    REVOLVE_NEXT: lambda sweep, binding: sweep.copy_binding(binding),
    STACK_EMPTY: _stack_empty,
    STACK_ALLOC: _stack_empty,  # rows or cells, its tangent starts as the same zero
    STACK_PUSH: _stack_push,
    STACK_POP: _stack_pop,
    STACK_POP_OR_ZERO: _stack_pop,
    STACK_ADD: _stack_add,
    STACK_NONEMPTY: lambda sweep, binding: sweep.copy_binding(binding),
}
