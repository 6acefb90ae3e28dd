"""Linearize = forward mode, then unzip (seed 002): all primal work first.

``linearize(module, "f")`` adds
``f_primal(params) -> (result, residuals)`` and
``f_tangent(residuals..., tangents...) -> result_tangent``: the tangent
program holds only the operations that depend on tangents (linear ones, by
construction of the JVP rules), taking the primal values it needs as
residuals.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.collector import collector_paused
from ..ir.infer import arg_type
from ..ir.nodes import (
    Binding,
    Block,
    Call,
    Function,
    Module,
    Tuple,
    Var,
    _new_node,
    _var_name,
    _var_type,
    typed_var,
)
from ..ir.op import Op
from ..ir.types import TensorType, TupleType
from ..ir.visitor import Mutator, substitute_vars, vars_used
from .base import OptionsPass, register_pass
from .inline import inline
from .jvp import jvp_with_loop_splits
from .partial_eval import closure_facts, holds_closures, partial_eval
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
                             [_residual_param(v) for v in needed])
    return _with(module, func, prim, tang)


def _with(module: Module, func: str, prim: Function, tang: Function) -> Module:
    """``module`` with ``<func>_primal`` and ``<func>_tangent`` added."""
    funcs = dict(module.functions)
    funcs[f"{func}_primal"] = prim
    funcs[f"{func}_tangent"] = tang
    return Module(funcs, module.meta)


def _straight_line(jf: Function, n: int) -> tuple[Function, Function] | None:
    """What ``Unzip.block`` then ``_shared`` make of a jvp function whose bindings are
    all calls of ops on variables and constants (most programs), in one walk instead of
    two: each binding is primal or tangent as it is met (a tangent reads a tangent), and
    a tangent binding's reads of primal values are substituted at once (a residual's
    first read makes its parameter, an argument-free binding is recomputed on the
    tangent side under a new variable, as ``_shared`` does). None when a binding is
    anything else (a branch, a loop, a tuple operand, a call of a function): the
    general path then unzips from the start."""
    tangent_vars = set(jf.params[n:])
    primal: list = []
    moved: list = []  # the tangent side's copies of the argument-free bindings
    tangent: list = []
    needed: list = []  # the residuals, in first-read order
    sub: dict = {}  # a residual or argument-free primal value -> the tangent side's
    add_primal, add_tangent, is_tangent = primal.append, tangent.append, tangent_vars.add
    get = sub.get

    def residual(a: Var) -> Var:  # a residual's first read: its parameter
        name = a.name  # (_residual_param, inlined)
        r = _new_node(Var)
        _var_name(r, name if name.endswith("_res") else f"{name}_res")
        _var_type(r, a.type)
        needed.append(a)
        sub[a] = r
        return r

    for b in jf.body.bindings:
        value = b.value
        if type(value) is not Call or type(value.callee) is not Op:
            return None
        args = value.args
        n_args = len(args)
        if n_args == 1:  # an operand that is a tangent makes a tangent to keep as it is
            x = args[0]
            tx = type(x)
            if tx is Var and x in tangent_vars:
                is_tangent(b.var)
                add_tangent(b)
                continue
            if tx is Tuple:
                return None
            add_primal(b)  # a primal binding (with an operand: not argument-free)
            continue
        if n_args == 2:  # most calls: sorted and substituted without a loop
            x, y = args
            tx, ty = type(x), type(y)
            if tx is Tuple or ty is Tuple:
                return None
            x_tan = tx is Var and x in tangent_vars
            if not x_tan and not (ty is Var and y in tangent_vars):
                add_primal(b)  # a primal binding (with operands: not argument-free)
                continue
            is_tangent(b.var)
            if not x_tan and tx is Var:
                x = get(x) or residual(x)
            elif x_tan and ty is Var and y not in tangent_vars:
                y = get(y) or residual(y)
            else:  # a constant and a tangent, or two tangents: nothing to substitute
                add_tangent(b)
                continue
            copied = _new_node(Call)  # as Call.with_args makes one: the attrs shared
            copied.callee, copied.args, copied.attrs = value.callee, (x, y), value.attrs
            add_tangent(Binding(b.var, copied))
            continue
        for a in args:
            if type(a) is Var:
                if a in tangent_vars:
                    break
            elif type(a) is Tuple:
                return None
        else:  # a primal binding
            add_primal(b)
            if not args and isinstance(b.var.type, TensorType):
                var = Var(b.var.name, b.var.type)
                sub[b.var] = var
                moved.append(Binding(var, value))
            continue
        is_tangent(b.var)
        new_args = None  # the substituted operands, once one is substituted
        for k, a in enumerate(args):
            t = type(a)
            if t is Var:
                r = get(a)
                if r is None:
                    if a in tangent_vars:
                        continue
                    r = residual(a)
                if new_args is None:
                    new_args = list(args)
                new_args[k] = r
            elif t is Tuple:
                return None
        if new_args is not None:
            copied = _new_node(Call)  # as Call.with_args makes one: the attrs shared
            copied.callee, copied.args, copied.attrs = value.callee, tuple(new_args), value.attrs
            b = Binding(b.var, copied)
        add_tangent(b)
    result, dresult = jf.body.result.fields
    for v in vars_used(Tuple([dresult])):
        if v not in sub and v not in tangent_vars:
            needed.append(v)
            sub[v] = _residual_param(v)
    out = Tuple([result, Tuple(list(needed))])
    # arg_type(out), without its call per residual
    out_type = TupleType([arg_type(result), TupleType([v.type for v in needed])])
    prim = Function(jf.params[:n], Block(primal, out), out_type)
    return prim, Function([sub[v] for v in needed] + list(jf.params[n:]),
                          Block(moved + tangent, _substituted(dresult, sub)),
                          arg_type(dresult))


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
    return typed_var(v.name if v.name.endswith("_res") else f"{v.name}_res", v.type)


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
        sub[v] = _residual_param(v)

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
                          Block(bindings, _substituted(dresult, sub)), arg_type(dresult))


class Linearize(OptionsPass):
    """Adds ``<func>_primal`` and ``<func>_tangent`` (see ``linearize``)."""

    name = "linearize"
    function = staticmethod(linearize)


register_pass(Linearize)
