"""Shared pieces of the type rules (broadcasting, promotion, axes) and the
dispatch that lets one op function compute on arrays, emit IR on traced
values and record on tape tensors."""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.infer import attrs_key
from ..ir.op import REQUIRED, Op, register_op
from ..ir.types import DType, TensorType, TupleType, Type

# -- dispatch --------------------------------------------------------------------------
# Types whose instances take over op application (traced values, tape tensors),
# registered by the layers above with a priority; the highest priority wins.
HANDLERS: dict[type, int] = {}


def apply(op: Op, *args, **attrs):
    """Apply ``op``: compute on arrays, or hand over to a traced/tape argument."""
    best, best_priority = None, -1
    for a in args:
        p = HANDLERS.get(type(a), -1)
        if p > best_priority:
            best, best_priority = a, p
    if best is not None:
        return best._cr_apply(op, args, attrs)
    return evaluate(op, args, attrs)


PYTHON_SCALARS = (bool, int, float)


def weak_scalar_dtype(value, strong_dtypes) -> np.dtype:
    """NumPy 2 (NEP 50) promotion: a Python scalar takes the dtype of the arrays it meets."""
    if strong_dtypes:
        return np.result_type(*strong_dtypes, value)
    return np.result_type(value)


def to_arrays(args) -> list:
    """Arrays for an op's operands; Python scalars are typed like NumPy 2 types them."""
    if not any(type(a) in PYTHON_SCALARS for a in args):
        return [np.asarray(a) for a in args]
    strong = [np.asarray(a).dtype for a in args if type(a) not in PYTHON_SCALARS]
    return [np.asarray(a, dtype=weak_scalar_dtype(a, strong)) if type(a) in PYTHON_SCALARS
            else np.asarray(a) for a in args]


# (op, operand signature, attributes) -> (normalized attributes, dtypes of the Python
# scalar operands): what ``evaluate`` works out before running a kernel, memoized for
# operands that are arrays and Python scalars (the dtype NumPy 2 gives a scalar
# depends on its type and the arrays' dtypes, not on its value).
_EVAL_MEMO: dict = {}
_EVAL_MEMO_LIMIT = 8192
_ndarray = np.ndarray


def _eval_key(op, args, attrs):
    sig = []
    strong = False
    for a in args:
        t = type(a)
        if t is _ndarray:
            sig.append((a.shape, a.dtype))
            strong = True
        elif t is float or t is int or t is bool:
            sig.append(t)
        else:
            return None
    if not strong:
        return None
    ak = attrs_key(attrs)
    if ak is None:
        return None
    return (op, tuple(sig), ak)


def evaluate(op: Op, args, attrs, with_attrs: bool = False):
    """Run an op's kernel on concrete values, normalizing attributes as the IR does
    (``with_attrs=True`` also returns the normalized attributes)."""
    key = _eval_key(op, args, attrs)
    hit = None if key is None else _EVAL_MEMO.get(key)
    if hit is not None:
        attrs, scalar_dtypes = hit
        if scalar_dtypes is None:
            arrays = args
        else:
            arrays = [a if d is None else np.asarray(a, dtype=d)
                      for a, d in zip(args, scalar_dtypes)]
    else:
        arrays = to_arrays(args)
        types = [TensorType(a.shape, DType(a.dtype)) for a in arrays]
        attrs, _ = op.type_call(types, attrs)
        if key is not None:
            scalar_dtypes = None
            if any(type(a) in PYTHON_SCALARS for a in args):
                scalar_dtypes = tuple(arr.dtype if type(a) in PYTHON_SCALARS else None
                                      for a, arr in zip(args, arrays))
            if len(_EVAL_MEMO) >= _EVAL_MEMO_LIMIT:
                _EVAL_MEMO.clear()
            _EVAL_MEMO[key] = (attrs, scalar_dtypes)
    out = op.kernel(*arrays, **attrs)
    return (out, dict(attrs)) if with_attrs else out


def op_function(op: Op):
    """The user-facing function of an op: ``f(*arrays, **attrs)``."""

    def f(*args, **attrs):
        return apply(op, *args, **attrs)

    f.__name__ = op.name
    f.__qualname__ = op.name
    f.__doc__ = f"Apply the ``{op.name}`` op (see chainrule.ops)."
    return f


def define(name: str, infer, kernel, nargs: int | None = 1, attrs=None, normalize=None):
    """Declare and register an op; returns its user-facing function."""
    op = Op(name, infer, kernel, dict(attrs or {}), nargs,
            normalize if normalize is not None else (lambda t, a: a))
    register_op(op)
    return op_function(op)


# -- type rule helpers ---------------------------------------------------------------
def fmt(types) -> str:
    return ", ".join(repr(t) for t in types)


def tensor_types(op: str, types) -> list[TensorType]:
    for t in types:
        if not isinstance(t, TensorType):
            raise TypeInferenceError(f"{op}: operands must be tensors, got {fmt(types)}")
    return list(types)


def broadcast_shapes(op: str, types) -> tuple:
    if len(types) == 2:  # the common case: equal shapes, or a scalar and a shape
        s0, s1 = types[0].shape, types[1].shape
        if s0 == s1 or not s1:
            return s0
        if not s0:
            return s1
    ndim = max((len(t.shape) for t in types), default=0)
    out = []
    for i in range(ndim):
        dim = 1
        for t in types:
            k = i - (ndim - len(t.shape))
            if k < 0:
                continue
            d = t.shape[k]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d != dim:
                raise TypeInferenceError(
                    f"{op}: shapes do not broadcast: {fmt(types)} "
                    f"(dimension {i} is {dim} in one operand and {d} in another)"
                )
        out.append(dim)
    return tuple(out)


_PROMOTED: dict = {}  # tuple of dtype names -> DType (a bounded set)


def promote(op: str, types) -> DType:
    key = tuple([t.dtype for t in types])
    out = _PROMOTED.get(key)
    if out is not None:
        return out
    try:
        out = DType(np.result_type(*[t.dtype.numpy for t in types]))
    except TypeError:
        raise TypeInferenceError(f"{op}: cannot promote dtypes of {fmt(types)}") from None
    if len(key) <= 4:
        _PROMOTED[key] = out
    return out


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeInferenceError(f"{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise TypeInferenceError(f"{op}: axis {axis} is out of range for rank {ndim}")
    return int(axis) % ndim


def normalize_axes(op: str, axis, ndim: int) -> tuple | None:
    """None (all axes) or a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        axes = tuple(sorted(normalize_axis(op, a, ndim) for a in axis))
    else:
        axes = (normalize_axis(op, axis, ndim),)
    if len(set(axes)) != len(axes):
        raise TypeInferenceError(f"{op}: repeated axis in {axis!r}")
    return axes


def check_shape(op: str, shape) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if not isinstance(shape, (tuple, list)):
        raise TypeInferenceError(f"{op}: shape must be a tuple of ints, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
            out.append(int(d))
        elif isinstance(d, str):
            out.append(d)
        else:
            raise TypeInferenceError(f"{op}: bad dimension {d!r} in shape {shape!r}")
    return tuple(out)


def static_size(shape) -> int | None:
    if all(isinstance(d, int) for d in shape):
        return int(np.prod(shape, dtype=np.int64))
    return None


__all__ = [
    "REQUIRED", "TensorType", "TupleType", "Type", "DType", "apply", "define", "evaluate",
    "broadcast_shapes", "promote", "normalize_axis", "normalize_axes", "check_shape",
    "tensor_types", "fmt", "static_size", "HANDLERS",
]
