"""More of NumPy's namespace (see ``_more``): ``resize``, ``compress`` (a concrete
condition), ``unwrap``, ``choose``, ``sort_complex`` (real values) and
``put_along_axis`` (NumPy's on NumPy arrays; refused on traced values and tape
tensors, which are immutable), compositions of the other
functions of ``chainrule.numpy``.

>>> import numpy as np
>>> resize(np.array([1.0, 2.0, 3.0]), (2, 2))
array([[1., 2.],
       [3., 1.]])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..errors import (
    ArgumentError,
    ConcretizationError,
    ImmutableValueError,
    InvalidIndexError,
    InvalidValueError,
)
from ..ir.op import is_dispatched as _is_dispatched
from ._core import ravel
from ._reductions import _axes
from ._shapes import _as_value, _concrete, concatenate, stack
from ._sorting import sort, take, take_along_axis

__all__ = ["choose", "compress", "put_along_axis", "resize", "sort_complex", "unwrap"]


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype)


def resize(a, new_shape):
    """``np.resize``: the flattened ``a`` repeated to fill ``new_shape``."""
    a = _as_value(a)
    if not _is_dispatched(a):
        return _np.resize(a, new_shape)
    shape = (int(new_shape),) if isinstance(new_shape, (int, _np.integer)) else tuple(
        int(n) for n in new_shape)
    if any(n < 0 for n in shape):
        raise InvalidValueError("all elements of `new_shape` must be non-negative")
    size = int(_np.prod(shape, dtype=_np.int64))
    n = int(_np.prod(tuple(a.shape), dtype=_np.int64))
    if n == 0 or size == 0:
        return _np.zeros(shape, _dtype(a))
    return _ops.reshape(take(ravel(a), _np.arange(size) % n), shape)


def compress(condition, a, axis=None, out=None):
    """``np.compress``: the slices along ``axis`` (of the flattened ``a`` for None) where
    the concrete 1-D ``condition`` is true (missing entries count as false)."""
    if out is not None:
        raise ArgumentError("compress: out= is not supported (chainrule values are immutable)")
    condition = _concrete(condition)
    if _is_dispatched(condition):
        raise ConcretizationError("compress: the condition decides the result's shape, so it must "
                            "be concrete (not traced); use where() for a traced one")
    a = _as_value(a)
    if not _is_dispatched(a):
        return _np.compress(condition, a, axis=axis)
    cond = _np.asarray(condition)
    if cond.ndim != 1:
        raise InvalidValueError("condition must be a 1-d array")
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axes(axis, a.ndim)[0]
    picked = _np.flatnonzero(cond)
    if picked.size and picked[-1] >= a.shape[axis]:
        raise InvalidIndexError(f"index {picked[-1]} is out of bounds for axis {axis} with size "
                         f"{a.shape[axis]}")
    return take(a, picked, axis=axis)


def unwrap(p, discont=None, axis=-1, *, period=2 * _np.pi):
    """``np.unwrap`` (real floating ``p``): jumps of more than ``discont`` (period / 2)
    between neighbours along ``axis`` replaced by their complement; the correction is
    piecewise constant, so the derivative is the identity."""
    p = _as_value(p)
    if not _is_dispatched(p):
        return _np.unwrap(p, discont, axis, period=period)
    if _dtype(p).kind != "f" or _is_dispatched(period) or _is_dispatched(discont):
        raise ArgumentError("unwrap: only real floating values with a concrete period and "
                            "discont are supported")
    axis = _axes(axis, p.ndim)[0]
    n = p.shape[axis]
    if n < 2:
        return p
    dtype = _np.result_type(_dtype(p), period)
    p = _ops.astype(p, dtype)

    def part(lo, hi):
        return _ops.getitem(p, (slice(None),) * axis + (slice(lo, hi),))

    dd = _ops.subtract(part(1, None), part(0, n - 1))
    if discont is None:
        discont = period / 2
    high = period / 2
    ddmod = _ops.add(_ops.remainder(_ops.add(dd, high), period), -high)
    ddmod = _ops.where(_ops.logical_and(_ops.equal(ddmod, -high), _ops.greater(dd, 0)),
                       _np.asarray(high, dtype), ddmod)
    correction = _ops.subtract(ddmod, dd)
    correction = _ops.where(_ops.less(_ops.abs(dd), discont), _np.zeros((), dtype), correction)
    tail = _ops.add(part(1, None), _ops.cumsum(correction, axis=axis))
    return concatenate([part(0, 1), tail], axis=axis)


def put_along_axis(arr, indices, values, axis):
    """``np.put_along_axis`` on NumPy arrays (in place, as NumPy); traced values and
    tape tensors are immutable: refused, pointing to ``.at[...].set``."""
    if _is_dispatched(arr) or _is_dispatched(values) or _is_dispatched(indices):
        raise ImmutableValueError(
            "chainrule values are immutable: put_along_axis updates arr in place; instead "
            "write arr = arr.at[idx].set(values) (JAX's functional update), idx the full "
            "index that indices gives along axis")
    return _np.put_along_axis(arr, indices, values, axis)


def choose(a, choices, out=None, mode="raise"):
    """``np.choose``: ``choices[a[i]][i]`` with everything broadcast; differentiable in
    the choices. A traced ``a`` needs ``mode="wrap"`` or ``"clip"`` (its range cannot be
    checked before the program runs)."""
    if out is not None:
        raise ArgumentError("choose: out= is not supported (chainrule values are immutable)")
    if mode not in ("raise", "wrap", "clip"):
        raise InvalidValueError(f"choose: clipmode must be one of 'clip', 'raise', or 'wrap' "
                                f"(got {mode!r})")
    values = [_as_value(c) for c in choices]
    index = _as_value(_concrete(a))
    if not (_is_dispatched(index) or any(_is_dispatched(v) for v in values)):
        return _np.choose(index, values, mode=mode)
    if _dtype(index).kind not in "biu":
        raise ArgumentError("choose: the index array must hold integers")
    n = len(values)
    if n == 0:
        raise InvalidValueError("0-length sequence.")
    if _is_dispatched(index):
        if mode == "raise":
            raise ArgumentError("choose: a traced index array needs mode='wrap' or 'clip' "
                                "(mode='raise' would check its values before they exist)")
    else:
        index = _np.asarray(index, _np.int64)
        if mode == "raise" and index.size and (index.min() < 0 or index.max() >= n):
            raise InvalidValueError("invalid entry in choice array")
    if mode == "wrap":
        index = _ops.remainder(index, n)
    elif mode == "clip":
        index = _ops.minimum(_ops.maximum(index, 0), n - 1)
    shape = tuple(_np.broadcast_shapes(tuple(index.shape), *(tuple(v.shape) for v in values)))
    stacked = stack([_ops.broadcast_to(v, shape) for v in values], axis=0)
    picks = _ops.reshape(_ops.broadcast_to(_ops.astype(index, _np.int64), shape), (1, *shape))
    return _ops.getitem(take_along_axis(stacked, picks, axis=0), 0)


def sort_complex(a):
    """``np.sort_complex`` of real values: sorted along the last axis, as complex
    (complex64 for 8- and 16-bit integers, complex128 otherwise, as NumPy)."""
    a = _as_value(a)
    if not _is_dispatched(a):
        return _np.sort_complex(a)
    if _dtype(a).kind == "c":
        raise ArgumentError("sort_complex: complex traced values are not supported")
    if a.ndim == 0:  # as NumPy's (which sorts along the last axis)
        raise _np.exceptions.AxisError(-1, 0)
    b = sort(a, axis=-1)
    wide = _np.complex64 if _dtype(a).char in "bhBH" else _np.complex128
    return _ops.astype(b, wide)
