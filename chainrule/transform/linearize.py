"""Linearize = forward mode, then unzip (seed 002): all primal work first.

``linearize(module, "f")`` adds
``f_primal(params) -> (result, residuals)`` and
``f_tangent(residuals..., tangents...) -> result_tangent``: the tangent
program holds only the operations that depend on tangents (linear ones, by
construction of the JVP rules), taking the primal values it needs as
residuals.
"""

from __future__ import annotations

from ..errors import GradientError
from ..ir.builder import Builder
from ..ir.nodes import Call, Function, Module, Tuple, Var
from ..ir.op import Op
from ..ir.types import TupleType, has_float
from ..ir.visitor import Mutator, nested_blocks, vars_used
from .jvp import jvp


def _split(fn: Function, n_primal: int):
    tangent_vars = set(fn.params[n_primal:])
    for b in fn.body.bindings:
        if nested_blocks(b.value):
            raise GradientError(f"linearize: {b.var.name} holds control flow or a closure, "
                                f"which linearize does not unzip yet")
        if isinstance(b.value, Call) and not isinstance(b.value.callee, Op):
            raise GradientError(f"linearize: {b.var.name} calls a module function; inline "
                                f"it first")
        if any(v in tangent_vars for v in vars_used(b.value)):
            tangent_vars.add(b.var)
    primal = [b for b in fn.body.bindings if b.var not in tangent_vars]
    tangent = [b for b in fn.body.bindings if b.var in tangent_vars]
    # argument-free ops (zeros) needed by the tangent side are recomputed there
    nullary = {b.var for b in primal if isinstance(b.value, Call)
               and isinstance(b.value.callee, Op) and not b.value.args}
    return primal, tangent, tangent_vars, nullary


def linearize(module: Module, func: str = "main") -> Module:
    """Add ``<func>_primal`` and ``<func>_tangent`` (see the module docstring)."""
    base = module[func]
    jm = jvp(module, func)
    jf = jm[f"{func}_jvp"]
    n = len(base.params)
    primal, tangent, tangent_vars, nullary = _split(jf, n)
    result, dresult = jf.body.result.fields
    moved = [b for b in primal if b.var in nullary]
    needed = []
    seen = set()
    uses = [v for b in tangent for v in vars_used(b.value)] + [
        v for v in vars_used(Tuple([dresult])) if isinstance(v, Var)]
    for v in uses:
        if v not in tangent_vars and v not in nullary and v not in seen:
            seen.add(v)
            needed.append(v)

    # the primal function: params -> (result, residuals)
    m = Mutator(jm)
    params = [m.copy_var(p) for p in jf.params[:n]]
    m.builder.params = params
    m.emit_bindings([b for b in primal if b.var not in nullary])
    residuals = [m.atom(v) for v in needed]
    prim = m.builder.finish_function(Tuple([m.atom(result), Tuple(residuals)]))

    # the tangent function: (residuals..., tangents...) -> result tangent
    t = Mutator(jm)
    t.builder = Builder(jm)
    res_params = [t.copy_var(v) for v in needed]
    for r in res_params:
        r.name = f"{r.name}_res" if not r.name.endswith("_res") else r.name
    tan_params = [t.copy_var(p) for p in jf.params[n:]]
    t.builder.params = res_params + tan_params
    t.emit_bindings(moved + tangent)
    tang = t.builder.finish_function(t.atom(dresult))
    funcs = dict(module.functions)
    funcs[f"{func}_primal"] = prim
    funcs[f"{func}_tangent"] = tang
    return Module(funcs, module.meta)


def tangent_param_types(fn: Function):
    return TupleType([p.type for p in fn.params if has_float(p.type)])
