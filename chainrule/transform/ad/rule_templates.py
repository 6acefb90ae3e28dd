"""Memoized rule expansion ("rule templates") for the AD passes.

A derivative rule is Python that emits IR: applied to the same op with the same
attributes, operand types and pattern of symbolic zeros, it emits the same
bindings every time, up to the names of the variables it reads and of the fresh
temporaries it makes. A long program applies the same few rules over and over (a
chain of 100,000 bindings has four distinct keys), and running the rule, the
operators, the ops layer and type inference again for each one is most of a
pass's time. So the expansions for a key are recorded as a *template*: the
bindings it emitted, each with its op, operands as *slots* (the rule's inputs,
earlier results of the template, or the shared ``Constant`` nodes it used),
attributes, inferred type and the offset of its ``lvN`` name; and the atoms the
expansion returned, as slots. The first ``RECORD_AFTER`` expansions of a key are not
recorded (recording costs about what the rule does, and most keys of a short
program come back a few times at most), the next two are; from then on the template
is replayed: variables, calls and bindings are built directly, with the names the
rule would have given them, and the rule does not run.

The IR is the one the rule would have made (same text, names, types and shared
constants), because a key is confirmed only when a second recording gives the
same template as the first (the same ops, operands, attributes, types, names, and
the same ``Constant`` objects: a rule that makes a new constant each time, such as
``np.eye(n)`` or a NaN, is never replayed); and because only what a rule may read is
allowed to vary between keys' hits:

- the rule is a built-in one (defined in ``chainrule.rules``): user rules,
  ``custom_vjp`` / ``custom_jvp`` and ops made at run time always run;
- every operand, result and message is a variable of array type (a constant
  operand may be read by value, as ``power``'s exponent is; a tuple is taken
  apart by the rule): the key holds the op, its attributes (those with an exact
  key, ``ir.op.attrs_key``), the identities of the operand, result and message
  types, which operands are aliases of which, and the pass's per-operand facts
  (relevance, which tangents are symbolic zeros);
- the expansion emitted only calls of registered ops on the slots and on
  constants, into the open block, named ``lvN``; it lifted and captured nothing;
- a rule that raises records nothing (it runs, and raises, every time).

The cache lives as long as one pass run (a ``gradient`` / ``jvp`` request and the
functions it generates): a template holds the type objects whose identities its key
holds, so they cannot be reused while it lives, nothing else of the program is held, and
no state can change under it (a rule re-registered between runs is simply found
by the next run). At most ``LIMIT`` keys are recorded per run.

``transpose`` uses the same cache for the VJP rules it runs with linear operands left
undefined (its key adds which operands are linear; see ``transform/transpose/transpose.py``).

``disabled()`` turns replay off (tests compare the programs made both ways).
"""

from __future__ import annotations

from contextlib import contextmanager

from ...emit.trace import REBOUND
from ...ir.nodes import Binding, Call, Constant, Var, typed_var
from ...ir.op import OPS, Op, attrs_key
from ...ir.types import TensorType

ENABLED = True  # read when a pass run starts (``disabled()`` for tests)
LIMIT = 4096  # keys recorded per pass run
COMPILE_AFTER = 512  # replays of a template before it is compiled (see Template)
RECORD_AFTER = 2  # expansions of a key before one is recorded
MIN_BINDINGS = 64  # a module's size from which its pass runs use templates


@contextmanager
def disabled():
    """Pass runs started inside run every rule (no template is recorded or replayed)."""
    global ENABLED
    saved, ENABLED = ENABLED, False
    try:
        yield
    finally:
        ENABLED = saved


def new_templates(table: dict, module) -> RuleTemplates | None:
    """The cache of a new pass run applying the rules of ``table`` (VJP or JVP) to
    ``module``; None while templates are disabled, or for a module of fewer than
    ``MIN_BINDINGS`` bindings (at the top level of its functions), whose keys seldom
    come back often enough to pay for their keys and recordings."""
    if not ENABLED or sum(len(fn.body.bindings)
                          for fn in module.functions.values()) < MIN_BINDINGS:
        return None
    return RuleTemplates(table)


_UNCACHEABLE = "uncacheable"  # a key whose expansion always runs the rule


class Template:
    """A recorded expansion: ``steps`` of (op, operand slots, attributes, type, name
    offset), ``outs`` (the slots of the returned atoms), ``advance`` (how many ``lvN``
    names the expansion consumed, including those of bindings it dropped). A slot is
    ``("in", i)`` (the i-th input), ``("const", i)``, ``("step", i)`` (the i-th
    step's result) or None (a returned None).

    ``last_out``: the position among ``outs`` of the last step's result (None when no
    out is): a pass that names that result at once (``<v>_dot``) passes the name as
    ``last`` to ``replay``, which binds the last step under it (the same binding as
    one renamed after the replay, without making it twice).

    ``replay(inputs, builder, last=None)`` first walks the steps (``_walk``); at its
    ``COMPILE_AFTER``-th replay the template is compiled: a Python function emitting
    the steps one after the other with the slots as local variables (no loop, no slot
    list; a replay is most of what a pass does per binding), made from the template's
    own numbers and the ops, types, attributes and constants passed as globals, never
    from program text. Compiling costs what a few hundred walks save, so only the
    templates of long programs are compiled."""

    __slots__ = ("steps", "outs", "advance", "consts", "shape", "holds", "replay", "last_out",
                 "walk", "hits", "compiler")

    def __init__(self, steps, outs, advance, consts, n_inputs, holds):
        self.steps = steps
        self.outs = outs
        self.advance = advance
        self.consts = consts
        # what two recordings must agree on (their constants by identity, in ``same``)
        self.shape = (tuple((op, refs, attrs_key(attrs), t, offset)
                            for op, refs, attrs, t, offset in steps), outs, advance, n_inputs)
        self.holds = holds  # the key's type objects, kept alive with it
        last = ("step", len(steps) - 1)
        self.last_out = next((i for i, r in enumerate(outs) if r == last), None)
        self.replay = self._walk
        self.walk = None  # the steps and outs with numbered slots (made when first walked)
        self.hits = 0
        # ``compiler(template, inputs) -> replay`` of the pass run (None: ``_compiled``)
        self.compiler = None

    def same(self, other: Template) -> bool:
        return (self.shape == other.shape and len(self.consts) == len(other.consts)
                and all(a is b for a, b in zip(self.consts, other.consts)))

    def _number(self, ref) -> int | None:
        """A slot's index among the inputs, the constants and the steps' results."""
        if ref is None:
            return None
        base = {"in": 0, "const": self.shape[-1], "step": self.shape[-1] + len(self.consts)}
        return base[ref[0]] + ref[1]

    def _walk(self, inputs, builder, last=None) -> tuple:
        self.hits += 1
        if self.hits >= COMPILE_AFTER:
            self.replay = (self._compiled() if self.compiler is None
                           else self.compiler(self, inputs))
        if self.walk is None:
            self.walk = ([(op, [self._number(r) for r in refs], attrs, t, offset)
                          for op, refs, attrs, t, offset in self.steps],
                         [self._number(r) for r in self.outs])
        walk, outs = self.walk
        vals = list(inputs)
        vals += self.consts
        emit = builder.bindings.append
        c = builder.reserve_temps(self.advance)
        final = len(walk) - 1
        for j, (op, refs, attrs, t, offset) in enumerate(walk):
            var = Var(last if last is not None and j == final else f"lv{c + offset}", t)
            emit(Binding(var, Call(op, tuple([vals[i] for i in refs]), attrs)))
            vals.append(var)
        return tuple([None if r is None else vals[r] for r in outs])

    def _compiled(self):
        n_inputs = self.shape[-1]
        names = {"in": "i", "const": "k", "step": "s"}

        def slot(ref):
            return "None" if ref is None else f"{names[ref[0]]}{ref[1]}"

        # a call is made as ``Call.with_args`` makes one (its attribute dict shared, not
        # copied: no node changes once built), without the method call
        env = step_globals()
        env.update((f"k{i}", c) for i, c in enumerate(self.consts))
        lines = ["def replay(inputs, builder, last=None):",
                 "    (" + "".join(f"i{i}, " for i in range(n_inputs)) + ") = inputs",
                 "    emit = builder.bindings.append",
                 f"    c = builder.reserve_temps({self.advance})"]
        for j, (op, refs, attrs, t, offset) in enumerate(self.steps):
            env[f"op{j}"], env[f"a{j}"], env[f"t{j}"] = op, attrs, t
            operands = "".join(f"{slot(r)}, " for r in refs)
            name = f'f"lv{{c + {offset}}}"'
            if j == len(self.steps) - 1:
                name = f"last or {name}"
            lines += step_lines(j, name, operands)
            lines.append(f"    emit(b{j})")
        lines.append("    return (" + "".join(f"{slot(r)}, " for r in self.outs) + ")")
        exec("\n".join(lines), env)  # noqa: S102 - the template's own numbers, see above
        return env["replay"]


def step_globals() -> dict:
    """The globals of a compiled replay's steps (``step_lines``)."""
    return {"Var": Var, "Call": Call, "Binding": Binding, "new": object.__new__,
            "typed_var": typed_var}


def step_lines(j: int, name: str, operands: str) -> list[str]:
    """The lines of a compiled replay making step ``j``: its variable ``s<j>`` named
    by the expression ``name`` (typed ``t<j>``, checked when the template was recorded,
    as ``typed_var`` makes one), its call of ``op<j>`` on ``operands`` with attributes
    ``a<j>`` (shared, as ``Call.with_args`` does) and its binding ``b<j>``: nodes built
    whole, without their constructors' checks and calls."""
    return [f"    s{j} = typed_var({name}, t{j})",
            "    call = new(Call)",
            f"    call.callee, call.args, call.attrs = op{j}, ({operands}), a{j}",
            f"    b{j} = new(Binding)",
            f"    b{j}.var, b{j}.value = s{j}, call"]


class _Pending:
    """A key's first recording, used once a second one agrees with it."""

    __slots__ = ("template",)

    def __init__(self, template: Template):
        self.template = template


class RuleTemplates:
    """One pass run's templates, by key (see the module docstring)."""

    def __init__(self, table: dict, record_after: int = RECORD_AFTER):
        self.table = table  # the rules: VJP or JVP
        self.record_after = record_after  # expansions of a key run before one is recorded
        self.entries: dict = {}
        self.rule_ok: dict = {}  # op -> whether its rule may be templated
        # how this run's templates are compiled (None: ``Template._compiled``; a pass
        # sorting what it emits, as linearize does, compiles its own replays)
        self.compiler = None

    def cacheable_rule(self, op) -> bool:
        """Whether ``op``'s rule is a built-in rule of a registered op (and no custom
        rule is running: values it closed over stand for operands, trace.REBOUND)."""
        ok = self.rule_ok.get(op)
        if ok is None:
            rule = self.table.get(op)
            ok = self.rule_ok[op] = (
                type(op) is Op and OPS.get(op.name) is op and rule is not None
                and getattr(rule, "__module__", "").startswith("chainrule.rules."))
        return ok and not REBOUND

    def expand(self, key, inputs, trace, run, *args):
        """The atoms (a sequence) ``run(*args)`` returns after emitting the expansion
        of ``key`` (whose slots are ``inputs``) into ``trace``'s open block; replayed
        once confirmed."""
        entries = self.entries
        entry = entries.get(key)
        if type(entry) is Template:
            return entry.replay(inputs, trace.builder)
        if entry is None:
            if len(entries) >= LIMIT:
                return run(*args)
            entry = 0
        if entry is _UNCACHEABLE:
            return run(*args)
        if type(entry) is int and entry < self.record_after:  # not recorded: most keys of a
            entries[key] = entry + 1  # short program come back a few times at most
            return run(*args)
        builder = trace.builder
        frame = builder.bindings
        start, counter = len(frame), builder.next_temp
        lifted, captured = len(trace.lifted), len(trace.captured)
        outs = run(*args)
        template = None
        if (builder.bindings is frame and len(frame) >= start
                and len(trace.lifted) == lifted and len(trace.captured) == captured):
            template = _record(inputs, frame, start, counter, builder.next_temp, outs)
        if template is None:
            entries[key] = _UNCACHEABLE
        elif type(entry) is int:
            entries[key] = _Pending(template)
        elif entry.template.same(template):
            template.compiler = self.compiler
            entries[key] = template
        else:
            entries[key] = _UNCACHEABLE
        return outs


def attributes_key(attrs: dict):
    """The attributes' part of a key: () for none, None when one has no exact key (an
    array: the expansion then always runs its rule)."""
    return attrs_key(attrs) if attrs else ()


def alias_pattern(inputs) -> tuple | None:
    """Which inputs are the same variable (None when all differ): part of a key, since a
    template refers to the first input a recorded operand was."""
    ids = [id(x) for x in inputs]
    if len(set(ids)) == len(ids):
        return None
    return tuple([ids.index(i) for i in ids])


def _record(inputs, frame, start, counter, end_counter, outs) -> Template | None:
    """The template of what was emitted in ``frame[start:]`` (names from ``counter`` to
    ``end_counter``) with results ``outs``; None when it is not a plain expansion."""
    slots = {}
    for i, x in enumerate(inputs):
        if type(x) is not Var or type(x.type) is not TensorType:
            return None
        slots.setdefault(id(x), ("in", i))
    consts: list = []
    const_slot: dict = {}
    raw = []
    for k, b in enumerate(frame[start:]):
        value, var = b.value, b.var
        if (type(value) is not Call or type(value.callee) is not Op
                or OPS.get(value.callee.name) is not value.callee
                or type(var) is not Var or type(var.type) is not TensorType):
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
                ref = slots.get(id(a))
                if ref is None:
                    return None
            elif t is Constant:
                ref = const_slot.get(id(a))
                if ref is None:
                    ref = const_slot[id(a)] = ("const", len(consts))
                    consts.append(a)
            else:
                return None
            refs.append(ref)
        if attrs_key(value.attrs) is None:
            return None
        slots[id(var)] = ("step", k)
        raw.append((value.callee, tuple(refs), value.attrs, var.type, n - counter))
    out_refs = []
    for o in outs:
        if o is None:
            out_refs.append(None)
            continue
        ref = slots.get(id(o)) if type(o) is Var else None
        if ref is None:
            return None
        out_refs.append(ref)
    return Template(tuple(raw), tuple(out_refs), end_counter - counter, consts, len(inputs),
                    [x.type for x in inputs])
