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

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED, Op
from ..ir.types import ListType, TensorType, TupleType, Type
from .common import define


def _stack(name, t) -> ListType:
    if not isinstance(t, ListType):
        raise TypeInferenceError(f"{name}: expected a stack (list[...]), got {t!r}")
    return t


def _empty_normalize(types, attrs):
    if not isinstance(attrs["elem"], Type):
        raise TypeInferenceError(f"stack_empty: elem must be a type, got {attrs['elem']!r}")
    return attrs


def _push_type(types, attrs):
    s, x = types
    s = _stack("stack_push", s)
    if x != s.elem:
        raise TypeInferenceError(f"stack_push: pushing a {x!r} onto a {s!r}")
    return s


def _op(name, infer, kernel, nargs, attrs=None, normalize=None) -> Op:
    return define(name, infer, kernel, nargs, attrs, normalize, internal=True)


STACK_EMPTY = _op("stack_empty", lambda types, attrs: ListType(attrs["elem"]),
                  lambda elem: None, 0, {"elem": REQUIRED}, _empty_normalize)
STACK_PUSH = _op("stack_push", _push_type, lambda s, x: (x, s), 2)
STACK_POP = _op(
    "stack_pop",
    lambda types, attrs: TupleType([_stack("stack_pop", types[0]).elem, types[0]]),
    lambda s: s, 1)
STACK_NONEMPTY = _op(
    "stack_nonempty",
    lambda types, attrs: (_stack("stack_nonempty", types[0]), TensorType((), "bool"))[1],
    lambda s: np.bool_(s is not None), 1)

STACK_OPS = (STACK_EMPTY, STACK_PUSH, STACK_POP, STACK_NONEMPTY)
