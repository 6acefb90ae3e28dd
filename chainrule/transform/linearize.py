"""Linearize = forward mode, then unzip (seed 002): all primal work first.

``linearize(module, "f")`` adds
``f_primal(params) -> (result, residuals)`` and
``f_tangent(residuals..., tangents...) -> result_tangent``: the tangent
program holds only the operations that depend on tangents (linear ones, by
construction of the JVP rules), taking the primal values it needs as
residuals.
"""

from __future__ import annotations

from ..errors import CompiledHigherOrderError
from ..ir.builder import Builder
from ..ir.collector import collector_paused
from ..ir.infer import arg_type
from ..ir.nodes import Binding, Block, Call, Function, Module, Tuple, Var
from ..ir.op import Op
from ..ir.types import TensorType
from ..ir.visitor import Mutator, substitute_vars, vars_used
from .base import OptionsPass, register_pass
from .inline import inline
from .jvp import jvp_with_loop_splits
from .partial_eval import closure_facts, holds_closures, partial_eval
from .unzip import Unzip


@collector_paused
def linearize(module: Module, func: str = "main", wrt=None) -> Module:
    """Add ``<func>_primal`` and ``<func>_tangent`` (see the module docstring); ``wrt``
    as for ``jvp``: the parameter positions the tangent program takes tangents of."""
    # one walk per function answers may_inline and, when nothing is inlined,
    # holds_closures
    facts = {name: closure_facts(fn) for name, fn in module.functions.items()}
    holds = facts[func][1] if func in facts else holds_closures(module[func])
    if any(inlinable for inlinable, _ in facts.values()):
        # calls of non-recursive functions become straight-line code
        module = inline(module)
        holds = holds_closures(module[func])
    if holds:
        # closures and calls of function values: partial evaluation applies the ones whose
        # definition is known, as Relay does, so the unzipped program is first-order
        module = partial_eval(module)
    base = module[func]
    jm, loop_splits = jvp_with_loop_splits(module, func, wrt)
    jf = jm[f"{func}_jvp"]
    n = len(base.params)
    for b in jf.body.bindings:
        v = b.value
        if type(v) is Call and type(v.callee) is not Op and not isinstance(v.callee, Op):
            raise CompiledHigherOrderError(
                f"linearize: {b.var.name} calls a recursive module function, which is not "
                f"unzipped; the API falls back to jvp")
    uz = Unzip(jf.params[n:], loop_splits)
    primal, tangent = uz.block(jf.body.bindings)
    dresult = jf.body.result.fields[1]
    # argument-free ops (zeros) needed by the tangent side are recomputed there
    moved = [b for b in primal if type(b.value) is Call and not b.value.args
             and isinstance(b.value.callee, Op) and isinstance(b.var.type, TensorType)]
    # the residuals: primal values the tangent side reads, in first-use order
    candidates = set(jf.params[:n])
    candidates.update(b.var for b in primal)
    candidates.difference_update(b.var for b in moved)
    if _shareable(uz, jf, base):
        prim, tang = _shared(jf, n, primal, moved, tangent, candidates)
    else:
        needed = _residuals(tangent, dresult, candidates)
        prim, tang = _copied(jm, jf, n, primal, moved + tangent, needed,
                             [_residual_param(v) for v in needed])
    funcs = dict(module.functions)
    funcs[f"{func}_primal"] = prim
    funcs[f"{func}_tangent"] = tang
    return Module(funcs, module.meta)


def _shareable(uz: Unzip, jf: Function, base: Function) -> bool:
    """Whether the unzipped bindings can make the primal and tangent functions as they
    are (``_shared``): no branch or loop was split, and the jvp function is made of
    variables of its own."""
    return not uz.split_ifs and not uz.split_loops and set(jf.params).isdisjoint(base.params)


def _copied(jm: Module, jf: Function, n: int, primal: list, tangent: list, needed: list,
            res_params: list) -> tuple[Function, Function]:
    """The primal and tangent functions as copies with new variables: an unzipped branch
    or loop binds a value needed by the tangent side both inside the split node and
    after it, and copying with fresh variables keeps each function single-assignment."""
    result, dresult = jf.body.result.fields
    # the primal function: params -> (result, residuals)
    m = Mutator(jm)
    params = [m.copy_var(p) for p in jf.params[:n]]
    m.builder.params = params
    m.emit_bindings(primal)  # argument-free ops too: the primal result may be one
    residuals = [m.atom(v) for v in needed]
    prim = m.builder.finish_function(Tuple([m.atom(result), Tuple(residuals)]))

    # the tangent function: (residuals..., tangents...) -> result tangent
    t = Mutator(jm)
    t.builder = Builder(jm)
    for v, r in zip(needed, res_params):
        t.subst[v] = r
    tan_params = [t.copy_var(p) for p in jf.params[n:]]
    t.builder.params = res_params + tan_params
    t.emit_bindings(tangent)
    return prim, t.builder.finish_function(t.atom(dresult))


def _substituted(atom, sub: dict):
    """``atom`` (a variable, constant or tuple of them) with variables replaced
    through ``sub``."""
    if type(atom) is Tuple:
        return Tuple([_substituted(f, sub) for f in atom.fields])
    return sub.get(atom, atom) if type(atom) is Var else atom


def _residual_param(v: Var) -> Var:
    """The tangent function's parameter for the residual ``v``."""
    return Var(v.name if v.name.endswith("_res") else f"{v.name}_res", v.type)


def _residuals(tangent: list, dresult, candidates: set) -> list:
    """The ``candidates`` (primal values) that the tangent bindings or the result
    tangent read, in first-use order (each taken out of ``candidates`` when read)."""
    needed = []

    def read(v) -> None:
        if v in candidates:  # first read: a residual, read at most once from here on
            candidates.discard(v)
            needed.append(v)

    for b in tangent:
        value = b.value
        if type(value) is Call and type(value.callee) is Op:  # the common case first
            for a in value.args:
                if type(a) is Var:
                    read(a)
                elif type(a) is Tuple:
                    for v in vars_used(a):
                        read(v)
        else:
            for v in vars_used(value):
                read(v)
    for v in vars_used(Tuple([dresult])):
        read(v)
    return needed


def _shared(jf: Function, n: int, primal: list, moved: list, tangent: list,
            candidates: set) -> tuple[Function, Function]:
    """The primal and tangent functions of a straight-line unzip, made of the jvp
    function's own bindings (a program no one else holds: the same text as copies,
    without copying every binding): the tangent side's reads of residuals (the
    ``candidates`` it reads) become its parameters, and the argument-free bindings both
    sides compute get new variables on the tangent side, so no variable is bound in
    both functions.

    The residuals are found and substituted in one walk over the tangent bindings
    (what ``_residuals`` then ``substitute_vars`` would do, in two): an op call on
    variables, the common case, is rebuilt here when it reads a residual or a moved
    binding; any other binding leaves the substitution to ``substitute_vars``."""
    result, dresult = jf.body.result.fields
    sub = {b.var: Var(b.var.name, b.var.type) for b in moved}
    bindings = [Binding(sub[b.var], b.value) for b in moved]
    needed = []
    general = False  # a binding this walk does not rebuild: substitute_vars does
    for b in tangent:
        value = b.value
        if type(value) is Call and type(value.callee) is Op:  # the common case first
            changed = False
            for a in value.args:
                if type(a) is Var:
                    if a in sub:
                        changed = True
                    elif a in candidates:  # first read: a residual
                        candidates.discard(a)
                        needed.append(a)
                        sub[a] = _residual_param(a)
                        changed = True
                else:
                    general = True
                    for v in vars_used(a):
                        if v in candidates:
                            candidates.discard(v)
                            needed.append(v)
                            sub[v] = _residual_param(v)
            if changed and not general:
                get = sub.get
                b = Binding(b.var, value.with_args(value.callee,
                                                   [get(a, a) for a in value.args]))
        else:
            general = True
            for v in vars_used(value):
                if v in candidates:
                    candidates.discard(v)
                    needed.append(v)
                    sub[v] = _residual_param(v)
        bindings.append(b)
    for v in vars_used(Tuple([dresult])):
        if v in candidates:
            candidates.discard(v)
            needed.append(v)
            sub[v] = _residual_param(v)
    out = Tuple([result, Tuple(list(needed))])
    prim = Function(jf.params[:n], Block(primal, out), arg_type(out))
    tangent_params = [sub[v] for v in needed] + list(jf.params[n:])
    if general:  # the bindings as they were, substituted in a second walk
        tang = Function([*needed, *jf.params[n:]], Block(moved + tangent, dresult),
                        arg_type(dresult))
        return prim, substitute_vars(tang, sub)
    return prim, Function(tangent_params, Block(bindings, _substituted(dresult, sub)),
                          arg_type(dresult))


class Linearize(OptionsPass):
    """Adds ``<func>_primal`` and ``<func>_tangent`` (see ``linearize``)."""

    name = "linearize"
    function = staticmethod(linearize)


register_pass(Linearize)
