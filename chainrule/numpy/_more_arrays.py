"""More of NumPy's namespace (see ``_more``): ``resize``, ``compress`` (a concrete
condition), ``unwrap`` and ``put_along_axis`` (NumPy's on NumPy arrays; refused on
traced values and tape tensors, which are immutable), compositions of the other
functions of ``chainrule.numpy``.

>>> import numpy as np
>>> resize(np.array([1.0, 2.0, 3.0]), (2, 2))
array([[1., 2.],
       [3., 1.]])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..errors import ArgumentError, ImmutableValueError
from ..ir.op import is_dispatched as _is_dispatched
from ._core import ravel
from ._reductions import _axes
from ._shapes import _as_value, concatenate
from ._sorting import take

__all__ = ["compress", "put_along_axis", "resize", "unwrap"]


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
        raise ValueError("all elements of `new_shape` must be non-negative")
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
    if _is_dispatched(condition):
        raise ArgumentError("compress: the condition decides the result's shape, so it must "
                            "be concrete (not traced); use where() for a traced one")
    a = _as_value(a)
    if not _is_dispatched(a):
        return _np.compress(condition, a, axis=axis)
    cond = _np.asarray(condition)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axes(axis, a.ndim)[0]
    picked = _np.flatnonzero(cond)
    if picked.size and picked[-1] >= a.shape[axis]:
        raise IndexError(f"index {picked[-1]} is out of bounds for axis {axis} with size "
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
