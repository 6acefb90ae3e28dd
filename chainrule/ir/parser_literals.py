"""Literals, attributes, constants and types of the text format, read from ``ast``
nodes (the statements are ``parser.py``'s)."""

from __future__ import annotations

import ast

import numpy as np

from ..errors import ChainruleError, ParseError
from .dims import parse_dim
from .nodes import Constant
from .types import DTYPES, DType, FuncType, ListType, TensorType, TupleType, Type


def _err(node, message: str) -> ParseError:
    return ParseError(message, getattr(node, "lineno", None), getattr(node, "col_offset", -1) + 1)


# -- literals ------------------------------------------------------------------------
def _literal_number(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "complex" and len(node.args) == 2 and not node.keywords):
        re, im = (_literal_number(a) for a in node.args)  # complex(re, im)
        if isinstance(re, float) and isinstance(im, float):
            return complex(re, im)
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _literal_number(node.operand)
        if v is not None and not isinstance(v, bool):
            return -v
    if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
        return float(node.id)
    return None


def parse_attr(node, symbols: bool = False):
    """An attribute's value; with ``symbols`` (a ``shape``), a bare name is a symbolic
    dimension (``shape=(n, 3)``)."""
    if symbols and isinstance(node, ast.Tuple):
        return tuple(e.id if isinstance(e, ast.Name) and e.id not in DTYPES
                     and e.id not in ("inf", "nan") else _dim(e) if isinstance(e, ast.BinOp)
                     else parse_attr(e) for e in node.elts)
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str)):
        return node.value
    num = _literal_number(node)
    if num is not None:
        return num
    if isinstance(node, ast.Tuple):
        return tuple(parse_attr(e) for e in node.elts)
    if isinstance(node, ast.Name) and node.id in DTYPES:
        return DType(node.id)
    if isinstance(node, ast.Subscript):  # a type, e.g. elem=Callable[[f64], tuple[f64]]
        return parse_type(node)
    raise _err(node, f"an attribute must be a literal (number, string, tuple, dtype), "
                     f"not {ast.unparse(node)!r}")


def _nested_values(node):
    if isinstance(node, ast.List):
        return [_nested_values(e) for e in node.elts]
    num = _literal_number(node)
    if num is None:
        raise _err(node, f"array constants hold numbers, not {ast.unparse(node)!r}")
    return num


def parse_constant(node) -> Constant | None:
    """A literal constant: ``2.0``, ``True``, ``f32(2.0)``, ``i64([1, 2])``; else None."""
    num = _literal_number(node)
    if num is not None:
        if isinstance(num, bool):
            return Constant(np.bool_(num))
        if isinstance(num, int):
            if not -2**63 <= num < 2**63:
                raise _err(node, f"the integer {num} does not fit in i64")
            return Constant(np.int64(num))
        if isinstance(num, complex):
            return Constant(np.complex128(num))
        return Constant(np.float64(num))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in DTYPES):
        dtype = DTYPES[node.func.id]
        if len(node.args) != 1:
            raise _err(node, f"{node.func.id}(...) takes one value")
        shape = None
        for kw in node.keywords:
            if kw.arg != "shape":
                raise _err(kw, f"{node.func.id}(...) only takes shape=")
            shape = parse_attr(kw.value)
        data = _nested_values(node.args[0])
        try:
            arr = np.array(data, dtype=dtype)
            if shape is not None:
                arr = arr.reshape(shape)
        except (ValueError, OverflowError, TypeError) as exc:
            raise _err(node, f"bad array constant: {exc}") from None
        return Constant(arr)
    return None


# -- types ------------------------------------------------------------------------
def _dim(node):
    """A dimension that is an expression of symbols (``n - 1``), as ``ir.dims`` reads it."""
    try:
        return parse_dim(node)
    except ChainruleError as exc:
        raise _err(node, str(exc)) from None


def parse_type(node, symbols=None) -> Type:
    if isinstance(node, ast.Name) and node.id in DTYPES:
        return TensorType((), node.id)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        head = node.value.id
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if head in DTYPES:
            dims = []
            for e in elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(
                    e.value, bool
                ):
                    dims.append(e.value)
                elif isinstance(e, ast.Name):
                    dims.append(e.id)
                elif isinstance(e, (ast.BinOp, ast.UnaryOp)) and isinstance(
                        _dim(e), str):  # n - 1, 3*n: ir.dims
                    dims.append(_dim(e))
                else:
                    raise _err(e, f"a dimension is an int or a name, not {ast.unparse(e)!r}"
                                  f" (or an expression of names: n - 1)")
            try:
                return TensorType(dims, head)
            except ChainruleError as exc:
                raise _err(node, str(exc)) from None
        if head == "tuple":
            if isinstance(sl, ast.Tuple) and not sl.elts:
                return TupleType(())
            return TupleType(parse_type(e) for e in elts)
        if head == "list":
            return ListType(parse_type(sl))
        if head == "Callable":
            if not (isinstance(sl, ast.Tuple) and len(sl.elts) == 2
                    and isinstance(sl.elts[0], ast.List)):
                raise _err(node, "a function type is written Callable[[params...], result]")
            return FuncType([parse_type(e) for e in sl.elts[0].elts], parse_type(sl.elts[1]))
    raise _err(node, f"not a type: {ast.unparse(node)!r} (write e.g. f32[5, 5], f64, "
                     f"tuple[f32, i64[3]])")
