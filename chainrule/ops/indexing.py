"""Indexing: ``index`` (``x[key]``, basic and integer-array indexing) and its
adjoint ``index_add`` (``base.at[key].add(g)``), with NumPy semantics.

The key is static (ints, slices, None) except for integer-array operands,
which may be traced values, as in ``logits[np.arange(B), labels]``.

>>> import numpy as np
>>> from chainrule.ir.indexing import ArrayIndex, Slice
>>> x = np.arange(12.0).reshape(3, 4)
>>> index(x, np.array([2, 0]), key=(ArrayIndex(0), Slice(1, None, 2)))
array([[ 9., 11.],
       [ 1.,  3.]])
"""

from __future__ import annotations

import numpy as np

from ..errors import TraceError, TypeInferenceError
from ..ir import dims
from ..ir import printer as _printer
from ..ir.indexing import ArrayIndex, Slice, key_to_python
from ..ir.nodes import Constant
from ..ir.op import REQUIRED, is_dispatched
from ..ir.types import TensorType
from . import templates
from .common import broadcast_shapes, define, tensor_types


def canonical_slice(s: Slice, n) -> tuple[Slice, int | str]:
    """A canonical Slice (same elements => same Slice) and the number of elements."""
    if s.step == 0:
        raise TypeInferenceError("slice step cannot be zero")
    if not isinstance(n, int):
        return _symbolic_slice(s, n)
    start, stop, step = slice(s.start, s.stop, s.step).indices(n)
    count = len(range(start, stop, step))
    if count == 0:
        return Slice(0, 0, None), 0
    last = start + (count - 1) * step
    if step > 0:
        return Slice(start or None, None if last + 1 >= n else last + 1,
                     None if step == 1 else step), count
    return Slice(None if start == n - 1 else start, None if last - 1 < 0 else last - 1,
                 step), count


def _symbolic_slice(s: Slice, n) -> tuple[Slice, int | str]:
    """A slice of an axis of symbolic size ``n`` and its length, an expression of ``n``
    (``x[1:]`` has ``n - 1`` elements, ``x[::2]`` has ``(n + 1) // 2``): the start
    counts from the front (>= 0), the stop from the back (< 0, or none), so that the
    length has no min/max; it assumes n is at least the bounds' sum (``dims`` reports a
    negative size where one is used as a shape)."""
    step = 1 if s.step is None else int(s.step)
    start = 0 if s.start is None else int(s.start)
    stop = 0 if s.stop is None else int(s.stop)
    if step < 0 and s.start is None and s.stop is None:  # x[::-k]: every k-th, reversed
        return Slice(None, None, step), dims.floordiv(dims.add(n, -step - 1), -step)
    if step < 0 or start < 0 or stop > 0 or (s.stop is not None and stop == 0):
        raise TypeInferenceError(
            f"slicing the symbolic dimension {n} with {_slice_text(s)} is not supported: its "
            f"length would depend on whether {n} is larger than the bounds (a min/max); "
            f"count the start from the front and the stop from the back (x[1:], x[2:-1], "
            f"x[::2], x[::-1]), or index it with integers or an index array")
    length = dims.floordiv(dims.add(n, stop - start + step - 1), step)
    return Slice(start or None, s.stop, None if step == 1 else step), length


def _slice_text(s: Slice) -> str:
    parts = ["" if v is None else str(v) for v in (s.start, s.stop, s.step)]
    return "x[" + ":".join(parts if s.step is not None else parts[:2]) + "]"


def _expand_key(name, key, ndim):
    key = tuple(key) if isinstance(key, tuple) else (key,)
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise TypeInferenceError(f"{name}: an index can only have one ellipsis (...)")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > ndim:
        raise TypeInferenceError(
            f"{name}: too many indices ({consumed}) for an array of rank {ndim}")
    if n_ell:
        i = key.index(Ellipsis)
        key = key[:i] + (Slice(None, None, None),) * (ndim - consumed) + key[i + 1:]
    return key


def _normalize_key(name, x: TensorType, key, index_types):
    key = _expand_key(name, key, x.ndim)
    out, dim = [], 0
    for k in key:
        if isinstance(k, slice):
            k = Slice(k.start, k.stop, k.step)
        if k is None:
            out.append(None)
            continue
        n = x.shape[dim]
        if isinstance(k, (bool, np.bool_)):
            raise TypeInferenceError(f"{name}: a bool scalar is not a valid index")
        if isinstance(k, (int, np.integer)) and not isinstance(n, int):
            out.append(int(k))  # a symbolic axis: NumPy checks the bounds when it runs
        elif isinstance(k, (int, np.integer)):
            if not -n <= k < n:
                raise TypeInferenceError(
                    f"{name}: index {k} is out of bounds for axis {dim} of size {n} ({x!r})")
            out.append(int(k) % n)
        elif isinstance(k, Slice):
            out.append(canonical_slice(k, n)[0])
        elif isinstance(k, ArrayIndex):
            it = index_types[k.position]
            if it.dtype.is_bool:
                raise TypeInferenceError(
                    f"{name}: boolean mask indexing gives a shape that depends on the data; "
                    f"use where(mask, x, 0) instead")
            if not it.dtype.is_int:
                raise TypeInferenceError(f"{name}: index arrays must be integers, got {it!r}")
            out.append(k)
        else:
            raise TypeInferenceError(f"{name}: unsupported index entry {k!r}")
        dim += 1
    while out and out[-1] == Slice(None, None, None):
        out.pop()
    return tuple(out)


def indexed_shape(name, x: TensorType, key, index_types) -> tuple:
    """NumPy's result shape of x[key] (advanced indices broadcast together and go
    where the first one is when they are adjacent, else first)."""
    basic, adv_pos, adv_shapes, dim = [], [], [], 0
    has_arrays = any(isinstance(k, ArrayIndex) for k in key)
    for pos, k in enumerate(key):
        if k is None:
            basic.append((pos, 1))
            continue
        if isinstance(k, Slice):
            basic.append((pos, canonical_slice(k, x.shape[dim])[1]))
        elif isinstance(k, ArrayIndex) or has_arrays:
            adv_pos.append(pos)
            adv_shapes.append(index_types[k.position] if isinstance(k, ArrayIndex)
                              else TensorType((), "i64"))
        dim += 1
    rest = list(x.shape[dim:])
    if not adv_pos:
        return tuple([d for _, d in basic] + rest)
    b = list(broadcast_shapes(name, adv_shapes))
    contiguous = adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
    if not contiguous:
        return tuple(b + [d for _, d in basic] + rest)
    before = [d for p, d in basic if p < adv_pos[0]]
    after = [d for p, d in basic if p > adv_pos[-1]]
    return tuple(before + b + after + rest)


def _index_normalize(types, attrs):
    if not types:
        raise TypeInferenceError("index: needs the array to index")
    x, *idx = tensor_types("index", types)
    return {"key": _normalize_key("index", x, attrs["key"], idx)}


def _index_type(types, attrs):
    x, *idx = types
    return TensorType(indexed_shape("index", x, attrs["key"], idx), x.dtype)


def _index_kernel(x, *arrays, key):
    return x[key_to_python(key, arrays)]


_FULL = Slice(None, None, None)


def _index_emit(e):
    """``x[key]``; a gather along one axis (full slices, then one array of integer
    positions, then full slices) as ``np.take``, which does it without the general
    machinery of advanced indexing: ``x[:, idx]`` of (28, 544, 3) by 100 positions,
    12.7 us, ``np.take(x, idx, axis=1)`` 5.6 us; the same values, the same errors."""
    key = e.attrs["key"]
    arrays = [k for k in key if type(k) is ArrayIndex]
    if len(arrays) == 1 and all(k == _FULL for k in key if type(k) is not ArrayIndex):
        t = e.types[1 + arrays[0].position]
        if t.ndim >= 1 and t.dtype.numpy.kind in "iu":
            axis = key.index(arrays[0])
            return f"np.take({e.args[0]}, {e.args[1 + arrays[0].position]}, axis={axis})"
    text = templates.key_text(key, e.args[1:])
    return None if text is None else f"{e.args[0]}[{text}]"


index = define("index", _index_type, _index_kernel, None, {"key": REQUIRED}, _index_normalize,
               linear=(0,), emit=_index_emit)


def advanced(key) -> bool:
    """Whether an ``index`` key holds an index array: NumPy then copies, never views."""
    return any(type(k) is ArrayIndex for k in key)


def _index_add_normalize(types, attrs):
    if len(types) < 2:
        raise TypeInferenceError("index_add: needs the base array and the value to add")
    base, g, *idx = tensor_types("index_add", types)
    return {"key": _normalize_key("index_add", base, attrs["key"], idx)}


def _index_add_type(types, attrs):
    base, g, *idx = types
    target = TensorType(indexed_shape("index_add", base, attrs["key"], idx), base.dtype)
    try:
        fits = broadcast_shapes("index_add", [target, g]) == target.shape
    except TypeInferenceError:
        fits = False
    if not fits:
        raise TypeInferenceError(
            f"index_add: value of type {g!r} does not broadcast to the indexed shape "
            f"{target.shape} of {base!r}")
    return base


def _index_add_kernel(base, g, *arrays, key):
    out = np.array(base, copy=True)
    k = key_to_python(key, arrays)
    if arrays:
        np.add.at(out, k, g)
    else:
        out[k] += g
    return out


def _unique_index(e) -> bool:
    """Whether the index arrays of ``index_add`` provably select distinct positions:
    they are integers (0-d: one position; a loop's step ``x.at[t].add(g)``), or one of
    them is a constant of distinct non-negative integers with the shape all of them
    broadcast to (and the value has the base's dtype), so ``t[key] += g`` adds exactly
    what ``np.add.at`` adds."""
    types = e.types[2:]
    if e.types[1].dtype != e.types[0].dtype or any(
            t.dtype.numpy.kind not in "iu" or templates.static_shape(t) is None for t in types):
        return False
    if all(t.shape == () for t in types):  # integers, not arrays: one position
        return True
    try:
        shape = np.broadcast_shapes(*(templates.static_shape(t) for t in types))
    except ValueError:
        return False
    for a in e.atoms[2:]:
        if isinstance(a, Constant) and a.data.shape == shape and a.data.size:
            flat = a.data.reshape(-1)
            if flat.min() >= 0 and np.unique(flat).size == flat.size:
                return True
    return False


def _index_add_emit(e):
    base, g, *arrays = e.args
    key = templates.key_text(e.attrs["key"], arrays)
    if key is None:
        return None
    t = e.target
    if 0 in e.reuse:
        lines = [f"{t} = {base}"]
    else:
        lines = [f"{t} = np.array({base}, copy=True)"]
    if arrays and not _unique_index(e):
        lines.append(f"np.add.at({t}, np.s_[{key}], {g})")
    else:
        lines.append(f"{t}[{key}] += {g}")
    return lines


index_add = define("index_add", _index_add_type, _index_add_kernel, None, {"key": REQUIRED},
                   _index_add_normalize, linear=(0, 1), emit=_index_add_emit, fresh=True,
                   aliases=False, inplace=True)


# -- x[key] on any value ------------------------------------------------------------------
def _key_entry(k, arrays):
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, (bool, np.bool_)):
        raise TraceError("indexing with a Python bool is not supported")
    if isinstance(k, (int, np.integer)):
        return int(k)
    if isinstance(k, slice):
        for bound in (k.start, k.stop, k.step):
            if bound is not None and not isinstance(bound, (int, np.integer)):
                raise TraceError(f"slice bounds must be Python ints, got {bound!r}; "
                                 f"for a traced start use an index array")
        return Slice(*(None if v is None else int(v) for v in (k.start, k.stop, k.step)))
    if not is_dispatched(k):
        k = np.asarray(k)
    elif (mask := _captured_mask(k)) is not None:
        k = mask
    if isinstance(k, np.ndarray) and k.dtype == bool:
        return [_key_entry(nz, arrays) for nz in np.nonzero(k)]
    arrays.append(k)
    return ArrayIndex(len(arrays) - 1)


def _captured_mask(k) -> np.ndarray | None:
    """The value of a traced boolean index that is an array the function reads from
    outside its arguments (guarded by the trace: ``Trace.captured_mask``), else None."""
    find = getattr(getattr(k, "tracer", None), "captured_mask", None)
    dtype = getattr(getattr(k, "type", None), "dtype", None)
    if find is None or dtype is None or not dtype.is_bool:  # integer indices: nothing to find
        return None
    return find(k.variable)


def _key(key) -> tuple[tuple, list]:
    """The static key (ints, Slices, None, ArrayIndex) and the index arrays of ``key``."""
    arrays: list = []
    entries = []
    for k in key if isinstance(key, tuple) else (key,):
        e = _key_entry(k, arrays)
        entries.extend(e if isinstance(e, list) else [e])
    return tuple(entries), arrays


def getitem(x, key):
    """``x[key]`` with NumPy semantics: basic slicing and integer-array indexing."""
    keys = key if isinstance(key, tuple) else (key,)
    if not is_dispatched(x, *keys):
        return np.asarray(x)[key]
    entries, arrays = _key(key)
    return index(x, *arrays, key=entries)


def index_update(op, x, key, value):
    """``op(x, value, *index arrays, key=...)`` for a Python index ``key``: the
    functional updates ``x.at[key].add(value)`` and the like."""
    entries, arrays = _key(key)
    return op(x, value, *arrays, key=entries)


def _print_index(call, args):
    return f"{args[0]}[{_printer.format_index_key(call.attrs['key'], args[1:])}]"


def _print_index_add(call, args):
    key = _printer.format_index_key(call.attrs["key"], args[2:])
    return f"{args[0]}.at[{key}].add({args[1]})"


_printer.SPECIAL_PRINT["index"] = _print_index
_printer.SPECIAL_PRINT["index_add"] = _print_index_add
