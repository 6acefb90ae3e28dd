"""Memoized transposition of linear op calls ("templates") for ``transpose``.

Transposing ``v = op(a, b)`` runs the op's VJP rule with its linear operands left
undefined, fits the partials to the operands' shapes and drops what the rule emitted
for nothing: Python that emits IR through the traced-value operators, the ops layer
and type inference. Applied to the same op with the same attributes, operand and
cotangent types and linear positions, it emits the same bindings every time, up to
the variables it reads and the ``lvN`` numbers of its temporaries. A long linear
program repeats a few such keys (a 100,000-binding chain has four), so the first
expansions of a key are recorded as a *template*: per binding kept, its op, its
operands as slots (the cotangent, the non-linear operands, the constants it used, the
template's earlier results), its attributes, its inferred type and the offset of its
``lvN`` name; and the partial of each linear operand, as a slot. Later expansions of
the key build the variables, calls and bindings directly; the rule does not run.

The IR is the one the rule would make (same text, names, types and ``Constant``
objects) because:

- a key is replayed only after a second expansion recorded the same template as the
  first (same ops, operands, attributes, types, names and the same constant objects:
  a rule that makes a new constant each time is never replayed);
- only built-in rules (defined in ``chainrule.rules``) of registered ops are
  recorded: user rules and ``custom_vjp`` ops always run;
- the key holds everything else a rule can read: the op, its attributes (when they
  have an exact key, ``ir.op.attrs_key``), the identities of the result, cotangent
  and operand types (``transpose`` holds the type objects of every expansion it
  records, so an identity in a recorded key stays its object's while the cache
  lives), which operands are linear and which inputs are the same variable; an
  operand that is a constant or a tuple is no key (the rule runs);
- an expansion that emitted anything but calls of registered ops on the slots and on
  constants, with attributes that have an exact key, named ``lvN``, into the open
  block, or that lifted or captured a value, is never recorded; one that raised
  records nothing (it raises every time).

A cache lives for one ``transpose`` call. ``disabled()`` turns it off (tests compare
the programs made both ways).
"""

from __future__ import annotations

from contextlib import contextmanager

from ..ir.nodes import Binding, Call, Constant, Var
from ..ir.op import OPS, Op, attrs_key
from ..ir.types import TensorType

ENABLED = True  # read when a transpose starts (``disabled()`` for tests)
LIMIT = 4096  # keys recorded per transpose


@contextmanager
def disabled():
    """Transposes started inside run every rule (nothing recorded or replayed)."""
    global ENABLED
    saved, ENABLED = ENABLED, False
    try:
        yield
    finally:
        ENABLED = saved


_UNCACHEABLE = "uncacheable"  # a key whose expansion always runs the rule


class Template:
    """A recorded expansion: ``steps`` of (a call to copy, operand slots, type, name
    offset), ``outs`` (slot or None per partial), ``advance`` (the ``lvN`` names it
    consumed, those of the bindings it dropped included), ``consts`` (the constant
    objects it used)."""

    __slots__ = ("steps", "outs", "advance", "consts")

    def __init__(self, steps, outs, advance, consts):
        self.steps = steps
        self.outs = outs
        self.advance = advance
        self.consts = consts

    def same(self, other: Template) -> bool:
        """Whether two recordings of a key agree (calls compared by op and attributes,
        constants by identity)."""
        if (self.outs != other.outs or self.advance != other.advance
                or len(self.steps) != len(other.steps)
                or len(self.consts) != len(other.consts)
                or any(a is not b for a, b in zip(self.consts, other.consts))):
            return False
        for (c1, s1, t1, o1), (c2, s2, t2, o2) in zip(self.steps, other.steps):
            if (c1.callee is not c2.callee or s1 != s2 or t1 != t2 or o1 != o2
                    or (c1.attrs is not c2.attrs
                        and attrs_key(c1.attrs) != attrs_key(c2.attrs))):
                return False
        return True

    def replay(self, inputs: list, builder) -> list:
        vals = inputs + self.consts
        frame = builder.bindings
        c0 = builder._counter
        for call, slots, t, offset in self.steps:
            var = Var(f"lv{c0 + offset}", t)
            frame.append(Binding(var, call.with_args(call.callee, [vals[s] for s in slots])))
            vals.append(var)
        builder._counter = c0 + self.advance
        return [None if s is None else vals[s] for s in self.outs]


class _Pending:
    """A key's first recording, replayed once a second one agrees with it."""

    __slots__ = ("template",)

    def __init__(self, template: Template):
        self.template = template


class Templates:
    """One transpose's templates, by key (see the module docstring)."""

    def __init__(self):
        self.entries: dict = {}
        self.rule_ok: dict = {}  # op -> whether its rule may be recorded

    def cacheable(self, op, rules: dict) -> bool:
        """Whether ``op``'s rule in ``rules`` is a built-in rule of a registered op."""
        ok = self.rule_ok.get(op)
        if ok is None:
            rule = rules.get(op)
            ok = self.rule_ok[op] = (
                type(op) is Op and OPS.get(op.name) is op and rule is not None
                and getattr(rule, "__module__", "").startswith("chainrule.rules."))
        return ok

    def expand(self, key, inputs: list, trace, run, *args) -> list:
        """The partials ``run(*args)`` returns after emitting the expansion of ``key``
        (whose slots are ``inputs``: variables) into ``trace``'s open block; replayed once
        a second recording confirmed the first. The caller keeps the objects whose
        identities the key holds alive while the cache lives."""
        entries = self.entries
        entry = entries.get(key)
        if type(entry) is Template:
            return entry.replay(inputs, trace.builder)
        if entry is _UNCACHEABLE:
            return run(*args)
        builder = trace.builder
        frame = builder.bindings
        start, counter = len(frame), builder._counter
        lifted, captured = len(trace.lifted), len(trace.captured)
        outs = run(*args)
        template = None
        if (builder.bindings is frame and len(frame) >= start
                and len(trace.lifted) == lifted and len(trace.captured) == captured):
            template = _record(inputs, frame, start, counter, builder._counter, outs)
        if template is None:
            entries[key] = _UNCACHEABLE
        elif entry is None:
            if len(entries) < LIMIT:
                entries[key] = _Pending(template)
        else:
            entries[key] = template if entry.template.same(template) else _UNCACHEABLE
        return outs


def _record(inputs, frame, start, counter, end_counter, outs) -> Template | None:
    """The template of ``frame[start:]`` (names ``lv<counter>`` to ``lv<end_counter>``)
    with partials ``outs``; None when it is not a plain expansion."""
    slots = {}
    for i, x in enumerate(inputs):
        slots.setdefault(x, i)
    n_in = len(inputs)
    consts: list = []
    const_slot: dict = {}
    raw = []
    for b in frame[start:]:
        value, var = b.value, b.var
        if (type(value) is not Call or type(value.callee) is not Op
                or OPS.get(value.callee.name) is not value.callee
                or type(var.type) is not TensorType):
            return None
        name = var.name
        if not (name.startswith("lv") and name[2:].isdigit()):
            return None
        n = int(name[2:])
        if not counter <= n < end_counter or name != f"lv{n}":
            return None
        refs = []
        for a in value.args:
            t = type(a)
            if t is Var:
                ref = slots.get(a)
                if ref is None:
                    return None
            elif t is Constant:
                ref = const_slot.get(id(a))
                if ref is None:
                    ref = const_slot[id(a)] = len(consts)
                    consts.append(a)
                ref = ("const", ref)
            else:
                return None
            refs.append(ref)
        if value.attrs and attrs_key(value.attrs) is None:
            return None  # an attribute without an exact key (an array): not compared
        slots[var] = ("step", len(raw))
        raw.append((value, refs, var.type, n - counter))

    def number(ref):
        if type(ref) is int:
            return ref
        kind, k = ref
        return n_in + k if kind == "const" else n_in + len(consts) + k

    out_slots = []
    for o in outs:
        if o is None:
            out_slots.append(None)
            continue
        ref = slots.get(o) if type(o) is Var else None
        if ref is None:
            return None
        out_slots.append(number(ref))
    steps = tuple((call, tuple(number(r) for r in refs), t, offset)
                  for call, refs, t, offset in raw)
    return Template(steps, tuple(out_slots), end_counter - counter, consts)
