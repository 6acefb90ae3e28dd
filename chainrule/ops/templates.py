"""Code-generation templates: how an op is written in the generated NumPy source.

An op's ``emit`` field is a template ``template(e: OpEmit)`` returning the
right-hand side of its binding (an expression string), a list of complete
statements (which assign ``e.target``), an ``InPlace`` statement (``a += b``: the
result is operand ``a``'s buffer, and the target takes over its name), or ``None``
to fall back to calling the op's kernel from the generated code's namespace. A template only ever
writes identifiers it was given (checked variable names, namespace names)
and literals it formatted itself from plain ``int``/``float``/``bool`` values.

Each template computes exactly what the op's kernel computes (the same NumPy
function on the same dtypes), so results are bit for bit the interpreter's
(a registry test checks every op). ``e.reuse`` lists operand positions whose
buffer is dead after this op and may receive the result (``out=``); templates
of ops declared ``inplace`` pick one.

>>> literal((1, -2.5, True))
'(1, (-2.5), True)'
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..ir.indexing import ArrayIndex, Slice
from ..ir.nodes import Constant
from ..ir.types import DTYPES, TensorType

# -- safe literals --------------------------------------------------------------------


def int_literal(value) -> str | None:
    """Text of a plain int (never a subclass's repr), or None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        text = str(int(value))
        return f"({text})" if text.startswith("-") else text
    return None


def float_literal(value) -> str | None:
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isfinite(f):
            text = float.__repr__(f)
            return f"({text})" if text.startswith("-") else text
    return None


def literal(value) -> str | None:
    """A Python literal for a None/bool/int/float/tuple attribute value, else None."""
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "True" if bool(value) else "False"
    text = int_literal(value)
    if text is not None:
        return text
    text = float_literal(value)
    if text is not None:
        return text
    if type(value) is tuple:
        parts = [literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        if len(parts) == 1:
            return f"({parts[0]},)"
        return "(" + ", ".join(parts) + ")"
    return None


def static_shape(t) -> tuple | None:
    if isinstance(t, TensorType) and t.is_static:
        return tuple(int(d) for d in t.shape)
    return None


DTYPE_TEXT = {name: f"np.{dt.type.__name__}" for name, dt in DTYPES.items()
              if getattr(np, dt.type.__name__, None) is dt.type}


def dtype_text(dtype) -> str | None:
    return DTYPE_TEXT.get(str(dtype)) if str(dtype) in DTYPES else None


def slice_text(start, stop, step=None) -> str:
    """``start:stop:step`` of plain ints (checked by the caller)."""
    parts = ["" if v is None else str(int(v)) for v in (start, stop)]
    text = ":".join(parts)
    return text if step is None else f"{text}:{int(step)}"


def key_text(key, arrays) -> str | None:
    """``0, 1:3, None, i`` for a static key, or None if an entry is not plain."""
    if type(key) is not tuple:
        return None
    parts = []
    for k in key:
        if k is None:
            parts.append("None")
        elif type(k) is Slice:
            if any(v is not None and int_literal(v) is None for v in k):
                return None
            parts.append(slice_text(k.start, k.stop, k.step))
        elif type(k) is ArrayIndex:
            pos = k.position
            if int_literal(pos) is None or not 0 <= pos < len(arrays):
                return None
            parts.append(arrays[pos])
        elif int_literal(k) is not None:
            parts.append(int_literal(k))
        else:
            return None
    if not parts:
        return "()"
    return ", ".join(parts)


# -- the emit context --------------------------------------------------------------------


class InPlace(NamedTuple):
    """A statement updating the buffer of operand ``operand`` (a variable dead after
    it) in place, ``a += b`` or ``a = np.tanh(a, out=a)``: the result is that operand.
    The generated code goes on calling the result by the operand's name, so neither
    ``c = a`` nor ``del a`` is written (each line costs ``compile()`` microseconds)."""

    line: str
    operand: int


class OpEmit:
    """What a template sees: operand texts and types, attributes, the target name."""

    __slots__ = ("op", "attrs", "atoms", "_text", "_args", "types", "out", "target", "reuse")

    def __init__(self, op, attrs, atoms, text, types, out, target, reuse):
        self.op = op
        self.attrs = attrs
        self.atoms = atoms  # the IR atoms
        self._text = text  # atom -> its text (a checked name; interns constants)
        self._args = None
        self.types = types  # their types
        self.out = out  # the result type
        self.target = target  # the bound name (checked)
        self.reuse = reuse  # operand positions whose buffer may be overwritten

    def arg(self, k: int) -> str:
        return self._text(self.atoms[k])

    @property
    def args(self) -> list[str]:
        """The operands' texts (names of variables and namespace constants)."""
        if self._args is None:
            self._args = [self._text(a) for a in self.atoms]
        return self._args

    def weak_literal(self, k: int) -> str:
        """Operand k as a Python literal when NumPy 2's weak scalar promotion gives
        the same dtypes as the 0-d constant array does; else its name."""
        a = self.atoms[k]
        if type(a) is not Constant:  # the common case: a variable's name
            return self._text(a)
        if a.data.ndim != 0 or a.data.dtype.kind not in "biuf":
            return self.arg(k)
        value = a.data.item()
        others = [t.dtype.numpy for i, t in enumerate(self.types) if i != k]
        try:
            same = np.result_type(*others, a.data.dtype) == np.result_type(*others, value)
        except TypeError:
            return self.arg(k)
        text = literal(value)
        return text if same and text is not None else self.arg(k)

    def any_float(self) -> bool:
        return any(t.dtype.is_float for t in self.types)


# -- generic templates -------------------------------------------------------------------
AUGMENTED = {"+", "-", "*", "/"}


def ufunc_binary(ufunc: str, symbol: str | None = None, commutative: bool = False,
                 casts_ints: bool = False):
    """``a + b`` / ``np.ufunc(a, b)``; into a dead operand with ``out=`` (or ``+=``).
    ``casts_ints``: the kernel casts integer operands to float first (so the
    template defers to it when no operand is a float)."""

    def template(e: OpEmit):
        if casts_ints and not e.any_float():
            return None
        a, b = e.weak_literal(0), e.weak_literal(1)
        if e.reuse:
            k = e.reuse[0]
            if symbol in AUGMENTED and (k == 0 or commutative):
                dst, src = (a, b) if k == 0 else (b, a)
                return InPlace(f"{dst} {symbol}= {src}", k)
            dst = e.arg(k)
            return InPlace(f"{dst} = np.{ufunc}({a}, {b}, out={dst})", k)
        if symbol is not None:
            return f"{a} {symbol} {b}"
        return f"np.{ufunc}({a}, {b})"

    return template


def ufunc_unary(ufunc: str, casts_ints: bool = False, prefix: str | None = None):
    """``np.ufunc(x)`` (or ``prefix + x``), with ``out=`` into a dead operand."""

    def template(e: OpEmit):
        if casts_ints and not e.any_float():
            return None
        (x,) = e.args
        if e.reuse:
            return InPlace(f"{x} = np.{ufunc}({x}, out={x})", 0)
        if prefix is not None:
            return f"{prefix}{x}"
        return f"np.{ufunc}({x})"

    return template


def method_reduction(method: str):
    """``x.method(axis=..., keepdims=True)`` for ops with ``axis`` and ``keepdims``."""

    def template(e: OpEmit):
        axis, keepdims = literal(e.attrs["axis"]), e.attrs["keepdims"]
        if axis is None or not isinstance(keepdims, bool):
            return None
        parts = [] if e.attrs["axis"] is None else [f"axis={axis}"]
        if keepdims:
            parts.append("keepdims=True")
        return f"{e.args[0]}.{method}({', '.join(parts)})"

    return template


def reshape_to_out(e: OpEmit):
    """``x.reshape(out shape)``: reshape, expand_dims, squeeze."""
    shape = static_shape(e.out)
    return None if shape is None else f"{e.args[0]}.reshape({literal(shape)})"


def identity(e: OpEmit):
    return e.args[0]


def call(function: str):
    """``np.function(operands...)`` with no attributes."""

    def template(e: OpEmit):
        return f"np.{function}({', '.join(e.args)})"

    return template
