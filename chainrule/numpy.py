"""The NumPy-compatible namespace users import: ``import chainrule.numpy as cnp``.

On NumPy arrays these functions compute; on traced values they emit IR; on
tape tensors they record. Composite functions (``var``, ``clip``, ``stack``,
``take``...) are written with the ops, so they differentiate for free.

>>> import numpy as np
>>> float(sum(tanh(np.zeros(3)) + 1.0))
3.0
"""

from __future__ import annotations

import builtins

import numpy as _np

from . import ops as _ops
from .errors import TraceError
from .ir.indexing import ArrayIndex, Slice
from .ops.common import HANDLERS as _HANDLERS

# dtypes and constants, as in NumPy
float16, float32, float64 = _np.float16, _np.float32, _np.float64
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, bool_ = _np.uint8, _np.bool_
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
ndarray = _np.ndarray

# -- elementwise (the ops themselves) ---------------------------------------------------
add, subtract, multiply, divide, power = (_ops.add, _ops.subtract, _ops.multiply,
                                          _ops.divide, _ops.power)
true_divide = divide
maximum, minimum, negative = _ops.maximum, _ops.minimum, _ops.negative
exp, log, log1p, expm1 = _ops.exp, _ops.log, _ops.log1p, _ops.expm1
sin, cos, tan, tanh, arctan = _ops.sin, _ops.cos, _ops.tan, _ops.tanh, _ops.arctan
sqrt, square, reciprocal, sign = _ops.sqrt, _ops.square, _ops.reciprocal, _ops.sign
abs = absolute = _ops.abs  # noqa: A001
floor, round = _ops.floor, _ops.round  # noqa: A001
sigmoid, relu = _ops.sigmoid, _ops.relu
equal, not_equal, less, less_equal = _ops.equal, _ops.not_equal, _ops.less, _ops.less_equal
greater, greater_equal = _ops.greater, _ops.greater_equal
logical_and, logical_or, logical_not = _ops.logical_and, _ops.logical_or, _ops.logical_not
where = _ops.where
stop_gradient = _ops.stop_gradient
matmul = _ops.matmul
collapse_sum_to = _ops.collapse_sum_to


def _is_dispatched(*xs) -> bool:
    return builtins.any(type(x) in _HANDLERS for x in xs)


def astype(x, dtype):
    return _ops.astype(x, dtype=dtype)


def clip(x, a_min=None, a_max=None):
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def log_sigmoid(x):
    """log(sigmoid(x)) without overflow: -softplus(-x)."""
    return negative(softplus(negative(x)))


def softplus(x):
    """log(1 + exp(x)), stable: max(x, 0) + log1p(exp(-|x|))."""
    return add(relu(x), log1p(exp(negative(abs(x)))))


# -- reductions -------------------------------------------------------------------------
def sum(x, axis=None, keepdims=False):  # noqa: A001
    return _ops.sum(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return _ops.mean(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return _ops.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return _ops.min(x, axis=axis, keepdims=keepdims)


amax, amin = max, min


def prod(x, axis=None, keepdims=False):
    return _ops.prod(x, axis=axis, keepdims=keepdims)


def argmax(x, axis=None, keepdims=False):
    return _ops.argmax(x, axis=axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    return _ops.argmin(x, axis=axis, keepdims=keepdims)


def cumsum(x, axis=None):
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return _ops.cumsum(x, axis=axis)


def cumprod(x, axis=None):
    """Inclusive product scan; on traced values a log-depth (Hillis-Steele) scan of
    multiplies, so every derivative order is exact even where x is zero."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    if not _is_dispatched(x):
        return _np.cumprod(x, axis=axis)
    return prefix_product(x, axis)


def prefix_product(x, axis, exclusive=False):
    n = _shape(x)[axis]
    ndim = len(_shape(x))
    axis = axis % ndim

    def part(a, lo, hi):
        return getitem(a, (slice(None),) * axis + (slice(lo, hi),))

    d = 1
    while d < n:
        x = concatenate([part(x, 0, d), multiply(part(x, d, None), part(x, 0, n - d))], axis)
        d *= 2
    if exclusive:
        x = concatenate([ones_like(part(x, 0, 1)), part(x, 0, n - 1)], axis)
    return x


def var(x, axis=None, keepdims=False, ddof=0):
    centered = subtract(x, mean(x, axis=axis, keepdims=True))
    sq = sum(multiply(centered, centered), axis=axis, keepdims=keepdims)
    n = _reduced_count(_shape(x), axis)
    return divide(sq, n - ddof)


def std(x, axis=None, keepdims=False, ddof=0):
    return sqrt(var(x, axis=axis, keepdims=keepdims, ddof=ddof))


def logsumexp(x, axis=None, keepdims=False):
    return _ops.logsumexp(x, axis=axis, keepdims=keepdims)


def softmax(x, axis=-1):
    return _ops.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    return _ops.log_softmax(x, axis=axis)


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def _reduced_count(shape, axis) -> int:
    if axis is None:
        return int(_np.prod(shape, dtype=_np.int64))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return int(_np.prod([shape[a] for a in axes], dtype=_np.int64))


# -- shapes -----------------------------------------------------------------------------
def reshape(x, shape):
    return _ops.reshape(x, shape=shape)


def ravel(x):
    return reshape(x, (-1,))


def transpose(x, axes=None):
    return _ops.permute_dims(x, axes=None if axes is None else tuple(axes))


def permute_dims(x, axes):
    return _ops.permute_dims(x, axes=tuple(axes))


def swapaxes(x, axis1, axis2):
    n = len(_shape(x))
    axes = list(range(n))
    a, b = axis1 % n, axis2 % n
    axes[a], axes[b] = axes[b], axes[a]
    return permute_dims(x, axes)


def moveaxis(x, source, destination):
    n = len(_shape(x))
    order = [i for i in range(n) if i != source % n]
    order.insert(destination % n, source % n)
    return permute_dims(x, order)


def expand_dims(x, axis):
    return _ops.expand_dims(x, axis=axis)


def squeeze(x, axis=None):
    return _ops.squeeze(x, axis=axis)


def broadcast_to(x, shape):
    return _ops.broadcast_to(x, shape=tuple(shape))


def concatenate(arrays, axis=0):
    return _ops.concatenate(*arrays, axis=axis)


def stack(arrays, axis=0):
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


def split(x, indices_or_sections, axis=0):
    if isinstance(indices_or_sections, list):
        indices_or_sections = tuple(indices_or_sections)
    return list(_ops.split(x, indices_or_sections=indices_or_sections, axis=axis))


def flip(x, axis=None):
    return _ops.flip(x, axis=axis)


# -- linear algebra ---------------------------------------------------------------------
def dot(a, b):
    if len(_shape(a)) == 0 or len(_shape(b)) == 0:
        return multiply(a, b)
    return matmul(a, b)


def outer(a, b):
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def inner(a, b):
    return sum(multiply(a, b), axis=-1)


# -- creation ---------------------------------------------------------------------------
def zeros(shape, dtype=float64):
    return _np.zeros(shape, dtype)


def ones(shape, dtype=float64):
    return _np.ones(shape, dtype)


def full(shape, fill_value, dtype=None):
    return _np.full(shape, fill_value, dtype)


def zeros_like(x, dtype=None):
    return _ops.zeros_like(x, dtype=dtype) if _is_dispatched(x) else _np.zeros_like(x, dtype)


def ones_like(x, dtype=None):
    return _ops.ones_like(x, dtype=dtype) if _is_dispatched(x) else _np.ones_like(x, dtype)


def full_like(x, fill_value, dtype=None):
    if _is_dispatched(x):
        return _ops.full_like(x, fill_value=fill_value, dtype=dtype)
    return _np.full_like(x, fill_value, dtype)


arange, linspace, eye = _np.arange, _np.linspace, _np.eye


def array(x, dtype=None):
    if _is_dispatched(x):
        return x if dtype is None else astype(x, dtype)
    if isinstance(x, (list, tuple)) and builtins.any(_is_dispatched(e) for e in x):
        return stack([asarray(e) for e in x])
    return _np.array(x, dtype)


def asarray(x, dtype=None):
    return array(x, dtype)


# -- indexing ---------------------------------------------------------------------------
def _key_entry(k, arrays):
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, (bool, _np.bool_)):
        raise TraceError("indexing with a Python bool is not supported")
    if isinstance(k, (int, _np.integer)):
        return int(k)
    if isinstance(k, slice):
        for bound in (k.start, k.stop, k.step):
            if bound is not None and not isinstance(bound, (int, _np.integer)):
                raise TraceError(f"slice bounds must be Python ints, got {bound!r}; "
                                 f"for a traced start use an index array")
        return Slice(*(None if v is None else int(v) for v in (k.start, k.stop, k.step)))
    if not _is_dispatched(k):
        k = _np.asarray(k)
        if k.dtype == bool:
            return [_key_entry(nz, arrays) for nz in _np.nonzero(k)]
    arrays.append(k)
    return ArrayIndex(len(arrays) - 1)


def getitem(x, key):
    """``x[key]`` with NumPy semantics: basic slicing and integer-array indexing."""
    if not _is_dispatched(x, *(key if isinstance(key, tuple) else (key,))):
        return _np.asarray(x)[key]
    arrays: list = []
    entries = []
    for k in key if isinstance(key, tuple) else (key,):
        e = _key_entry(k, arrays)
        entries.extend(e if isinstance(e, list) else [e])
    return _ops.index(x, *arrays, key=tuple(entries))


def take(x, indices, axis=None):
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = axis % len(_shape(x))
    return getitem(x, (slice(None),) * axis + (indices,))


def take_along_axis(x, indices, axis):
    shape = _shape(x)
    axis = axis % len(shape)
    key = []
    for i in range(len(shape)):
        if i == axis:
            key.append(indices)
        else:
            ix_shape = [1] * len(shape)
            ix_shape[i] = shape[i]
            key.append(_np.arange(shape[i]).reshape(ix_shape))
    return getitem(x, tuple(key))


# -- static facts ------------------------------------------------------------------------
def shape(x) -> tuple:
    """The static shape (also of traced values and tape tensors)."""
    return _shape(x)


def ndim(x) -> int:
    return len(_shape(x))


def size(x) -> int:
    return int(_np.prod(_shape(x), dtype=_np.int64))
