"""``full`` and ``full_like`` with NumPy's signatures: the fill value may be any
array_like broadcastable to the shape, also a traced value or tape tensor (autograd
programs write ``np.full(x.shape, g)`` inside VJPs). A number fills through the
``full`` op; anything else is broadcast (``broadcast_to``), so it differentiates.
``linspace`` differentiates in its endpoints (``start + i * (stop - start) / div``, the
last point ``stop`` itself, as NumPy computes it).

>>> import numpy as np, chainrule as cr
>>> float(cr.grad(lambda s: full((2, 3), s).sum())(np.float64(1.5)))
6.0
>>> full_like(np.zeros(2, int), 2.7)
array([2, 2])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..ir.op import is_dispatched as _is_dispatched
from ._core import exposes

__all__ = ["full", "full_like", "linspace"]


def _number(v) -> bool:
    return isinstance(v, (bool, int, float, _np.bool_, _np.integer, _np.floating))


def _filled(shape: tuple, fill_value, dtype):
    if not _is_dispatched(fill_value):
        fill_value = _np.asarray(fill_value)
    if dtype is None:
        dtype = _np.dtype(fill_value.dtype)
    fill_value = _ops.astype(fill_value, _np.dtype(dtype)) if _np.dtype(
        fill_value.dtype) != _np.dtype(dtype) else fill_value
    return _ops.broadcast_to(fill_value, tuple(shape))


def _shape_tuple(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(shape)


@exposes(_ops.full)
def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """``np.full``: an array of ``shape`` filled with ``fill_value`` (broadcast)."""
    if _number(fill_value):
        return _ops.full(_shape_tuple(shape), fill_value, dtype)
    return _filled(_shape_tuple(shape), fill_value, dtype)


@exposes(_ops.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.full_like``: ``full`` with ``a``'s shape and dtype unless given."""
    if not _is_dispatched(a):
        a = _np.asarray(a)
    dtype = _np.dtype(a.dtype) if dtype is None else dtype
    shape = tuple(a.shape) if shape is None else _shape_tuple(shape)
    if _number(fill_value):
        return _ops.full(shape, fill_value, dtype)
    return _filled(shape, fill_value, dtype)


full.op, full_like.op = _ops.full, _ops.full_like


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``np.linspace``; on traced or tape endpoints (any shapes that broadcast) a
    composite that differentiates in them."""
    if not (_is_dispatched(start) or _is_dispatched(stop)):
        return _np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
    if isinstance(num, bool) or not isinstance(num, (int, _np.integer)) or num < 0:
        raise ValueError(f"Number of samples, {num}, must be a non-negative integer.")
    num = int(num)
    div = num - 1 if endpoint else num
    start, stop = (v if _is_dispatched(v) else _np.asarray(v, float) for v in (start, stop))
    delta = _ops.subtract(stop, start)
    lead = tuple(_np.broadcast_shapes(tuple(start.shape), tuple(stop.shape)))
    steps = _np.arange(num, dtype=float).reshape((num,) + (1,) * len(lead))
    step = _ops.divide(delta, div) if div > 0 else _ops.multiply(delta, _np.nan)
    y = _ops.add(_ops.multiply(steps, step) if div > 0 else _ops.multiply(steps, delta), start)
    if endpoint and num > 1:  # NumPy sets the last point to stop exactly
        last = _ops.reshape(_ops.broadcast_to(stop, lead), (1,) + lead)
        y = _ops.concatenate(_ops.getitem(y, slice(0, num - 1)), last, axis=0)
    if axis != 0:
        y = _ops.permute_dims(y, axes=tuple(_np.roll(_np.arange(y.ndim), axis % y.ndim)))
    if dtype is not None:
        y = _ops.astype(y, _np.dtype(dtype))
    return (y, step) if retstep else y
