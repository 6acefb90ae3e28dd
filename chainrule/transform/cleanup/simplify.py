"""Algebraic simplification, copy propagation and constant folding.

The algebra is one table, ``PATTERNS`` (op -> rewrite patterns tried in order,
each a small function whose docstring states its rewrite), plus two rules
for every op: constant folding and reading broadcast operands unbroadcast.

One sweep is a forward scan over the bindings with a substitution map, so
every rule sees its operands already simplified and chains of rewrites
resolve in the same sweep; another sweep runs (boundedly) only when one left a
rewrite unfinished (bindings a pattern added, or a long chain of rewrites).

- copies: ``b = a`` (a variable or a constant) is dropped and ``b`` replaced
  by ``a`` everywhere, block results included;
- identities: ``x + 0``, ``0 + x``, ``x - 0``, ``0 - x`` (negative),
  ``x * 1``, ``1 * x``, ``x * -1`` (negative), ``x / 1``, ``x ** 1``,
  ``negative(negative(x))``. "0" is any value known to be all zeros: a
  constant, ``zeros``/``zeros_like``/``full(0)``, or a ``broadcast_to`` or
  reshape of one. The result keeps its exact type: when it differs from
  ``x``'s, ``x`` is cast (``astype``, the conversion the op itself does) and
  broadcast (``broadcast_to``). ``x + 0`` gives ``x``, which differs from
  IEEE ``-0.0 + 0.0`` only in the sign of a zero;
- ``x ** 2`` -> ``multiply(x, x)``;
- a negation moves into a float constant: ``(-x) * c``, ``-(x * c)`` ->
  ``x * (-c)`` (likewise for ``/``), bit for bit the same;
- constant folding: an op call whose operands are all constants becomes a
  constant when its result has at most ``FOLD_LIMIT`` elements (creation ops
  without operands only when they make a scalar, such as the seed
  ``ones(())`` of a gradient: ``zeros((5, 5))`` reads better than its 25
  elements);
- operands read unbroadcast: an op that broadcasts as NumPy does (arithmetic,
  comparisons, ``where``; the value of ``index_add``) reads ``a`` instead of
  ``broadcast_to(a)``, and a scalar instead of a constant whose elements are
  all equal, when its result type stays the same (no view is materialized);
- shape ops that do nothing go: ``collapse_sum_to``, ``broadcast_to``,
  ``reshape``, ``astype``, ``expand_dims``, ``squeeze`` whose output type is
  their input's, ``permute_dims`` by the identity, ``flip`` of no axis;
  chains of reshapes (``reshape``/``expand_dims``/``squeeze`` that cancel,
  such as ``squeeze(expand_dims(x, 0), 0)``) collapse; ``broadcast_to`` of
  ``broadcast_to`` is one ``broadcast_to``;
- ``t[i]`` where ``t`` is bound to a literal tuple is the field;
- ``if`` on a constant condition is replaced by the branch taken.

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64[3]:
...     a = multiply(x, 1.0)
...     b = power(a, 2)
...     return b
... ''')
>>> print(simplify(m))
def main(x: f64[3]) -> f64[3]:
    b = multiply(x, x)
    return b
<BLANKLINE>
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...errors import ChainruleError
from ...ir.collector import collector_paused
from ...ir.nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from ...ir.op import Op
from ...ir.types import TensorType
from ..base import Pass, register_pass, same_block, subst_atom, subst_direct, with_blocks
from .fold import FOLD_LIMIT as FOLD_LIMIT  # the limit the docstring names
from .fold import fold

MAX_SWEEPS = 8
_RULE_CHAIN = 4  # rewrites of one binding per sweep before moving on

# ops that keep a uniform value uniform (every element equal)
_UNIFORM_PRESERVING = frozenset((ops.broadcast_to, ops.reshape, ops.expand_dims, ops.squeeze,
                                 ops.permute_dims, ops.flip))
_FULL = frozenset((ops.full, ops.full_like))
_BROADCAST_TO, _INDEX_ADD, _NEGATIVE = ops.broadcast_to, ops.index_add, ops.negative
# the value every element of a creation op's result has
_FILLED = {ops.zeros: 0, ops.zeros_like: 0, ops.ones: 1, ops.ones_like: 1}
_NO_VALUE = object()
# ops whose calls ``record`` learns more of than their definition
_RECORDED = frozenset((*_FILLED, *_FULL, *_UNIFORM_PRESERVING))


def _float_constant(x) -> bool:
    return type(x) is Constant and x.data.dtype.kind == "f"


def _is(value, target) -> bool:
    return value is not _NO_VALUE and value == target


class _Simplifier:
    def __init__(self):
        self.sub: dict[Var, object] = {}
        self.defs: dict[Var, object] = {}  # variable -> its (simplified) Call or Tuple
        self.uniform: dict[Var, object] = {}  # variable -> the value of all its elements
        self.bcast: set[Var] = set()  # variables bound to a broadcast_to
        # variables bound to zeros.at[key].add(g): a sum with one is g added at key
        self.scattered: set[Var] = set()
        # every variable in ``sub``, ``uniform`` or ``bcast``: a call reading none of these
        # and of an op without a pattern that could apply is kept as it is (one lookup
        # per operand instead of the rules' three)
        self.notable: set[Var] = set()
        # ops whose calls may be rewritten even when every operand is a plain variable
        # (made per sweep: PATTERNS may have grown since the import)
        self.loud = frozenset((*_RECORDED, *(op for op, patterns in PATTERNS.items()
                                            if any(p not in NEEDS_KNOWN for p in patterns))))
        # ops whose patterns read only the values of scalar constant operands (when the
        # other operands are plain variables), and what they made of such calls so far:
        # (op, constant ids) -> (the constants, no rule applied)
        self.by_value = frozenset(op for op, patterns in PATTERNS.items()
                                  if op not in self.loud and all(p in READ_VALUES_ONLY
                                                                 for p in patterns))
        self.inert: dict[tuple, tuple] = {}
        self._const_uniform: dict[int, tuple] = {}  # id -> (constant, value): holds it
        self.changed = False
        # a rewrite this sweep left unfinished (bindings it added are not simplified yet,
        # or a binding used up its _RULE_CHAIN): only then can another sweep change more
        self.unfinished = False

    # -- facts about atoms ------------------------------------------------------------
    def uniform_of(self, x):
        """The value every element of ``x`` is known to have, or ``_NO_VALUE``."""
        if type(x) is Var:
            return self.uniform.get(x, _NO_VALUE)
        if type(x) is Constant:
            hit = self._const_uniform.get(id(x))
            if hit is None:
                d = x.data
                value = _NO_VALUE
                if d.ndim == 0:
                    value = d.item()
                elif d.size and d.dtype.kind in "biufc":
                    first = d.flat[0]
                    if np.all(d == first):
                        value = first.item()
                hit = self._const_uniform[id(x)] = (x, value)
            return hit[1]
        return _NO_VALUE

    def record(self, var: Var, value) -> None:
        t = type(value)
        if t is Call and type(value.callee) is Op:
            self.defs[var] = value
            op = value.callee
            if op is _INDEX_ADD and _is(self.uniform_of(value.args[0]), 0):
                self.scattered.add(var)
                self.notable.add(var)
                return
            if op not in _RECORDED:  # the common case: no fact but the definition
                return
            u = _FILLED.get(op, _NO_VALUE)
            if op in _FULL:
                # the value as stored: full(2, dtype=bool) holds True, not 2
                try:
                    with np.errstate(all="ignore"):
                        u = np.array(value.attrs["fill_value"]).astype(
                            value.attrs["dtype"].numpy).item()
                except (ValueError, OverflowError, TypeError):
                    u = _NO_VALUE
            elif op in _UNIFORM_PRESERVING:
                u = self.uniform_of(value.args[0])
                if op is _BROADCAST_TO:
                    self.bcast.add(var)
                    self.notable.add(var)
            if u is not _NO_VALUE:
                self.uniform[var] = u
                self.notable.add(var)
        elif t is Tuple:
            self.defs[var] = value

    def op_def(self, x, ops_wanted):
        """The op call defining variable ``x`` if its op is one of ``ops_wanted``.

        Not known: a call that took ``block``'s fast path (every operand a variable, of an
        op outside ``self.loud``) unless its op is in ``DEFINITIONS_READ``; the patterns
        here read only calls of loud ops, or with a constant operand."""
        d = self.defs.get(x) if type(x) is Var else None
        if type(d) is Call and d.callee in ops_wanted:
            return d
        return None

    # -- building replacement values ----------------------------------------------------
    @staticmethod
    def typed_call(op: Op, args, attrs, want) -> Call | None:
        """``Call(op, args, attrs)`` with canonical attrs if its type is ``want``, else None."""
        try:
            attrs, t = op.type_call([a.type for a in args], attrs)
        except ChainruleError:  # a rewrite that does not type-check is simply not done
            return None
        return Call(op, args, attrs) if t == want else None

    @staticmethod
    def emit(out: list, hint: str, call: Call) -> Var:
        var = Var(hint, call.callee.type_call([a.type for a in call.args], call.attrs)[1])
        out.append(Binding(var, call))
        return var

    def adapt(self, x, t, out: list, hint: str):
        """``x`` cast and broadcast to type ``t`` (as an op applying to ``x`` would):
        an atom, a Call producing ``t``, or None when that is not possible."""
        xt = x.type
        if not isinstance(xt, TensorType) or not isinstance(t, TensorType):
            return None
        if xt == t:
            return x
        if xt.dtype == t.dtype:
            return self.typed_call(ops.broadcast_to, [x], {"shape": t.shape}, t)
        cast_type = TensorType(xt.shape, t.dtype)
        cast = self.typed_call(ops.astype, [x], {"dtype": t.dtype}, cast_type)
        if cast is None or xt.shape == t.shape:
            return cast
        cast_var = Var(f"{hint}_cast", cast_type)
        bcast = self.typed_call(ops.broadcast_to, [cast_var], {"shape": t.shape}, t)
        if bcast is not None:
            out.append(Binding(cast_var, cast))
        return bcast

    def adapt_atom(self, x, t, out, hint):
        v = self.adapt(x, t, out, hint)
        if type(v) is Call:
            return self.emit(out, f"{hint}_{v.callee.name}", v)
        return v

    def negated(self, x, t, out, hint):
        x = self.adapt_atom(x, t, out, hint)
        return None if x is None else self.typed_call(ops.negative, [x], {}, t)

    # -- rules ----------------------------------------------------------------------------
    def rules(self, var: Var, call: Call, out: list):
        """A simpler value for ``var = call`` (atom or Call or Tuple), or None: the first
        pattern of ``PATTERNS`` (broadcast operands first) that applies."""
        t = var.type
        bcast, uniform = self.bcast, self.uniform
        known = False  # an operand is a constant or has a known value (NEEDS_KNOWN)
        for a in call.args:
            if type(a) is not Var or a in bcast:
                # unbroadcast reads only broadcasts and constants: tried when one is
                new = unbroadcast(self, call, t, out, var.name)
                if new is not None:
                    return new
                known = True
                break
            if a in uniform or a in self.scattered:
                known = True
        for pattern in PATTERNS.get(call.callee, ()):
            if known or pattern not in NEEDS_KNOWN:
                new = pattern(self, call, t, out, var.name)
                if new is not None:
                    return new
        return None

    def rewrite(self, var: Var, value, out: list):
        """The simplified value of a binding (an atom means: substitute it)."""
        for _ in range(_RULE_CHAIN):
            t = type(value)
            if t is Var or t is Constant:
                return value
            if t is TupleGetItem:
                tv = value.tuple_value
                tup = self.defs.get(tv) if type(tv) is Var else tv
                if type(tup) is Tuple:
                    value = tup.fields[value.index]
                    self.changed = True
                    continue
                return value
            if t is not Call or type(value.callee) is not Op:
                return value
            args = value.args
            # folding needs every operand constant: most calls fail at the first one
            new = (fold(var, value) if not args or type(args[0]) is Constant
                   else None)
            pending: list = []  # bindings a rewrite needs, kept only if it succeeds
            if new is None:
                new = self.rules(var, value, pending)
            if new is None:
                return value
            for b in pending:
                out.append(b)
                self.record(b.var, b.value)
            self.unfinished = self.unfinished or bool(pending)
            self.changed = True
            value = new
        self.unfinished = True  # more rules may apply: the next sweep tries
        return value

    # -- traversal ---------------------------------------------------------------------------
    def block(self, block: Block) -> Block:
        out: list = []
        sub, notable, defs, loud = self.sub, self.notable, self.defs, self.loud
        by_value, inert, inert_key = self.by_value, self.inert, None
        for b in block.bindings:
            value = b.value
            if type(value) is Var:  # a copy: dropped, its variable replaced
                sub[b.var] = sub.get(value, value)
                notable.add(b.var)
                self.changed = True
                continue
            if type(value) is Call:
                op = value.callee
                if type(op) is Op and value.args and op not in loud:
                    plain, renamed, scalars = True, False, False
                    for a in value.args:
                        if type(a) is Var:
                            if a in notable:
                                copied = sub.get(a)
                                if type(copied) is not Var or copied in notable:
                                    plain = False
                                    break
                                renamed = True
                        elif type(a) is Constant and op in by_value and not a.data.ndim:
                            scalars = True
                        else:
                            plain = False
                            break
                    if plain and scalars:  # whether a rule applies depends on the scalars
                        plain = False
                        if not value.attrs and Var in map(type, value.args):  # (not folded)
                            key = (op, *[id(a) if type(a) is Constant else None
                                         for a in value.args])
                            hit = inert.get(key)
                            if hit is None:
                                inert_key = key  # the rules say, remembered below
                            else:
                                plain = hit[1]
                    if plain:  # the common case: no rule applies, at most copies to substitute
                        if renamed:  # what subst_direct makes of it
                            value = Call(op, [sub.get(a, a) for a in value.args], value.attrs)
                            b = Binding(b.var, value)
                        if op in DEFINITIONS_READ:
                            defs[b.var] = value  # what ``record`` learns of it
                        out.append(b)
                        continue
            value = subst_direct(value, sub)
            t = type(value)
            if t is If and type(value.cond) is Constant:
                taken = value.then_block if bool(value.cond.data) else value.else_block
                inner = self.block(taken)
                out.extend(inner.bindings)
                value = inner.result
                self.changed = True
                t = type(value)
            elif t is If:
                value = with_blocks(value, (self.block(value.then_block),
                                            self.block(value.else_block)))
            elif t is While:
                value = with_blocks(value, (self.block(value.cond), self.block(value.body)))
            elif t is Function:
                value = with_blocks(value, (self.block(value.body),))
            else:
                call = value
                value = self.rewrite(b.var, value, out)
                t = type(value)
                if inert_key is not None:  # holds the constants: their ids stay theirs
                    inert[inert_key] = ([a for a in call.args if type(a) is Constant],
                                        value is call)
                    inert_key = None
            if t is Var or t is Constant:
                sub[b.var] = value
                notable.add(b.var)
                self.changed = True
                continue
            self.record(b.var, value)
            out.append(b if value is b.value else Binding(b.var, value))
        return same_block(block, out, subst_atom(block.result, sub))


# -- the rewrite patterns -----------------------------------------------------------------
# A pattern ``p(s, call, t, out, hint)`` returns a simpler value of type ``t`` for
# ``call`` (an atom: substitute it; a Call or Tuple: bind it), or None. It may
# append bindings it needs to ``out`` (kept only if it succeeds). "0" and "1"
# are any value known to have all elements equal to them (``s.uniform_of``).


def unbroadcast(s, call, t, out, hint):
    """f(broadcast_to(a), b) -> f(a, b)  for an elementwise f (and index_add's value),
    when the result type stays the same: NumPy broadcasts ``a`` itself, without the view;
    a constant with all elements equal is read as a scalar likewise"""
    op = call.callee
    if op is _INDEX_ADD:
        positions = (1,)
    elif op.elementwise and op.nargs != 1:
        positions = range(len(call.args))
    else:
        return None
    for k in positions:
        a = call.args[k]
        ta = type(a)
        if ta is Var:
            if a not in s.bcast:
                continue
            src = s.defs[a].args[0]
        elif (ta is Constant and a.data.ndim and a.data.dtype.kind in "biuf"
              and s.uniform_of(a) is not _NO_VALUE):
            src = Constant(a.data.reshape(-1)[:1].reshape(()))  # same dtype, one element
        else:
            continue
        args = list(call.args)
        args[k] = src
        new = s.typed_call(op, args, call.attrs, t)
        if new is not None:
            return new
    return None


# op -> its identities: (the operand kept, the value of every element of the other
# operand, whether the kept operand is negated)
IDENTITIES = {
    ops.add: [(0, 0, False), (1, 0, False)],                        # x + 0, 0 + x -> x
    ops.subtract: [(0, 0, False), (1, 0, True)],                    # x - 0 -> x, 0 - x -> -x
    ops.multiply: [(0, 1, False), (1, 1, False), (0, -1, True), (1, -1, True)],  # x * 1, x * -1
    ops.divide: [(0, 1, False)],                                    # x / 1 -> x
    ops.power: [(0, 1, False)],                                     # x ** 1 -> x
}


def identity(s, call, t, out, hint):
    """x + 0 -> x, x * 1 -> x, x * -1 -> -x, ... (``IDENTITIES``; x cast and broadcast to
    the result type)"""
    a, b = call.args
    known = s.uniform  # uniform_of, inlined for variables: most operands have no value
    ua = known.get(a, _NO_VALUE) if type(a) is Var else s.uniform_of(a)
    ub = known.get(b, _NO_VALUE) if type(b) is Var else s.uniform_of(b)
    if ua is _NO_VALUE and ub is _NO_VALUE:
        return None
    uniform = (ua, ub)
    for kept, value, negated in IDENTITIES[call.callee]:
        if _is(uniform[1 - kept], value):
            x = call.args[kept]
            return s.negated(x, t, out, hint) if negated else s.adapt(x, t, out, hint)
    return None


def scatter_into_sum(s, call, t, out, hint):
    """a + zeros.at[key].add(g) -> a.at[key].add(g)  (either order; a of the result's
    type): the rows added where they go, not a whole array of zeros summed with ``a``
    (the adjoint of x[t] read in a loop's step, accumulated over its steps: linear in
    the loop's length instead of quadratic)"""
    for k in (0, 1):
        a, z = call.args[k], call.args[1 - k]
        if type(z) is Var and z in s.scattered and a.type == t and z.type == t:
            scatter = s.defs[z]
            return Call(_INDEX_ADD, [a, *scatter.args[1:]], scatter.attrs)
    return None


def square_as_multiply(s, call, t, out, hint):
    """x ** 2 -> x * x"""
    if not _is(s.uniform_of(call.args[1]), 2):
        return None
    x = s.adapt_atom(call.args[0], t, out, hint)
    return None if x is None else s.typed_call(ops.multiply, [x, x], {}, t)


def sign_into_constant(s, call, t, out, hint):
    """(-x) * c -> x * (-c);  c * (-x) -> (-c) * x;  likewise for /  (a float constant c:
    one elementwise op fewer, the same bits: IEEE negation is exact, rounding symmetric)"""
    a, b = call.args
    for k, (x, c) in enumerate(((a, b), (b, a))):
        if type(c) is not Constant:  # the cheaper test first
            continue
        inner = s.op_def(x, (_NEGATIVE,))
        if inner is not None and _float_constant(c):
            pair = [inner.args[0], Constant(np.negative(c.data))]
            return s.typed_call(call.callee, pair if k == 0 else pair[::-1], {}, t)
    return None


def double_negation(s, call, t, out, hint):
    """-(-x) -> x"""
    inner = s.op_def(call.args[0], (ops.negative,))
    return None if inner is None else inner.args[0]


def negation_into_constant(s, call, t, out, hint):
    """-(x * c) -> x * (-c);  -(x / c) -> x / (-c)  (a float constant c)"""
    inner = s.op_def(call.args[0], (ops.multiply, ops.divide))
    if inner is None:
        return None
    p, q = inner.args
    for k, c in enumerate((p, q)):
        if _float_constant(c):
            pair = [p, q]
            pair[k] = Constant(np.negative(c.data))
            return s.typed_call(inner.callee, pair, {}, t)
    return None


def no_op_shape(s, call, t, out, hint):
    """reshape / expand_dims / squeeze / broadcast_to / collapse_sum_to / astype
    whose result type is its operand's -> the operand"""
    x = call.args[0]
    return x if x.type == t else None


def identity_permutation(s, call, t, out, hint):
    """permute_dims(x, (0, 1, ..., n-1)) -> x"""
    return call.args[0] if call.attrs["axes"] == tuple(range(len(t.shape))) else None


def flip_nothing(s, call, t, out, hint):
    """flip(x, axis=()) -> x"""
    return call.args[0] if call.attrs["axis"] == () else None


def reshape_chain(s, call, t, out, hint):
    """reshape(reshape(z)) -> reshape(z), or z when the types match (any mix of reshape,
    expand_dims and squeeze)"""
    inner = s.op_def(call.args[0], _RESHAPES)
    if inner is None:
        return None
    z = inner.args[0]
    if z.type == t:
        return z
    if call.callee is ops.reshape:
        return s.typed_call(ops.reshape, [z], call.attrs, t)
    return None


def broadcast_chain(s, call, t, out, hint):
    """broadcast_to(broadcast_to(x)) -> broadcast_to(x)"""
    inner = s.op_def(call.args[0], (ops.broadcast_to,))
    if inner is None:
        return None
    return s.typed_call(ops.broadcast_to, [inner.args[0]], call.attrs, t)


_RESHAPES = (ops.reshape, ops.expand_dims, ops.squeeze)
# ops without patterns whose calls of variables only a pattern looks up (``op_def``): ``block``
# keeps no other such definition (``negation_into_constant`` reads multiply, divide with a
# constant operand only)
DEFINITIONS_READ: frozenset = frozenset()
# patterns that apply only when an operand is a constant or a variable whose elements
# have a known value (``_Simplifier.uniform``): not tried when none is
NEEDS_KNOWN = frozenset((identity, square_as_multiply, sign_into_constant, scatter_into_sum))
# patterns that, given scalar constant operands and plain variables (no known value), apply
# or not by the constants' values alone
READ_VALUES_ONLY = frozenset((identity, square_as_multiply))

PATTERNS = {
    ops.add: [identity, scatter_into_sum],
    ops.subtract: [identity],
    ops.multiply: [identity, sign_into_constant],
    ops.divide: [identity, sign_into_constant],
    ops.power: [identity, square_as_multiply],
    ops.negative: [double_negation, negation_into_constant],
    ops.reshape: [no_op_shape, reshape_chain],
    ops.expand_dims: [no_op_shape, reshape_chain],
    ops.squeeze: [no_op_shape, reshape_chain],
    ops.broadcast_to: [no_op_shape, broadcast_chain],
    ops.collapse_sum_to: [no_op_shape],
    ops.astype: [no_op_shape],
    ops.permute_dims: [identity_permutation],
    ops.flip: [flip_nothing],
}


def simplify_function(fn: Function, max_sweeps: int = MAX_SWEEPS) -> Function:
    """``fn`` simplified to a fixed point (at most ``max_sweeps`` sweeps)."""
    return simplify_settled(fn, max_sweeps)[0]


def simplify_settled(fn: Function, max_sweeps: int = MAX_SWEEPS) -> tuple[Function, bool]:
    """``fn`` simplified, and whether that is a fixed point rather than where
    ``max_sweeps`` stopped. A sweep sees every binding's operands already simplified,
    and rewrites each binding until no rule applies; so its output is a fixed point
    unless a rewrite was left unfinished (``_Simplifier.unfinished``), and no sweep is
    run only to confirm it."""
    for _ in range(max_sweeps):
        s = _Simplifier()
        body = s.block(fn.body)
        if body is not fn.body:
            fn = Function(fn.params, body, fn.ret_type, fn.attrs)
        if not s.changed or not s.unfinished:
            return fn, True
    return fn, False


class Simplify(Pass):
    """Copy propagation, algebraic identities, constant folding, no-op shape ops."""

    name = "simplify"

    def __init__(self, max_sweeps: int = MAX_SWEEPS):
        self.max_sweeps = max_sweeps

    def run(self, module: Module) -> Module:
        return Module({name: simplify_function(fn, self.max_sweeps)
                       for name, fn in module.functions.items()}, module.meta)


register_pass(Simplify)


@collector_paused
def simplify(module: Module, max_sweeps: int = MAX_SWEEPS) -> Module:
    """Simplify every function of ``module`` (see the module docstring)."""
    return Simplify(max_sweeps)(module)
