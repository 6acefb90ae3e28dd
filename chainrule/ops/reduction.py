"""Reductions (sum, mean, max, min, prod, argmax, argmin) and the scan cumsum.

``cumprod`` is a composite (``chainrule.ops.composites.prefix_product``, a
log-depth product scan), so its derivatives are exact where inputs are zero.

``axis`` is None (all axes), an int or a tuple; it is stored as a sorted
tuple of non-negative axes, or None.

>>> import numpy as np
>>> sum(np.arange(6.0).reshape(2, 3), axis=-1, keepdims=True)
array([[ 3.],
       [12.]])
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..errors import TypeInferenceError
from . import templates
from .common import (
    REQUIRED,
    DType,
    TensorType,
    define,
    normalize_axes,
    normalize_axis,
    tensor_types,
)


@cache
def _accumulate_dtype(dtype: DType, how: str) -> DType:
    sample = np.ones(1, dtype.numpy)
    return DType(getattr(sample, how)().dtype)


def _reduced_shape(t: TensorType, axes, keepdims: bool) -> tuple:
    if axes is None:
        axes = tuple(range(t.ndim))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    return tuple(d for i, d in enumerate(t.shape) if i not in axes)


def _reduce_normalize(name):
    def normalize(types, attrs):
        (t,) = tensor_types(name, types)
        if not isinstance(attrs["keepdims"], (bool, np.bool_)):
            raise TypeInferenceError(f"{name}: keepdims must be True or False")
        return {"axis": normalize_axes(name, attrs["axis"], t.ndim),
                "keepdims": bool(attrs["keepdims"])}

    return normalize


def _reduce_type(name, how):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        shape = _reduced_shape(t, attrs["axis"], attrs["keepdims"])
        if how in ("sum", "prod", "mean"):
            if how == "mean" and not t.dtype.is_float:
                dtype = DType("f64")
            else:
                dtype = _accumulate_dtype(t.dtype, how)
        else:
            dtype = t.dtype
            if how in ("max", "min") and t.size == 0:
                raise TypeInferenceError(f"{name}: reduction of an empty array {t!r}")
        return TensorType(shape, dtype)

    return infer


def _reduce(name, how, kernel, emit=None, names=(), **facts):
    return define(name, _reduce_type(name, how), kernel, 1,
                  {"axis": None, "keepdims": False}, _reduce_normalize(name),
                  emit=emit or templates.method_reduction(name), aliases=False,
                  namespace=(name, *names), methods=(name,), **facts)


def _reduced_count(t, axis) -> int | None:
    shape = templates.static_shape(t)
    if shape is None:
        return None
    n = 1
    for a in range(len(shape)) if axis is None else axis:
        n *= shape[a]
    return n


def _mean_emit(e):
    """``x.sum(axis) / n`` for float32/float64: the value ``np.mean`` computes (it
    divides in float64 and rounds, which for one division is the same correctly
    rounded quotient), without ``np.mean``'s Python-level overhead."""
    t = e.types[0]
    n = _reduced_count(t, e.attrs["axis"])
    if (n is None or not 1 <= n <= 2**24 or str(t.dtype) not in ("f32", "f64")
            or e.out.dtype != t.dtype):
        return templates.method_reduction("mean")(e)
    text = templates.method_reduction("sum")(e)
    return None if text is None else f"{text} / {n}"


sum = _reduce("sum", "sum", lambda x, axis, keepdims: np.sum(x, axis, keepdims=keepdims),  # noqa: A001
              linear=(0,))
mean = _reduce("mean", "mean", lambda x, axis, keepdims: np.mean(x, axis, keepdims=keepdims),
               emit=_mean_emit, linear=(0,))
max = _reduce("max", "max", lambda x, axis, keepdims: np.max(x, axis, keepdims=keepdims),  # noqa: A001
              names=("amax",))
min = _reduce("min", "min", lambda x, axis, keepdims: np.min(x, axis, keepdims=keepdims),  # noqa: A001
              names=("amin",))
prod = _reduce("prod", "prod", lambda x, axis, keepdims: np.prod(x, axis, keepdims=keepdims))


def _arg_normalize(name):
    def normalize(types, attrs):
        (t,) = tensor_types(name, types)
        axis = attrs["axis"]
        return {"axis": None if axis is None else normalize_axis(name, axis, t.ndim),
                "keepdims": bool(attrs["keepdims"])}

    return normalize


def _arg_type(name):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        axis = attrs["axis"]
        axes = None if axis is None else (axis,)
        return TensorType(_reduced_shape(t, axes, attrs["keepdims"]), "i64")

    return infer


def _arg_reduce(name):
    fn = getattr(np, name)
    return define(name, _arg_type(name),
                  lambda x, axis, keepdims: fn(x, axis, keepdims=keepdims).astype(np.int64),
                  1, {"axis": None, "keepdims": False}, _arg_normalize(name),
                  differentiable=False, aliases=False, namespace=(name,), methods=(name,))


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


def _scan_normalize(name):
    def normalize(types, attrs):
        (t,) = tensor_types(name, types)
        return {"axis": normalize_axis(name, attrs["axis"], t.ndim),
                "reverse": bool(attrs["reverse"])}

    return normalize


def _scan_type(name, how):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        return TensorType(t.shape, _accumulate_dtype(t.dtype, how))

    return infer


def _scan_kernel(fn):
    def kernel(x, axis, reverse):
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis), axis)
        return fn(x, axis)

    return kernel


cumsum = define("cumsum", _scan_type("cumsum", "sum"), _scan_kernel(np.cumsum), 1,
                {"axis": REQUIRED, "reverse": False}, _scan_normalize("cumsum"), linear=(0,),
                aliases=False)
