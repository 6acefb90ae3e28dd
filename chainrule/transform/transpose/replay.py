"""One handler per rule template of the transpose pass: the check that a call has the
template's key, the template's replay, the accumulation of its results into the linear
operands' cotangents and the naming of a cotangent it completes, in one generated
function (what ``transpose.keys.template_key``, ``Template.replay``, the sweep's
accumulation and its naming do for a key, without building the key, the inputs list or
the partials tuple, and without making a cotangent's variable twice).
``reverse/replay.py`` does the same for the gradient pass.

A handler is built for a template once it is compiled (``ad.rule_templates.COMPILE_AFTER``
replays: only long programs have one), or from its ``HANDLE_AFTER``-th replay on when
the rest of the block should replay it often enough to pay for the handler
(``PAYBACK``: building one costs what a few hundred calls through the sweep's keys
save; a linear program repeats its few keys more often than the program it was
linearized from). It is made from the template's own numbers and from the call whose
replay it is, with the ops, types, attributes and constants passed as globals, never
from program text: the same rule as ``Template._compiled``.

Handlers are found by the call's op: a handler checks what the template's key holds
(``template_key``): which operands are linear, the result's, cotangent's and operands'
types by identity (the handler holds those type objects, so no other object can take
their identities while it lives), the attributes (their exact key) and which inputs
alias; a call that differs in any of these is passed to the op's next handler, and from
the last one back to the sweep (``False``), which keys it as before. So a handler runs
exactly for the calls whose key is its template's, and makes the IR the sweep makes for
them:

- the steps are the template's (``ad.rule_templates.step_lines``), each result named
  ``lvN`` from the reserved numbers (the template's types were checked when it was
  recorded);
- a result is added to the cotangent of its linear operand in operand order, as the
  sweep does: set when the operand has none yet, else summed (``reverse.ops.add_vars``
  for two variables, ``Builder.call`` of ``add`` otherwise);
- the sweep names the cotangent of a variable ``<v>_ct`` when it reaches the variable's
  binding (if it is a variable it has not named yet: where it is bound, or by a
  substitution at the end, the same text). A step whose result is the whole contribution
  to one linear operand ``u`` (no other operand gets it, ``u`` is no other operand of the
  call) is that cotangent when ``u`` has none yet and ``u`` is bound by the binding the
  sweep reaches next (nothing can add to it before): the handler names it ``<u>_ct`` as
  it makes it, and marks it named (``tr.fixed``) as the sweep would.
"""

from __future__ import annotations

from ... import ops
from ...emit.trace import REBOUND
from ...ir.nodes import Binding, Var
from ...ir.op import attrs_key
from ..ad import rule_templates
from ..ad.rule_templates import Template, step_globals, step_lines

ADD = ops.add
MAX_PER_OP = 8  # handlers tried per op before the sweep keys a call itself
# A template replayed ``hits`` times gets a handler once it is compiled (COMPILE_AFTER), or
# from its HANDLE_AFTER-th replay on, at binding k of a block of n (k left to sweep, n - k
# swept), when the bindings left should replay it PAYBACK times at the rate so far:
# ``hits * k >= PAYBACK * (n - k)`` (the sweep asks at every replay from then on)
HANDLE_AFTER = 128
PAYBACK = 256  # the replays (through the sweep's keys) a handler's making costs about


def pays(template: Template, left: int, total: int) -> bool:
    """Whether ``template`` should get a handler now (see the thresholds above), with
    ``left`` of ``total`` bindings left to sweep."""
    hits = template.hits
    return hits >= min(HANDLE_AFTER, rule_templates.COMPILE_AFTER) and (
        hits >= rule_templates.COMPILE_AFTER or hits * left >= PAYBACK * (total - left))


class Handlers(dict):
    """A transpose run's handlers: op -> the first handler of its templates, which passes
    the calls it does not handle to the next, the last one back to the sweep. They are
    tried in the order they were built: the template compiled first is the one whose key
    came back most often so far. ``last``: op -> the link of its last handler (a list
    holding what it passes calls to); ``built``: the identities of the templates that
    have a handler (or were refused one)."""

    def __init__(self):
        super().__init__()
        self.built: set[int] = set()
        self.last: dict = {}
        self.count: dict = {}


def _unhandled(tr, v, msg, value, msgs, bindings, k) -> bool:
    return False  # the sweep keys the call itself


def add_handler(handlers: Handlers, template: Template, binding: Binding, msg: Var,
                inputs: list, positions: list, add_vars) -> None:
    """Build the handler of ``template`` from ``binding``, the call (with cotangent
    ``msg``, template inputs ``inputs`` and linear operand positions ``positions``) whose
    replay it is, and put it last among its op's ``handlers``. ``add_vars(builder,
    a, b)`` emits the sum of two variables."""
    if id(template) in handlers.built:
        return
    handlers.built.add(id(template))  # the template lives as long as the run: its id too
    op = binding.value.callee
    count = handlers.count.get(op, 0)
    if count >= MAX_PER_OP:
        return
    link = [_unhandled]
    handler = _build(template, binding, msg, inputs, positions, add_vars, link)
    handlers.count[op] = count + 1
    if count:
        handlers.last[op][0] = handler  # the last handler passes calls to this one
    else:
        handlers[op] = handler
    handlers.last[op] = link


def _build(template: Template, binding: Binding, msg: Var, inputs: list, positions: list,
           add_vars, link: list):
    value = binding.value
    args = value.args
    n = len(args)
    linear = set(positions)
    fail = "return link[0](tr, v, msg, value, msgs, bindings, k)"
    env = step_globals()
    env.update({"add_vars": add_vars, "ADD": ADD, "REBOUND": REBOUND, "attrs_key": attrs_key,
                "link": link, "VT": binding.var.type, "MT": msg.type, "ATTRS": value.attrs})
    attrs_guard = ""
    if value.attrs:  # the key holds the attributes' exact key
        env["AK"] = attrs_key(value.attrs)
        attrs_guard = " or (value.attrs is not ATTRS and attrs_key(value.attrs) != AK)"
    else:
        attrs_guard = " or value.attrs"
    # which operands are linear first: what tells most handlers of one op apart (lin holds
    # variables only: an operand in it is one)
    flags = " or ".join(f"x{j} not in lin" if j in linear else
                        f"type(x{j}) is not Var or x{j} in lin" for j in range(n)) or "False"
    lines = ["def handler(tr, v, msg, value, msgs, bindings, k):",
             "    args = value.args",
             f"    if len(args) != {n}:",
             f"        {fail}",
             "    (" + "".join(f"x{j}, " for j in range(n)) + ") = args",
             "    lin = tr.lin",
             f"    if {flags}:",
             f"        {fail}",
             f"    if (type(msg) is not Var or msg.type is not MT or v.type is not VT"
             f" or REBOUND{attrs_guard}):",
             f"        {fail}"]
    if len(linear) < n:
        lines.append("    subst = tr.copy.subst")
    names = ["msg"]  # the template's inputs: the cotangent, then the non-linear operands
    for j, a in enumerate(args):
        if j in linear:
            env[f"T{j}"] = a.type
            lines += [f"    if x{j}.type is not T{j}:",
                      f"        {fail}"]
        else:
            env[f"T{j}"] = inputs[len(names)].type
            lines += [f"    n{j} = subst.get(x{j}, x{j})",
                      f"    if type(n{j}) is not Var or n{j}.type is not T{j}:",
                      f"        {fail}"]
            names.append(f"n{j}")
    # which inputs alias (the key's alias pattern): each pair as in the recorded call
    for p in range(len(inputs)):
        for q in range(p + 1, len(inputs)):
            same = inputs[p] is inputs[q]
            lines += [f"    if {names[p]} is {'not ' if same else ''}{names[q]}:",
                      f"        {fail}"]
    lines.append("    b = tr.b")
    steps, outs = template.steps, template.outs
    if steps:
        lines.append("    emit = b.bindings.append")
    if template.advance:
        lines.append(f"    c = b.reserve_temps({template.advance})")
    env.update((f"k{i}", c) for i, c in enumerate(template.consts))
    kinds = {"in": "i", "const": "k", "step": "s"}

    def slot(ref):
        return f"{kinds[ref[0]]}{ref[1]}"

    lines += [f"    i{i} = {name}" for i, name in enumerate(names)]
    # a step that is the whole contribution to one linear operand bound by the binding
    # the sweep reaches next, which no other operand of this call is: when the operand
    # has no cotangent yet, the step is its cotangent there, so it is named <operand>_ct
    # at once (the sweep names it so when it reaches the binding)
    named = {ref[1]: p for p, ref in zip(positions, outs)
             if ref is not None and ref[0] == "step" and outs.count(ref) == 1}
    if named:
        lines.append("    before = bindings[k - 1].var if k else None")
    for p in named.values():
        distinct = "".join(f" and x{p} is not x{q}" for q in positions if q != p)
        lines.append(f"    fresh{p} = x{p} is before and msgs.get(x{p}) is None{distinct}")
    for j, (op, refs, attrs, t, offset) in enumerate(steps):
        env[f"op{j}"], env[f"a{j}"], env[f"t{j}"] = op, attrs, t
        operands = "".join(f"{slot(r)}, " for r in refs)
        name = f'f"lv{{c + {offset}}}"'
        if j in named:
            name = f'f"{{x{named[j]}.name}}_ct" if fresh{named[j]} else {name}'
        lines += step_lines(j, name, operands)
        lines.append(f"    emit(b{j})")
    for p, ref in zip(positions, outs):
        if ref is None:
            continue
        atom, operand = slot(ref), f"x{p}"
        indent = "    "
        if ref[0] == "step" and named.get(ref[1]) == p:
            lines += [f"    if fresh{p}:",
                      f"        msgs[{operand}] = {atom}",
                      f"        tr.fixed.add({atom})",
                      "    else:"]
            indent = "        "
        lines += [f"{indent}prev = msgs.get({operand})",
                  f"{indent}if prev is None:",
                  f"{indent}    msgs[{operand}] = {atom}",
                  f"{indent}elif type(prev) is Var:",
                  f"{indent}    msgs[{operand}] = add_vars(b, prev, {atom})",
                  f"{indent}else:",
                  f"{indent}    msgs[{operand}] = b.call(ADD, [prev, {atom}], {{}})"]
    lines.append("    return True")
    exec("\n".join(lines), env)  # noqa: S102 - the template's own numbers, see above
    return env["handler"]
