"""User-namespace sorting and selection (adapters and composites).

``sort`` is NumPy's sort (the ``sort`` op) whose derivative is that of the
gather ``take_along_axis(x, argsort(x))``; ``partition`` is
``take_along_axis(x, argpartition(x, kth))``. The index ops are not
differentiable, the gather is, so the derivative is the cotangent scattered
back through the permutation, at every order and in both modes. ``argsort``
is stable (ties keep their order), as JAX's. On traced values and tape
tensors the array methods ``x.sort()``, ``x.argsort()``, ``x.partition(k)``
return new arrays (chainrule values are immutable), as JAX's do.

``take`` and ``take_along_axis`` here supersede the versions in ``_core`` (the
namespace imports this module after it): they add NumPy's ``mode`` and
``axis=None`` and check their arguments as NumPy does.

``unique`` has a shape that depends on the data: on traced values it needs
``size=`` (JAX's convention; the result is padded with ``fill_value``, by
default the smallest unique value). On tape tensors, whose values are
concrete, the size is read from the data.

>>> import numpy as np
>>> import chainrule as cr
>>> cr.grad(lambda x: sort(x)[0] * 1.0 + sort(x)[-1] * 2.0)(np.array([3.0, 1.0, 2.0]))
array([2., 1., 0.])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..emit.methods import array_method
from ..emit.trace import Traced as _Traced
from ..errors import ConcretizationError, TraceError
from ..ir.op import is_dispatched as _is_dispatched
from ._core import exposes

__all__ = ["argpartition", "argsort", "partition", "searchsorted", "sort", "take",
           "take_along_axis", "unique"]


def _asarray(x):
    return x if _is_dispatched(x) else _np.asarray(x)


def _axis(axis, ndim: int, who: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, _np.integer)):
        raise TypeError(f"{who}: axis must be an int or None, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise _np.exceptions.AxisError(axis, ndim)
    return int(axis) % ndim


def _flat(x):
    return _ops.reshape(x, (-1,))


def _int_indices(indices, who: str):
    indices = _asarray(indices)
    if _np.dtype(indices.dtype).kind not in "iu":
        raise IndexError(f"{who}: indices must be integers, got dtype {indices.dtype}")
    return indices


# -- gathers -----------------------------------------------------------------------------
def _wrap(indices, n: int, mode: str):
    """NumPy's take modes: 'raise' (negative indices count from the end), 'wrap'
    (modulo n) and 'clip' (to [0, n-1]; negative indices clip to 0)."""
    if mode == "raise":
        if not _is_dispatched(indices) and indices.size and (
                indices.max() >= n or indices.min() < -n):
            bad = indices.max() if indices.max() >= n else indices.min()
            raise IndexError(f"index {bad} is out of bounds for axis with size {n}")
        return indices
    if n == 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    if mode == "clip":
        return _ops.maximum(_ops.minimum(indices, n - 1), 0)
    if mode == "wrap":
        if not _is_dispatched(indices):
            return _np.mod(indices, n)
        q = _ops.astype(_ops.floor(_ops.divide(indices, n)), _np.int64)
        return _ops.subtract(indices, _ops.multiply(q, n))
    raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")


def take(a, indices, axis=None, out=None, mode="raise"):
    """``np.take``: the elements of ``a`` at ``indices`` along ``axis`` (the flattened
    array for None); ``mode`` is 'raise', 'wrap' or 'clip' as in NumPy. Differentiable
    in ``a`` (the cotangent is scattered back, repeated indices accumulating)."""
    if out is not None:
        raise TypeError("take: out= is not supported (chainrule values are immutable)")
    a, indices = _asarray(a), _int_indices(indices, "take")
    if axis is None:
        a, axis = _flat(a), 0
    axis = _axis(axis, a.ndim, "take")
    indices = _wrap(indices, a.shape[axis], mode or "raise")
    return _ops.getitem(a, (slice(None),) * axis + (indices,))


def take_along_axis(arr, indices, axis=-1):
    """``np.take_along_axis``: ``arr`` gathered at ``indices`` along ``axis`` (the
    flattened array for None), the other dimensions broadcast; negative indices count
    from the end. Differentiable in ``arr``."""
    arr, indices = _asarray(arr), _int_indices(indices, "take_along_axis")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr, axis = _flat(arr), 0
    if indices.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = _axis(axis, arr.ndim, "take_along_axis")
    key = []
    for i, n in enumerate(arr.shape):
        if i == axis:
            key.append(indices)
        else:
            shape = [1] * arr.ndim
            shape[i] = n
            key.append(_np.arange(n).reshape(shape))
    return _ops.getitem(arr, tuple(key))


# -- sorting -----------------------------------------------------------------------------
def _sort_axis(a, axis, who):
    a = _asarray(a)
    if axis is None:
        return _flat(a), 0
    if a.ndim == 0:
        raise _np.exceptions.AxisError(axis, 0)
    return a, _axis(axis, a.ndim, who)


def _no_order(order, who):
    if order is not None:
        raise ValueError(f"{who}: order= (structured arrays) is not supported")


@exposes(_ops.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.argsort``, always stable (ties keep their order; ``kind`` and ``stable`` are
    accepted and make no difference), as int64. Not differentiable."""
    _no_order(order, "argsort")
    a = _asarray(a)
    if a.ndim == 0 and axis is not None:  # NumPy sorts a 0-d array as a 1-element one
        a = _flat(a)
    a, axis = _sort_axis(a, axis, "argsort")
    return _ops.argsort(a, axis=axis)


@exposes(_ops.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort`` (``axis=None`` sorts the flattened array; ``kind`` and ``stable``
    make no difference to the values). Differentiable: the derivative is that of
    ``take_along_axis(a, argsort(a))``, each output's cotangent routed back to the
    element that landed there (tied elements in their order)."""
    _no_order(order, "sort")
    a, axis = _sort_axis(a, axis, "sort")
    return _ops.sort(a, axis=axis)


@exposes(_ops.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.argpartition`` (NumPy's introselect, so the same indices as NumPy), int64.
    Not differentiable."""
    _no_order(order, "argpartition")
    a, axis = _sort_axis(a, axis, "argpartition")
    return _ops.argpartition(a, kth, axis=axis)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``np.partition``: the kth element in its sorted place, smaller ones before and
    larger ones after (in NumPy's order: ``take_along_axis(a, argpartition(a, kth))``).
    Differentiable like ``sort``."""
    _no_order(order, "partition")
    a, axis = _sort_axis(a, axis, "partition")
    if not _is_dispatched(a):
        return _np.partition(a, kth, axis=axis)
    return take_along_axis(a, _ops.argpartition(a, kth, axis=axis), axis)


@exposes(_ops.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """``np.searchsorted``: indices into the sorted 1-D ``a`` (``a[sorter]`` when a
    sorter is given) where ``v``'s elements would be inserted (int64). Not
    differentiable."""
    a, v = _asarray(a), _asarray(v)
    if a.ndim != 1:
        raise ValueError("searchsorted: a must be 1-D")
    if sorter is not None:
        a = take(a, sorter)
    return _ops.searchsorted(a, v, side=side)


# -- unique -------------------------------------------------------------------------------
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True, size=None, fill_value=None):  # noqa: A002
    """``np.unique``; on traced values JAX's ``size=`` and ``fill_value=`` are needed.

    With ``size``: the first ``size`` sorted unique values of the flattened array,
    padded with ``fill_value`` (default: the smallest unique value) when there are
    fewer; the indices of the first occurrences are padded with 0, the counts with 0,
    and the inverse indices of values cut off by ``size`` point at the last entry.
    The values are differentiable (each one's cotangent goes to the first occurrence
    of that value); the indices and counts are not."""
    flags = (return_index, return_inverse, return_counts)
    if not _is_dispatched(ar):
        ar = _np.asarray(ar)
        if size is None:
            return _np.unique(ar, *flags, axis=axis, equal_nan=equal_nan, sorted=sorted)
    elif size is None:
        value = getattr(ar, "_cr_value", None)
        if isinstance(ar, _Traced) or value is None:
            raise ConcretizationError(
                "unique: the number of unique values depends on the data, so the shape of "
                "the result is unknown when tracing; pass size=n (and fill_value=...) for a "
                "fixed-size result, as with jax.numpy.unique, or call it on concrete arrays")
        if axis is not None:
            raise TraceError("unique: axis= is not supported on tape tensors")
        size = _np.unique(value(), equal_nan=equal_nan).size
    if axis is not None:
        raise TraceError("unique: axis= is not supported with size= (the array is flattened)")
    if isinstance(size, bool) or not isinstance(size, (int, _np.integer)) or size < 0:
        raise ValueError(f"unique: size must be a non-negative int, got {size!r}")
    return _unique_sized(ar, int(size), fill_value, equal_nan, flags)


def _scatter_add(base, indices, values):
    """``base.at[indices].add(values)``."""
    return _ops.index_update(_ops.index_add, base, indices, values)


def _unique_sized(ar, size: int, fill_value, equal_nan: bool, flags):
    flat = _flat(ar)
    n = flat.shape[0]
    if n == 0:
        if fill_value is None and size:
            raise ValueError("unique: an empty array with size > 0 needs a fill_value")
        values = _ops.full((size,), 0 if fill_value is None else fill_value,
                           dtype=flat.dtype)
        extra = ([_np.zeros(size, _np.int64)] if flags[0] else []) + (
            [_np.zeros(_np.shape(ar), _np.int64)] if flags[1] else []) + (
            [_np.zeros(size, _np.int64)] if flags[2] else [])
        return tuple([values, *extra]) if extra else values
    perm = _ops.argsort(flat, axis=0)
    s = _ops.getitem(flat, perm)
    new = _ops.not_equal(s[1:], s[:-1])
    if equal_nan and _np.dtype(flat.dtype).kind in "fc":
        both_nan = _ops.logical_and(_ops.not_equal(s[1:], s[1:]),
                                    _ops.not_equal(s[:-1], s[:-1]))
        new = _ops.logical_and(new, _ops.logical_not(both_nan))
    is_new = _ops.concatenate(_np.ones(1, bool), new, axis=0)
    group = _ops.subtract(_ops.cumsum(_ops.astype(is_new, _np.int64), axis=0), 1)
    count = _ops.sum(_ops.astype(is_new, _np.int64))
    keep = _ops.logical_and(is_new, _ops.less(group, size))
    slot = _ops.where(keep, group, size)  # size: a dump slot, cut off below
    filled = _ops.less(_np.arange(size), count)

    def compact(v, dtype):
        base = _np.zeros(size + 1, dtype)
        return _scatter_add(base, slot, _ops.where(keep, v, _np.zeros((), dtype)))[:size]

    values = compact(s, flat.dtype)
    fill = s[0] if fill_value is None else _np.asarray(fill_value, flat.dtype)
    values = _ops.where(filled, values, fill)
    out = [values]
    if flags[0]:
        out.append(_ops.where(filled, compact(perm, _np.int64), 0))
    if flags[1]:
        inv = _scatter_add(_np.zeros(n, _np.int64), perm,
                           _ops.minimum(group, max(size - 1, 0)))
        out.append(_ops.reshape(inv, tuple(_np.shape(ar))))
    if flags[2]:
        ones = _np.ones(n, _np.int64)
        out.append(_scatter_add(_np.zeros(size + 1, _np.int64), _ops.minimum(group, size),
                                ones)[:size])
    return tuple(out) if len(out) > 1 else values


# -- array methods (new arrays: chainrule values are immutable, as JAX's) ----------------
array_method("sort", lambda self, axis=-1, kind=None, order=None, *, stable=None:
             sort(self, axis, kind, order, stable=stable))
array_method("argsort", lambda self, axis=-1, kind=None, order=None, *, stable=None:
             argsort(self, axis, kind, order, stable=stable))
array_method("partition", lambda self, kth, axis=-1, kind="introselect", order=None:
             partition(self, kth, axis, kind, order))
array_method("argpartition", lambda self, kth, axis=-1, kind="introselect", order=None:
             argpartition(self, kth, axis, kind, order))
array_method("searchsorted", lambda self, v, side="left", sorter=None:
             searchsorted(self, v, side, sorter))
array_method("take", lambda self, indices, axis=None, out=None, mode="raise":
             take(self, indices, axis, out, mode))
