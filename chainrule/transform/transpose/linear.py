"""Which variables of a program are linear (``transpose.py``): those that depend on a
linear parameter, found in one walk with the bindings that are not (the coefficients)."""

from __future__ import annotations

from ...ir.nodes import Call, Tuple, Var, While
from ...ir.op import Op
from ...ir.visitor import nested_blocks, vars_used


def _linear_vars(bindings, lin: set, coefficients: list | None = None) -> bool:
    """Add every variable that depends on a linear one (nested blocks included); and to
    ``coefficients`` (when given) the bindings of ``bindings`` that do not, in order
    (what ``_Transposer.coefficients`` copies, found without a second walk). Returns
    whether every binding of ``bindings`` is a call of an op (so none defines a closure,
    calls a function value or holds a nested block: ``holds_closures`` is False)."""
    straight = True
    for b in bindings:
        value = b.value
        if type(value) is Call and type(value.callee) is Op:  # the common case first
            for a in value.args:
                if a in lin if type(a) is Var else (type(a) is Tuple and _mentions(a, lin)):
                    lin.add(b.var)
                    break
            else:
                if coefficients is not None:
                    coefficients.append(b)
            continue
        straight = False
        if isinstance(value, While):
            _loop_linear_vars(value, lin)
        else:
            for inner in nested_blocks(value):
                _linear_vars(inner.bindings, lin)
        if any(v in lin for v in vars_used(value)):
            lin.add(b.var)
        elif coefficients is not None:
            coefficients.append(b)
    return straight


def _loop_linear_vars(loop: While, lin: set) -> None:
    """A loop variable is linear when its initial value or its update is; an update
    may depend on other loop variables in a chain of any length, so iterate until
    no loop variable becomes linear (at most once per loop variable)."""
    n = len(loop.loop_vars)
    while True:
        before = len(lin)
        for lv, init, nxt in zip(loop.loop_vars, loop.init, _fields(loop.body.result, n)):
            if _mentions(init, lin) or _mentions(nxt, lin):
                lin.add(lv)
        _linear_vars(loop.cond.bindings, lin)
        _linear_vars(loop.body.bindings, lin)
        if len(lin) == before:
            return


def _fields(result, n):
    if n == 1:
        return [result]
    return list(result.fields) if isinstance(result, Tuple) else [None] * n


def _mentions(atom, lin) -> bool:
    if isinstance(atom, Tuple):
        return any(_mentions(f, lin) for f in atom.fields)
    return isinstance(atom, Var) and atom in lin
