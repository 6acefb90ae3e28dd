"""Stacks: what reverse mode saves, one entry per loop iteration.

A stack is a persistent linked list (``None`` or ``(top, rest)``), so a push
or pop is O(1), shares the rest, and never mutates a value another variable
holds. ``stack_pop`` returns ``(top, rest)``. These ops appear in generated
reverse-mode code only; they have no NumPy-level user function.

When the loop's trip count is known before it runs, ``stack_alloc(trips, elem=...)``
starts the stack instead of ``stack_empty``: a ``RowStack``, one array of shape
``(trips, *shape)`` whose rows the pushes fill in order (see ``RowStack`` for why
that is still persistent, and docs/loops.md for why it is faster: one large
allocation instead of one fresh array kept per step).

>>> from chainrule.ir import OPS
>>> s = OPS["stack_push"].kernel(OPS["stack_push"].kernel(None, 1.0), 2.0)
>>> OPS["stack_pop"].kernel(s)[0], bool(OPS["stack_nonempty"].kernel(s[1][1]))
(2.0, False)
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from ..errors import InterpretError, TypeInferenceError
from ..ir.op import REQUIRED, Op
from ..ir.types import DType, ListType, TensorType, TupleType, Type
from .common import NOT_YET_ON_ARRAY_API, define


class StackCell(tuple):
    """One cell of a persistent stack: ``(top, rest)``."""

    __slots__ = ()


# Below this many bytes per element, linked cells are faster than rows: a cell costs one
# small tuple (0.28 us a push and pop), a row a copy, a view and a stack object (1.5 us),
# and the allocator reuses small freed arrays without faulting pages (measured: no page
# faults for 8 KiB arrays, about one per page from 32 KiB on; docs/loops.md)
ROW_MIN_BYTES = 16384
# ... nor for fewer bytes in all: a short loop's residuals fit the allocator's reuse
ROW_MIN_TOTAL = 4 * 2**20


class RowStack:
    """A stack whose first ``depth`` elements are rows ``[0, depth)`` of ``rows[0]``, a
    preallocated array; ``rows[1]`` counts the rows written so far (shared by every
    stack on the same rows), ``rows[2]`` is a read-only view of ``rows[0]`` that pops
    read from (a row of it is read-only at no cost; setting the flag on each popped
    row cost 1.7 µs). A push writes row ``depth`` only when no push has written
    it yet (``depth == rows[1]``), so a row never changes once written and every stack
    value keeps meaning what it meant; any other push (a second push on the same
    stack, or a full array) puts a linked cell on top, whose ``rest`` is this stack.
    Popped rows are read-only views."""

    __slots__ = ("rows", "depth")

    def __init__(self, rows: list, depth: int):
        self.rows = rows
        self.depth = depth

    def push(self, x):
        rows = self.rows
        d = self.depth
        buf = rows[0]
        if d == rows[1] and d < len(buf) and type(x) is np.ndarray and x.shape == buf.shape[1:]:
            buf[d] = x
            rows[1] = d + 1
            return RowStack(rows, d + 1)
        return StackCell((x, self))

    def pop(self):
        if self.depth == 0:
            raise InterpretError("stack_pop: the stack is empty")
        # a view of the read-only array: the row is shared, nobody may write through it
        return self.rows[2][self.depth - 1], RowStack(self.rows, self.depth - 1)

    def __repr__(self) -> str:
        return f"<stack of {self.depth} rows>"


def rows_pay(elem: Type) -> bool:
    """Whether a stack of ``elem`` values is faster in rows than in linked cells: arrays
    of a static shape and at least ROW_MIN_BYTES."""
    return (isinstance(elem, TensorType) and elem.is_static and elem.ndim >= 1
            and elem.dtype.numpy.itemsize * int(np.prod(elem.shape)) >= ROW_MIN_BYTES)


class _RowPool:
    """Row buffers kept for the next loop of the same shape: memory the process already
    touched, so writing it costs no page fault (a fresh buffer faults once per 4 KiB
    page: what made storing every step slow, docs/loops.md). A buffer is free when
    nothing but the pool refers to it (no stack value, no popped row); at most
    ``limit`` bytes are kept."""

    def __init__(self, limit: int):
        self.limit = limit
        self.lock = threading.Lock()  # two threads must not both take one free buffer
        self.held: dict[tuple, list] = {}
        self.bytes = 0
        probe = [(np.empty(1), None)]
        self.free_count = sys.getrefcount(probe[0][0])  # a buffer only the pool holds

    def take(self, shape: tuple, dtype) -> list:
        with self.lock:
            for buf, view in self.held.get((shape, dtype), ()):
                if sys.getrefcount(buf) <= self.free_count + 2:  # + the view's base, + `buf`
                    return [buf, 0, view]
            buf = np.empty(shape, dtype)
            view = buf.view()
            view.flags.writeable = False
            if self.bytes + buf.nbytes <= self.limit:
                self.held.setdefault((shape, dtype), []).append((buf, view))
                self.bytes += buf.nbytes
            return [buf, 0, view]

    def clear(self) -> None:
        with self.lock:
            self.held.clear()
            self.bytes = 0


ROW_POOL = _RowPool(256 * 2**20)


def set_row_pool_limit(nbytes: int) -> int:
    """Keep at most ``nbytes`` of row buffers for reuse between calls (0: none, every
    loop allocates afresh); returns the previous limit. The default is 256 MiB."""
    old, ROW_POOL.limit = ROW_POOL.limit, int(nbytes)
    ROW_POOL.clear()
    return old


def _alloc(trips, elem, slot):
    if (isinstance(elem, TensorType) and elem.is_static and elem.ndim >= 1
            and int(trips) * elem.dtype.numpy.itemsize * int(np.prod(elem.shape))
            >= ROW_MIN_TOTAL):
        return RowStack(ROW_POOL.take((max(int(trips), 0), *elem.shape), elem.dtype.numpy),
                        0)
    return None


def _push(s, x):
    return s.push(x) if type(s) is RowStack else StackCell((x, s))


def _pop(s):
    return s.pop() if type(s) is RowStack else s


def is_empty(s) -> bool:
    """Whether the stack value ``s`` holds no element."""
    return s is None or (type(s) is RowStack and s.depth == 0)


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


def _op(name, infer, kernel, nargs, attrs=None, normalize=None, linear=None,
        any_namespace=False, **facts) -> Op:
    """A stack op; ``any_namespace``: its kernel moves Python objects only (cells,
    counts, an array it allocates lazily), so it runs as it is on every array namespace."""
    if any_namespace:
        facts["kernels"] = {"array_api": _on_any_namespace(kernel)}
    return define(name, infer, kernel, nargs, attrs, normalize, internal=True, linear=linear,
                  **facts)


def _on_any_namespace(kernel):
    def namespace_kernel(ctx, *values, **attrs):
        return kernel(*values, **attrs)

    return namespace_kernel


# a lane of vmap that did not push must not pop: the stack ops run only in the lanes that
# asked for them (raises_on_values)
_LANE_BOUND = dict(any_namespace=True, raises_on_values=True)
STACK_EMPTY = _op("stack_empty", lambda types, attrs: ListType(attrs["elem"]),
                  lambda elem: None, 0, {"elem": REQUIRED}, _empty_normalize, **_LANE_BOUND)
# push and pop are linear (a stack of tangents is a tuple of them): transpose reads their
# VJP rules (rules/stack.py), so linearize + transpose goes through loops' gradients
STACK_PUSH = _op("stack_push", _push_type, _push, 2, linear="all", **_LANE_BOUND)
STACK_POP = _op(
    "stack_pop",
    lambda types, attrs: TupleType([_stack("stack_pop", types[0]).elem, types[0]]),
    _pop, 1, linear="all", **_LANE_BOUND)
STACK_NONEMPTY = _op(
    "stack_nonempty",
    lambda types, attrs: (_stack("stack_nonempty", types[0]), TensorType((), "bool"))[1],
    lambda s: np.bool_(not is_empty(s)), 1, **_LANE_BOUND)


def _alloc_type(types, attrs):
    (n,) = types
    if not (isinstance(n, TensorType) and n.ndim == 0 and n.dtype.numpy.kind in "iu"):
        raise TypeInferenceError(f"stack_alloc: the trip count must be an integer scalar, "
                                 f"got {n!r}")
    return ListType(attrs["elem"])


# an empty stack with room for ``trips`` elements (rows when they fill ROW_MIN_TOTAL bytes,
# else the empty linked stack); trips < 0 counts as 0, and more pushes
# than trips go on linked cells: the count is a size hint, never a limit. ``slot`` names
# the stack (the residual it holds) so that no pass merges two allocations: two stacks
# on one buffer would both be correct, but the second would go on linked cells
STACK_ALLOC = _op("stack_alloc", _alloc_type, _alloc, 1, {"elem": REQUIRED, "slot": REQUIRED},
                  _empty_normalize, any_namespace=True)



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
    if is_empty(s):
        return zeros_of(elem), None
    return _pop(s)


def _add_values(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if type(a) in (StackCell, RowStack) or type(b) in (StackCell, RowStack):
        return add_stacks(a, b)
    if type(a) is tuple:
        return tuple(_add_values(x, y) for x, y in zip(a, b))
    return a + b


def add_stacks(a, b):
    """Element by element sum of two stacks; the shorter one is padded with zeros
    (an empty stack of cotangents stands for zeros). Iterative: stacks are long."""
    if is_empty(a):
        return b
    if is_empty(b):
        return a
    tops = []
    while not is_empty(a) and not is_empty(b):
        (x, a), (y, b) = _pop(a), _pop(b)
        tops.append(_add_values(x, y))
    rest = b if is_empty(a) else a
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
                        {"elem": REQUIRED}, _empty_normalize, linear="all",
                        kernels=NOT_YET_ON_ARRAY_API)
STACK_ADD = _op("stack_add", _add_type, add_stacks, 2, linear="all", kernels=NOT_YET_ON_ARRAY_API)

STACK_OPS = (STACK_EMPTY, STACK_PUSH, STACK_POP, STACK_NONEMPTY, STACK_POP_OR_ZERO, STACK_ADD,
             STACK_ALLOC)
