"""The leaves of branch results and loop carries, as control flow traces them: their
IR types (a Python number is weakly typed, as NumPy 2 types it: NEP 50), the atoms
that stand for them, and the placeholders of values a branch does not define."""

from __future__ import annotations

import numpy as np

from ..emit.trace import Trace, Traced
from ..errors import TraceError
from ..ir.nodes import Constant, TupleGetItem, Var
from ..ir.op import OPS, PYTHON_SCALARS
from ..ir.types import DType, TensorType, Type

INLINE_CONSTANT_SIZE = 16
BOOL = TensorType((), "bool")


class Filler:
    """A placeholder leaf that becomes zeros: the value of a branch that does not
    define it (``type`` None: the other branch's type), or a typed initial value."""

    __slots__ = ("type",)

    def __init__(self, type: Type | None):
        self.type = type

    def __repr__(self) -> str:
        return f"Filler({self.type!r})"


MISSING = Filler(None)


def is_weak(v) -> bool:
    return type(v) in PYTHON_SCALARS


def strong_type(v) -> Type | None:
    """The IR type of a leaf; None for a weak Python number."""
    if isinstance(v, (Traced, Filler)):
        return v.type
    if is_weak(v):
        return None
    arr = np.asarray(v)
    if arr.dtype == object:
        raise TraceError(f"cannot use {type(v).__name__} as an array")
    return TensorType(arr.shape, DType(arr.dtype))


def default_type(v) -> TensorType:
    t = strong_type(v)
    return t if t is not None else TensorType((), DType(np.result_type(v)))


def same_static(a, b) -> bool:
    """Two leaves known at trace time to be the same value."""
    if a is b:
        return True
    if isinstance(a, (Traced, Filler)) or isinstance(b, (Traced, Filler)):
        return False
    if is_weak(a) or is_weak(b):
        return type(a) is type(b) and a == b and not (isinstance(a, float) and np.isnan(a))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def weak_fits(value, t: TensorType) -> bool:
    """A Python number converts to ``t`` without changing ``t``'s dtype (NEP 50)."""
    return DType(np.result_type(t.dtype.numpy, value)) == t.dtype


def leaf_atom(tr: Trace, v, t: TensorType):
    """An atom of type ``t`` for the leaf ``v`` (emitting a ``full`` for big constants)."""
    if isinstance(v, Traced):
        atom = tr.atom(v)
        if atom.type != t:
            raise TraceError(f"internal: {atom.type!r} where {t!r} is expected")
        return atom
    if isinstance(v, Filler):
        v = 0
    arr = np.asarray(v, dtype=t.dtype.numpy)
    if arr.shape != t.shape:
        if not t.is_static:
            raise TraceError(f"cannot broadcast a constant to the symbolic shape {t!r}")
        if arr.ndim == 0 and t.size > INLINE_CONSTANT_SIZE:
            return tr.builder.call(OPS["full"], [], {"shape": t.shape, "fill_value": arr.item(),
                                                     "dtype": t.dtype})
        arr = np.broadcast_to(arr, t.shape)
    return Constant(arr)


def unpack(tr: Trace, var: Var, n: int) -> list:
    """Traced values for the ``n`` results of an If/While bound to ``var``."""
    if n == 1:
        return [tr.wrap(var)]
    return [tr.wrap(tr.builder.emit(TupleGetItem(var, i))) for i in range(n)]


def bool_atom(tr: Trace, c, what: str):
    """The atom of a traced condition: a bool scalar (a number is compared with 0)."""
    t = c.type
    if not isinstance(t, TensorType) or t.shape != ():
        raise TraceError(f"the condition of {what} must be a scalar, got a value of type {t!r}")
    if not t.dtype.is_bool:
        c = c != 0
    return tr.atom(c)
