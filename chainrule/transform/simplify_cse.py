"""One sweep doing simplify and cse together, for ``optimize``'s rounds.

``optimize`` runs simplify, then cse, then dce; on a straight-line function (no
``if``, ``while`` or nested function) whose simplification finishes in one sweep, a
single forward scan can do both: each binding is simplified as ``simplify`` does,
then looked up in cse's table, and a duplicate becomes a substitution like a copy.
That saves one walk over the program (a third of ``optimize``'s time on a long
gradient).

The result is the IR that cse applied to simplify's result gives: a variable cse
replaces has the same definition (so the same facts for simplify's rules) as the
one replacing it. Two cases are left to the separate passes (``None``): a nested
block, and a simplification left unfinished (simplify would sweep again before cse
runs). So is a shared commutative call whose operands are in the other order: a
rule reading operand positions (``-(c * x)`` -> ``(-c) * x``) would then write
them in the other order.
"""

from __future__ import annotations

from ..ir.nodes import Binding, Call, Constant, Function, If, Var, While
from .base import same_block, subst_atom, subst_direct
from .cse import _CSE
from .simplify import _Simplifier


class _NotFused(Exception):
    """This function is for the separate passes."""


class _SimplifierSharing(_Simplifier):
    def __init__(self):
        super().__init__()
        self.cse = _CSE()
        self.shared = False  # cse replaced a binding

    def block(self, block):
        out: list = []
        sub = self.sub
        cse = self.cse
        table, defs = cse.table, self.defs
        for b in block.bindings:
            value = subst_direct(b.value, sub)
            t = type(value)
            if t is If or t is While or t is Function:
                raise _NotFused
            value = self.rewrite(b.var, value, out)
            t = type(value)
            if t is Var or t is Constant:
                sub[b.var] = value
                self.changed = True
                continue
            key = cse.key(value)
            if key is not None:
                prev = table.get(key)
                if prev is not None:
                    if t is Call and type(key[2]) is tuple and key[2][:1] == ("commutative",):
                        first = defs.get(prev)
                        if type(first) is not Call or list(map(cse.atom_key, first.args)) != list(
                                map(cse.atom_key, value.args)):
                            raise _NotFused  # a commutative call in the other order
                    sub[b.var] = prev
                    self.shared = True
                    continue
                table[key] = b.var
            self.record(b.var, value)
            out.append(b if value is b.value else Binding(b.var, value))
        return same_block(block, out, subst_atom(block.result, sub))


def simplify_and_share(fn: Function) -> tuple[Function, bool] | None:
    """``cse(simplify(fn))`` for one sweep's worth of simplification, and whether cse
    shared anything; None when the separate passes must run (module docstring)."""
    s = _SimplifierSharing()
    try:
        body = s.block(fn.body)
    except _NotFused:
        return None
    if s.changed and s.unfinished:  # simplify would sweep again before cse runs
        return None
    if body is not fn.body:
        fn = Function(fn.params, body, fn.ret_type, fn.attrs)
    return fn, s.shared
