"""``checkpoint(f)``: reverse mode stores only f's inputs and recomputes its
intermediates during the backward sweep (memory for time).

Traced, a checkpointed function becomes a module function flagged
``@checkpoint``; the gradient pass calls it plainly on the forward sweep and
runs its vjp (forward again, then backward) when the backward sweep reaches
it. Applied to a loop body (``fori_loop(0, n, checkpoint(step), x)``) each
iteration keeps only its carry instead of every intermediate.
"""

from __future__ import annotations

import functools

from ..checks import check_callable
from ..errors import TraceError
from ..ir.nodes import Function, GlobalVar
from ..tree import flatten, unflatten
from .tracer import Traced, trace_function


def checkpoint(f):
    """Mark ``f`` so that reverse mode recomputes its intermediates."""
    check_callable(f, "checkpoint")

    @functools.wraps(f)
    def wrapped(*args):
        leaves = flatten(tuple(args))[0]
        traced = [x for x in leaves if isinstance(x, Traced)]
        if not traced:
            return f(*args)
        tr = max((x.tracer for x in traced), key=lambda t: t.level)
        base = getattr(f, "__name__", "f")
        base = base if base.isidentifier() and base != "<lambda>" else "block"
        name, k = f"{base}_checkpoint", 0
        while name in tr.functions or name in tr.builder.extra_globals:
            k += 1
            name = f"{base}_checkpoint_{k}"
        sub = trace_function(f, args, name=name)
        fn = sub.module[name]
        _refuse_effects(sub.module, name)
        functions = dict(sub.module.functions)
        flags = {**fn.attrs, "checkpoint": True}
        functions[name] = Function(fn.params, fn.body, fn.ret_type, flags)
        for fname, g in functions.items():
            tr.functions.setdefault(fname, g)
            tr.builder.extra_globals.setdefault(fname, g.type)
        out = tr.call(GlobalVar(name), list(leaves) + list(sub.lifted_values), name=f"{base}_out")
        if sub.out_tree.kind is None:
            return out
        return unflatten(sub.out_tree, list(out))

    wrapped.checkpointed = True
    return wrapped


def _refuse_effects(module, name: str) -> None:
    """A checkpointed function is run again by the backward sweep: a random draw in it
    would give new numbers there, so the gradient would not match the forward."""
    from ..ir.nodes import Call
    from ..ir.op import Op
    from ..ir.visitor import nested_blocks

    stack = [fn.body for fn in module.functions.values()]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            if isinstance(v, Call) and isinstance(v.callee, Op) and v.callee.effects:
                raise TraceError(
                    f"checkpoint: {name} draws random numbers ({v.callee.name} at "
                    f"{b.var.name}), and the backward sweep runs it again, which would draw "
                    f"new ones; draw outside the checkpointed function and pass the numbers "
                    f"in, or use chainrule.random keys")
            stack.extend(nested_blocks(v))
