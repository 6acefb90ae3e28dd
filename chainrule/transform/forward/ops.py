"""The forward mode of a call of an op (``jvp.py``'s sweep): the call copied, then its
tangent from its operands' tangents, by the op's JVP rule or by the rule's template
replayed (``ad/rule_templates.py``). Most bindings of a program are such calls, so the
copy, the template key and the replay of a call of one or two variables are spelled
out here rather than made through the general helpers (the same nodes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ops
from ...emit.trace import REBOUND, Traced
from ...errors import GradientError, NoRuleError
from ...ir.nodes import Binding, Call, Constant, Tuple, Var, typed_var
from ...ir.op import attrs_key
from ...ir.types import TensorType, TupleType
from ...rules import JVP, NoDerivative
from ..ad.adjoint import Adjoints
from ..ad.rule_templates import Template, alias_pattern, attributes_key

if TYPE_CHECKING:
    from .jvp import _ForwardSweep


def _op_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    """A call of an op copied, then its tangent from its operands' (the rule's
    expansion, or its template replayed: ad/rule_templates.py)."""
    call = binding.value
    olds = call.args
    n = len(olds)
    if n == 2:
        x, y = olds
        if type(x) is Var and type(y) is Var:
            return _var_forward(sweep, binding, call, x, y)
    elif n == 1:
        x = olds[0]
        if type(x) is Var:
            return _var_forward(sweep, binding, call, x, None)
    return _general_forward(sweep, binding)


def _var_forward(sweep: _ForwardSweep, binding: Binding, call: Call, x: Var, y: Var | None):
    """``_general_forward`` of a call of one variable ``x`` (``y`` None) or two (most
    bindings), with its copy, its tangents, its template key (``_key``) and its replay
    spelled out."""
    subst = sweep.copy.subst
    a = subst.get(x, x)
    if type(a) is not Var or a.type is not x.type:
        return _general_forward(sweep, binding)  # (a constant operand may be read by value)
    if y is not None:
        b = subst.get(y, y)
        if type(b) is not Var or b.type is not y.type:
            return _general_forward(sweep, binding)
        args = (a, b)
    else:
        args = (a,)
    var = binding.var
    op = call.callee
    builder = sweep.b
    new = typed_var(var.name or builder.fresh_name(), var.type)
    builder.bindings.append(Binding(new, call.with_args(op, args)))
    subst[var] = new
    if not op.differentiable:
        return
    tangents = sweep.tangents
    s = tangents.get(x)
    if y is None:
        if s is None:
            return
        nonzero = (s,)
        t = None
    else:
        t = tangents.get(y)
        if s is None:
            if t is None:
                return
            nonzero = (t,)
        else:
            nonzero = (s,) if t is None else (s, t)
    templates = sweep.ctx.templates
    if templates is None or REBOUND:
        return _tangent_of(sweep, binding, new, args, [s, t][:len(args)], nonzero, None)
    ok = templates.rule_ok.get(op)  # RuleTemplates.cacheable_rule, inlined
    if ok is None:
        ok = templates.cacheable_rule(op)
    attrs = call.attrs
    ak = attrs_key(attrs) if attrs else ()  # attributes_key, inlined
    if not ok or ak is None or (s is not None and type(s) is not Var) or (
            t is not None and type(t) is not Var):
        return _tangent_of(sweep, binding, new, args, [s, t][:len(args)], nonzero, None)
    if y is None:  # _key's, for one variable and for two
        key = (op, ak, id(var.type), id(a.type), id(s.type),
               alias_pattern((new, a, s)) if a is s else None)
    else:
        key = (op, ak, id(var.type), id(a.type), id(b.type),
               None if s is None else id(s.type), None if t is None else id(t.type),
               alias_pattern((new, a, b, *nonzero))
               if a is b or a is s or a is t or b is s or b is t or s is t else None)
    template = templates.entries.get(key)
    if (type(template) is Template and template.last_out == 0
            and type(var.type) is TensorType):
        # RuleTemplates.expand's common case, inlined; the tangent is the last binding:
        # made as set_tangent would rename it
        tangents[var] = template.replay((new, *args, *nonzero), builder, f"{new.name}_dot")[0]
        return
    return _tangent_of(sweep, binding, new, args, [s, t][:len(args)], nonzero, key)


def _general_forward(sweep: _ForwardSweep, binding: Binding) -> None:
    """``_op_forward`` of any call of an op."""
    call = binding.value
    op = call.callee
    copy = sweep.copy
    subst = copy.subst
    olds = call.args
    var = binding.var
    builder = sweep.b
    # the copy of an op call (Mutator.copy_op_call, inlined), from the substituted
    # operands the template key reads too (calls of variables: ``_var_forward``)
    plain = Tuple not in map(type, olds)  # atoms only: looked up directly
    args = (tuple(map(subst.get, olds, olds)) if plain
            else tuple([copy.atom(a) for a in olds]))
    same = plain and all([new.type is old.type for new, old in zip(args, olds)])
    if same:  # the operands keep their types, so does the result (no inference)
        new = typed_var(var.name or builder.fresh_name(), var.type)
        builder.bindings.append(Binding(new, call.with_args(op, args)))
        subst[var] = new
    else:
        new = subst[var] = copy.copy_op_call(binding, list(args))
    if not op.differentiable:
        return
    if plain:
        get = sweep.tangents.get
        tangents = list(map(get, olds))
    else:
        tangents = [sweep.tangent(a) for a in olds]
    nonzero = [t for t in tangents if t is not None]
    if not nonzero:
        return
    templates = sweep.ctx.templates
    key = template = None
    if templates is not None:
        ok = templates.rule_ok.get(op)  # RuleTemplates.cacheable_rule, inlined
        if ok is None:
            ok = templates.cacheable_rule(op)
        if ok and not REBOUND:
            key = _key(op, call.attrs, new, args, tangents, nonzero)
            if key is not None:
                template = templates.entries.get(key)
                if (type(template) is Template and template.last_out == 0
                        and type(var.type) is TensorType):
                    # RuleTemplates.expand's common case, inlined; the tangent is the last
                    # binding: made as set_tangent would rename it
                    sweep.tangents[var] = template.replay(
                        (new, *args, *nonzero), builder, f"{new.name}_dot")[0]
                    return
    _tangent_of(sweep, binding, new, args, tangents, nonzero, key)


def _tangent_of(sweep: _ForwardSweep, binding: Binding, new: Var, args, tangents, nonzero,
                key) -> None:
    """The tangent of ``new`` (the copy of ``binding``) when no template of ``key`` is
    replayed as the last binding: the template replayed otherwise, the expansion
    recorded or the rule run (``key`` None: no template)."""
    builder = sweep.b
    start = len(builder.bindings)
    templates = sweep.ctx.templates
    template = None if key is None else templates.entries.get(key)
    if key is None:
        total = _tangent(sweep, binding, new, tangents)
    elif type(template) is Template:  # RuleTemplates.expand's common case, inlined
        total = template.replay((new, *args, *nonzero), builder)[0]
    else:
        total = templates.expand(key, (new, *args, *nonzero), sweep.trace, _tangent_one,
                                 sweep, binding, new, tangents)[0]
    sweep.set_tangent(binding.var, total, new, start)


def _key(op, attrs, new, args, tangents, nonzero) -> tuple | None:
    """What the expansion of a call's tangent depends on (see ad/rule_templates.py): the
    op, its attributes, the types of its result, operands and non-zero tangents, which
    tangents are zero, which of these variables are the same."""
    ak = attributes_key(attrs)
    if ak is None:
        return None
    if len(args) == 1:
        (a,), (t,) = args, tangents  # t is not None: a tangent varies
        if type(a) is not Var or type(t) is not Var:
            return None  # a constant (a rule may read its value), a tuple
        return (op, ak, id(new.type), id(a.type), id(t.type),
                alias_pattern((new, a, t)) if a is t or new is a or new is t else None)
    if len(args) == 2:
        (a, b), (s, t) = args, tangents
        if (type(a) is not Var or type(b) is not Var or (s is not None and type(s) is not Var)
                or (t is not None and type(t) is not Var)):
            return None
        return (op, ak, id(new.type), id(a.type), id(b.type),
                None if s is None else id(s.type), None if t is None else id(t.type),
                alias_pattern((new, a, b, *nonzero))
                if a is b or a is s or a is t or b is s or b is t or s is t else None)
    key = [op, ak, id(new.type)]
    for a, t in zip(args, tangents):
        if type(a) is not Var or (t is not None and type(t) is not Var):
            return None
        key.append(id(a.type))
        key.append(None if t is None else id(t.type))
    key.append(alias_pattern((new, *args, *nonzero)))
    return tuple(key)


def _tangent_one(sweep: _ForwardSweep, binding: Binding, new: Var, tangents) -> tuple:
    return (_tangent(sweep, binding, new, tangents),)


def _tangent(sweep: _ForwardSweep, binding: Binding, new: Var, tangents):
    """The tangent of ``new``, the copy of ``binding`` (a call of an op), emitted from
    its operands' ``tangents`` (None: a symbolic zero; one at least is not)."""
    call = binding.value
    op = call.callee
    adj = sweep.adj
    varying = [i for i, t in enumerate(tangents) if t is not None]
    linear = range(len(call.args)) if op.linear == "all" else (
        op.linear if isinstance(op.linear, tuple) else ())
    if len(varying) > 1 and set(varying) == set(linear) and all(
            isinstance(tangents[i], (Var, Constant)) for i in varying):
        # jointly linear in its linear operands, all of which vary (a constant among them
        # would make it affine): the tangent is the op applied to their tangents, one op
        # where one map per operand would pad each with zeros and add them (a scatter's
        # zero base, where's other branch)
        targs = [tangents[i] if t is not None else sweep.copy.atom(a)
                 for i, (a, t) in enumerate(zip(call.args, tangents))]
        return _fit_out(adj, adj.wrap(sweep.b.call(op, targs, call.attrs)), new.type)
    args = [adj.wrap(sweep.copy.atom(a)) for a in call.args]
    maps = JVP[op](Traced(sweep.trace, new), *args, **call.attrs)
    if len(maps) != len(args):
        raise GradientError(f"the JVP rule of {op.name} returned {len(maps)} maps for "
                            f"{len(args)} operands")
    total = None
    for i, (t, m) in enumerate(zip(tangents, maps)):
        if t is None or m is None:
            continue
        if type(m) is NoDerivative:
            raise NoRuleError(f"{binding.var.name} = {op.name}(...): no derivative with "
                              f"respect to operand {i}: {m.reason}")
        contrib = m(adj.wrap(adj.materialize(t, _type(t))))
        total = adj.add(total, _fit_out(adj, contrib, new.type), new.type)
    return total


def _type(msg):
    if isinstance(msg, tuple):
        return TupleType(_type(m) for m in msg)
    if isinstance(msg, Tuple):
        return TupleType(_type(f) for f in msg.fields)
    return msg.type


def _fit_out(adj: Adjoints, contrib, t):
    if contrib is None:
        return None
    if isinstance(t, TupleType):
        return tuple(_fit_out(adj, c, ft) for c, ft in zip(contrib, t.fields))
    atom = adj.unwrap(contrib)
    if atom.type.shape != t.shape:
        atom = adj.call(ops.broadcast_to, atom, shape=t.shape)
    return adj.cast(atom, t.dtype)


