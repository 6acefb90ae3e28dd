"""Common-subexpression elimination.

Two bindings compute the same value when they are the same op call (same
callee, same arguments after substitution, same attributes; the operands
of ``add``, ``multiply``, ``equal``, ... in either order), the same literal
tuple, the same tuple projection or equal constants; every op is pure, so
the second is replaced by the first's variable.

Scoping follows the blocks: a binding of an outer block is reused inside
nested blocks (a closure just captures it), never the reverse, and never
across sibling ``If`` branches. The body of a ``While`` sees the bindings
of its condition block, as it does when it runs. The table is a scoped hash
table (one dict and an undo list per block), so a sweep is linear.

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64[3]:
...     a = exp(x)
...     b = exp(x)
...     c = add(a, b)
...     return c
... ''')
>>> print(cse(m))
def main(x: f64[3]) -> f64[3]:
    a = exp(x)
    c = add(a, a)
    return c
<BLANKLINE>
"""

from __future__ import annotations

from ...ir.collector import collector_paused
from ...ir.nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from ...ir.op import Op
from ..base import Pass, register_pass, subst_atom, subst_direct, with_blocks


def freeze(value):
    """A hashable key for an attribute value that tells 0 from 0.0 from -0.0 from False."""
    if isinstance(value, tuple):
        return (type(value).__name__, tuple(freeze(v) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return (type(value).__name__, value)


def _ordered(pair: tuple) -> tuple:
    """The two variables of a commutative call in one order (by identity: variables
    hash and compare by identity), so ``a * b`` and ``b * a`` get one key, bit for bit
    the same value."""
    a, b = pair
    return pair if id(a) <= id(b) else (b, a)


def constant_key(c: Constant) -> tuple:
    return ("const", str(c.type.dtype), c.data.shape, c.data.tobytes())


class _CSE:
    def __init__(self):
        self.sub: dict[Var, Var] = {}
        self.table: dict[tuple, Var] = {}
        self._const_keys: dict[int, tuple] = {}  # id -> (constant, key): holds the object

    def atom_key(self, x):
        t = type(x)
        if t is Var:
            return x
        if t is Constant:
            hit = self._const_keys.get(id(x))
            if hit is None:
                hit = self._const_keys[id(x)] = (x, constant_key(x))
            return hit[1]
        if t is Tuple:
            return ("tuple", *(self.atom_key(f) for f in x.fields))
        return None

    def key(self, value):
        t = type(value)
        if t is Call:
            callee = value.callee
            tc = type(callee)
            if tc is Op and callee.effects:
                return None  # two draws are two draws
            ck = ("global", callee.name) if tc is GlobalVar else callee
            args = value.args
            for a in args:  # the common case: variables only, which are their own keys
                if type(a) is not Var:
                    args = tuple([a if type(a) is Var else self.atom_key(a) for a in args])
                    if len(args) == 2 and tc is Op and callee.commutative:
                        args = ("commutative", frozenset(args))  # a * b is b * a
                    break
            else:
                if len(args) == 2 and tc is Op and callee.commutative:
                    args = _ordered(args)
            if value.attrs:
                return (ck, args, tuple(sorted([(k, freeze(v)) for k, v in value.attrs.items()])))
            return (ck, args)  # ck is never a string: no other kind of key starts so
        if t is TupleGetItem:
            return ("get", self.atom_key(value.tuple_value), value.index)
        if t is Tuple or t is Constant:
            return self.atom_key(value)
        return None  # copies are simplify's business; If/While/Function are not compared

    def block(self, block: Block, keep_scope: bool = False):
        """``block`` with duplicates removed; with ``keep_scope`` also the keys it added."""
        added = []
        out = []
        table, sub = self.table, self.sub
        same = True  # every binding kept as it is (no comparison of the lists at the end)
        for b in block.bindings:
            value = b.value
            if type(value) is Call and not value.attrs:
                op = value.callee
                if type(op) is Op and not op.effects:
                    args = value.args
                    for a in args:
                        if type(a) is not Var or a in sub:
                            break
                    else:  # the common case: an op of variables, nothing substituted
                        if len(args) == 2 and op.commutative:
                            a, c = args
                            if id(c) < id(a):  # ``_ordered``, inlined
                                args = (c, a)
                        key = (op, args)  # the key ``key`` makes of it
                        prev = table.setdefault(key, b.var)  # one hashing of the key
                        if prev is not b.var:
                            sub[b.var] = prev
                            same = False
                            continue
                        added.append(key)
                        out.append(b)
                        continue
            value = subst_direct(value, sub)
            tv = type(value)
            if tv is If or tv is While or tv is Function:
                value = self.nested(value)
                key = None
            else:
                key = self.key(value)
            if key is not None:
                prev = table.get(key)
                if prev is not None:
                    sub[b.var] = prev
                    same = False
                    continue
                table[key] = b.var
                added.append(key)
            if value is not b.value:
                b = Binding(b.var, value)
                same = False
            out.append(b)
        result = subst_atom(block.result, sub)
        new = block if same and result is block.result else Block(out, result)
        if keep_scope:
            return new, added
        for k in added:
            del table[k]
        return new

    def nested(self, value):
        if isinstance(value, While):
            cond, added = self.block(value.cond, keep_scope=True)
            body = self.block(value.body)
            for k in added:
                del self.table[k]
            return with_blocks(value, (cond, body))
        if isinstance(value, If):
            return with_blocks(value, (self.block(value.then_block),
                                       self.block(value.else_block)))
        return with_blocks(value, (self.block(value.body),))


def cse_function(fn: Function) -> Function:
    """``fn`` with common subexpressions shared (the same object if there were none)."""
    c = _CSE()
    body, _ = c.block(fn.body, keep_scope=True)  # the table dies here: no keys to remove
    return fn if body is fn.body else Function(fn.params, body, fn.ret_type, fn.attrs)


class CSE(Pass):
    """Share identical calls, tuples, projections and constants within scope."""

    name = "cse"

    def run(self, module: Module) -> Module:
        return Module({name: cse_function(fn) for name, fn in module.functions.items()},
                      module.meta)


register_pass(CSE)


@collector_paused
def cse(module: Module) -> Module:
    """Common-subexpression elimination of ``module`` (see the module docstring)."""
    return CSE()(module)
