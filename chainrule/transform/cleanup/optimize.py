"""The default clean-up: simplify, cse and dce, repeated until nothing changes.

Each pass returns a function it did not change as the same object, so the
fixed point is seen without comparing programs.

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64:
...     a = exp(x)
...     b = exp(x)
...     c = subtract(a, b)
...     d = add(a, 0.0)
...     e = multiply(d, d)
...     s = sum(e)
...     return s
... ''')
>>> print(optimize(m))
def main(x: f64[3]) -> f64:
    a = exp(x)
    e = multiply(a, a)
    s = sum(e)
    return s
<BLANKLINE>
"""

from __future__ import annotations

from ...ir.collector import collector_paused
from ...ir.nodes import Function, Module
from ..base import Pass, register_pass
from .cse import cse_function
from .dce import dce_function
from .inline import inline
from .partial_eval import may_inline
from .simplify import MAX_SWEEPS, simplify_settled

MAX_ROUNDS = 4


def optimize_function(fn: Function, max_rounds: int = MAX_ROUNDS) -> Function:
    """``fn`` after rounds of simplify, cse and dce, until a round changes nothing."""
    for _ in range(max_rounds):
        simplified, settled = simplify_settled(fn, MAX_SWEEPS)
        shared = cse_function(simplified)
        new = dce_function(shared)
        if new is fn:
            break
        fn = new
        if settled and shared is simplified:
            # simplify is at its fixed point and cse shared nothing: dce only dropped
            # bindings nothing reads, and no rewrite or sharing depends on those, so
            # another round would change nothing (it used to cost a third of the time)
            break
    return fn


class Optimize(Pass):
    """Partial evaluation by inlining (unless ``inline_calls=False``), then simplify,
    cse, dce to a fixed point (at most ``max_rounds`` rounds)."""

    name = "optimize"

    def __init__(self, max_rounds: int = MAX_ROUNDS, inline_calls: bool = True):
        self.max_rounds = max_rounds
        self.inline_calls = inline_calls

    def run(self, module: Module) -> Module:
        if self.inline_calls and may_inline(module):
            module = inline(module)
        return Module({name: optimize_function(fn, self.max_rounds)
                       for name, fn in module.functions.items()}, module.meta)


register_pass(Optimize)


@collector_paused
def optimize(module: Module, max_rounds: int = MAX_ROUNDS, inline_calls: bool = True) -> Module:
    """Clean up ``module``: inline non-recursive calls and known closures (partial
    evaluation), then simplify, cse, dce until nothing changes (a few rounds)."""
    return Optimize(max_rounds, inline_calls)(module)
