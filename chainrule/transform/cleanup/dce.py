"""Dead-code elimination.

Every op but those declared ``effects`` (random draws) is pure, so a binding
whose variable is never read can go. One
backward scan per block reaches the fixed point: a binding is visited after
all its readers, so when it is dropped, the values it read have not been
visited yet and may be dropped in turn. A kept binding's nested blocks
(``If`` branches, ``While`` condition and body, nested ``Function`` bodies)
are cleaned during the scan, before the outer bindings they read are
reached, so a value used only inside a nested block stays live. An unused
nested function is an unused binding like any other.

With ``roots``, module functions not reachable by calls from the roots are
removed too (off by default: a module's functions are its public API).

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64[3]:
...     a = exp(x)
...     b = log(a)
...     c = sin(x)
...     return c
... ''')
>>> print(dce(m))
def main(x: f64[3]) -> f64[3]:
    c = sin(x)
    return c
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import ChainruleError
from ...ir.collector import collector_paused
from ...ir.nodes import Binding, Block, Call, Function, GlobalVar, Module, Tuple, Var, While
from ...ir.op import Op
from ...ir.visitor import atoms_of, nested_blocks
from ..base import Pass, register_pass, with_blocks


def _effect(value) -> bool:
    """A call of an op with an effect (a random draw): kept even when unused, so a
    compiled program advances the generator as running the function would."""
    return type(value) is Call and type(value.callee) is Op and value.callee.effects


def _mark(x, live: set) -> None:
    if type(x) is Var:
        live.add(x)
    elif type(x) is Tuple:
        for f in x.fields:
            _mark(f, live)


def _block(block: Block, live: set) -> Block:
    """``block`` without its dead bindings; adds what it reads to ``live``."""
    _mark(block.result, live)
    kept = []
    mark = live.add
    same = True  # every binding kept as it is (no comparison of the lists at the end)
    for b in reversed(block.bindings):
        value = b.value
        if type(value) is Call:  # the common case first: a call (no nested block)
            callee = value.callee
            if b.var not in live and not (type(callee) is Op and callee.effects):
                same = False
                continue
            if type(callee) is Var:
                mark(callee)
            for a in value.args:
                if type(a) is Var:
                    mark(a)
                elif type(a) is Tuple:
                    _mark(a, live)
            kept.append(b)
            continue
        if b.var not in live and not _effect(value):
            same = False
            continue
        inner = nested_blocks(value)
        if inner:
            if isinstance(value, While):
                # the body runs after the condition and may read its bindings
                body = _block(value.body, live)
                cond = _block(value.cond, live)
                new_value = with_blocks(value, (cond, body))
            else:
                new_value = with_blocks(value, [_block(blk, live) for blk in inner])
            if new_value is not value:
                b = Binding(b.var, new_value)
                same = False
        for a in atoms_of(value):
            if type(a) is Var:
                mark(a)
        kept.append(b)
    if same:
        return block
    kept.reverse()
    return Block(kept, block.result)


def dce_function(fn: Function) -> Function:
    """``fn`` without dead bindings (the same object if there were none)."""
    body = _block(fn.body, set())
    return fn if body is fn.body else Function(fn.params, body, fn.ret_type, fn.attrs)


def callees(fn: Function) -> set[str]:
    out: set[str] = set()
    stack = [fn.body]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            if isinstance(b.value, Call) and isinstance(b.value.callee, GlobalVar):
                out.add(b.value.callee.name)
            stack.extend(nested_blocks(b.value))
    return out


def reachable_functions(module: Module, roots: Iterable[str]) -> set[str]:
    """Names of the module functions that calls from ``roots`` can reach."""
    roots = [roots] if isinstance(roots, str) else list(roots)
    for r in roots:
        if r not in module.functions:
            raise ChainruleError(f"dce: root {r!r} is not a function of the module "
                                 f"(it has {list(module.functions)})")
    seen = set(roots)
    todo = list(roots)
    while todo:
        for callee in callees(module.functions[todo.pop()]):
            if callee not in seen and callee in module.functions:
                seen.add(callee)
                todo.append(callee)
    return seen


class DCE(Pass):
    """Remove unused bindings; with ``roots``, also functions unreachable from them."""

    name = "dce"

    def __init__(self, roots: Iterable[str] | str | None = None):
        self.roots = roots

    def run(self, module: Module) -> Module:
        keep = None if self.roots is None else reachable_functions(module, self.roots)
        funcs = {name: dce_function(fn) for name, fn in module.functions.items()
                 if keep is None or name in keep}
        return Module(funcs, module.meta)


register_pass(DCE)


@collector_paused
def dce(module: Module, roots: Iterable[str] | str | None = None) -> Module:
    """Dead-code elimination of ``module`` (see the module docstring)."""
    return DCE(roots)(module)
