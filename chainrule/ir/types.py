"""IR types: frozen, self-checking dataclasses.

>>> TensorType((5, 5), "f32")
f32[5, 5]
>>> TupleType((TensorType((), "f64"), TensorType(("n",), "i64")))
tuple[f64, i64[n]]
"""

from __future__ import annotations

import keyword
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import ChainruleError
from .dims import Dim, dim, parse_dim

DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64),
    "c128": np.dtype(np.complex128),
}
_BY_NUMPY = {v: k for k, v in DTYPES.items()}


def dtype_refusal(dtype: np.dtype) -> str | None:
    """Why an argument of NumPy dtype ``dtype`` cannot be traced (None when it can).

    >>> print(dtype_refusal(np.dtype(np.longdouble)))  # doctest: +ELLIPSIS
    dtype float... (longdouble) is not supported; chainrule supports bool, int8, ...
    """
    if dtype in _BY_NUMPY:
        return None
    text = (f"dtype {dtype.name} ({dtype.type.__name__}) is not supported; chainrule "
            f"supports {', '.join(d.name for d in DTYPES.values())}")
    wider = {"f": "float64", "c": "complex128"}.get(dtype.kind)
    return text + (f" (convert it with .astype(np.{wider}))" if wider else "")
_CACHE: dict = {}  # np.dtype or scalar type -> DType


class DType(str):
    """A dtype name ('f32', 'i64', 'bool', ...); prints bare in the text format."""

    __slots__ = ()

    def __new__(cls, name: str | np.dtype | type) -> DType:
        if isinstance(name, DType):
            return name
        if isinstance(name, str) and name in DTYPES:
            return str.__new__(cls, name)
        known = _CACHE.get(name) if isinstance(name, (np.dtype, type)) else None
        if known is not None:
            return known
        try:
            if isinstance(name, str):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # np.dtype("a") is deprecated, not ours
                    npd = np.dtype(name)
            else:
                npd = np.dtype(name)
        except (TypeError, ValueError) as exc:
            raise ChainruleError(f"unknown dtype {name!r}; use one of {sorted(DTYPES)}") from exc
        if npd not in _BY_NUMPY:
            raise ChainruleError(f"unsupported dtype {npd}; use one of {sorted(DTYPES)}")
        out = str.__new__(cls, _BY_NUMPY[npd])
        if isinstance(name, (np.dtype, type)):
            _CACHE[name] = out  # np.dtype objects and scalar types: a bounded set
        return out

    @property
    def numpy(self) -> np.dtype:
        return DTYPES[str(self)]

    @property
    def is_float(self) -> bool:
        return self[0] in "fc"

    @property
    def is_complex(self) -> bool:
        return self[0] == "c"

    @property
    def is_int(self) -> bool:
        return self[0] in "iu"

    @property
    def is_bool(self) -> bool:
        return str(self) == "bool"

    def __repr__(self) -> str:
        return str(self)


def _check_dim(d) -> int | str:
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
        if d < 0:
            raise ChainruleError(f"negative dimension {d} in a shape")
        if d >= 2**63:
            raise ChainruleError(f"dimension {d} does not fit in int64")
        return int(d)
    if isinstance(d, Dim):  # canonical: a lone symbol is a plain str, a constant an int
        return _check_dim(dim(d.poly)) if type(dim(d.poly)) is not Dim else d
    if isinstance(d, str) and d.isidentifier() and not keyword.iskeyword(d):
        return str(d)
    if isinstance(d, str):  # "n - 1": an expression of symbols (ir.dims)
        return _check_dim(parse_dim(d))
    raise ChainruleError(f"a dimension must be a non-negative int, a symbol name or an "
                         f"expression of symbols, not {d!r}")


class Type:
    """Base class of IR types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """An array type; shape ``()`` is a scalar, a dimension may be a symbol like ``"n"``."""

    shape: tuple
    dtype: DType

    def __init__(self, shape, dtype):
        if type(shape) is not tuple:
            shape = tuple(shape)
        for d in shape:  # fast path: plain non-negative ints need no conversion
            if type(d) is not int or d < 0 or d >= 2**63:
                shape = tuple([_check_dim(d) for d in shape])
                break
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype if type(dtype) is DType else DType(dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def size(self) -> int | None:
        if not self.is_static:
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        if not self.shape:
            return str(self.dtype)
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    fields: tuple

    def __init__(self, fields):
        fields = tuple(fields)
        for f in fields:
            if not isinstance(f, Type):
                raise ChainruleError(f"a tuple field must be a type, not {f!r}")
        object.__setattr__(self, "fields", fields)

    def __repr__(self) -> str:
        return f"tuple[{', '.join(repr(f) for f in self.fields)}]" if self.fields else "tuple[()]"


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    params: tuple
    ret: Type

    def __init__(self, params, ret):
        params = tuple(params)
        for p in (*params, ret):
            if not isinstance(p, Type):
                raise ChainruleError(f"a function type is made of types, not {p!r}")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "ret", ret)

    def __repr__(self) -> str:
        return f"Callable[[{', '.join(repr(p) for p in self.params)}], {self.ret!r}]"


def scalar(dtype) -> TensorType:
    return TensorType((), dtype)


@dataclass(frozen=True, slots=True)
class ListType(Type):
    """A stack of values of one type (what reverse mode saves per loop iteration)."""

    elem: Type

    def __init__(self, elem):
        if not isinstance(elem, Type):
            raise ChainruleError(f"a list holds values of a type, not {elem!r}")
        object.__setattr__(self, "elem", elem)

    def __repr__(self) -> str:
        return f"list[{self.elem!r}]"


def has_float(t: Type) -> bool:
    """True when a value of this type carries a differentiable (float) part."""
    if isinstance(t, TensorType):
        return t.dtype.is_float
    if isinstance(t, TupleType):
        return any(has_float(f) for f in t.fields)
    if isinstance(t, ListType):
        return has_float(t.elem)
    return isinstance(t, FuncType)
