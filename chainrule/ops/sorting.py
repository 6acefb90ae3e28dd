"""Sorting and selection: ``sort`` and the index ops ``argsort`` (stable),
``argpartition`` and ``searchsorted``. The index ops are not differentiable
(their results are integers). ``sort`` is NumPy's sort; its derivative is that
of the gather ``take_along_axis(x, argsort(x))`` (the cotangent scattered back
through the permutation, see ``rules/sorting.py``), at every order: the
forward pass costs what ``np.sort`` costs, the permutation is computed only
when a derivative needs it. ``partition``, ``median``, ``quantile`` and
``unique`` are composites in ``chainrule.numpy`` that gather with these indices.

>>> import numpy as np
>>> argsort(np.array([3.0, 1.0, 2.0, 1.0]), 0)      # stable: ties keep their order
array([1, 3, 2, 0])
>>> searchsorted(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5]), "right")
array([2, 0])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import TensorType
from . import templates
from .common import NOT_YET_ON_ARRAY_API, define, normalize_axis, tensor_types

__all__ = ["argpartition", "argsort", "searchsorted", "sort"]

_INTP_IS_I64 = np.dtype(np.intp) == np.dtype(np.int64)


def _axis_normalize(name):
    def normalize(types, attrs):
        (t,) = tensor_types(name, types)
        if t.ndim == 0:
            raise TypeInferenceError(f"{name}: needs an array of rank >= 1, got {t!r} "
                                     f"(flatten it first)")
        out = dict(attrs)
        out["axis"] = normalize_axis(name, attrs["axis"], t.ndim)
        if "kth" in attrs:
            out["kth"] = _normalize_kth(name, attrs["kth"], t.shape[out["axis"]])
        return out

    return normalize


def _normalize_kth(name, kth, n):
    if isinstance(kth, np.ndarray):
        kth = kth.tolist()
    many = isinstance(kth, (tuple, list))
    values = list(kth) if many else [kth]
    out = []
    for k in values:
        if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)):
            raise TypeInferenceError(f"{name}: kth must be an int or a sequence of ints, "
                                     f"got {kth!r}")
        if not isinstance(n, int) or not -n <= k < n:
            raise TypeInferenceError(f"{name}: kth {k} is out of bounds for an axis of "
                                     f"size {n}")
        out.append(int(k) % n)
    return tuple(out) if many else out[0]


def _index_type(types, attrs):
    return TensorType(types[0].shape, "i64")


def _argsort_emit(e):
    axis = templates.int_literal(e.attrs["axis"])
    if axis is None or not _INTP_IS_I64:
        return None
    return f"np.argsort({e.args[0]}, axis={axis}, kind='stable')"


argsort = define(
    "argsort", _index_type,
    lambda x, axis: np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False),
    1, {"axis": REQUIRED}, _axis_normalize("argsort"), differentiable=False, fresh=True,
    aliases=False, emit=_argsort_emit,
    doc="The indices that sort x along axis, stably (ties keep their order), as int64.")


def _sort_emit(e):
    axis = templates.int_literal(e.attrs["axis"])
    return None if axis is None else f"np.sort({e.args[0]}, axis={axis})"


sort = define(
    "sort", lambda types, attrs: types[0], lambda x, axis: np.sort(x, axis=axis), 1,
    {"axis": REQUIRED}, _axis_normalize("sort"), fresh=True, aliases=False, emit=_sort_emit,
    doc="x sorted along axis (NumPy's sort); differentiable, the derivative routes each "
        "output's cotangent to the element that landed there (ties: in stable order).")


def _argpartition_emit(e):
    axis, kth = templates.int_literal(e.attrs["axis"]), templates.literal(e.attrs["kth"])
    if axis is None or kth is None or not _INTP_IS_I64:
        return None
    return f"np.argpartition({e.args[0]}, {kth}, axis={axis})"


argpartition = define(
    "argpartition", _index_type,
    lambda x, kth, axis: np.argpartition(x, kth, axis=axis).astype(np.int64, copy=False),
    1, {"kth": REQUIRED, "axis": REQUIRED}, _axis_normalize("argpartition"),
    differentiable=False, fresh=True, aliases=False, emit=_argpartition_emit,
    doc="NumPy's argpartition (introselect): the indices that put the kth element where "
        "sorting would, the smaller ones before it and the larger ones after, as int64.",
    kernels=NOT_YET_ON_ARRAY_API)


def _searchsorted_normalize(types, attrs):
    a, v = tensor_types("searchsorted", types)
    if a.ndim != 1:
        raise TypeInferenceError(f"searchsorted: the sorted array must be 1-D, got {a!r}")
    side = attrs["side"]
    if side not in ("left", "right"):
        raise TypeInferenceError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return {"side": str(side)}


def _searchsorted_emit(e):
    if not _INTP_IS_I64 or e.attrs["side"] not in ("left", "right"):
        return None
    a, v = e.args
    return f"np.searchsorted({a}, {v}, side={e.attrs['side']!r})"


searchsorted = define(
    "searchsorted", lambda types, attrs: TensorType(types[1].shape, "i64"),
    lambda a, v, side: np.asarray(np.searchsorted(a, v, side=side), dtype=np.int64),
    2, {"side": "left"}, _searchsorted_normalize, differentiable=False, aliases=False,
    emit=_searchsorted_emit,
    doc="Where v's elements go in the sorted 1-D array a to keep it sorted (int64).",
    kernels=NOT_YET_ON_ARRAY_API)
