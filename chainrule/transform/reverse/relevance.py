"""Relevance for the gradient pass: which variables of a block need an adjoint (they
depend on a source and a target depends on them), how many straight-line reads each
has (so the sweep can name an adjoint once its last contribution arrived), and the
refusals of what reverse mode does not compile (ops without a VJP rule, function
values inside tuples or stacks)."""

from __future__ import annotations

from ...errors import CompiledHigherOrderError, NoRuleError
from ...ir.nodes import Binding, Call, Function, Tuple, TupleGetItem, Var
from ...ir.op import Op
from ...ir.types import FuncType, TensorType, has_float
from ...ir.visitor import vars_used
from ...ops.stack import STACK_OPS
from ...rules import VJP, has_vjp
from ..ad.adjoint import has_function
from .ops import arg_type_of


def relevant_vars(bindings, sources, targets) -> set[Var]:
    """Variables that depend on a source and that a target depends on (the rest
    is the seed's "irrelevant parts")."""
    return analyze_relevance(bindings, sources, targets)[0]


def analyze_relevance(bindings, sources, targets
                      ) -> tuple[set[Var], dict[Var, int], list[int], bool]:
    """The relevant variables, how many times each variable is read by relevant
    straight-line bindings (for the variables nothing else reads: not a branch, a
    loop, a function call, nor the result), the positions of the relevant
    bindings other than calls of ops with a VJP rule giving an array (the ones
    ``check_relevant`` looks at), in order, and whether every binding is a call of
    an op (a block the forward sweep can share as it is: ``Sweep.forward``)."""
    needs = set(sources)
    reads = []  # what each binding reads: computed once for both walks
    only_ops = True
    append = reads.append
    disjoint = needs.isdisjoint
    for b in bindings:
        v = b.value
        if type(v) is Call and type(v.callee) is Op:
            used = v.args  # vars_used's common case: operands that are all variables
            for a in used:
                if type(a) is not Var:
                    used = vars_used(v)
                    break
            append(used)
            if not v.callee.differentiable:
                continue  # floor(x), sign(x)...: their derivative is zero, nothing flows back
        else:
            only_ops = False
            used = vars_used(v)
            append(used)
        t = b.var.type
        if ((t.dtype[0] in "fc" if type(t) is TensorType else has_float(t))  # has_float
                and not disjoint(used)):
            needs.add(b.var)
    reaches = {t for t in targets if isinstance(t, Var)}
    counts: dict[Var, int] = {}
    other: set[Var] = set(reaches)
    get = counts.get
    checks = []
    reach = reaches.update
    for i, b in zip(range(len(bindings) - 1, -1, -1), reversed(bindings)):
        var = b.var
        if var in reaches:
            used = reads[i]
            reach(used)
            if var in needs:
                v = b.value
                t = type(v)
                if t is Call and type(v.callee) is Op:
                    op = v.callee
                    if op not in VJP or op in STACK_OPS or type(var.type) is not TensorType:
                        checks.append(i)
                    for a in used:
                        counts[a] = get(a, 0) + 1
                elif t is Tuple or t is TupleGetItem or t is Var:
                    checks.append(i)
                    for a in used:
                        counts[a] = get(a, 0) + 1
                else:
                    checks.append(i)
                    other.update(used)
    for v in other:
        counts.pop(v, None)
    checks.reverse()
    return needs & reaches, counts, checks, only_ops


def check_relevant(bindings, positions) -> None:
    """Refuse, among the relevant bindings at ``positions``, function values inside
    tuples or stacks (``_refuse_binding``), then calls of ops without a VJP rule."""
    missing = {}
    for i in positions:
        b = bindings[i]
        var = b.var
        v = b.value
        if type(v) is Call and type(v.callee) is Op:
            op = v.callee
            if op in STACK_OPS or type(var.type) is not TensorType:
                _refuse_binding(b, "reverse")
            if not has_vjp(op):
                missing.setdefault(op.name, []).append(var.name)
        else:
            _refuse_binding(b, "reverse")
    if missing:
        raise NoRuleError("no VJP rule for: " + "; ".join(
            f"{op} (at {', '.join(vs[:3])}{'...' if len(vs) > 3 else ''})"
            for op, vs in missing.items()) + " (register one with chainrule.rules.register_vjp)")


def _refuse_binding(b: Binding, mode: str) -> None:
    """A function value inside a tuple or a stack made by ``b`` (the (result, pullback)
    pairs and stacks of pullbacks of a derivative of control flow), which this pass
    does not differentiate again (yet). A function value by itself is differentiated
    (reverse/closures.py); so are stacks of arrays."""
    v = b.value
    if isinstance(v, Function):
        return
    is_call = type(v) is Call
    if type(b.var.type) is TensorType and not (is_call and v.callee in STACK_OPS):
        return  # an array computed by an op or a function call: nothing to refuse
    if is_call and v.callee in STACK_OPS:
        if _holds_function(b.var.type, v.args):
            raise CompiledHigherOrderError(
                f"{mode} mode of a program that holds a stack of pullbacks "
                f"({b.var.name} = {v.callee.name}(...)): this is a derivative of a loop, "
                f"and differentiating it again is not compiled yet; grad/value_and_grad/"
                f"vjp run such higher-order derivatives on the tape instead")
    elif not isinstance(b.var.type, FuncType) and has_function(b.var.type):
        raise CompiledHigherOrderError(
            f"{mode} mode through {b.var.name}: {b.var.type!r} holds a function "
            f"value inside a tuple or a stack (as the (result, pullback) pairs of a "
            f"derivative of control flow do); a function value passed, called or "
            f"returned by itself is differentiated, one inside a tuple or stack is not "
            f"compiled yet; grad/value_and_grad/vjp run such higher-order derivatives "
            f"on the tape instead")


def _holds_function(result_type, args) -> bool:
    """A stack op on a stack of functions (stacks of arrays differentiate again)."""
    return has_function(result_type) or any(
        has_function(arg_type_of(a)) for a in args)
