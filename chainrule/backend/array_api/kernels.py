"""Kernels written against the Python array API standard (``xp``): how the generated code
computes an op on PyTorch, CuPy, Dask (and NumPy through ``array_api_compat``).

Each kernel is ``kernel(ctx, *arrays, **attrs)`` with ``ctx`` a :class:`KernelContext`
(the namespace ``ctx.xp``, the device of the call's arrays, dtype conversion). An op
whose computation the standard spells declares the function's name
(``array_api_name="acos"`` for ``arccos``) and is written ``xp.acos(x)`` in the source;
an op may declare kernels of its own, for one namespace or for any
(``define(..., kernels={"torch": ..., "array_api": ...})``); the others are in
:data:`GENERIC`, keyed by the op. An op with none of these has no kernel on that
namespace: compiling it there is an error naming the op and the backend
(``chainrule.backend.array_api.namespaces``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ... import ops
from ...errors import BackendError
from ...ir.indexing import key_to_python
from ...ir.op import Op
from ...ops.shape import collapse_axes


class KernelContext:
    """What a kernel needs besides its operands: the namespace, the device, dtypes."""

    __slots__ = ("name", "xp", "device", "_dtypes")

    def __init__(self, name: str, xp, device=None):
        self.name = name
        self.xp = xp
        self.device = device
        self._dtypes: dict = {}

    def dtype(self, dtype):
        """The namespace's dtype object for a chainrule DType (or NumPy dtype)."""
        key = str(dtype)
        out = self._dtypes.get(key)
        if out is None:
            npd = dtype.numpy if hasattr(dtype, "numpy") else np.dtype(dtype)
            out = getattr(self.xp, np.dtype(npd).name)
            self._dtypes[key] = out
        return out

    def creation(self) -> dict:
        """Keyword arguments placing a new array where the operands live."""
        return {} if self.device is None else {"device": self.device}


def _reduce(fn_name: str):
    def kernel(ctx, x, axis=None, keepdims=False):
        return getattr(ctx.xp, fn_name)(x, axis=axis, keepdims=keepdims)

    kernel.__name__ = fn_name
    return kernel


def _arg_reduce(fn_name: str):
    def kernel(ctx, x, axis=None, keepdims=False):
        xp = ctx.xp
        if isinstance(axis, tuple):
            axis = axis[0] if axis else None
        out = getattr(xp, fn_name)(x, axis=axis, keepdims=keepdims)
        return xp.astype(out, xp.int64)

    kernel.__name__ = fn_name
    return kernel


def _sum(ctx, x, axis=None, keepdims=False):
    return ctx.xp.sum(x, axis=axis, keepdims=keepdims, dtype=_acc_dtype(ctx, x))


def _prod(ctx, x, axis=None, keepdims=False):
    return ctx.xp.prod(x, axis=axis, keepdims=keepdims, dtype=_acc_dtype(ctx, x))


def _acc_dtype(ctx, x):
    """NumPy's accumulator dtype: bool and small integers sum as int64, others keep theirs."""
    xp = ctx.xp
    if x.dtype == xp.bool or x.dtype in (xp.int8, xp.int16, xp.int32):
        return xp.int64
    if x.dtype in (xp.uint8, xp.uint16, xp.uint32):
        return xp.uint64
    return None


def _mean(ctx, x, axis=None, keepdims=False):
    xp = ctx.xp
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        x = xp.astype(x, xp.float64)
    return xp.mean(x, axis=axis, keepdims=keepdims)


def _collapse_sum_to(ctx, x, shape):
    leading, kept = collapse_axes(tuple(x.shape), tuple(shape))
    xp = ctx.xp
    if kept:
        x = xp.sum(x, axis=kept, keepdims=True, dtype=x.dtype)
    if leading:
        x = xp.sum(x, axis=leading, dtype=x.dtype)
    if not leading and not kept:
        x = xp.reshape(x, tuple(shape))
    return x


def _permute_dims(ctx, x, axes=None):
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return ctx.xp.permute_dims(x, tuple(axes))


def _expand_dims(ctx, x, axis):
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = x.ndim + len(axes)
    shape = list(x.shape)
    for a in sorted(a % ndim for a in axes):
        shape.insert(a, 1)
    return ctx.xp.reshape(x, tuple(shape))


def _squeeze(ctx, x, axis=None):
    if axis is None:
        axis = tuple(i for i, d in enumerate(x.shape) if d == 1)
    if not isinstance(axis, tuple):
        axis = (axis,)
    if not axis:
        return x
    return ctx.xp.squeeze(x, axis=axis)


def _flip(ctx, x, axis=None):
    return ctx.xp.flip(x, axis=axis)


def _concatenate(ctx, *xs, axis=0):
    return ctx.xp.concat(list(xs), axis=axis)


def _astype(ctx, x, dtype):
    return ctx.xp.astype(x, ctx.dtype(dtype))


def _creation_dtype(ctx, dtype, fallback):
    return ctx.dtype(dtype) if dtype is not None else fallback


def _zeros(ctx, shape, dtype=None):
    xp = ctx.xp
    return xp.zeros(tuple(shape), dtype=_creation_dtype(ctx, dtype, xp.float64),
                    **ctx.creation())


def _ones(ctx, shape, dtype=None):
    xp = ctx.xp
    return xp.ones(tuple(shape), dtype=_creation_dtype(ctx, dtype, xp.float64),
                   **ctx.creation())


def _full(ctx, shape, fill_value, dtype=None):
    xp = ctx.xp
    dt = ctx.dtype(dtype) if dtype is not None else ctx.dtype(np.asarray(fill_value).dtype)
    return xp.full(tuple(shape), fill_value, dtype=dt, **ctx.creation())


def _zeros_like(ctx, x, dtype=None):
    return ctx.xp.zeros(tuple(x.shape), dtype=_creation_dtype(ctx, dtype, x.dtype),
                        **ctx.creation())


def _ones_like(ctx, x, dtype=None):
    return ctx.xp.ones(tuple(x.shape), dtype=_creation_dtype(ctx, dtype, x.dtype),
                       **ctx.creation())


def _full_like(ctx, x, fill_value, dtype=None):
    return ctx.xp.full(tuple(x.shape), fill_value,
                       dtype=_creation_dtype(ctx, dtype, x.dtype), **ctx.creation())


def _arange(ctx, start=0, stop=None, step=1, dtype=None):
    xp = ctx.xp
    dt = ctx.dtype(dtype) if dtype is not None else None
    return xp.arange(start, stop, step, dtype=dt, **ctx.creation())


def _cumsum(ctx, x, axis, reverse=False):
    xp = ctx.xp
    if reverse:
        x = xp.flip(x, axis=axis)
    out = xp.cumulative_sum(x, axis=axis, dtype=_acc_dtype(ctx, x))
    return xp.flip(out, axis=axis) if reverse else out


def _sort(ctx, x, axis):
    return ctx.xp.sort(x, axis=axis, stable=True)


def _argsort(ctx, x, axis):
    xp = ctx.xp
    return xp.astype(xp.argsort(x, axis=axis, stable=True), xp.int64)


def _identity(ctx, x):
    return x


def _relu(ctx, x):
    xp = ctx.xp
    return xp.maximum(x, xp.zeros((), dtype=x.dtype, **ctx.creation()))


def _float(ctx, x):
    xp = ctx.xp
    if xp.isdtype(x.dtype, ("real floating", "complex floating")):
        return x
    return xp.astype(x, xp.float64)


def _sigmoid(ctx, x):
    xp = ctx.xp
    x = _float(ctx, x)
    # exp of -|x| never overflows; the two branches agree at 0
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softmax(ctx, x, axis=-1):
    xp = ctx.xp
    x = _float(ctx, x)
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(ctx, x, axis=-1):
    xp = ctx.xp
    x = _float(ctx, x)
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _logsumexp(ctx, x, axis=None, keepdims=False):
    xp = ctx.xp
    x = _float(ctx, x)
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros((), dtype=x.dtype, **ctx.creation()))
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = xp.reshape(out, tuple(d for i, d in enumerate(out.shape)
                                    if axis is not None and i not in _axes(axis, out.ndim)))
    return out


def _axes(axis, ndim) -> tuple:
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim for a in axes)


def _exp2(ctx, x):
    xp = ctx.xp
    return xp.pow(xp.asarray(2.0, dtype=x.dtype, **ctx.creation()), x)


def _reciprocal(ctx, x):
    return 1 / x


def _fabs(ctx, x):
    return ctx.xp.abs(x)


def _cbrt(ctx, x):
    xp = ctx.xp
    return xp.sign(x) * xp.pow(xp.abs(x), 1.0 / 3.0)


def _logaddexp2(ctx, x, y):
    xp = ctx.xp
    ln2 = math.log(2.0)
    return xp.logaddexp(x * ln2, y * ln2) / ln2


def _fmax(ctx, x, y):
    xp = ctx.xp
    return xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.maximum(x, y)))


def _fmin(ctx, x, y):
    xp = ctx.xp
    return xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.minimum(x, y)))


def _fmod(ctx, x, y):
    xp = ctx.xp
    return x - xp.trunc(x / y) * y if xp.isdtype(x.dtype, "real floating") else \
        xp.sign(x) * xp.remainder(xp.abs(x), xp.abs(y))


def _heaviside(ctx, x, h0):
    xp = ctx.xp
    zero = xp.zeros((), dtype=x.dtype, **ctx.creation())
    one = xp.ones((), dtype=x.dtype, **ctx.creation())
    return xp.where(x < 0, zero, xp.where(x > 0, one, h0))


def _real(ctx, x):
    xp = ctx.xp
    return xp.real(x) if xp.isdtype(x.dtype, "complex floating") else x


def _imag(ctx, x):
    xp = ctx.xp
    if xp.isdtype(x.dtype, "complex floating"):
        return xp.imag(x)
    return xp.zeros(tuple(x.shape), dtype=x.dtype, **ctx.creation())


def _index(ctx, x, *arrays, key):
    return take(ctx, x, key, arrays)


def take(ctx, x, key, arrays):
    """``x[key]`` for every key form NumPy takes. PyTorch's slices step forward only (a
    backward slice is the forward slice of the same elements, flipped); Dask's gather
    fails on a new axis beside an index array. For those, the key's basic part (slices
    and new axes, every other axis kept whole) is taken first, then its advanced part (ints
    and index arrays, the new axes now length-1 axes kept whole): the same elements in the
    same order, since a whole axis separates index arrays as a new axis does."""
    k = key_to_python(key, arrays)
    if arrays and ctx.name == "torch":
        k = _ints_as_index_arrays(ctx, k, arrays)
    if arrays and ((ctx.name == "torch" and _has_backward_slice(k))
                   or (ctx.name == "dask" and any(e is None for e in k))):
        basic = tuple(e if e is None or type(e) is slice else slice(None) for e in k)
        advanced = tuple(slice(None) if e is None or type(e) is slice else e for e in k)
        return _take_basic(ctx, x, basic)[advanced]
    return _take_basic(ctx, x, k)


def _ints_as_index_arrays(ctx, k: tuple, arrays) -> tuple:
    """Beside index arrays NumPy counts an int as one more (``x[1, :, a]`` puts the
    axes of ``a`` first); PyTorch drops the int's axis first (``a``'s axes stay in place).
    An int becomes an index array of shape ``(1,) * ndim``, which broadcasts away; beside
    0-d arrays only, where there are no advanced axes to place, ints stay ints."""
    ndim = max(len(a.shape) for a in arrays)
    if not ndim:
        return k
    one = (1,) * ndim
    return tuple(ctx.xp.full(one, e, dtype=arrays[0].dtype, device=arrays[0].device)
                 if type(e) is int else e for e in k)


def _has_backward_slice(k: tuple) -> bool:
    return any(type(e) is slice and e.step is not None and e.step < 0 for e in k)


def _take_basic(ctx, x, k: tuple):
    """``x[k]``, ``k`` without index arrays when it has a backward slice on PyTorch."""
    if ctx.name != "torch" or not _has_backward_slice(k):
        return x[k]
    walk = _ForwardKey(k, x.shape)
    out = x[walk.gather]
    return ctx.xp.flip(out, axis=walk.flips) if walk.flips else out


class _ForwardKey:
    """A key of ints, slices and new axes as forward slices (the same elements, the
    backward slices' axes to flip after): ``gather`` keeps its ints and new axes
    (``x[gather]`` flipped is ``x[k]``); ``assign`` has one slice per indexed axis, an int
    a length-1 slice, no new axes (``x[assign]`` has ``x[k]``'s elements, reshaped);
    ``flips`` are axes of ``x[k]``, whose shape is ``selected``."""

    def __init__(self, k: tuple, shape):
        gather, assign, flips, selected, dim = [], [], [], [], 0
        for e in k:
            if e is None:
                gather.append(None)
                selected.append(1)
                continue
            length = int(shape[dim])
            if type(e) is slice:
                forward = _forward_slice(e, length)
                gather.append(forward)
                assign.append(forward)
                if e.step is not None and e.step < 0:
                    flips.append(len(selected))
                selected.append(len(range(*e.indices(length))))
            else:  # an int
                gather.append(e)
                assign.append(slice(e % length, e % length + 1))
            dim += 1
        self.gather, self.assign, self.flips = tuple(gather), tuple(assign), tuple(flips)
        self.selected = tuple(selected) + tuple(int(n) for n in shape[dim:])


def _forward_slice(e: slice, length: int) -> slice:
    """The slice stepping forward over the elements ``e`` selects (in reverse order when
    ``e`` steps backward)."""
    if e.step is None or e.step > 0:
        return e
    positions = range(*e.indices(length))
    if not positions:
        return slice(0, 0)
    return slice(positions[-1], positions[0] + 1, -e.step)


def key_text(key: tuple) -> str:
    """An IR key as the user wrote it (``[::-1, None, <array 0>]``), for error messages."""
    from ...ir.indexing import ArrayIndex

    return "[" + ", ".join(f"<array {e.position}>" if isinstance(e, ArrayIndex) else str(e)
                           for e in key) + "]"


def _basic_update(combine):
    """``base.at[key].op(value)`` for a key of ints, slices and new axes: a copy, updated in
    place (PyTorch, CuPy and Dask all assign to basic keys). The key is first made one
    every library assigns to alike (Dask mis-assigns at new axes and at an int beside a
    backward slice; PyTorch has no backward slices): one forward slice per axis of
    ``base``, the value broadcast to ``base[key]``'s shape and reshaped to match."""

    def kernel(ctx, base, value, *arrays, key):
        if arrays:

            raise BackendError(f"index_{combine.__name__.strip('_')}: an update at an index "
                               f"array has no kernel on {ctx.name} (key {key_text(key)})")
        xp = ctx.xp
        out = xp.asarray(base, copy=True)
        walk = _ForwardKey(key_to_python(key, arrays), out.shape)
        if 0 in walk.selected:  # nothing to update (Dask's assignment fails on empty keys)
            return out
        value = xp.broadcast_to(xp.astype(xp.asarray(value), out.dtype), walk.selected)
        if walk.flips:
            value = xp.flip(value, axis=walk.flips)
        forward = walk.assign
        value = xp.reshape(value, tuple(out[forward].shape))
        out[forward] = combine(xp, out[forward], value)
        return out

    return kernel


def _set(xp, old, value):
    return xp.broadcast_to(value, tuple(old.shape))


def _add(xp, old, value):
    return old + value


def _multiply(xp, old, value):
    return old * value


def _max(xp, old, value):
    return xp.maximum(old, value)


def _min(xp, old, value):
    return xp.minimum(old, value)


def _split(ctx, x, indices_or_sections, axis=0):
    n = x.shape[axis]
    if isinstance(indices_or_sections, int):
        size = n // indices_or_sections
        bounds = [i * size for i in range(indices_or_sections + 1)]
    else:
        bounds = [0, *[min(max(int(i), 0), n) for i in indices_or_sections], n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = (slice(None),) * (axis % x.ndim) + (slice(lo, max(lo, hi)),)
        out.append(x[key])
    return tuple(out)


def _fft(ctx, x, axes, inverse=False, norm="backward"):
    fft = ctx.xp.fft
    return (fft.ifftn if inverse else fft.fftn)(x, axes=tuple(axes), norm=norm)


def _rfft(ctx, x, axis=-1, norm="backward"):
    return ctx.xp.fft.rfft(x, axis=axis, norm=norm)


def _irfft(ctx, x, n, axis=-1, norm="backward"):
    return ctx.xp.fft.irfft(x, n=n, axis=axis, norm=norm)


def _linalg(fn_name: str):
    def kernel(ctx, *arrays):
        return getattr(ctx.xp.linalg, fn_name)(*arrays)

    kernel.__name__ = fn_name
    return kernel


def _slogdet(ctx, a):
    sign, logabs = ctx.xp.linalg.slogdet(a)
    return sign, logabs


def _eigh(ctx, a, lower=True, driver=None):
    if not lower:
        a = ctx.xp.matrix_transpose(a)
    w, v = ctx.xp.linalg.eigh(a)
    return w, v


def _eigvalsh(ctx, a, lower=True, driver=None):
    if not lower:
        a = ctx.xp.matrix_transpose(a)
    return ctx.xp.linalg.eigvalsh(a)


def _svd(ctx, a, full_matrices=False):
    u, s, vh = ctx.xp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _qr(ctx, a, mode="reduced"):
    q, r = ctx.xp.linalg.qr(a, mode=mode)
    return q, r


# op -> its kernel on any array-API namespace, for the ops that declare none of their own
# (``Op.kernels``) and whose computation the standard does not spell (``Op.array_api_name``)
GENERIC: dict[Op, Callable] = {
    ops.sum: _sum, ops.prod: _prod, ops.mean: _mean, ops.max: _reduce("max"),
    ops.min: _reduce("min"), ops.reduction.all: _reduce("all"),
    ops.reduction.any: _reduce("any"), ops.argmax: _arg_reduce("argmax"),
    ops.argmin: _arg_reduce("argmin"), ops.collapse_sum_to: _collapse_sum_to,
    ops.permute_dims: _permute_dims, ops.expand_dims: _expand_dims, ops.squeeze: _squeeze,
    ops.flip: _flip, ops.concatenate: _concatenate, ops.astype: _astype,
    ops.broadcast_to: lambda ctx, x, shape: ctx.xp.broadcast_to(x, tuple(shape)),
    ops.reshape: lambda ctx, x, shape: ctx.xp.reshape(x, tuple(shape)),
    ops.zeros: _zeros, ops.ones: _ones, ops.full: _full, ops.zeros_like: _zeros_like,
    ops.ones_like: _ones_like, ops.full_like: _full_like, ops.arange: _arange,
    ops.cumsum: _cumsum, ops.sort: _sort, ops.argsort: _argsort,
    ops.stop_gradient: _identity, ops.relu: _relu, ops.sigmoid: _sigmoid,
    ops.softmax: _softmax, ops.log_softmax: _log_softmax, ops.logsumexp: _logsumexp,
    ops.exp2: _exp2, ops.reciprocal: _reciprocal, ops.fabs: _fabs, ops.cbrt: _cbrt,
    ops.logaddexp2: _logaddexp2, ops.fmax: _fmax, ops.fmin: _fmin, ops.fmod: _fmod,
    ops.heaviside: _heaviside, ops.real: _real, ops.imag: _imag, ops.index: _index,
    ops.index_add: _basic_update(_add), ops.index_set: _basic_update(_set),
    ops.index_multiply: _basic_update(_multiply), ops.index_max: _basic_update(_max),
    ops.index_min: _basic_update(_min), ops.split: _split, ops.fft.fft: _fft,
    ops.fft.rfft: _rfft, ops.fft.irfft: _irfft, ops.cholesky: _linalg("cholesky"),
    ops.det: _linalg("det"), ops.slogdet: _slogdet, ops.eigh: _eigh, ops.eigvalsh: _eigvalsh,
    ops.svd: _svd, ops.svdvals: _linalg("svdvals"), ops.qr: _qr,
}
