"""Linearize = forward mode, then unzip (seed 002): all primal work first.

``linearize(module, "f")`` adds
``f_primal(params) -> (result, residuals)`` and
``f_tangent(residuals..., tangents...) -> result_tangent``: the tangent
program holds only the operations that depend on tangents (linear ones, by
construction of the JVP rules), taking the primal values it needs as
residuals.
"""

from __future__ import annotations

from ...ir.builder import Builder
from ...ir.collector import collector_paused
from ...ir.infer import arg_type
from ...ir.nodes import Binding, Block, Call, Function, Module, Tuple, Var
from ...ir.op import Op
from ...ir.types import TensorType
from ...ir.visitor import Mutator, substitute_vars, vars_used
from ..base import OptionsPass, register_pass
from ..cleanup.inline import inline
from ..cleanup.partial_eval import closure_facts, holds_closures, partial_eval
from .jvp import jvp_with_loop_splits
from .linearize_split import NotStraight, Split, linearize_straight, residual_param, substituted
from .unzip import Unzip, refuse_calls


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
    if not holds:
        unzipped = linearize_straight(module, func, wrt)
        if unzipped is not None:  # the common case: op calls only, sorted as they are made
            return _with(module, func, *unzipped)
    jm, loop_splits = jvp_with_loop_splits(module, func, wrt)
    jf = jm[f"{func}_jvp"]
    n = len(base.params)
    if not loop_splits and set(jf.params).isdisjoint(base.params):
        unzipped = _straight_line(jf, n)
        if unzipped is not None:  # the common case: op calls only, unzipped in one walk
            return _with(module, func, *unzipped)
    uz = Unzip(jf.params[n:], loop_splits)
    try:  # a call of a module function at the top level is refused as it is met
        primal, tangent = uz.block(jf.body.bindings, top=True)
    except Exception:
        # ... and before any other refusal, as if the bindings were checked first
        refuse_calls(jf.body.bindings)
        raise
    dresult = jf.body.result.fields[1]
    # argument-free ops (zeros) needed by the tangent side are recomputed there
    moved = [b for b in uz.argument_free if isinstance(b.var.type, TensorType)]
    if _shareable(uz, jf, base):
        prim, tang = _shared(jf, n, primal, moved, tangent, uz.tangent)
    else:
        # the residuals: primal values the tangent side reads, in first-use order
        candidates = set(jf.params[:n])
        candidates.update(b.var for b in primal)
        candidates.difference_update(b.var for b in moved)
        needed = _residuals(tangent, dresult, candidates)
        prim, tang = _copied(jm, jf, n, primal, moved + tangent, needed,
                             [residual_param(v) for v in needed])
    return _with(module, func, prim, tang)


def _with(module: Module, func: str, prim: Function, tang: Function) -> Module:
    """``module`` with ``<func>_primal`` and ``<func>_tangent`` added."""
    funcs = dict(module.functions)
    funcs[f"{func}_primal"] = prim
    funcs[f"{func}_tangent"] = tang
    return Module(funcs, module.meta)


def _straight_line(jf: Function, n: int) -> tuple[Function, Function] | None:
    """What ``Unzip.block`` then ``_shared`` make of a jvp function whose bindings are
    all calls of ops on variables and constants, in one walk instead of two
    (``forward.linearize_split.Split``); None when a binding is anything else (a branch, a
    loop, a tuple operand, a call of a function): the general path then unzips."""
    split = Split(jf.params[n:])
    primal = list(jf.body.bindings)
    try:
        split.classify(primal)
    except NotStraight:
        return None
    return split.functions(list(jf.params), n, primal, *jf.body.result.fields)


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
            tangent_vars: set) -> tuple[Function, Function]:
    """The primal and tangent functions of a straight-line unzip, made of the jvp
    function's own bindings (a program no one else holds: the same text as copies,
    without copying every binding): the tangent side's reads of residuals become its
    parameters, and the argument-free bindings both sides compute (``moved``) get new
    variables on the tangent side, so no variable is bound in both functions.

    A variable the tangent side reads is a tangent (in ``tangent_vars``), a moved
    binding's or else a residual (a primal parameter or binding: nothing else is in
    scope of a straight-line function). The residuals are found and substituted in one
    walk over the tangent bindings (what ``_residuals`` then ``substitute_vars`` do in
    two): an op call, the common case, is rebuilt here when it reads a residual or a
    moved binding; any other binding leaves the substitution to ``substitute_vars``."""
    result, dresult = jf.body.result.fields
    sub = {b.var: Var(b.var.name, b.var.type) for b in moved}
    bindings = [Binding(sub[b.var], b.value) for b in moved]
    needed = []

    def residual(v: Var) -> None:  # the first read of a residual
        needed.append(v)
        sub[v] = residual_param(v)

    general = False  # a binding this walk does not rebuild: substitute_vars does
    for b in tangent:
        value = b.value
        if type(value) is Call and type(value.callee) is Op:  # the common case first
            changed = False
            for a in value.args:
                if type(a) is Var:
                    if a in sub:
                        changed = True
                    elif a not in tangent_vars:
                        residual(a)
                        changed = True
                elif type(a) is Tuple:
                    general = True
                    for v in vars_used(a):
                        if v not in sub and v not in tangent_vars:
                            residual(v)
            if changed and not general:
                get = sub.get
                b = Binding(b.var, value.with_args(value.callee,
                                                   [get(a, a) for a in value.args]))
        else:
            general = True
            for v in vars_used(value):
                if v not in sub and v not in tangent_vars:
                    residual(v)
        bindings.append(b)
    for v in vars_used(Tuple([dresult])):
        if v not in sub and v not in tangent_vars:
            residual(v)
    out = Tuple([result, Tuple(list(needed))])
    prim = Function(jf.params[:n], Block(primal, out), arg_type(out))
    if general:  # the bindings as they were, substituted in a second walk
        tang = Function([*needed, *jf.params[n:]], Block(moved + tangent, dresult),
                        arg_type(dresult))
        return prim, substitute_vars(tang, sub)
    return prim, Function([sub[v] for v in needed] + list(jf.params[n:]),
                          Block(bindings, substituted(dresult, sub)), arg_type(dresult))


class Linearize(OptionsPass):
    """Adds ``<func>_primal`` and ``<func>_tangent`` (see ``linearize``)."""

    name = "linearize"
    function = staticmethod(linearize)


register_pass(Linearize)
