"""The reverse sweep through a call of an op: its VJP rule applied to the binding's
adjoint (or the rule's template replayed, ``ad/rule_templates.py``), the partials fitted
to their operands' types, the work for operands that need no adjoint pruned, and the
rest accumulated into the operands' adjoints."""

from __future__ import annotations

from ... import ops
from ...emit.trace import REBOUND, Traced
from ...errors import GradientError, NoRuleError
from ...ir.nodes import Tuple, Var
from ...ir.types import TensorType, TupleType, Type
from ...rules import VJP, NoDerivative
from ..ad import rule_templates
from ..ad.adjoint import add_vars, prune
from ..ad.rule_templates import Template, alias_pattern, attributes_key
from .replay import build_handler

ADD = ops.add  # accumulates two contributions to an array's adjoint


def op_backward(sweep, binding, msg) -> None:
    """Accumulate the adjoints of the operands of ``binding`` (a call of an op) given
    ``msg``, the adjoint of its result. The operands whose last contribution this is
    (``sweep.completing``) are named by the sweep next, unless a replayed template binds
    one under its name as it makes it (or a handler finds nothing to name:
    reverse/replay.py): then ``sweep.completing`` is cleared here."""
    call = binding.value
    op = call.callee
    if not op.differentiable:
        return
    done = sweep.completing
    olds = call.args
    if sweep.shared:  # the forward block is the original one: every atom is itself
        out, args = binding.var, olds
    else:
        subst = sweep.copy.subst.get  # ForwardCopy.atom, inlined for variables, constants
        out = subst(binding.var, binding.var)
        args = (list(map(subst, olds, olds)) if Tuple not in map(type, olds)
                else [sweep.copy.atom(a) for a in olds])
    templates = sweep.ctx.templates
    key = None
    if templates is not None and type(msg) is Var and type(msg.type) is TensorType:
        ok = templates.rule_ok.get(op)  # RuleTemplates.cacheable_rule, inlined
        if ok is None or (ok and REBOUND):
            ok = templates.cacheable_rule(op)
        if ok:
            key = _key(op, call.attrs, out, msg, olds, args, sweep.relevant)
    name = None
    if key is None:
        fitted = _apply_rule(sweep, binding, msg, out, args)
    else:
        handler = sweep.ctx.handlers.get(key)
        if handler is not None:  # a compiled template: replay, accumulate, name in one
            if handler(sweep, olds, (out, msg, *args), done):
                sweep.completing = None
            return
        template = templates.entries.get(key)
        if type(template) is Template:  # RuleTemplates.expand's common case, inlined
            if done is not None and len(done) == 1 and template.last_out is not None:
                name = _final_name(sweep, done[0], olds, template)
            fitted = template.replay((out, msg, *args), sweep.b, name)
            if template.hits >= rule_templates.COMPILE_AFTER:  # compiled: from now on
                sweep.ctx.handlers[key] = build_handler(
                    template, [old in sweep.relevant for old in olds], add_vars)
        else:
            fitted = templates.expand(key, (out, msg, *args), sweep.trace, _apply_rule,
                                      sweep, binding, msg, out, args)
    adj = sweep.adj
    msgs, wants = adj.msgs, sweep.wants
    for old, atom in zip(olds, fitted):
        if atom is None:
            continue
        if type(old) is Var and wants(old):  # Adjoints.accumulate's common case, inlined
            prev = msgs.get(old)
            if prev is None:
                msgs[old] = atom
            elif type(old.type) is TensorType:  # Adjoints.add of two arrays, inlined
                msgs[old] = (add_vars(sweep.b, prev, atom)
                             if type(prev) is Var and type(atom) is Var
                             else sweep.b.call(ADD, [prev, atom]))
            else:
                msgs[old] = adj.add(prev, atom, adj.type_of(old))
        else:
            adj.accumulate(old, atom, wants)
    if name is None:
        return
    named = fitted[template.last_out]
    sweep.named_early[done[0]] = named
    sweep.ctx.named.add(named)
    sweep.completing = None


def _final_name(sweep, u, olds, template) -> str | None:
    """``<u>_adjoint`` when the template's last step will be the whole adjoint of ``u``
    (an operand whose last contribution this is), which ``Sweep._name_done`` would
    then rename at once: its contribution is the first, and no other operand's
    accumulation emits anything after it; else None (named after the replay)."""
    i = template.last_out
    outs = template.outs
    if olds[i] is not u or type(u.type) is not TensorType or outs.count(outs[i]) > 1:
        return None
    msgs, wants = sweep.adj.msgs, sweep.wants
    if not wants(u) or msgs.get(u) is not None:
        return None
    for j, old in enumerate(olds):
        if j != i and (old is u or (outs[j] is not None and type(old) is Var and wants(old)
                                    and msgs.get(old) is not None)):
            return None
    return f"{sweep.copy.subst.get(u, u).name}_adjoint"


def _key(op, attrs, out, msg, olds, args, relevant) -> tuple | None:
    """What the expansion of this call's rule depends on (see ad/rule_templates.py)."""
    ak = attributes_key(attrs)
    if ak is None:
        return None
    n = len(args)
    if n == 1:
        (a,) = args
        if type(a) is not Var:
            return None  # a constant (a rule may read its value) or a tuple
        return (op, ak, id(out.type), id(msg.type), id(a.type), olds[0] in relevant,
                alias_pattern((out, msg, a)) if out is msg or out is a or msg is a else None)
    if n == 2:
        a, b = args
        if type(a) is not Var or type(b) is not Var:
            return None
        return (op, ak, id(out.type), id(msg.type), id(a.type), id(b.type),
                olds[0] in relevant, olds[1] in relevant,
                alias_pattern((out, msg, a, b)) if (out is msg or msg is a or msg is b
                                                    or a is b or out is a or out is b)
                else None)
    key = [op, ak, id(out.type), id(msg.type)]
    for old, a in zip(olds, args):
        if type(a) is not Var:
            return None
        key.append(id(a.type))
        key.append(old in relevant)
    key.append(alias_pattern((out, msg, *args)))
    return tuple(key)


def _apply_rule(sweep, binding, msg, out_var, args) -> list:
    """Run the VJP rule; one fitted partial (an atom) per operand, None where nothing
    is to be accumulated."""
    call = binding.value
    op = call.callee
    adj, trace = sweep.adj, sweep.trace
    if type(msg) is Var and type(msg.type) is TensorType:  # the common case first
        dout = Traced(trace, msg)
    elif isinstance(binding.var.type, TupleType):
        dresult = adj.materialize(msg, binding.var.type)
        dout = tuple(adj.wrap(f) for f in adj.split(dresult, binding.var.type))
    else:
        dout = adj.wrap(adj.materialize(msg, binding.var.type))
    start = len(sweep.b.bindings)
    partials = VJP[op](Traced(trace, out_var), dout,
                       *[Traced(trace, a) if type(a) is Var else adj.wrap(a) for a in args],
                       **call.attrs)
    if len(partials) != len(args):
        raise GradientError(f"the VJP rule of {op.name} returned {len(partials)} cotangents "
                            f"for {len(args)} operands")
    fitted, dropped = [], False
    relevant = sweep.relevant
    for i, (old, new, p) in enumerate(zip(call.args, args, partials)):
        if p is None:
            fitted.append(None)
            continue
        if not (old in relevant if type(old) is Var else _wants_any(sweep, old)):
            dropped = True
            fitted.append(None)
            continue
        if type(p) is NoDerivative:
            raise NoRuleError(f"{binding.var.name} = {op.name}(...): no derivative with "
                              f"respect to operand {i}: {p.reason}")
        fitted.append(adj.fit(p, new.type if type(new) is Var else arg_type_of(new)))
    if dropped:  # work done only for a cotangent nobody needs
        prune(sweep.b.bindings, start, [f for f in fitted if f is not None])
    return fitted


def _wants_any(sweep, atom) -> bool:
    if isinstance(atom, Tuple):
        return any(_wants_any(sweep, f) for f in atom.fields)
    return isinstance(atom, Var) and sweep.wants(atom)


def arg_type_of(atom) -> Type:
    if isinstance(atom, Tuple):
        return TupleType(arg_type_of(f) for f in atom.fields)
    return atom.type
