"""Stacks: what reverse mode saves, one entry per loop iteration.

A stack is a persistent linked list (``None`` or ``(top, rest)``), so a push
or pop is O(1), shares the rest, and never mutates a value another variable
holds. ``stack_pop`` returns ``(top, rest)``. These ops appear in generated
reverse-mode code only; they have no NumPy-level user function.

>>> from chainrule.ir import OPS
>>> s = OPS["stack_push"].kernel(OPS["stack_push"].kernel(None, 1.0), 2.0)
>>> OPS["stack_pop"].kernel(s)[0], bool(OPS["stack_nonempty"].kernel(s[1][1]))
(2.0, False)
"""

from __future__ import annotations

import numpy as np

from ..errors import InterpretError, TypeInferenceError
from ..ir.op import REQUIRED, Op
from ..ir.types import DType, ListType, TensorType, TupleType, Type
from .common import define


class StackCell(tuple):
    """One cell of a persistent stack: ``(top, rest)``."""

    __slots__ = ()


def _stack(name, t) -> ListType:
    if not isinstance(t, ListType):
        raise TypeInferenceError(f"{name}: expected a stack (list[...]), got {t!r}")
    return t


def _empty_normalize(types, attrs):
    if isinstance(attrs["elem"], DType):  # the text format reads elem=f64 as a dtype
        attrs = {**attrs, "elem": TensorType((), attrs["elem"])}
    if not isinstance(attrs["elem"], Type):
        raise TypeInferenceError(f"stack ops: elem must be a type, got {attrs['elem']!r}")
    return attrs


def _push_type(types, attrs):
    s, x = types
    s = _stack("stack_push", s)
    if x != s.elem:
        raise TypeInferenceError(f"stack_push: pushing a {x!r} onto a {s!r}")
    return s


def _op(name, infer, kernel, nargs, attrs=None, normalize=None, linear=None) -> Op:
    return define(name, infer, kernel, nargs, attrs, normalize, internal=True, linear=linear)


STACK_EMPTY = _op("stack_empty", lambda types, attrs: ListType(attrs["elem"]),
                  lambda elem: None, 0, {"elem": REQUIRED}, _empty_normalize)
# push and pop are linear (a stack of tangents is a tuple of them): transpose reads their
# VJP rules (rules/stack.py), so linearize + transpose goes through loops' gradients
STACK_PUSH = _op("stack_push", _push_type, lambda s, x: StackCell((x, s)), 2, linear="all")
STACK_POP = _op(
    "stack_pop",
    lambda types, attrs: TupleType([_stack("stack_pop", types[0]).elem, types[0]]),
    lambda s: s, 1, linear="all")
STACK_NONEMPTY = _op(
    "stack_nonempty",
    lambda types, attrs: (_stack("stack_nonempty", types[0]), TensorType((), "bool"))[1],
    lambda s: np.bool_(s is not None), 1)



def zeros_of(t: Type):
    """The zero value of type ``t``: zero arrays, tuples of zeros, an empty stack (a
    stack of cotangents or tangents that is empty stands for a stack of zeros)."""
    if isinstance(t, TensorType):
        if not t.is_static:
            raise InterpretError(f"no zeros of the symbolic type {t!r}")
        return np.zeros(t.shape, t.dtype.numpy)
    if isinstance(t, TupleType):
        return tuple(zeros_of(f) for f in t.fields)
    if isinstance(t, ListType):
        return None
    raise InterpretError(f"no zero value of type {t!r}")


def _pop_or_zero(s, elem):
    if s is None:
        return zeros_of(elem), None
    return s


def _add_values(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if type(a) is StackCell or type(b) is StackCell:
        return add_stacks(a, b)
    if type(a) is tuple:
        return tuple(_add_values(x, y) for x, y in zip(a, b))
    return a + b


def add_stacks(a, b):
    """Element by element sum of two stacks; the shorter one is padded with zeros
    (an empty stack of cotangents stands for zeros). Iterative: stacks are long."""
    if a is None:
        return b
    if b is None:
        return a
    tops = []
    while a is not None and b is not None:
        tops.append(_add_values(a[0], b[0]))
        a, b = a[1], b[1]
    rest = a if a is not None else b
    for top in reversed(tops):
        rest = StackCell((top, rest))
    return rest


def _add_type(types, attrs):
    a, b = types
    _stack("stack_add", a)
    if a != b:
        raise TypeInferenceError(f"stack_add: adding a {a!r} and a {b!r}")
    return a


def _pop_or_zero_type(types, attrs):
    s = _stack("stack_pop_or_zero", types[0])
    return TupleType([s.elem, s])


STACK_POP_OR_ZERO = _op("stack_pop_or_zero", _pop_or_zero_type, _pop_or_zero, 1,
                        {"elem": REQUIRED}, _empty_normalize, linear="all")
STACK_ADD = _op("stack_add", _add_type, add_stacks, 2, linear="all")

STACK_OPS = (STACK_EMPTY, STACK_PUSH, STACK_POP, STACK_NONEMPTY, STACK_POP_OR_ZERO, STACK_ADD)
