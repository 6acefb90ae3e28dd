"""Partial evaluation by inlining (seed 001): calls of non-recursive module
functions are replaced by their bodies, and calls of closures whose
definition is known (bound in scope, possibly through a literal tuple) by
theirs. After the reverse mode of a program with function calls, this turns
``y, pullback = g_vjp(x) ... pullback(dy)`` back into first-order code with
no closures left; dce then drops what is unused.

Recursive functions and ``@checkpoint`` functions (whose point is to be
recomputed, not merged) are left as calls.

>>> import chainrule as cr
>>> m = cr.parse('''
... def sq(a: f64) -> f64:
...     b = multiply(a, a)
...     return b
...
... def main(x: f64) -> f64:
...     y = sq(x)
...     z = sq(y)
...     return z
... ''')
>>> print(inline(m)["main"].body.bindings[-1].value.callee.name)
multiply
"""

from __future__ import annotations

from ...ir.nodes import Call, Constant, Function, GlobalVar, Module, Tuple, TupleGetItem, Var
from ...ir.visitor import Mutator, nested_blocks
from ..base import Pass, register_pass


def callees(fn: Function) -> set[str]:
    out, stack = set(), [fn.body]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            if isinstance(b.value, Call) and isinstance(b.value.callee, GlobalVar):
                out.add(b.value.callee.name)
            stack.extend(nested_blocks(b.value))
    return out


def inlinable(module: Module) -> set[str]:
    """Functions that are not recursive (directly or through others) nor checkpointed."""
    graph = {name: callees(fn) & set(module.functions)
             for name, fn in module.functions.items()}
    recursive = set()
    for start in graph:  # a function is recursive when it can reach itself
        seen, stack = set(), list(graph[start])
        while stack:
            name = stack.pop()
            if name == start:
                recursive.add(start)
                break
            if name not in seen:
                seen.add(name)
                stack.extend(graph[name])
    return {name for name, fn in module.functions.items()
            if name not in recursive and not fn.attrs.get("checkpoint")}


class Inliner(Mutator):
    def __init__(self, module: Module, targets: set[str]):
        super().__init__(module)
        self.targets = targets
        self.closures: dict[Var, Function] = {}  # copied closure definitions
        self.tuples: dict[Var, Tuple] = {}  # copied literal tuples

    def _inline(self, params, body, args):
        for p, a in zip(params, args):
            self.subst[p] = a
        self.emit_bindings(body.bindings)
        return self.atom(body.result)

    def rewrite(self, binding):
        v = binding.value
        if isinstance(v, Call):
            args = [self.atom(a) for a in v.args]
            if isinstance(v.callee, GlobalVar) and v.callee.name in self.targets:
                fn = self.module[v.callee.name]
                return self._inline(fn.params, fn.body, args)
            if isinstance(v.callee, Var):
                known = self.closures.get(self.atom(v.callee))
                if known is not None:
                    return self._inline(known.params, known.body, args)
        if isinstance(v, TupleGetItem):
            src = self.atom(v.tuple_value)
            literal = self.tuples.get(src) if isinstance(src, Var) else (
                src if isinstance(src, Tuple) else None)
            if literal is not None:
                return literal.fields[v.index]
        return super().rewrite(binding)

    def emit_bindings(self, bindings) -> None:
        b = self.builder
        for binding in bindings:
            new = self.rewrite(binding)
            if new is None:
                continue
            if isinstance(new, (Var, Constant)) and not isinstance(binding.value, (Var, Constant)):
                self.subst[binding.var] = new
                continue
            var = b.emit(new, binding.var.name)
            self.subst[binding.var] = var
            if isinstance(new, Function):
                self.closures[var] = new
            elif isinstance(new, Tuple):
                self.tuples[var] = new


def inline(module: Module) -> Module:
    """Inline non-recursive module functions and known closures (see above);
    functions with nothing to inline are returned as the same objects."""
    targets = inlinable(module)
    funcs = {}
    for name, fn in module.functions.items():
        if callees(fn) & targets or _has_closure(fn):
            inliner = Inliner(module, targets)
            funcs[name] = inliner.function(fn)
        else:
            funcs[name] = fn
    return Module(funcs, module.meta)


def _has_closure(fn: Function) -> bool:
    stack = [fn.body]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            if isinstance(b.value, Function):
                return True
            stack.extend(nested_blocks(b.value))
    return False


class Inline(Pass):
    """Partial evaluation: inline module functions and known closures."""

    name = "inline"

    def run(self, module: Module) -> Module:
        return inline(module)


register_pass(Inline)
