"""The keys of transposed op calls for ``ad.rule_templates`` (``transpose.py``'s sweep).

A key says what the transposition of a call depends on: the op, its attributes, the
types of its result, cotangent and operands (by identity), which operands are linear
(left undefined for the rule) and which inputs alias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...emit.trace import REBOUND
from ...ir.nodes import Binding, Var
from ...ir.op import attrs_key
from ...ir.types import TensorType

if TYPE_CHECKING:
    from .transpose import _Transposer


def template_key(tr: _Transposer, binding: Binding, msg) -> tuple | None:
    """(key, inputs, linear positions) of ``binding``'s transposition for
    ``ad.rule_templates``, or None when it is no key: a cotangent, result or operand
    that is not a variable of array type, an attribute without an exact key, a rule
    that is not a built-in one. The key holds type identities: ``transpose._run_rule``
    keeps the type objects of every expansion it records alive (``tr.held``), so an
    identity in a recorded key is its object's while the cache lives.

    The key is (op, attributes, result type, cotangent type, then per operand -1 when
    it is linear and its type's identity), with which inputs alias appended when some
    do; a call of one or two operands (most of a linear program) is keyed by code of
    its own, the same key without a list to build."""
    if type(msg) is not Var:
        return None
    v, value = binding.var, binding.value
    callee = value.callee
    vt, mt = v.type, msg.type
    if type(vt) is not TensorType or type(mt) is not TensorType:
        return None
    templates = tr.templates
    ok = templates.rule_ok.get(callee)  # RuleTemplates.cacheable_rule, inlined
    if ok is None:
        ok = templates.cacheable_rule(callee)
    if not ok or REBOUND:
        return None
    attrs = value.attrs
    ak = attrs_key(attrs) if attrs else ()
    if ak is None:
        return None
    args = value.args
    n = len(args)
    if n == 2 or n == 1:  # most of a linear program: keyed without building a list
        a, a_lin, ka = _operand(tr, args[0])
        if a is None:
            return None
        if n == 1:
            if a_lin:
                return (callee, ak, id(vt), id(mt), -1, ka), [msg], [0]
            key = (callee, ak, id(vt), id(mt), ka)
            return (key + ((0, 0),) if a is msg else key), [msg, a], []
        b, b_lin, kb = _operand(tr, args[1])
        if b is None:
            return None
        if a_lin:
            if b_lin:
                return (callee, ak, id(vt), id(mt), -1, ka, -1, kb), [msg], [0, 1]
            key = (callee, ak, id(vt), id(mt), -1, ka, kb)
            return (key + ((0, 0),) if b is msg else key), [msg, b], [0]
        if b_lin:
            key = (callee, ak, id(vt), id(mt), ka, -1, kb)
            return (key + ((0, 0),) if a is msg else key), [msg, a], [1]
        inputs = [msg, a, b]
        key = (callee, ak, id(vt), id(mt), ka, kb)
        if a is msg or b is msg or a is b:  # which inputs alias: part of the key
            key += (tuple([inputs.index(x) for x in inputs]),)
        return key, inputs, []
    return _template_key_general(tr, callee, ak, vt, mt, args, msg)


def _operand(tr: _Transposer, x) -> tuple:
    """(the operand as the transposed program names it, whether it is linear, its type's
    identity), or (None, ...) for an operand a template cannot key: not a variable
    (after substitution), or not a tensor."""
    if type(x) is not Var:
        return None, False, 0
    linear = x in tr.lin
    if not linear:
        x = tr.copy.subst.get(x, x)
        if type(x) is not Var:
            return None, False, 0
    if type(x.type) is not TensorType:
        return None, False, 0
    return x, linear, id(x.type)


def _template_key_general(tr: _Transposer, callee, ak, vt, mt, args, msg):
    """``template_key`` of a call of any number of operands."""
    inputs = [msg]
    positions = []
    key = [callee, ak, id(vt), id(mt)]
    for i, a in enumerate(args):
        a, linear, type_id = _operand(tr, a)
        if a is None:
            return None
        if linear:
            positions.append(i)
            key.append(-1)
        else:
            inputs.append(a)
        key.append(type_id)
    if len(inputs) > 2 or (len(inputs) == 2 and inputs[0] is inputs[1]):
        if len(set(inputs)) < len(inputs):  # which inputs alias: part of the key
            key.append(tuple([inputs.index(x) for x in inputs]))
    return tuple(key), inputs, positions
