"""Reductions (sum, mean, max, min, prod, argmax, argmin, any, all), the scan
cumsum, and the windowed sum of products ``correlate_valid`` that
convolutions and correlations are built from.

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

import builtins
from functools import cache

import numpy as np

from ..errors import TypeInferenceError
from ..ir.indexing import Slice
from ..ir.op import REDUCTIONS, REQUIRED, is_dispatched
from ..ir.types import DType, TensorType
from . import templates
from .common import (
    NOT_YET_ON_ARRAY_API,
    define,
    normalize_axes,
    normalize_axis,
    promote,
    tensor_types,
)
from .indexing import index, index_add
from .shape import broadcast_to, zeros, zeros_like


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
        elif how in ("any", "all"):
            dtype = DType("bool")
        else:
            dtype = t.dtype
            axes = range(t.ndim) if attrs["axis"] is None else attrs["axis"]
            if how in ("max", "min") and (
                    t.size == 0 if not axes else builtins.any(t.shape[a] == 0 for a in axes)):
                # NumPy reduces a non-empty axis of an array that is empty elsewhere
                raise TypeInferenceError(f"{name}: reduction of an empty array {t!r}"
                                         f" (the maximum of nothing has no identity)")
        return TensorType(shape, dtype)

    return infer


def _reduce(name, how, kernel, emit=None, names=(), **facts):
    # the namespace functions (NumPy's signature: dtype, initial, where) are written in
    # chainrule/numpy/_reduce_api.py; ``names`` are the NumPy aliases it also provides.
    # The reduction fact names how elements combine (fusion and loop kernels accumulate
    # it); any and all have none of those ways (logical and/or): they stay unfused
    facts.setdefault("reduction", how if how in REDUCTIONS else None)
    return define(name, _reduce_type(name, how), kernel, 1,
                  {"axis": None, "keepdims": False}, _reduce_normalize(name),
                  emit=emit or templates.method_reduction(name), aliases=False,
                  namespace=(), methods=(name,), **facts)


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


# np.add.reduce is what np.sum runs on an ndarray (same dtypes, same values), without
# np.sum's two Python layers: this kernel runs on every eager (tape) sum
sum = _reduce("sum", "sum", lambda x, axis, keepdims: np.add.reduce(x, axis, keepdims=keepdims),  # noqa: A001
              linear=(0,))
mean = _reduce("mean", "mean", lambda x, axis, keepdims: np.mean(x, axis, keepdims=keepdims),
               emit=_mean_emit, linear=(0,))
max = _reduce("max", "max", lambda x, axis, keepdims: np.max(x, axis, keepdims=keepdims),  # noqa: A001
              names=("amax",))
min = _reduce("min", "min", lambda x, axis, keepdims: np.min(x, axis, keepdims=keepdims),  # noqa: A001
              names=("amin",))
prod = _reduce("prod", "prod", lambda x, axis, keepdims: np.prod(x, axis, keepdims=keepdims))
any = _reduce("any", "any", lambda x, axis, keepdims: np.any(x, axis, keepdims=keepdims),  # noqa: A001
              differentiable=False)
all = _reduce("all", "all", lambda x, axis, keepdims: np.all(x, axis, keepdims=keepdims),  # noqa: A001
              differentiable=False)


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


# -- windowed sums of products: convolution and correlation ---------------------------------
def _correlate_type(types, attrs):
    x, w = tensor_types("correlate_valid", types)
    if x.ndim != w.ndim:
        raise TypeInferenceError(f"correlate_valid: operands of different ranks: {x!r}, {w!r}")
    if not (x.is_static and w.is_static):
        raise TypeInferenceError("correlate_valid: symbolic shapes are not supported")
    if builtins.any(n < m for n, m in zip(x.shape, w.shape)):
        raise TypeInferenceError(f"correlate_valid: the window {w!r} is larger than the "
                                 f"array {x!r} in some dimension")
    return TensorType(tuple(n - m + 1 for n, m in zip(x.shape, w.shape)),
                      promote("correlate_valid", [x, w]))


def _correlate_valid(x, w):
    """z[k] = sum_j x[k + j] * w[j] (no conjugation), the sum over every j in w's shape,
    for every k with k + j inside x: O(z.size * w.size) multiply-adds."""
    dtype = np.result_type(x, w)
    x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
    shape = tuple(n - m + 1 for n, m in zip(x.shape, w.shape))
    if x.ndim == 0:
        return x * w
    if 0 in shape or w.size == 0:
        return np.zeros(shape, dtype)
    if x.ndim == 1 and dtype.kind in "fc" and w.size > 1:
        return np.correlate(x, np.conj(w) if dtype.kind == "c" else w, "valid")
    out = np.zeros(shape, dtype)
    if w.size <= out.size:  # loop over the window: one multiply-add of the output per tap
        for j in np.ndindex(w.shape):
            out += w[j] * x[tuple(slice(a, a + n) for a, n in zip(j, shape))]
    else:  # loop over the output: one dot product per output element
        for k in np.ndindex(shape):
            patch = x[tuple(slice(a, a + m) for a, m in zip(k, w.shape))]
            out[k] = np.sum(patch * w)
    return out


correlate_valid = define(
    "correlate_valid", _correlate_type, _correlate_valid, 2, linear="one", fresh=True,
    aliases=False,
    doc="correlate_valid(x, w)[k] = sum_j x[k + j] w[j]: the 'valid' correlation (every "
        "window of x with w's shape, no padding, no conjugation), both of rank n and x at "
        "least as large as w in every dimension. Convolutions and correlations of every mode "
        "are this op on a zero-padded window of x (``window``); its derivatives are "
        "correlations again.", kernels=NOT_YET_ON_ARRAY_API)


def window(x, lo, hi):
    """``x[lo:hi]`` in every dimension, with zeros where the range leaves ``x`` (``lo``
    may be negative, ``hi`` past the end): a slice and a zero padding, both linear ops,
    so it differentiates at every order. ``lo`` and ``hi`` are tuples of ints."""
    shape = tuple(x.shape)
    inner = tuple(Slice(builtins.max(a, 0), builtins.min(b, n), None)
                  for a, b, n in zip(lo, hi, shape))
    if builtins.all(a >= 0 and b <= n for a, b, n in zip(lo, hi, shape)):
        if builtins.all(a == 0 and b == n for a, b, n in zip(lo, hi, shape)):
            return x
        return index(x, key=inner)
    out_shape = tuple(b - a for a, b in zip(lo, hi))
    if builtins.all(s.start < s.stop for s in inner):
        part = index(x, key=inner) if inner != tuple(Slice(0, n, None) for n in shape) else x
        at = tuple(Slice(s.start - a, s.stop - a, None) for s, a in zip(inner, lo))
        if is_dispatched(part):  # zeros from a traced 0-d value: no array constant in the IR
            base = broadcast_to(zeros_like(index(part, key=(0,) * len(shape))), out_shape)
        else:
            base = zeros(shape=out_shape, dtype=x.dtype)
        return index_add(base, part, key=at)
    return zeros(shape=out_shape, dtype=x.dtype)
