"""Where the transposer names a cotangent ``<v>_ct`` (``transpose.py``): at its binding
when that is recent and unread, else by a substitution when the function is done."""

from __future__ import annotations

from ...ir.nodes import Var
from ...ir.visitor import vars_used

# how far back a cotangent's binding is looked for, and how many other messages are
# searched for it, when it is named where it is bound (beyond: renamed at the end)
_RENAME_WINDOW = 4
_RENAME_OTHERS = 8


def _bound_at(frame: list, var: Var) -> int:
    """The index of ``var``'s binding among the last ``_RENAME_WINDOW`` of ``frame``,
    or -1."""
    n = len(frame)
    if n and frame[-1].var is var:  # the common case: the binding just emitted
        return n - 1
    for k in range(n - 2, max(n - _RENAME_WINDOW, 0) - 1, -1):
        if frame[k].var is var:
            return k
    return -1


def _unread(var: Var, frame: list, start: int) -> bool:
    """Whether no binding of ``frame`` from ``start`` on reads ``var``."""
    for k in range(start, len(frame)):
        if var in vars_used(frame[k].value):
            return False
    return True


def _held_by_none(var: Var, others) -> bool:
    """Whether none of the messages ``others`` is (or may hold) ``var``; a tuple message
    or too many messages to search count as holding it."""
    if len(others) > _RENAME_OTHERS:
        return False
    for m in others:
        if m is var or (m is not None and type(m) is not Var):
            return False
    return True
