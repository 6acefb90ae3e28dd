"""Per-op code templates of the code generator (``codegen.py``).

``TEMPLATES`` maps an op name to ``template(e: OpEmit)``, which returns the
right-hand side of the binding (an expression string), a list of complete
statements (which assign ``e.target``), or ``None`` to fall back to calling
the op's kernel from the exec namespace. A template only ever writes
identifiers it was given (checked variable names, namespace names) and
literals it formatted itself from plain ``int``/``float``/``bool`` values.

Each template computes exactly what the op's kernel computes (same NumPy
function on the same dtypes), so results are bit-for-bit the interpreter's.
``e.reuse`` lists operand positions whose buffer is dead after this op and
may receive the result (``out=``); templates that support it pick one.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.indexing import ArrayIndex, Slice
from ..ir.nodes import Constant
from ..ir.types import DTYPES, TensorType
from ..ops.shape import collapse_axes

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


# -- the emit context --------------------------------------------------------------------


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
        if not isinstance(a, Constant) or a.data.ndim != 0 or a.data.dtype.kind not in "biuf":
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


# -- elementwise ------------------------------------------------------------------------

# op -> (NumPy ufunc name, operator or None, commutative)
BINARY = {
    "add": ("add", "+", True), "subtract": ("subtract", "-", False),
    "multiply": ("multiply", "*", True), "divide": ("divide", "/", False),
    "power": ("power", None, False), "maximum": ("maximum", None, False),
    "minimum": ("minimum", None, False), "equal": ("equal", "==", False),
    "not_equal": ("not_equal", "!=", False), "less": ("less", "<", False),
    "less_equal": ("less_equal", "<=", False), "greater": ("greater", ">", False),
    "greater_equal": ("greater_equal", ">=", False),
    "logical_and": ("logical_and", None, False), "logical_or": ("logical_or", None, False),
}
FLOAT_KERNEL = {"divide", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh",
                "arctan", "sqrt", "reciprocal"}  # kernels that cast non-float operands
UNARY = {"negative": "negative", "abs": "absolute", "sign": "sign", "square": "square",
         "floor": "floor", "logical_not": "logical_not", "exp": "exp", "log": "log",
         "log1p": "log1p", "expm1": "expm1", "sin": "sin", "cos": "cos", "tan": "tan",
         "tanh": "tanh", "arctan": "arctan", "sqrt": "sqrt", "reciprocal": "reciprocal"}
AUGMENTED = {"+", "-", "*", "/"}


def _binary(name):
    ufunc, symbol, commutative = BINARY[name]

    def template(e: OpEmit):
        if name in FLOAT_KERNEL and not e.any_float():
            return None
        a, b = e.weak_literal(0), e.weak_literal(1)
        if e.reuse:
            k = e.reuse[0]
            if symbol in AUGMENTED and (k == 0 or commutative):
                dst, src = (a, b) if k == 0 else (b, a)
                return [f"{dst} {symbol}= {src}", f"{e.target} = {dst}"]
            return f"np.{ufunc}({a}, {b}, out={e.arg(k)})"
        if symbol is not None:
            return f"{a} {symbol} {b}"
        return f"np.{ufunc}({a}, {b})"

    return template


def _unary(name):
    ufunc = UNARY[name]

    def template(e: OpEmit):
        if name in FLOAT_KERNEL and not e.any_float():
            return None
        (x,) = e.args
        if e.reuse:
            return f"np.{ufunc}({x}, out={x})"
        if name == "negative":
            return f"-{x}"
        return f"np.{ufunc}({x})"

    return template


def _relu(e: OpEmit):
    (x,) = e.args
    if e.reuse:
        return f"np.maximum({x}, 0, out={x})"
    return f"np.maximum({x}, 0)"


def _round(e: OpEmit):
    return f"np.round({e.args[0]})"


def _where(e: OpEmit):
    return f"np.where({', '.join(e.args)})"


def _astype(e: OpEmit):
    dt = dtype_text(e.attrs["dtype"])
    return None if dt is None else f"{e.args[0]}.astype({dt})"


def _identity(e: OpEmit):
    return e.args[0]


# -- reductions, linear algebra ------------------------------------------------------------


def _reduction(method):
    def template(e: OpEmit):
        axis, keepdims = literal(e.attrs["axis"]), e.attrs["keepdims"]
        if axis is None or not isinstance(keepdims, bool):
            return None
        parts = [] if e.attrs["axis"] is None else [f"axis={axis}"]
        if keepdims:
            parts.append("keepdims=True")
        return f"{e.args[0]}.{method}({', '.join(parts)})"

    return template


def _reduced_count(t, axis) -> int | None:
    shape = static_shape(t)
    if shape is None:
        return None
    axes = range(len(shape)) if axis is None else axis
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _mean(e: OpEmit):
    """``x.sum(axis) / n`` for float32/float64: the value ``np.mean`` computes (it
    divides in float64 and rounds, which for one division is the same correctly
    rounded quotient), without ``np.mean``'s Python-level overhead."""
    t = e.types[0]
    n = _reduced_count(t, e.attrs["axis"])
    if (n is None or not 1 <= n <= 2**24 or str(t.dtype) not in ("f32", "f64")
            or e.out.dtype != t.dtype):
        return _reduction("mean")(e)
    text = _reduction("sum")(e)
    return None if text is None else f"{text} / {n}"


def _logsumexp(e: OpEmit):
    """The kernel of ``logsumexp`` written out (same NumPy calls, no wrappers)."""
    t = e.types[0]
    axis, keepdims = e.attrs["axis"], e.attrs["keepdims"]
    out_shape = static_shape(e.out)
    if (not t.dtype.is_float or t.ndim == 0 or out_shape is None
            or not isinstance(keepdims, bool) or e.out.dtype != t.dtype):
        return None
    ax = "" if axis is None else f"axis={literal(tuple(axis))}, "
    if axis is not None and literal(tuple(axis)) is None:
        return None
    x, m = e.arg(0), e.target
    lines = [f"{m} = {x}.max({ax}keepdims=True)",
             f"{m}[~np.isfinite({m})] = 0",
             f"{m} = np.log(np.exp({x} - {m}).sum({ax}keepdims=True)) + {m}"]
    if not keepdims:
        lines.append(f"{m} = {m}.reshape({literal(out_shape)})")
    return lines


def _matmul(e: OpEmit):
    return f"{e.args[0]} @ {e.args[1]}"


# -- shapes -------------------------------------------------------------------------------


def _reshape_to_out(e: OpEmit):
    shape = static_shape(e.out)
    return None if shape is None else f"{e.args[0]}.reshape({literal(shape)})"


def _permute(e: OpEmit):
    axes = e.attrs["axes"]
    if len(axes) == 2 and tuple(axes) == (1, 0):
        return f"{e.args[0]}.T"
    text = literal(tuple(axes))
    return None if text is None else f"{e.args[0]}.transpose({text})"


def _broadcast_to(e: OpEmit):
    shape = static_shape(e.out)
    return None if shape is None else f"np.broadcast_to({e.args[0]}, {literal(shape)})"


def _collapse_sum_to(e: OpEmit):
    in_shape, shape = static_shape(e.types[0]), static_shape(e.out)
    dt = dtype_text(e.out.dtype)
    if in_shape is None or shape is None or dt is None:
        return None
    leading, kept = collapse_axes(in_shape, shape)
    text = e.args[0]
    if kept:
        text += f".sum(axis={literal(kept)}, keepdims=True, dtype={dt})"
    if leading:
        text += f".sum(axis={literal(leading)}, dtype={dt})"
    if not kept and not leading:
        return f"np.asarray({text}).reshape({literal(shape)})"
    return text


def _slice_text(start, stop, step=None) -> str:
    """``start:stop:step`` of plain ints (checked by the caller)."""
    parts = ["" if v is None else str(int(v)) for v in (start, stop)]
    text = ":".join(parts)
    return text if step is None else f"{text}:{int(step)}"


def _split(e: OpEmit):
    t = e.types[0]
    shape = static_shape(t)
    axis, idx = e.attrs["axis"], e.attrs["indices_or_sections"]
    if shape is None or literal(idx) is None or int_literal(axis) is None:
        return None
    bounds = [0, *idx, shape[axis]]
    head = ":, " * int(axis)
    parts = [f"{e.args[0]}[{head}{_slice_text(lo, hi)}]" for lo, hi in zip(bounds, bounds[1:])]
    return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def _flip(e: OpEmit):
    ndim = e.types[0].ndim
    axes = e.attrs["axis"]
    if ndim == 0 or literal(axes) is None:
        return None
    key = ["::-1" if i in axes else ":" for i in range(ndim)]
    while key and key[-1] == ":":
        key.pop()
    return f"{e.args[0]}[{', '.join(key)}]"


def _concatenate(e: OpEmit):
    axis = int_literal(e.attrs["axis"])
    if axis is None:
        return None
    xs = ", ".join(e.args) + ("," if len(e.args) == 1 else "")
    return f"np.concatenate(({xs}), axis={axis})"


# -- creation ---------------------------------------------------------------------------


def _creation(fill):
    def template(e: OpEmit):
        dt = dtype_text(e.attrs["dtype"])
        if dt is None:
            return None
        if e.args:
            shape = f"{e.args[0]}.shape"
        else:
            s = static_shape(e.out)
            if s is None:
                return None
            shape = literal(s)
        if fill == "full":
            value = literal(e.attrs["fill_value"])
            if value is None or isinstance(e.attrs["fill_value"], tuple):
                return None
            return f"np.full({shape}, {value}, {dt})"
        return f"np.{fill}({shape}, {dt})"

    return template


def _arange(e: OpEmit):
    dt = dtype_text(e.attrs["dtype"])
    bounds = [literal(e.attrs[k]) for k in ("start", "stop", "step")]
    if dt is None or None in bounds:
        return None
    return f"np.arange({', '.join(bounds)}, dtype={dt})"


# -- indexing -----------------------------------------------------------------------------


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
            parts.append(_slice_text(k.start, k.stop, k.step))
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


def _index(e: OpEmit):
    key = key_text(e.attrs["key"], e.args[1:])
    return None if key is None else f"{e.args[0]}[{key}]"


def _unique_index(e: OpEmit) -> bool:
    """Whether the index arrays of ``index_add`` provably select distinct positions:
    one of them is a constant of distinct non-negative integers with the shape all
    of them broadcast to (and the value has the base's dtype), so ``t[key] += g``
    adds exactly what ``np.add.at`` adds."""
    types = e.types[2:]
    if e.types[1].dtype != e.types[0].dtype or any(
            t.dtype.numpy.kind not in "iu" or static_shape(t) is None for t in types):
        return False
    try:
        shape = np.broadcast_shapes(*(static_shape(t) for t in types))
    except ValueError:
        return False
    for a in e.atoms[2:]:
        if isinstance(a, Constant) and a.data.shape == shape and a.data.size:
            flat = a.data.reshape(-1)
            if flat.min() >= 0 and np.unique(flat).size == flat.size:
                return True
    return False


def _index_add(e: OpEmit):
    base, g, *arrays = e.args
    key = key_text(e.attrs["key"], arrays)
    if key is None:
        return None
    t = e.target
    if 0 in e.reuse:
        lines = [f"{t} = {base}"]
    else:
        lines = [f"{t} = np.array({base}, copy=True)"]
    if arrays and not _unique_index(e):
        lines.append(f"np.add.at({t}, np.s_[{key}], {g})")
    else:
        lines.append(f"{t}[{key}] += {g}")
    return lines


TEMPLATES = {name: _binary(name) for name in BINARY}
TEMPLATES.update({name: _unary(name) for name in UNARY})
TEMPLATES.update({
    "relu": _relu, "round": _round, "where": _where, "astype": _astype,
    "stop_gradient": _identity,
    "sum": _reduction("sum"), "mean": _mean, "max": _reduction("max"), "logsumexp": _logsumexp,
    "min": _reduction("min"), "prod": _reduction("prod"),
    "matmul": _matmul,
    "reshape": _reshape_to_out, "expand_dims": _reshape_to_out, "squeeze": _reshape_to_out,
    "permute_dims": _permute, "broadcast_to": _broadcast_to,
    "collapse_sum_to": _collapse_sum_to, "split": _split, "flip": _flip,
    "concatenate": _concatenate,
    "zeros": _creation("zeros"), "ones": _creation("ones"), "full": _creation("full"),
    "zeros_like": _creation("zeros"), "ones_like": _creation("ones"),
    "full_like": _creation("full"), "arange": _arange,
    "index": _index, "index_add": _index_add,
})

# Ops whose result is a fresh array this function owns (a candidate buffer for out=).
ALLOC_OPS = frozenset(BINARY) | frozenset(UNARY) | {
    "relu", "round", "where", "astype", "matmul", "zeros", "ones", "full", "zeros_like",
    "ones_like", "full_like", "arange", "index_add", "sigmoid", "concatenate"}
# Ops that never return (a view of) an operand: reading a buffer there does not alias it.
NONALIAS_OPS = ALLOC_OPS | {"sum", "mean", "max", "min", "prod", "argmax", "argmin",
                            "cumsum", "cumprod", "softmax", "log_softmax", "logsumexp"}
# Ops whose template can write its result into a dead operand's buffer.
INPLACE_OPS = frozenset(BINARY) | frozenset(UNARY) | {"relu", "index_add"}
