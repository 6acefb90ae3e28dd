"""Symbolic dimensions: where a program's symbols come from and how they are resolved.

A dimension of a ``TensorType`` may be a name (``f64[n, 3]``); the same name may
appear in a ``shape`` attribute (``broadcast_to(w, shape=(n, 3))``, printed bare).
A symbol is bound once per call, from the parameters of the called function
(the first parameter axis that has it; the executors check that every other
axis with the same symbol has the same size), and an attribute naming it is
resolved to that size just before the op's kernel runs.

>>> from chainrule.ir.types import TensorType, TupleType
>>> params_types = [TensorType(("n", 3), "f64"), TupleType([TensorType(("m", "n"), "f64")])]
>>> symbol_sources(params_types)
{'n': (0, (), 0), 'm': (1, (0,), 0)}
>>> resolve_shape(("n", 3), {"n": 7})
(7, 3)
"""

from __future__ import annotations

from ..errors import InterpretError
from .types import ListType, TensorType, TupleType

SHAPE_ATTRS = ("shape",)  # the attributes whose entries may be symbols


def type_symbols(t, out: dict | None = None) -> dict:
    """The symbols of a type, in order of appearance (a dict used as an ordered set)."""
    out = {} if out is None else out
    if isinstance(t, TensorType):
        for d in t.shape:
            if type(d) is str:
                out.setdefault(d, None)
    elif isinstance(t, TupleType):
        for f in t.fields:
            type_symbols(f, out)
    elif isinstance(t, ListType):
        type_symbols(t.elem, out)
    return out


def symbol_sources(param_types) -> dict:
    """``symbol -> (parameter index, tuple path, axis)``: where each symbol of these
    parameter types is first seen (how a call binds it)."""
    out: dict = {}

    def walk(t, index, path):
        if isinstance(t, TensorType):
            for axis, d in enumerate(t.shape):
                if type(d) is str and d not in out:
                    out[d] = (index, path, axis)
        elif isinstance(t, TupleType):
            for k, f in enumerate(t.fields):
                walk(f, index, (*path, k))

    for i, t in enumerate(param_types):
        walk(t, i, ())
    return out


def has_symbolic_attrs(attrs: dict) -> bool:
    """Whether a call's attributes name a symbol (then the executor resolves them)."""
    for key in SHAPE_ATTRS:
        shape = attrs.get(key)
        if type(shape) is tuple:
            for d in shape:
                if type(d) is str:
                    return True
    return False


def resolve_shape(shape: tuple, sizes: dict) -> tuple:
    """``shape`` with each symbol replaced by its size in ``sizes``."""
    out = []
    for d in shape:
        if type(d) is str:
            try:
                out.append(sizes[d])
            except KeyError:
                raise InterpretError(
                    f"the symbolic dimension {d} is not bound here: no parameter of the "
                    f"running function has it (bound: {sorted(sizes) or 'none'})") from None
        else:
            out.append(d)
    return tuple(out)


def resolve_attrs(attrs: dict, sizes: dict) -> dict:
    """``attrs`` with the symbols of their shape attributes replaced by sizes."""
    out = dict(attrs)
    for key in SHAPE_ATTRS:
        shape = out.get(key)
        if type(shape) is tuple:
            out[key] = resolve_shape(shape, sizes)
    return out


def bind_symbols(params, args, sizes: dict, where: str) -> None:
    """Bind the symbols of ``params``' types from the arrays ``args`` into ``sizes``
    (name -> int), checking that a symbol has one size per call."""
    for p, a in zip(params, args):
        _bind(p.type, a, sizes, where, p.name)


def _bind(t, value, sizes, where, pname):
    if isinstance(t, TensorType):
        shape = getattr(value, "shape", None)
        if shape is None:
            return
        for d, size in zip(t.shape, shape):
            if type(d) is str:
                seen = sizes.setdefault(d, size)
                if seen != size:
                    raise InterpretError(
                        f"{where}: dimension {d} is {size} in argument {pname} but {seen} "
                        f"elsewhere in the call (one symbol, one size per call)")
    elif isinstance(t, TupleType) and isinstance(value, tuple):
        for f, v in zip(t.fields, value):
            _bind(f, v, sizes, where, pname)


def attr_symbols(module) -> dict:
    """The symbols the shape attributes of a module's op calls name (an ordered set)."""
    from .nodes import Call
    from .visitor import nested_blocks

    out: dict = {}
    stack = [fn.body for fn in module.functions.values()]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            if type(v) is Call and v.attrs and has_symbolic_attrs(v.attrs):
                for key in SHAPE_ATTRS:
                    for d in v.attrs.get(key) or ():
                        if type(d) is str:
                            out.setdefault(d, None)
            stack.extend(nested_blocks(v))
    return out


__all__ = ["SHAPE_ATTRS", "attr_symbols", "bind_symbols", "has_symbolic_attrs", "resolve_attrs",
           "resolve_shape", "symbol_sources", "type_symbols"]
