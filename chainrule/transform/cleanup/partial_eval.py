"""Partial evaluation + dead-code elimination (seed 001): the higher-order
reverse mode of a first-order program reduces to first-order code.

``partial_eval`` inlines calls of non-recursive module functions and of
closures whose definition is known (``inline``), then drops what became
dead (``dce``), and repeats until nothing changes: the closures that
``gradient`` creates for called functions and branches (``pullback``) are
applied where they are defined, and nothing of them is left.

>>> import chainrule as cr
>>> from chainrule.transform.reverse.gradient import gradient
>>> m = cr.parse('''
... def sq(a: f64) -> f64:
...     b = multiply(a, a)
...     return b
...
... def main(x: f64) -> f64:
...     y = sq(x)
...     return y
... ''')
>>> out = partial_eval(gradient(m))["main_adjoint"]
>>> any(type(b.value).__name__ == "Function" for b in out.body.bindings)
False
"""

from __future__ import annotations

from ...ir.nodes import Call, Function, Module, Var
from ...ir.op import Op
from ...ir.visitor import nested_blocks
from ..base import Pass, register_pass
from .dce import dce
from .inline import inline

MAX_ROUNDS = 8


def partial_eval(module: Module, max_rounds: int = MAX_ROUNDS) -> Module:
    """Inline known functions and closures, then remove dead code, to a fixed point."""
    for _ in range(max_rounds):
        new = dce(inline(module))
        if all(new.functions.get(k) is fn for k, fn in module.functions.items()):
            return new
        module = new
    return module


def holds_closures(fn: Function) -> bool:
    """Whether ``fn`` defines closures or calls function values (anywhere inside)."""
    return closure_facts(fn)[1]  # its walk tests callees inline (no call per binding)


def may_inline(module: Module) -> bool:
    """Whether ``inline`` can change ``module``: a function calls a module function or
    defines a closure (anywhere inside). When not, ``inline`` returns every function as
    the same object, and a pass may skip it (one scan instead of its three)."""
    return any(closure_facts(fn)[0] for fn in module.functions.values())


def closure_facts(fn: Function) -> tuple[bool, bool]:
    """``(may_inline, holds_closures)`` of ``fn`` alone, in one walk: whether it defines
    a closure or calls anything but an op, and whether it defines a closure or calls a
    function value (a pass asking both of a long program walks it once, not twice)."""
    calls = False
    stack = [fn.body]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            t = type(v)
            if t is Call:  # the common case first
                callee = v.callee
                if type(callee) is not Op:
                    if isinstance(callee, Var):
                        return True, True
                    calls = True
                continue
            if t is Function:
                return True, True
            stack.extend(nested_blocks(v))
    return calls, False


class PartialEval(Pass):
    """Partial evaluation: inline known functions and closures, then dce (seed 001)."""

    name = "partial_eval"

    def __init__(self, max_rounds: int = MAX_ROUNDS):
        self.max_rounds = max_rounds

    def run(self, module: Module) -> Module:
        return partial_eval(module, self.max_rounds)


register_pass(PartialEval)
