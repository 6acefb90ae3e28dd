"""Derivative rule tables, one per transform, keyed by the op object.

A VJP rule ``rule(out, dout, *args, **attrs)`` returns one cotangent per
operand (``None`` where there is none). Results may have the broadcast
shape of the output: the passes sum them down to each operand's shape
(``collapse_sum_to``) and cast to its dtype, so rules state only the math.
The VJP rule of a linear op is also its transpose (``transpose`` calls it
with the linear operands undefined).

A JVP rule ``rule(out, *args, **attrs)`` returns one *linear map* per
operand, ``lambda t: ...``, taking that operand's tangent to its
contribution to the output tangent (``None`` for operands with no
derivative); the passes apply the maps to the non-zero tangents and add.
A rule returns ``NoDerivative(reason)`` for an operand whose derivative it
does not define: the passes raise ``NoRuleError`` if it is needed.

Rules are written with ops (and Python operators on values), so applied to
IR values they emit IR, and their output is itself differentiable. An op
declared ``differentiable=False`` needs no rules: its result has a zero
derivative.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ChainruleError
from ..ir.op import OPS, Op

VJP: dict[Op, Callable] = {}
JVP: dict[Op, Callable] = {}


class NoDerivative:
    """What a rule returns, in place of a cotangent or a linear map, for an operand
    whose derivative it does not define (say the shape parameter of an incomplete
    gamma function): asking for that derivative is an error naming the op and the
    reason, never a silent zero."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"NoDerivative({self.reason!r})"


def _op(op_or_name, who: str) -> Op:
    if isinstance(op_or_name, Op):
        if OPS.get(op_or_name.name) is not op_or_name:
            raise ChainruleError(f"{who}: {op_or_name!r} is not registered; register the op "
                                 f"first (chainrule.ops.define or chainrule.ir.register_op)")
        return op_or_name
    op = OPS.get(op_or_name) if isinstance(op_or_name, str) else None
    if op is None:
        raise ChainruleError(f"{who}: no op named {op_or_name!r}; register the op first")
    return op


def vjp_rule(op):
    """Decorator: the VJP rule of ``op`` (an Op or its name)."""
    op = _op(op, "vjp_rule")

    def deco(fn):
        VJP[op] = fn
        return fn

    return deco


def jvp_rule(op):
    """Decorator: the JVP rule of ``op`` (an Op or its name)."""
    op = _op(op, "jvp_rule")

    def deco(fn):
        JVP[op] = fn
        return fn

    return deco


def register_vjp(op, rule: Callable) -> None:
    """Give ``op`` (a registered op or its name, possibly user-defined) a VJP rule."""
    VJP[_op(op, "register_vjp")] = rule


def register_jvp(op, rule: Callable) -> None:
    """Give ``op`` a JVP rule (one linear map per operand)."""
    JVP[_op(op, "register_jvp")] = rule


def has_vjp(op: Op) -> bool:
    """Whether reverse mode can pass ``op``: it has a VJP rule or no derivative."""
    return op in VJP or not op.differentiable


def has_jvp(op: Op) -> bool:
    """Whether forward mode can pass ``op``: it has a JVP rule or no derivative."""
    return op in JVP or not op.differentiable
