"""User-namespace rearranging: ``tile``, ``repeat``, ``roll``, ``rot90``,
``fliplr`` / ``flipud``, ``rollaxis``, ``append`` / ``insert`` / ``delete`` and
``pad`` (every NumPy mode but ``median`` and a function), as composites of the
basic ops (see ``_shapes``): no rules of their own, every order.

>>> import numpy as np
>>> pad(np.array([1.0, 2.0]), 1, mode="reflect")
array([2., 1., 2., 1.])
"""

from __future__ import annotations

import numpy as _np
from numpy.lib.array_utils import normalize_axis_index as _axis_index
from numpy.lib.array_utils import normalize_axis_tuple as _axis_tuple

from .. import ops as _ops
from ..errors import TraceError
from ..ir.op import is_dispatched as _is_dispatched
from ._core import _method, _shape
from ._shapes import (
    ShapeArgumentError,
    _as_value,
    _cast,
    _concrete,
    _dtype,
    _filled,
    _ndim,
    _nested_dispatched,
    _slice_axis,
    _static_int,
    _static_ints,
    _take,
    _with_axis,
    _with_ndmin,
    concatenate,
)


# -- rearranging ------------------------------------------------------------------------
def rollaxis(a, axis, start=0):
    """``np.rollaxis``: moves ``axis`` to sit before position ``start``."""
    a = _as_value(a)
    if not _is_dispatched(a):
        return _np.rollaxis(a, axis, start)
    n = _ndim(a)
    axis = _axis_index(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise _np.exceptions.AxisError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return _ops.permute_dims(a, tuple(axes))


def rot90(m, k=1, axes=(0, 1)):
    """``np.rot90``: rotation by 90 degrees ``k`` times in the plane of ``axes``."""
    m = _as_value(m)
    if not _is_dispatched(m):
        return _np.rot90(m, k, axes)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ShapeArgumentError("rot90: len(axes) must be 2.")
    nd = _ndim(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ShapeArgumentError("rot90: Axes must be different.")
    if not all(-nd <= a < nd for a in axes):
        raise ShapeArgumentError(f"rot90: Axes={axes} out of range for array of ndim={nd}.")
    k = _static_int(k, "rot90: k") % 4
    if k == 0:
        return m
    if k == 2:
        return _ops.flip(m, axes)
    perm = list(range(nd))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return _ops.permute_dims(_ops.flip(m, axes[1]), tuple(perm))
    return _ops.flip(_ops.permute_dims(m, tuple(perm)), axes[1])


def fliplr(m):
    """``np.fliplr``: reverses axis 1."""
    m = _as_value(m)
    if _ndim(m) < 2:
        raise ShapeArgumentError("fliplr: Input must be >= 2-d.")
    return _np.fliplr(m) if not _is_dispatched(m) else _ops.flip(m, 1)


def flipud(m):
    """``np.flipud``: reverses axis 0."""
    m = _as_value(m)
    if _ndim(m) < 1:
        raise ShapeArgumentError("flipud: Input must be >= 1-d.")
    return _np.flipud(m) if not _is_dispatched(m) else _ops.flip(m, 0)


def _roll_traced(a, shift, axis):
    """``a`` rolled by a traced integer ``shift`` along ``axis``: a gather at
    ``(i - shift) mod n``."""
    n = _shape(a)[axis]
    if n == 0:
        return a
    if _np.dtype(shift.dtype).kind not in "iu":
        raise TypeError(f"roll: shift must be an integer, got a {shift.dtype} value")
    t = _ops.astype(shift, _np.float64)
    r = _ops.astype(t - n * _ops.floor(t / n), _np.int64)  # shift mod n (exact below 2**52)
    idx = _ops.subtract(_np.arange(n), r)
    idx = _ops.where(idx < 0, idx + n, idx)
    idx = _ops.where(idx >= n, idx - n, idx)  # in case rounding left r at n or below 0
    return _ops.getitem(a, (slice(None),) * axis + (idx,))


def roll(a, shift, axis=None):
    """``np.roll``: shift int or tuple, axis None (the flattened array), int or tuple.
    A traced integer shift is supported (a gather)."""
    a = _as_value(a)
    if not _is_dispatched(a) and not _nested_dispatched(shift):
        return _np.roll(a, shift, axis)
    shape = tuple(_shape(a))
    if axis is None:
        return _ops.reshape(roll(_ops.reshape(a, (-1,)), shift, 0), shape)
    axes = _axis_tuple(axis, len(shape), allow_duplicate=True)
    if _nested_dispatched(shift):
        shift = _as_value(shift)
        if _ndim(shift) > 1 or (_ndim(shift) == 1 and len(shift) not in (1, len(axes))):
            raise ShapeArgumentError("roll: 'shift' and 'axis' should be scalars or 1D sequences "
                                "of one length")
        for i, ax in enumerate(axes):
            s = shift if _ndim(shift) == 0 else shift[i if len(shift) > 1 else 0]
            a = _roll_traced(a, s, ax)
        return a
    pairs = _np.broadcast(_np.asarray(shift), _np.asarray(axes))
    if pairs.ndim > 1:
        raise ShapeArgumentError("roll: 'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(len(shape)), 0)
    for sh, ax in pairs:
        shifts[int(ax)] += int(sh)
    for ax, s in shifts.items():
        n = shape[ax]
        if n and s % n:
            a = _take([a], (_np.arange(n) - s) % n, ax)
    return a


@_method("repeat")
def repeat(a, repeats, axis=None):
    """``np.repeat``: static counts, one for all or one per element; axis None
    repeats the flattened array."""
    repeats = _concrete(repeats)
    r = _static_ints(repeats, "repeat: the counts")
    a = _as_value(a)
    if not _is_dispatched(a):
        return _np.repeat(a, repeats, axis)
    if r.dtype.kind not in "iub":
        raise TypeError(f"repeat: cannot cast the counts {r.dtype} to int according to the "
                        f"rule 'safe'")
    if (r < 0).any():
        raise ShapeArgumentError("repeat: repeats may not contain negative values.")
    if axis is None:
        a, axis = _ops.reshape(a, (-1,)), 0
    shape = tuple(_shape(a))
    axis = _axis_index(axis, len(shape))
    n = shape[axis]
    if r.size == 1:
        k = int(r.reshape(-1)[0])
        if k == 1:
            return a
        wide = _ops.broadcast_to(_ops.expand_dims(a, axis + 1),
                                 shape[:axis + 1] + (k,) + shape[axis + 1:])
        return _ops.reshape(wide, _with_axis(shape, axis, n * k))
    if r.shape != (n,):
        raise ShapeArgumentError(f"repeat: operands could not be broadcast together with shape "
                            f"({n},) ({r.size},)")
    return _take([a], _np.repeat(_np.arange(n), r), axis)


def tile(A, reps):
    """``np.tile``: ``A`` repeated ``reps`` times along each axis (a broadcast and a
    reshape)."""
    if _is_dispatched(reps):
        _static_int(reps, "tile: reps")
    try:
        tup = tuple(reps)
    except TypeError:
        tup = (reps,)
    tup = tuple(_static_int(r, "tile: reps") for r in tup)
    A = _as_value(A)
    if not _is_dispatched(A):
        return _np.tile(A, tup)
    if any(r < 0 for r in tup):
        raise ShapeArgumentError("tile: negative dimensions are not allowed")
    c = _with_ndmin(A, len(tup))
    shape = tuple(_shape(c))
    tup = (1,) * (len(shape) - len(tup)) + tup
    if all(r == 1 for r in tup):
        return c
    inner, wide = [], []
    for s, r in zip(shape, tup):
        if r != 1:
            inner.append(1)
            wide.append(r)
        inner.append(s)
        wide.append(s)
    out = _ops.broadcast_to(_ops.reshape(c, tuple(inner)), tuple(wide))
    return _ops.reshape(out, tuple(s * r for s, r in zip(shape, tup)))


# -- append, insert, delete ------------------------------------------------------------
def append(arr, values, axis=None):
    """``np.append``: axis None flattens both (the result is 1-d)."""
    if not _nested_dispatched(arr) and not _nested_dispatched(values):
        return _np.append(arr, values, axis)
    arr, values = _as_value(arr), _as_value(values)
    if axis is None:
        if _ndim(arr) != 1:
            arr = _ops.reshape(arr, (-1,))
        values, axis = _ops.reshape(values, (-1,)), 0
    return concatenate((arr, values), axis)


def _flat_axis(arr, axis):
    if axis is None:
        if _ndim(arr) != 1:
            arr = _ops.reshape(arr, (-1,))
        return arr, 0
    return arr, _axis_index(axis, _ndim(arr))


def insert(arr, obj, values, axis=None):
    """``np.insert`` with static positions ``obj`` (an int, slice or sequence of ints
    or bools); ``values`` may be traced. Values are cast to ``arr``'s dtype."""
    obj = _concrete(obj)
    obj_static = obj if isinstance(obj, slice) else _static_ints(obj, "insert: the positions")
    if not _nested_dispatched(arr) and not _nested_dispatched(values):
        return _np.insert(arr, obj, values, axis)
    arr, values = _as_value(arr), _as_value(values)
    arr, axis = _flat_axis(arr, axis)
    shape = tuple(_shape(arr))
    n, dtype = shape[axis], _dtype(arr)
    if isinstance(obj, slice):
        indices = _np.arange(*obj.indices(n))
    else:
        indices = obj_static
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ShapeArgumentError("insert: boolean array argument obj to insert must be one "
                                    "dimensional")
            indices = _np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ShapeArgumentError("insert: index array argument obj to insert must be one "
                                "dimensional or scalar")
    if indices.size == 1:
        v = _with_ndmin(values, len(shape))
        if indices.ndim == 0:  # x[:, k] = v, not x[:, [k]] = v: v's first axis goes to axis
            perm = list(range(1, len(shape)))
            perm.insert(axis, 0)
            v = _ops.permute_dims(v, tuple(perm)) if _is_dispatched(v) else _np.moveaxis(
                v, 0, axis)
        m = _shape(v)[axis]
    else:
        v, m = values, indices.size
    v = _ops.broadcast_to(_cast(v, dtype), _with_axis(shape, axis, m))
    where_from = _np.insert(_np.arange(n), obj, _np.arange(n, n + m))
    return _take([arr, v], where_from, axis)


def delete(arr, obj, axis=None):
    """``np.delete`` with static positions ``obj`` (an int, slice, or sequence of ints
    or bools)."""
    obj = _concrete(obj)
    if not isinstance(obj, slice):
        _static_ints(obj, "delete: the positions")
    if not _nested_dispatched(arr):
        return _np.delete(arr, obj, axis)
    arr, axis = _flat_axis(_as_value(arr), axis)
    keep = _np.delete(_np.arange(_shape(arr)[axis]), obj)
    return _take([arr], keep, axis)


# -- pad --------------------------------------------------------------------------------
_PAD_KWARGS = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",),
    "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
}


def _as_pairs(x, ndim: int, as_index: bool = False) -> list:
    """NumPy's ``_as_pairs``: ``(before, after)`` per axis from a number, a pair, or
    one pair per axis (static values; ``None`` stays ``None``). As in NumPy, a number
    or a pair gives NumPy scalars, which type a ``linear_ramp`` (float64), and one
    pair per axis gives Python numbers, which take the array's dtype."""
    if x is None:
        return [(None, None)] * ndim
    x = _np.array(x)
    if as_index:
        x = _np.round(x).astype(_np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ShapeArgumentError("pad: index can't contain negative values")
            return [(x[0], x[0])] * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ShapeArgumentError("pad: index can't contain negative values")
            return [(x[0], x[1])] * ndim
    if as_index and x.size and x.min() < 0:
        raise ShapeArgumentError("pad: index can't contain negative values")
    return [tuple(p) for p in _np.broadcast_to(x, (ndim, 2)).tolist()]


def _value_pairs(v, ndim: int) -> list:
    """``_as_pairs`` for values that may be traced (``constant_values``, ``end_values``)."""
    if not _nested_dispatched(v):
        return _as_pairs(v, ndim)
    v = _as_value(v)
    shape = tuple(_shape(v))
    size = int(_np.prod(shape, dtype=_np.int64))
    if len(shape) < 3 and size == 1:
        s = _ops.reshape(v, ())
        return [(s, s)] * ndim
    if len(shape) < 3 and size == 2 and shape != (2, 1):
        r = _ops.reshape(v, (2,))
        return [(r[0], r[1])] * ndim
    b = _ops.broadcast_to(v, (ndim, 2))
    return [(b[i, 0], b[i, 1]) for i in range(ndim)]


def _pad_widths(pad_width, ndim: int) -> list:
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for ax, width in pad_width.items():
            seq[ax] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = seq
    pad_width = _static_ints(pad_width, "pad: pad_width")
    if pad_width.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    return [(int(b), int(a)) for b, a in _as_pairs(pad_width, ndim, as_index=True)]


def _pad_concat(x, axis, left, right):
    parts = [p for p in (left, x, right) if p is not None]
    return parts[0] if len(parts) == 1 else _ops.concatenate(*parts, axis=axis)


def _pad_odd(x, axis, before, after, include_edge):
    """NumPy's iterative ``reflect_type='odd'`` padding of one axis: each round
    reflects the values padded so far about the current edges, ``2 edge - x``."""
    n = _shape(x)[axis]
    cur, left, right = x, before, after
    while left > 0 or right > 0:
        size = _shape(cur)[axis]
        if include_edge:
            old, offset = size // n * n, 1
        else:
            old, offset = (size - 1) // (n - 1) * (n - 1), 0
        lchunk = rchunk = None
        if left > 0:
            c = min(old, left)
            chunk = _take([cur], _np.arange(c - offset, -offset, -1), axis)
            lchunk = 2 * _slice_axis(cur, axis, slice(0, 1)) - chunk
            left -= c
        if right > 0:
            c = min(old, right)
            chunk = _take([cur], _np.arange(size + offset - 2, size + offset - 2 - c, -1), axis)
            rchunk = 2 * _slice_axis(cur, axis, slice(size - 1, size)) - chunk
            right -= c
        cur = _pad_concat(cur, axis, lchunk, rchunk)
    return cur


def _pad_stat(x, axis, before, after, lengths, mode):
    n = _shape(x)[axis]
    ll, rl = (n if length is None or n < length else length for length in lengths)
    if (ll == 0 or rl == 0) and mode in ("maximum", "minimum"):
        raise ShapeArgumentError("pad: stat_length of 0 yields no value for padding")
    reduce = {"maximum": _ops.max, "minimum": _ops.min, "mean": _ops.mean}[mode]
    dtype = _dtype(x)

    def stat(lo, hi):
        s = reduce(_slice_axis(x, axis, slice(lo, hi)), axis, True)
        if mode == "mean" and dtype.kind in "iub":
            s = _ops.round(s)
        return _cast(s, dtype)

    ls = stat(0, ll)
    rs = ls if ll == rl == n else stat(n - rl, n)
    shape = tuple(_shape(x))
    return _pad_concat(
        x, axis,
        _ops.broadcast_to(ls, _with_axis(shape, axis, before)) if before else None,
        _ops.broadcast_to(rs, _with_axis(shape, axis, after)) if after else None)


def _pad_ramp(x, axis, before, after, ends):
    """NumPy's ``linear_ramp``: ``linspace(end, edge, width, endpoint=False)`` towards
    each edge (floored for integer arrays)."""
    shape, dtype = tuple(_shape(x)), _dtype(x)
    n = shape[axis]

    def ramp(end, edge, width, reverse):
        work = _np.result_type(_dtype(end) if _is_dispatched(end) else end, dtype, 0.0)
        k = _np.arange(width, dtype=work).reshape(_with_axis((1,) * len(shape), axis, width))
        edge = _cast(edge, work)
        end = end if not _is_dispatched(end) else _cast(end, work)
        r = k * ((edge - end) / width) + end
        if dtype.kind in "iu":
            r = _ops.floor(r)
        if reverse:
            r = _ops.flip(r, axis)
        return _cast(_ops.broadcast_to(r, _with_axis(shape, axis, width)), dtype)

    return _pad_concat(
        x, axis,
        ramp(ends[0], _slice_axis(x, axis, slice(0, 1)), before, False) if before else None,
        ramp(ends[1], _slice_axis(x, axis, slice(n - 1, n)), after, True) if after else None)


def pad(array, pad_width, mode="constant", **kwargs):
    """``np.pad``. Modes: constant (``constant_values`` a number, a pair or one pair
    per axis, possibly traced), edge, reflect and symmetric (``reflect_type`` even or
    odd), wrap, linear_ramp (``end_values``), maximum / minimum / mean
    (``stat_length``), empty (filled with 0 on traced values); ``pad_width`` in every
    NumPy form (a number, a pair, a pair per axis, a dict ``{axis: width}``). On traced
    values and tape tensors, mode median and a function as mode are not supported.
    Padding a traced array with zeros is one ``index_add`` into a zero array (its
    derivative is a slice of the cotangent); the other modes pad axis after axis, as
    NumPy does, with slices and ``concatenate``."""
    x, pad_width = _as_value(array), _concrete(pad_width)
    if not _is_dispatched(x) and not any(_nested_dispatched(v) for v in kwargs.values()):
        return _np.pad(x, pad_width, mode, **kwargs)
    if callable(mode):
        raise TraceError("pad: a function as mode works on NumPy arrays only")
    if mode not in _PAD_KWARGS:
        raise ShapeArgumentError(f"pad: mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ShapeArgumentError(f"pad: unsupported keyword arguments for mode '{mode}': "
                            f"{unsupported}")
    if mode == "median":
        raise TraceError("pad: mode 'median' is not supported on traced values and tape "
                         "tensors (chainrule has no median)")
    shape, dtype = tuple(_shape(x)), _dtype(x)
    nd = len(shape)
    widths = _pad_widths(pad_width, nd)
    out_shape = tuple(s + b + a for s, (b, a) in zip(shape, widths))
    if not any(b or a for b, a in widths):
        return x
    # a symbolic size (polymorphic_shapes) is taken as nonempty: NumPy's kernels check it
    size = int(_np.prod(shape, dtype=_np.int64)) if all(type(d) is int for d in shape) else 1
    if mode not in ("constant", "empty") and size == 0:
        for ax, (b, a) in enumerate(widths):
            if shape[ax] == 0 and (b or a):
                raise ShapeArgumentError(f"pad: can't extend empty axis {ax} using modes other "
                                    f"than 'constant' or 'empty'")
        mode = "empty"  # every padded value is in an empty array: any fill will do
    if mode in ("constant", "empty"):
        values = _value_pairs(kwargs.get("constant_values", 0), nd)
        static_zero = all(not _is_dispatched(v) and _np.all(_np.asarray(v) == 0)
                          for pair in values for v in pair)
        if (mode == "empty" or static_zero) and dtype.kind in "iuf":
            # one index_add into zeros: its derivative is a slice of the cotangent
            base = _filled(x, out_shape, 0, dtype)
            key = tuple(slice(b, -a if a else None) for b, a in widths)  # symbols too
            return _ops.index_update(_ops.index_add, base, key, x)
    cur = x
    for ax, (b, a) in enumerate(widths):
        if not (b or a):
            continue
        cshape = tuple(_shape(cur))
        n = cshape[ax]
        if isinstance(n, str) and mode not in ("constant", "empty"):
            raise ShapeArgumentError(
                f"pad: mode '{mode}' along axis {ax} of shape ({', '.join(map(str, shape))}), "
                f"whose size {n} is symbolic, is not supported (its values are gathered by "
                f"position); pad a static axis, or use mode 'constant'")
        if mode in ("constant", "empty"):
            vb, va = values[ax]
            cur = _pad_concat(
                cur, ax, _filled(cur, _with_axis(cshape, ax, b), vb, dtype) if b else None,
                _filled(cur, _with_axis(cshape, ax, a), va, dtype) if a else None)
        elif mode in ("edge", "wrap") or (
                mode in ("reflect", "symmetric")
                and (kwargs.get("reflect_type", "even") == "even" or n == 1)):
            index_mode = "edge" if n == 1 and mode != "wrap" else mode
            cur = _take([cur], _np.pad(_np.arange(n), (b, a), mode=index_mode), ax)
        elif mode in ("reflect", "symmetric"):
            if kwargs["reflect_type"] != "odd":
                raise ShapeArgumentError(f"pad: reflect_type must be 'even' or 'odd', got "
                                    f"{kwargs['reflect_type']!r}")
            cur = _cast(_pad_odd(cur, ax, b, a, mode == "symmetric"), dtype)
        elif mode == "linear_ramp":
            ends = _value_pairs(kwargs.get("end_values", 0), nd)[ax]
            cur = _pad_ramp(cur, ax, b, a, ends)
        else:
            lengths = _as_pairs(kwargs.get("stat_length"), nd, as_index=True)[ax]
            cur = _pad_stat(cur, ax, b, a, lengths, mode)
    return cur


__all__ = [
    "append", "delete", "fliplr", "flipud", "insert", "pad", "repeat", "roll", "rollaxis",
    "rot90", "tile",
]
