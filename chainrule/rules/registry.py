"""Derivative rule tables, one per transform, keyed by op name.

A VJP rule ``rule(out, dout, *args, **attrs)`` returns one cotangent per
operand (``None`` where there is none). Results may have the broadcast
shape of the output: the passes sum them down to each operand's shape
(``collapse_sum_to``) and cast to its dtype, so rules state only the math.

A JVP rule ``rule(out, *args, **attrs)`` returns one *linear map* per
operand, ``lambda t: ...``, taking that operand's tangent to its
contribution to the output tangent (``None`` for operands with no
derivative); the passes apply the maps to the non-zero tangents and add.

Rules are written with the op functions users call, so applied to IR
values they emit IR, and their output is itself differentiable.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ChainruleError
from ..ir.op import OPS

VJP: dict[str, Callable] = {}
JVP: dict[str, Callable] = {}
# ops whose result does not depend differentiably on any operand
NONDIFFERENTIABLE: set[str] = set()

# Linear ops, for ``transpose``: "all" = jointly linear in every operand; "one" =
# linear in any one operand when the others are fixed (multiply, matmul); a tuple
# = the operand positions in which it is linear. Their transpose is their VJP.
LINEAR: dict[str, object] = {
    "add": "all", "subtract": "all", "negative": "all", "concatenate": "all",
    "multiply": "one", "matmul": "one", "divide": (0,), "where": (1, 2),
    "index": (0,), "index_add": (0, 1), "split": (0,), "astype": (0,), "sum": (0,),
    "mean": (0,), "reshape": (0,), "permute_dims": (0,), "expand_dims": (0,),
    "squeeze": (0,), "broadcast_to": (0,), "collapse_sum_to": (0,), "flip": (0,),
    "cumsum": (0,),
}


def vjp_rule(name: str):
    def deco(fn):
        VJP[name] = fn
        return fn

    return deco


def jvp_rule(name: str):
    def deco(fn):
        JVP[name] = fn
        return fn

    return deco


def register_vjp(op_name: str, rule: Callable) -> None:
    """Give ``op_name`` (a registered op, possibly user-defined) a VJP rule."""
    if op_name not in OPS:
        raise ChainruleError(f"register_vjp: no op named {op_name!r}; register the op first")
    VJP[op_name] = rule


def register_jvp(op_name: str, rule: Callable) -> None:
    """Give ``op_name`` a JVP rule (one linear map per operand)."""
    if op_name not in OPS:
        raise ChainruleError(f"register_jvp: no op named {op_name!r}; register the op first")
    JVP[op_name] = rule


def nondifferentiable(*names: str) -> None:
    NONDIFFERENTIABLE.update(names)
