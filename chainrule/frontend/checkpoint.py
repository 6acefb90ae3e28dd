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

import numpy as np

from ..checks import check_callable
from ..emit.trace import Traced
from ..errors import InvalidValueError, TraceError
from ..ir.nodes import Function, GlobalVar
from ..tree import flatten, unflatten
from .tracer import recording_trace, trace_function


def checkpoint(f):
    """Mark ``f`` so that reverse mode recomputes its intermediates."""
    check_callable(f, "checkpoint")

    @functools.wraps(f)
    def wrapped(*args):
        leaves = flatten(tuple(args))[0]
        traced = [x for x in leaves if isinstance(x, Traced)]
        if not traced:
            return f(*args)
        tr = recording_trace(leaves)  # innermost: the arguments may all be outer values
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


class Budget:
    """How much reverse mode may keep of a loop: ``Budget(snapshots=k)`` keeps at most
    ``k`` copies of the loop's carry at a time, ``Budget(bytes=n)`` as many as fit in
    ``n`` bytes (at least one). Given as ``checkpoint=`` to ``fori_loop``,
    ``while_loop`` and ``scan``, it replaces storing every iteration's residuals by
    binomial checkpointing (Griewank's revolve): iterations are run again from the
    snapshots, as few times as the budget allows (see docs/loops.md).

    >>> Budget(snapshots=10)
    Budget(snapshots=10)
    >>> Budget(bytes=2**20).snapshots_for(8 * 1000)
    131
    """

    __slots__ = ("snapshots", "bytes")

    def range(self, *args) -> range:
        """``range(*args)``: in a ``@script`` function, ``for i in budget.range(n)`` is a
        loop checkpointed under this budget (in Python, a plain range)."""
        return range(*args)

    def test(self, cond):
        """``cond``: in a ``@script`` function, ``while budget.test(cond):`` is a while
        loop checkpointed under this budget (its trip count is known when it ends: the
        schedule is made then, see docs/loops.md); in Python, the plain test."""
        return cond

    def __init__(self, snapshots: int | None = None, bytes: int | None = None):  # noqa: A002
        if (snapshots is None) == (bytes is None):
            raise InvalidValueError("Budget: give snapshots=k or bytes=n (one of them)")
        for what, v in (("snapshots", snapshots), ("bytes", bytes)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                  or v < 1):
                raise InvalidValueError(f"Budget: {what} must be an integer >= 1, got "
                                            f"{v!r}")
        self.snapshots = None if snapshots is None else int(snapshots)
        self.bytes = None if bytes is None else int(bytes)

    def snapshots_for(self, carry_bytes: int) -> int:
        """How many snapshots of a carry of ``carry_bytes`` bytes the budget allows."""
        if self.snapshots is not None:
            return self.snapshots
        return max(1, self.bytes // max(1, int(carry_bytes)))

    def __repr__(self) -> str:
        if self.snapshots is not None:
            return f"Budget(snapshots={self.snapshots})"
        return f"Budget(bytes={self.bytes})"


def mark_loop(tr, first, trips, budget, carry_types):
    """``loop_checkpoint(first, trips, snapshots=k)``: the first initial value of a loop,
    marked for binomial checkpointing under ``budget`` (a traced value)."""
    from ..ops.stack_schedule import LOOP_CHECKPOINT

    if not isinstance(budget, Budget):
        raise InvalidValueError(f"checkpoint= takes a chainrule.Budget(snapshots=k) or "
                                    f"Budget(bytes=n), got {budget!r}")
    carry_bytes = 0
    for t in carry_types:
        if not t.is_static:
            if budget.bytes is not None:
                raise InvalidValueError(f"Budget(bytes=...): the carry has the symbolic "
                                            f"type {t!r}; give snapshots=k instead")
            continue
        carry_bytes += int(np.prod(t.shape, dtype=np.int64)) * t.dtype.numpy.itemsize
    k = budget.snapshots_for(carry_bytes)
    return tr.apply(LOOP_CHECKPOINT, [first, trips], {"snapshots": k})


def script_budget(src, env, node, method: str):
    """``budget.<method>(...)`` in a ``@script`` function, ``budget`` a ``Budget`` it reads
    from its globals or closure: returns ``budget``; None for anything else."""
    import ast

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == method and isinstance(node.func.value, ast.Name)
            and node.func.value.id not in env):
        return None
    found, base = src.global_value(node.func.value.id)
    return base if found and isinstance(base, Budget) else None


def mark_script_loop(tr, first, counter, budget, leaves):
    """``mark_loop`` for a ``@script`` loop: ``for i in budget.range(start, stop, step)``
    (``counter`` is ``(name, start, stop, step)``) has a trip count known before the loop
    runs when the bounds are numbers, or traced values with step 1; a ``while
    budget.test(c)`` loop (``counter`` None), or another step, has it only at its end
    (-1: scheduled online)."""
    from ..ops import maximum
    from .leaves import default_type

    start, stop, step = counter[1:] if counter is not None else (None, None, 0)
    if counter is None:
        trips = np.int64(-1)
    elif not isinstance(start, Traced) and not isinstance(stop, Traced):
        trips = np.int64(len(range(int(start), int(stop), step)))
    elif step == 1:
        lo = start.astype(np.int64) if isinstance(start, Traced) else np.int64(start)
        hi = stop.astype(np.int64) if isinstance(stop, Traced) else np.int64(stop)
        trips = maximum(hi - lo, np.int64(0))
    else:
        trips = np.int64(-1)
    return mark_loop(tr, first, trips, budget, [default_type(v) for v in leaves])
