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

A dimension may also be an expression of symbols (``ir.dims``: ``f64[n - 1, 3]``):
it binds nothing; it is computed from the bound symbols, and checked against the
actual size where an argument has it.

>>> from chainrule.ir.dims import parse_dim
>>> resolve_shape((parse_dim("n - 1"), 3), {"n": 7})
(6, 3)
"""

from __future__ import annotations

from ..errors import InterpretError
from .dims import Dim, evaluate, symbols_of
from .types import ListType, TensorType, TupleType

# the attributes whose entries may be symbols or expressions of them (a split's
# boundaries along a symbolic axis: concatenate's adjoint splits at n, n + m, ...)
SHAPE_ATTRS = ("shape", "indices_or_sections")


def type_symbols(t, out: dict | None = None) -> dict:
    """The symbols of a type, in order of appearance (a dict used as an ordered set)."""
    out = {} if out is None else out
    if isinstance(t, TensorType):
        for d in t.shape:
            if type(d) is str:
                out.setdefault(d, None)
            elif isinstance(d, Dim):
                for sym in symbols_of(d):
                    out.setdefault(sym, None)
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
                if isinstance(d, str):
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
        elif isinstance(d, Dim):
            out.append(dim_size(d, sizes))
        else:
            out.append(d)
    return tuple(out)


def dim_size(d, sizes: dict) -> int:
    """The size of the dimension expression ``d`` (``n - 1``) at these symbol sizes; an
    error names the missing symbol, or the sizes that make it negative."""
    try:
        size = evaluate(d, sizes)
    except KeyError as exc:
        raise InterpretError(
            f"the dimension {d} names the symbol {exc.args[0]}, which is not bound here: no "
            f"parameter of the running function has it (bound: {sorted(sizes) or 'none'})"
        ) from None
    if size < 0:
        at = ", ".join(f"{k} = {sizes[k]}" for k in symbols_of(d))
        raise InterpretError(f"the dimension {d} is {size} for {at}: the program assumes "
                             f"sizes for which it is not negative (a slice x[1:] of a "
                             f"symbolic axis n has n - 1 elements for n >= 1)")
    return size


def check_expressions(exprs, sizes: dict) -> None:
    """Check that each ``(expression, actual size, where)`` agrees with the symbols'
    sizes (``f64[n - 1]`` given 5 elements when n is 3 is an error naming both)."""
    for d, size, where in exprs:
        want = dim_size(d, sizes)
        if want != size:
            at = ", ".join(f"{k} is {sizes[k]}" for k in symbols_of(d))
            raise InterpretError(f"{where}: dimension {d} is {size} here, but {at}, so "
                                 f"{d} is {want} (one symbol, one size per call)")


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
    exprs: list = []
    for p, a in zip(params, args):
        _bind(p.type, a, sizes, where, p.name, exprs)
    if exprs:
        check_expressions(exprs, sizes)


def _bind(t, value, sizes, where, pname, exprs):
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
            elif isinstance(d, Dim):
                exprs.append((d, size, f"{where}: argument {pname}"))
    elif isinstance(t, TupleType) and isinstance(value, tuple):
        for f, v in zip(t.fields, value):
            _bind(f, v, sizes, where, pname, exprs)


__all__ = ["SHAPE_ATTRS", "bind_symbols", "check_expressions", "dim_size",
           "has_symbolic_attrs", "resolve_attrs", "resolve_shape", "symbol_sources",
           "type_symbols"]
