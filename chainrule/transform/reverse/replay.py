"""One handler per rule template of the gradient pass: the template's replay, the
accumulation of its results into the operands' adjoints and the naming of an adjoint
completed by it, in one generated function (``op_backward``'s work for a key, without
its loops, its slot lists and the after-the-fact renaming of ``Sweep._name_done``).

A handler is built for a template once it is compiled (``ad.rule_templates.COMPILE_AFTER``
replays: only long programs have one), from the template's own numbers, with the ops,
types, attributes and constants passed as globals, never from program text: the same
rule as ``Template._compiled``.

It makes the IR ``op_backward`` makes, to the binding:

- the steps are the template's (``Template.replay``), each result a ``typed_var`` (the
  template's types were checked when it was recorded);
- the results are added to the operands' adjoints in operand order, as the loop of
  ``op_backward`` does (an operand that needs no adjoint has no result, its relevance
  being part of the key);
- when the binding is the last contribution of one operand ``u`` (``done == [u]``), the
  step giving ``u``'s whole adjoint is named ``<u>_adjoint`` as it is made, on the
  conditions under which ``Sweep._name_done`` would rename it right after: ``u`` is
  one operand (not two), had no adjoint yet (so the step's result is all of it), the
  step's result is the result of no other operand (no sum reads it) and no later step
  reads it. ``_final_name`` names the last step on stricter conditions: the result is
  the same. Otherwise the handler returns False and ``_name_done`` runs as before.
"""

from __future__ import annotations

from ... import ops
from ...ir.types import TensorType
from ..ad.rule_templates import Template, step_globals, step_lines

ADD = ops.add


def build_handler(template: Template, relevant: list[bool], add_vars):
    """The handler of ``template`` for a call whose operands' relevance is ``relevant``
    (part of the key): ``handler(sweep, olds, inputs, done) -> settled``, with ``olds``
    the operands (variables), ``inputs`` the template's inputs (result, its adjoint,
    the new operands), ``done`` as ``op_backward``'s; it returns False when
    ``Sweep._name_done`` has yet to look at ``done``. ``add_vars(builder, a, b)`` emits
    the sum of two variables."""
    steps, outs = template.steps, template.outs
    n_in, n_ops = 2 + len(relevant), len(relevant)
    kinds = {"in": "i", "const": "k", "step": "s"}

    def slot(ref):
        return "None" if ref is None else f"{kinds[ref[0]]}{ref[1]}"

    def alone(j):  # the operand ``u`` is at position j only
        return f"u is o{j}" + "".join(f" and u is not o{m}" for m in range(n_ops) if m != j)

    read = set()  # the steps whose results a later step reads
    for _, refs, _, _, _ in steps:
        read.update(r[1] for r in refs if r[0] == "step")
    results = [ref if relevant[j] else None for j, ref in enumerate(outs)]
    # operand j -> the step giving its whole adjoint, named as it is made
    candidates = {j: ref[1] for j, ref in enumerate(results)
                  if ref is not None and ref[0] == "step" and outs.count(ref) == 1
                  and ref[1] not in read}
    env = step_globals()
    env.update({"TensorType": TensorType, "add_vars": add_vars, "ADD": ADD})
    env.update((f"k{i}", c) for i, c in enumerate(template.consts))
    lines = ["def handler(sweep, olds, inputs, done):",
             "    (" + "".join(f"i{i}, " for i in range(n_in)) + ") = inputs",
             "    (" + "".join(f"o{j}, " for j in range(n_ops)) + ") = olds",
             "    b = sweep.b",
             "    emit = b.bindings.append",
             f"    c = b.reserve_temps({template.advance})",
             "    msgs = sweep.adj.msgs",
             # what Sweep._name_done would do for ``done == [u]``, decided before the
             # replay: ``todo`` stays True (it runs after) where a sum, or a step read
             # later, may be what it names; where ``u``'s adjoint is left as it was or
             # is an input (bound before this binding, so not among the bindings it
             # looks at), it names nothing
             "    at = -1",
             "    todo = done is not None",
             "    if todo and len(done) == 1:",
             "        u = done[0]",
             "        if type(u.type) is not TensorType:",
             "            todo = False",
             "        elif msgs.get(u) is None:"]
    branches = []  # u's first contribution: an input's or a candidate's, or none
    for j, ref in enumerate(results):
        if ref is not None and ref[0] == "step" and j not in candidates:
            continue  # _name_done looks at it
        body = ["todo = False"]
        if j in candidates:
            body = [f"at = {candidates[j]}",
                    'name = f"{sweep.copy.subst.get(u, u).name}_adjoint"', *body]
        branches.append((alone(j), body))
    lines += _chain(branches, "            ")
    lines.append("        else:")  # u has an adjoint: unchanged where nothing is added
    lines += _chain([(alone(j), ["todo = False"]) for j, ref in enumerate(results)
                     if ref is None], "            ")
    for j, (op, refs, attrs, t, offset) in enumerate(steps):
        env[f"op{j}"], env[f"a{j}"], env[f"t{j}"] = op, attrs, t
        operands = "".join(f"{slot(r)}, " for r in refs)
        fresh = f'f"lv{{c + {offset}}}"'
        if j in candidates.values():
            fresh = f"name if at == {j} else {fresh}"
        lines += step_lines(j, fresh, operands)
        lines.append(f"    emit(b{j})")
    for j, ref in enumerate(results):
        if ref is None:
            continue  # an operand that needs no adjoint has no result
        atom, old = slot(ref), f"o{j}"
        lines += [f"    prev = msgs.get({old})",
                  "    if prev is None:",
                  f"        msgs[{old}] = {atom}",
                  f"    elif type({old}.type) is TensorType:",
                  f"        msgs[{old}] = (add_vars(b, prev, {atom}) if type(prev) is Var",
                  f"                      else b.call(ADD, [prev, {atom}]))",
                  "    else:",
                  "        adj = sweep.adj",
                  f"        msgs[{old}] = adj.add(prev, {atom}, adj.type_of({old}))"]
    for k in sorted(candidates.values()):
        lines += [f"    if at == {k}:",
                  f"        sweep.named_early[u] = s{k}",
                  f"        sweep.ctx.named.add(s{k})"]
    lines.append("    return not todo")
    exec("\n".join(lines), env)  # noqa: S102 - the template's own numbers, see above
    return env["handler"]


def _chain(branches, indent: str) -> list[str]:
    """Lines of ``if c1: body1 elif c2: body2 ...`` (``pass`` without branches)."""
    if not branches:
        return [indent + "pass"]
    lines = []
    for k, (cond, body) in enumerate(branches):
        lines.append(f"{indent}{'elif' if k else 'if'} {cond}:")
        lines += [f"{indent}    {line}" for line in body]
    return lines
