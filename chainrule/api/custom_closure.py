"""What a custom function's outputs depend on besides its arguments.

A ``custom_vjp`` / ``custom_jvp`` rule gives derivatives with respect to the
function's arguments only. When the function reads a value being differentiated
from outside them (a closure over a traced value or a tape tensor), the rule
cannot say how the output changes with it: JAX refuses to differentiate with
respect to such a value, and so does chainrule. The values found here become
extra operands of the custom op whose rules answer ``NoDerivative``, so asking
for that derivative is an error naming the function, never a silent zero, and
a closure over constants (or values not being differentiated) still works.
"""

from __future__ import annotations

import contextlib

from ..emit.trace import REBOUND, TRACE_STACK, Traced
from ..errors import GradientError, RecordedValueError, TraceError
from ..frontend.tracer import recording_trace
from ..ir.nodes import Function, Var
from ..ir.types import has_float
from ..ir.visitor import atoms_of, block_free_vars, nested_blocks
from ..tape.tensor import NODE_NUMBERS as _NODE_NUMBERS
from ..tape.tensor import Tensor


def _reads(value) -> list:
    """The variables a binding value reads from outside itself."""
    if isinstance(value, Function):
        return block_free_vars([value.body], value.params)
    own = [a for a in atoms_of(value) if isinstance(a, Var)]
    return own + block_free_vars(list(nested_blocks(value)), getattr(value, "loop_vars", ()))


def mark(leaves):
    """Where recording stands before the function runs: (trace, bindings so far) on
    traced values, the next node number on tape tensors."""
    if any(isinstance(x, Traced) for x in leaves):
        # the innermost function being traced, which records the function's body: the
        # arguments may all be an enclosing trace's values (its captured inputs)
        trace = recording_trace(leaves)
        return trace, len(trace.builder.bindings)
    return None, next(_NODE_NUMBERS)


def closed_over(start, leaves, out_leaves) -> list:
    """The values being differentiated that ``out_leaves`` depend on other than through
    ``leaves``: traced values of the same trace, or tape tensors that require grad."""
    trace, position = start
    if trace is not None:
        return _traced_roots(trace, position, leaves, out_leaves)
    return _tape_roots(position, leaves, out_leaves)


def _traced_roots(trace, position, leaves, out_leaves) -> list:
    bindings = trace.builder.bindings[position:]
    defined = {b.var: b.value for b in bindings}
    # the arguments as this trace sees them: its own values, or the parameters that
    # outer arguments were lifted into
    args = {x.variable if x.tracer is trace else trace.lifted.get(x.variable)
            for x in leaves if isinstance(x, Traced)}
    stack = [x.variable for x in out_leaves
             if isinstance(x, Traced) and x.tracer is trace and isinstance(x.variable, Var)]
    seen, roots = set(), []
    while stack:
        v = stack.pop()
        if v in seen or v in args:
            continue
        seen.add(v)
        value = defined.get(v)
        if value is not None:
            stack.extend(_reads(value))
        elif has_float(v.type):
            roots.append(trace.wrap(v))
    return roots


def _tape_roots(first_seq, leaves, out_leaves) -> list:
    args = {id(x) for x in leaves}
    stack = [x for x in out_leaves if isinstance(x, Tensor)]
    seen, roots = set(), []
    while stack:
        t = stack.pop()
        if id(t) in seen or id(t) in args:
            continue
        seen.add(id(t))
        if t.node is not None and t.node.seq >= first_seq:
            stack.extend(a for a in t.node.args if isinstance(a, Tensor))
        elif t.requires_grad:
            roots.append(t)
    return roots


def closed_vars(closed) -> tuple:
    """For each closed-over traced value, the IR variables that stand for it (what the
    rules' trace rebinds): its own, and the outer traces' variables it was lifted from
    (the function may hold the outer value); empty for tape tensors (no rebinding)."""
    out = []
    for x in closed:
        names = []
        if isinstance(x, Traced):
            names.append(x.variable)
            for tr in reversed(TRACE_STACK):  # innermost first: lifted from the next out
                names.extend(v for v, p in tr.lifted.items() if p in names and v not in names)
        out.append(tuple(names))
    return tuple(out)


def closed_name(x) -> str:
    return x.variable.name if isinstance(x, Traced) else "a tape tensor that requires grad"


@contextlib.contextmanager
def rebound(name: str, kind: str, variables, operands):
    """Run a rule with the closed-over values of its function standing for the op's
    operands that carry them (JAX's closure_convert, done for the user): the rule may
    read them as constants. A traced value read from outside the arguments that is not
    one of them is an error naming the function."""
    mapping = {v: x for names, x in zip(variables, operands) for v in names}
    REBOUND.append(mapping)
    try:
        yield
    except RecordedValueError:
        raise GradientError(
            f"{name}: a {kind} rule reads a tape tensor that requires grad from outside "
            f"the function's arguments (a closure); the rule cannot read it on the tape: "
            f"pass it in as an argument (and extend the rule), or .detach() it") from None
    except TraceError as exc:
        if "escaped the function that traced it" not in str(exc):
            raise
        raise GradientError(
            f"{name}: a {kind} rule reads a traced value from outside the function's "
            f"arguments and residuals ({exc}); pass it in as an argument, or return it "
            f"as a residual") from None
    finally:
        REBOUND.remove(mapping)


def refusal(name: str, kind: str, what: str) -> str:
    return (f"{name}: differentiating a {kind} function with respect to {what}, a value it "
            f"reads from outside its arguments (a closure over a value being "
            f"differentiated): its rule only covers its arguments; pass {what} in as an "
            f"argument (and extend the rule), or stop its gradient")
