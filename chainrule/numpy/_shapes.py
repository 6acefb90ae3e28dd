"""User-namespace array assembly: ``array`` / ``asarray`` / ``stack`` /
``concatenate`` of nested lists mixing traced values, tape tensors and numbers,
the ``*split`` / ``*stack`` / ``atleast_*`` families, and the helpers the
rearranging (``_rearrange``) and selecting (``_select``) modules share.

Every function is a composite of the basic ops (``concatenate``, ``index``
with slices or integer arrays, ``index_add``, ``reshape``, ``broadcast_to``,
``permute_dims``, ``flip``, ``where``), so it needs no derivative rule and
differentiates to every order. On NumPy arrays (nothing traced, no tape
tensor) the functions call NumPy itself, so concrete values follow NumPy
exactly; the composites reproduce NumPy's semantics (negative axes, 0-d and
empty arrays, dtype promotion, NumPy's argument forms) on traced values and
tape tensors.

A static selection along an axis (a padded border, a rolled or repeated
axis, what ``delete`` keeps) is cut into runs of evenly spaced positions, each
one slice (a view, whose adjoint adds into a slice); only a selection with
many runs becomes an integer-array gather (whose adjoint is ``np.add.at``,
several times slower).

>>> import numpy as np
>>> import chainrule as cr
>>> f = lambda x, y: (array([[x, 1.0], [0.0, y]]) @ np.array([1.0, 2.0])).sum()
>>> [float(g) for g in cr.grad(f, argnums=(0, 1))(np.float64(3.0), np.float64(4.0))]
[1.0, 2.0]
"""

from __future__ import annotations

import numpy as _np
from numpy.lib.array_utils import normalize_axis_index as _axis_index

from .. import ops as _ops
from ..errors import ConcretizationError, InvalidValueError, TraceError
from ..ir.op import is_dispatched as _is_dispatched
from ._core import _shape, exposes


class ShapeArgumentError(InvalidValueError):
    """An argument NumPy would refuse with a ValueError (a bad mode, sizes that do not
    match), met on traced values or tape tensors."""


# -- helpers ------------------------------------------------------------------------------
def _nested_dispatched(obj) -> bool:
    """Whether ``obj`` is, or a nested list/tuple holds, a traced value or tape tensor."""
    if _is_dispatched(obj):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_nested_dispatched(e) for e in obj)
    return False


def _ndim(x) -> int:
    return len(_shape(x))


def _dtype(x) -> _np.dtype:
    """The dtype NumPy's ``np.asarray`` gives ``x`` (Python numbers at full width)."""
    if _is_dispatched(x):
        return _np.dtype(x.dtype)
    return _np.asarray(x).dtype


def _cast(x, dtype):
    dtype = _np.dtype(dtype)
    if _is_dispatched(x):
        return x if _np.dtype(x.dtype) == dtype else _ops.astype(x, dtype)
    return _np.asarray(x).astype(dtype, copy=False)


def _as_value(x):
    """A traced value or tape tensor as it is; anything else as a NumPy array
    (nested lists holding traced values are assembled with ``array``)."""
    if _is_dispatched(x):
        return x
    if isinstance(x, (list, tuple)) and _nested_dispatched(x):
        return array(x)
    return _np.asarray(x)


def _with_ndmin(x, ndmin: int):
    """``x`` with leading axes of length 1 up to rank ``ndmin`` (NumPy's ``ndmin``)."""
    shape = _shape(x)
    if len(shape) >= ndmin:
        return x
    return _ops.reshape(x, (1,) * (ndmin - len(shape)) + tuple(shape))


def _slice_axis(x, axis: int, sl: slice):
    return _ops.getitem(x, (slice(None),) * axis + (sl,))


def _concrete(value):
    """Tape tensors (eager, so concrete) as their values, also inside lists and tuples."""
    get = getattr(value, "_cr_value", None)
    if get is not None:
        return get()
    if isinstance(value, (list, tuple)) and _nested_dispatched(value):
        return type(value)(_concrete(v) for v in value)
    return value


def _static_int(value, what: str) -> int:
    value = _concrete(value)
    if _is_dispatched(value):
        raise ConcretizationError(
            f"{what} must be a static Python/NumPy int: the result's shape depends on it "
            f"(a traced value has no value while tracing)")
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, _np.integer)):
        raise TypeError(f"{what} must be an int, got {value!r}")
    return int(value)


def _static_ints(value, what: str) -> _np.ndarray:
    value = _concrete(value)
    if _nested_dispatched(value):
        raise ConcretizationError(
            f"{what} must be static: the result's shape depends on them, and a traced "
            f"value has no value while tracing (under jit, an array the function reads from "
            f"outside its arguments is an input too: write the positions as a list, tuple "
            f"or int)")
    return _np.asarray(value)


def _runs(block: _np.ndarray, local: _np.ndarray, limit: int) -> list | None:
    """The positions ``local`` (in blocks ``block``) cut into few runs of evenly spaced
    positions of one block, longest first: ``(block, start, step, length)`` in order;
    None if there are more than ``limit`` runs."""
    n = len(local)
    if n == 0:
        return []
    d = _np.diff(local)
    same = block[1:] == block[:-1]
    # pairs (k, k+1) in one block with the step of the pair before continue its stretch
    cont = _np.zeros(max(n - 1, 0), bool)
    if n > 2:
        cont[1:] = same[1:] & same[:-1] & (d[1:] == d[:-1])
    starts = _np.flatnonzero(~cont)  # first pair of each stretch of equal steps
    if len(starts) > 4 * limit + 4:
        return None
    ends = _np.append(starts[1:] - 1, n - 2)
    # stretches of pairs as element ranges [lo, hi] (inclusive), pairs across blocks dropped
    stretches = [(int(a), int(b) + 1) for a, b in zip(starts.tolist(), ends.tolist())
                 if same[a]]
    out = []  # (first position, run)

    def cover(lo, hi):  # the elements lo..hi (inclusive), longest stretch first
        if lo > hi:
            return True
        best = None
        for a, b in stretches:
            a, b = max(a, lo), min(b, hi)
            if b > a and (best is None or b - a > best[1] - best[0]):
                best = (a, b)
        if best is None:  # single elements
            if hi - lo + 1 + len(out) > limit:
                return False
            out.extend((i, (int(block[i]), int(local[i]), 1, 1)) for i in range(lo, hi + 1))
            return True
        a, b = best
        if len(out) >= limit:
            return False
        out.append((a, (int(block[a]), int(local[a]), int(d[a]), b - a + 1)))
        return cover(lo, a - 1) and cover(b + 1, hi)

    if not cover(0, n - 1):
        return None
    return [run for _, run in sorted(out)]


_MAX_RUNS = 8


def _take(blocks: list, idx, axis: int):
    """``concatenate(blocks, axis)`` at the static positions ``idx`` along ``axis``:
    one slice (or broadcast, for a repeated position) per run of evenly spaced
    positions, joined by ``concatenate``; an integer-array gather if there are many."""
    idx = _np.asarray(idx, dtype=_np.int64).reshape(-1)
    sizes = [_shape(b)[axis] for b in blocks]
    offsets = _np.concatenate([[0], _np.cumsum(sizes)]).astype(_np.int64)
    block = _np.searchsorted(offsets, idx, side="right") - 1
    block = _np.minimum(block, len(blocks) - 1)
    local = idx - offsets[block]
    runs = _runs(block, local, _MAX_RUNS)
    if runs is None:
        src = blocks[0] if len(blocks) == 1 else _ops.concatenate(*blocks, axis=axis)
        return _ops.getitem(src, (slice(None),) * axis + (idx,))
    if not runs:
        return _slice_axis(blocks[0], axis, slice(0, 0))
    pieces = []
    for b, start, step, length in runs:
        src, n = blocks[b], sizes[b]
        if step == 0 and length > 1:
            one = _slice_axis(src, axis, slice(start, start + 1))
            shape = list(_shape(one))
            shape[axis] = length
            pieces.append(_ops.broadcast_to(one, tuple(shape)))
            continue
        if length == 1:
            sl = slice(start, start + 1)
        elif step > 0:
            sl = slice(start, start + step * (length - 1) + 1, step)
        else:
            stop = start + step * (length - 1) - 1
            sl = slice(start, None if stop < 0 else stop, step)
        if sl == slice(0, n, 1) or sl == slice(0, n):
            pieces.append(src)
        else:
            pieces.append(_slice_axis(src, axis, sl))
    return pieces[0] if len(pieces) == 1 else _ops.concatenate(*pieces, axis=axis)


def _filled(like, shape: tuple, value, dtype):
    """An array of ``shape`` and ``dtype`` filled with ``value`` (a static number or a
    traced scalar), made in ``like``'s trace (so no constant of that size is embedded)."""
    shape = tuple(d if isinstance(d, str) else int(d) for d in shape)  # symbols stay
    if _is_dispatched(value):
        return _ops.broadcast_to(_cast(value, dtype), shape)
    value = _np.asarray(value).astype(dtype).item()
    if not _is_dispatched(like):
        return _np.full(shape, value, dtype)
    seed = like
    if _ndim(like):
        seed = (_ops.getitem(like, (0,) * _ndim(like)) if 0 not in _shape(like)
                else _ops.sum(like))
    return _ops.broadcast_to(_ops.full_like(seed, value, dtype), shape)


def _with_axis(shape, axis: int, n: int) -> tuple:
    out = list(shape)
    out[axis] = n
    return tuple(out)


# -- array, asarray, stack, concatenate ---------------------------------------------------
def _leaf_dtypes(obj, out: list) -> list:
    if _is_dispatched(obj):
        out.append(_np.dtype(obj.dtype))
    elif isinstance(obj, (list, tuple)):
        for e in obj:
            _leaf_dtypes(e, out)
    else:
        out.append(_np.asarray(obj).dtype)
    return out


def _assemble(obj, dtype):
    if _is_dispatched(obj):
        return _cast(obj, dtype)
    if isinstance(obj, (list, tuple)) and _nested_dispatched(obj):
        parts = [_assemble(e, dtype) for e in obj]
        shapes = sorted({tuple(_shape(p)) for p in parts})
        if len(shapes) > 1:
            raise ShapeArgumentError(f"array: the nested sequence is inhomogeneous: its elements "
                                f"have the shapes {shapes}")
        return _stack_values(parts, 0)
    return _np.asarray(obj, dtype=dtype)


def array(object, dtype=None, *, copy=True, order="K", ndmin=0):  # noqa: A002 - NumPy's name
    """``np.array``; nested lists and tuples may mix traced values, tape tensors, arrays
    and Python numbers (``array([[x, 1.0], [0.0, y]])``), typed as NumPy types the
    same nesting of arrays (Python numbers at full width)."""
    if not _nested_dispatched(object):
        return _np.array(object, dtype=dtype, copy=copy, order=order, ndmin=ndmin)
    if dtype is None:
        dtype = _np.result_type(*_leaf_dtypes(object, []))
    return _with_ndmin(_assemble(object, _np.dtype(dtype)), ndmin)


def asarray(a, dtype=None, order=None, *, copy=None):
    """``np.asarray``: ``array`` without a copy (chainrule values are immutable)."""
    if not _nested_dispatched(a):
        return _np.asarray(a, dtype=dtype, order=order, copy=copy)
    return array(a, dtype)


def _stack_values(arrays: list, axis: int):
    axis = _axis_index(axis, _ndim(arrays[0]) + 1)
    return _ops.concatenate(*[_ops.expand_dims(a, axis) for a in arrays], axis=axis)


def _check_cast(arrays, dtype, casting, name):
    if dtype is None:
        return arrays
    for a in arrays:
        if not _np.can_cast(_dtype(a), dtype, casting=casting):
            raise TypeError(f"{name}: cannot cast array data from {_dtype(a)} to "
                            f"{_np.dtype(dtype)} according to the rule {casting!r}")
    return [_cast(a, dtype) for a in arrays]


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``np.stack``: the arrays (array_likes, traced values, tape tensors) along a new axis."""
    arrays = [_as_value(a) for a in arrays]
    if not any(_is_dispatched(a) for a in arrays):
        return _np.stack(arrays, axis=axis, out=out, dtype=dtype, casting=casting)
    _no_out(out, "stack")
    if not arrays:
        raise ShapeArgumentError("stack: need at least one array to stack")
    shapes = sorted({tuple(_shape(a)) for a in arrays})
    if len(shapes) > 1:
        raise ShapeArgumentError(f"stack: all input arrays must have the same shape, got {shapes}")
    return _stack_values(_check_cast(arrays, dtype, casting, "stack"), axis)


def _no_out(out, name):
    if out is not None:
        raise TraceError(f"{name}: out= is not supported on chainrule values (they are "
                         f"immutable); use the returned array")


@exposes(_ops.concatenate)
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``np.concatenate`` (``axis=None`` flattens the arrays first)."""
    arrays = [_as_value(a) for a in arrays]
    if not any(_is_dispatched(a) for a in arrays):
        return _np.concatenate(arrays, axis=axis, out=out, dtype=dtype, casting=casting)
    _no_out(out, "concatenate")
    if axis is None:
        arrays, axis = [_ops.reshape(a, (-1,)) for a in arrays], 0
    return _ops.concatenate(*_check_cast(arrays, dtype, casting, "concatenate"), axis=axis)


# -- split ----------------------------------------------------------------------------
def _split(ary, indices_or_sections, axis, equal: bool, name: str) -> list:
    x, indices_or_sections = _as_value(ary), _concrete(indices_or_sections)
    if not _is_dispatched(x):
        fn = _np.split if equal else _np.array_split
        return list(fn(x, indices_or_sections, axis))
    shape = _shape(x)
    axis = _axis_index(axis, len(shape))
    n = shape[axis]
    if _np.ndim(indices_or_sections) == 0 and not _is_dispatched(indices_or_sections):
        sections = _static_int(indices_or_sections, f"{name}: the number of sections")
        if sections <= 0:
            raise ShapeArgumentError(f"{name}: number sections must be larger than 0.")
        if equal and n % sections:
            raise ShapeArgumentError(f"{name}: array split does not result in an equal division "
                                f"({n} into {sections})")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        points = _np.cumsum(sizes)[:-1].tolist()
    else:
        points = [int(p) for p in _static_ints(indices_or_sections, f"{name}: the indices")]
    if all(0 <= p <= n for p in points) and points == sorted(points):
        return list(_ops.split(x, indices_or_sections=tuple(points), axis=axis))
    bounds = [0, *points, n]  # NumPy slices [lo:hi] with Python's rules otherwise
    return [_slice_axis(x, axis, slice(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]


@exposes(_ops.split)
def split(ary, indices_or_sections, axis=0):
    """``np.split``: equal sections (an int) or at the given indices; a list."""
    return _split(ary, indices_or_sections, axis, True, "split")


def array_split(ary, indices_or_sections, axis=0):
    """``np.array_split``: like ``split``, an int need not divide the axis (the first
    ``n % sections`` parts get one more element)."""
    return _split(ary, indices_or_sections, axis, False, "array_split")


def hsplit(ary, indices_or_sections):
    nd = _ndim(_as_value(ary))
    if nd == 0:
        raise ShapeArgumentError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if nd > 1 else 0)


def vsplit(ary, indices_or_sections):
    if _ndim(_as_value(ary)) < 2:
        raise ShapeArgumentError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    if _ndim(_as_value(ary)) < 3:
        raise ShapeArgumentError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


# -- atleast_*, *stack ------------------------------------------------------------------
def _atleast(a, n: int):
    a = _as_value(a)
    if not _is_dispatched(a):
        return (_np.atleast_1d, _np.atleast_2d, _np.atleast_3d)[n - 1](a)
    shape = tuple(_shape(a))
    if len(shape) >= n:
        return a
    if n == 3 and len(shape) == 1:
        return _ops.reshape(a, (1, shape[0], 1))
    if n == 3 and len(shape) == 2:
        return _ops.reshape(a, (*shape, 1))
    return _with_ndmin(a, n)


def _atleast_all(arys, n):
    out = tuple(_atleast(a, n) for a in arys)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """``np.atleast_1d``: one array for one argument, else a tuple."""
    return _atleast_all(arys, 1)


def atleast_2d(*arys):
    """``np.atleast_2d``: a 1-d ``(n,)`` becomes ``(1, n)``."""
    return _atleast_all(arys, 2)


def atleast_3d(*arys):
    """``np.atleast_3d``: ``(n,)`` becomes ``(1, n, 1)``, ``(m, n)`` becomes ``(m, n, 1)``."""
    return _atleast_all(arys, 3)


def _sequence(tup, name):
    """The arrays to stack: a list or tuple, or an array (NumPy iterates its first axis,
    so ``np.vstack(x)`` of a 1-d x is a column)."""
    if isinstance(tup, _np.ndarray) or _is_dispatched(tup):
        if not _shape(tup):
            raise TypeError(f"{name}: iteration over a 0-d array")
        return [tup[i] for i in range(_shape(tup)[0])]
    if not isinstance(tup, (list, tuple)):
        raise TypeError(f"{name}: arrays to stack must be passed as a sequence (a list or "
                        f"tuple), got {type(tup).__name__}")
    return tup


def hstack(tup, *, dtype=None, casting="same_kind"):
    """``np.hstack``: along axis 1, or 0 for 1-d arrays."""
    arrs = [_atleast(a, 1) for a in _sequence(tup, "hstack")]
    axis = 0 if arrs and _ndim(arrs[0]) == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """``np.vstack``: along axis 0, 1-d arrays as rows."""
    arrs = [_atleast(a, 2) for a in _sequence(tup, "vstack")]
    return concatenate(arrs, 0, dtype=dtype, casting=casting)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    """``np.row_stack``, NumPy's deprecated name of ``vstack``."""
    return vstack(tup, dtype=dtype, casting=casting)


def dstack(tup):
    """``np.dstack``: along axis 2, after ``atleast_3d``."""
    arrs = [_atleast(a, 3) for a in _sequence(tup, "dstack")]
    return concatenate(arrs, 2)


def column_stack(tup):
    """``np.column_stack``: 1-d arrays as columns, then along axis 1."""
    arrs = []
    for v in _sequence(tup, "column_stack"):
        v = _as_value(v)
        if _ndim(v) < 2:
            v = _ops.reshape(v, (-1, 1)) if _is_dispatched(v) else _np.array(v, ndmin=2).T
        arrs.append(v)
    return concatenate(arrs, 1)


__all__ = [
    "array", "array_split", "asarray", "atleast_1d", "atleast_2d", "atleast_3d",
    "column_stack", "concatenate", "dsplit", "dstack", "hsplit", "hstack", "row_stack",
    "split", "stack", "vsplit", "vstack",
]
