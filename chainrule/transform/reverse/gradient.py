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

from ... import ops
from ...errors import GradientError, OutputTypeError
from ...ir.collector import collector_paused
from ...ir.nodes import Function, If, Module, Tuple, Var, While
from ...ir.types import TensorType, TupleType, has_float
from ..base import OptionsPass, register_pass
from . import closures
from . import control as control
from .closures import forward_function_tuples, function_backward
from .ops import arg_type_of
from .sweep import STRAIGHT_LINE_BACKWARD, Context, Sweep, flat_vars, float_params

# what the reverse sweep does for each kind of binding value
BACKWARD = {**STRAIGHT_LINE_BACKWARD, If: control.if_backward, While: control.while_backward,
            Function: function_backward}
# how relevant control flow is rewritten on the forward sweep
FORWARD_REWRITES = {If: control.if_forward, While: control.while_forward}


def _context(module: Module) -> Context:
    return Context(module, BACKWARD, FORWARD_REWRITES, closures)


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


@collector_paused
def gradient(module: Module, func: str = "main", require_grads=None, target_index=None,
             sens: bool = False, name: str | None = None) -> Module:
    """Add ``<func>_adjoint`` returning ``(result, (adjoints of require_grads...))``.

    ``require_grads``: names (or Vars) of parameters or intermediate
    variables; default all float parameters. ``target_index`` picks a field
    of a tuple result as the target. ``sens=True`` adds a trailing
    ``cotangent`` parameter (the target's cotangent), for non-scalar targets.
    """
    module = forward_function_tuples(module)
    fn = module[func]
    result = fn.body.result
    rtype = arg_type_of(result)
    ttype = rtype
    if target_index is not None:
        if not isinstance(rtype, TupleType) or not 0 <= target_index < len(rtype.fields):
            raise GradientError(f"gradient of {func}: target_index {target_index} needs a "
                                f"tuple result, and {func} returns {rtype!r}")
        ttype = rtype.fields[target_index]
    if not sens and not (isinstance(ttype, TensorType) and ttype.shape == ()
                         and ttype.dtype.is_float):
        raise OutputTypeError(
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
    ctx = _context(module)
    sweep = Sweep(ctx, fn.body.bindings, result, fn.params, wanted, flat_vars(result))
    with sweep.trace:  # rules may trace (custom rules): nest under this trace
        out_fn = ctx.finish(_gradient_body(ctx, sweep, fn, wanted, result, rtype, ttype,
                                           target_index, sens))
    funcs = dict(module.functions)
    funcs.update(ctx.generated)
    funcs[name or f"{func}_adjoint"] = out_fn
    return Module(funcs, module.meta)


def _gradient_body(ctx, sweep, fn, wanted, result, rtype, ttype, target_index, sens):
    # a block of op calls is shared, not copied (Sweep.forward): its parameters too
    params = list(fn.params) if sweep.only_ops else [Var(p.name, p.type) for p in fn.params]
    sweep.b.params = list(params)
    sweep.bind_inputs(params)
    new_result = sweep.forward()
    if sens:
        seed = sweep.b.param("cotangent", ttype)
        ctx.forward_vars.add(seed)  # a parameter of the interface: keep its name
    else:
        target = result if target_index is None else _field(result, target_index)
        if isinstance(target, Var) and target in sweep.relevant:
            # the seed is the target's adjoint: named so when it is made
            seed = sweep.b.rename_last(
                sweep.b.call(ops.ones, [], {"shape": (), "dtype": ttype.dtype}),
                f"{sweep.new(target).name}_adjoint")
            sweep.named_early[target] = seed
            ctx.named.add(seed)
        else:
            seed = sweep.b.call(ops.ones, [], {"shape": (), "dtype": ttype.dtype})
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


def _field(result, index: int):
    """Field ``index`` of a tuple result (a Tuple of atoms), or None."""
    return result.fields[index] if isinstance(result, Tuple) else None


@collector_paused
def vjp_module(module: Module, func: str = "main", wrt=None) -> Module:
    """Add ``<func>_vjp(params) -> (result, pullback)``; ``pullback(cotangent)``
    returns the adjoints of the float parameters (a closure: no recomputation);
    with ``wrt`` (parameter positions), of those only: the others are constants."""
    module = forward_function_tuples(module)
    ctx = _context(module)
    ctx.vjp_name(func, wrt)
    funcs = dict(module.functions)
    funcs.update(ctx.generated)
    return Module(funcs, module.meta)




class Gradient(OptionsPass):
    """Adds ``<func>_adjoint`` (reverse mode; options as ``gradient()``)."""

    name = "gradient"
    function = staticmethod(gradient)


class VJPPass(OptionsPass):
    """Adds ``<func>_vjp(params) -> (result, pullback)`` (see ``vjp_module``)."""

    name = "vjp"
    function = staticmethod(vjp_module)


register_pass(Gradient)
register_pass(VJPPass)
