"""Constant folding, for ``simplify``: an op call whose operands are all constants
becomes a constant when its result is small."""

from __future__ import annotations

import numpy as np

from ... import ops
from ...ir.nodes import Call, Constant, Tuple, Var
from ...ir.types import TensorType, TupleType
from ...ops.stack_schedule import LOOP_CHECKPOINT

FOLD_LIMIT = 64  # largest result (in elements) that constant folding creates
# ops without operands folded when they make a scalar (the seed ones(()) of a gradient)
_CREATION = (ops.zeros, ops.ones, ops.full, ops.arange)


def fold(var: Var, call: Call):
    """The constant (or tuple of constants) ``var = call`` computes when every operand is
    a constant (or a creation op makes a scalar) and the result is small, else None."""
    # a loop's checkpoint mark is not a value to compute: folded, the loop loses it
    if call.callee.effects or call.callee is LOOP_CHECKPOINT:
        return None
    t = var.type
    if not call.args:  # a creation op: folded when it makes a scalar
        if call.callee not in _CREATION or not (
                isinstance(t, TensorType) and t.shape == ()):
            return None
    elif not all(type(a) is Constant for a in call.args):
        return None
    fields = t.fields if isinstance(t, TupleType) else (t,)
    size = 0
    for f in fields:
        if not isinstance(f, TensorType) or f.size is None:
            return None
        size += f.size
    if size > FOLD_LIMIT:
        return None
    try:
        with np.errstate(all="ignore"):
            res = call.callee.kernel(*[a.data for a in call.args], **call.attrs)
    except Exception:  # folding is best effort: a failing kernel fails at run time
        return None
    parts = list(res) if isinstance(t, TupleType) else [res]
    if len(parts) != len(fields):
        return None
    consts = []
    for part, f in zip(parts, fields):
        arr = np.asarray(part)
        if arr.shape != f.shape:
            return None
        consts.append(Constant(arr.astype(f.dtype.numpy, copy=False)))
    return Tuple(consts) if isinstance(t, TupleType) else consts[0]
