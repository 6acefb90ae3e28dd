"""NumPy's signatures for the reduction ops: ``sum``, ``prod``, ``mean``, ``max``/``amax``,
``min``/``amin``, ``any``, ``all`` take ``(a, axis=None, dtype=None, out=None,
keepdims=False, initial=..., where=...)`` as NumPy's do (``np.prod(shape, dtype=int)``
in autograd programs), and ``cumsum``/``cumprod`` take ``dtype``.

``dtype`` converts the input first (NumPy accumulates in it); ``initial`` joins the
reduction as one more element (so ``max(x, initial=0)`` of an empty ``x`` is 0);
``where`` reduces only the selected elements (the others replaced by the reduction's
identity; ``max``/``min`` then need ``initial``, as in NumPy; ``mean`` divides by the
number selected). ``out`` is refused: chainrule values are immutable.

>>> import numpy as np
>>> int(prod((2, 3, 4), dtype=int))
24
>>> float(max(np.array([-3.0, -1.0]), initial=0.0))
0.0
>>> float(sum(np.array([1.0, 2.0, 3.0]), where=np.array([True, False, True])))
4.0
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..ops.reduction import all as _all_op
from ..ops.reduction import any as _any_op
from ._core import exposes
from ._shapes import _as_value

__all__ = ["all", "amax", "amin", "any", "max", "mean", "min", "prod", "sum"]

_NOVALUE = _np._NoValue  # NumPy's own marker: "initial" / "where" not given


def _asarray(a):
    """A traced value or tape tensor as it is, lists holding them assembled (``np.mean([x,
    x + 2])``), anything else a NumPy array."""
    return _as_value(a)


def _no_out(out, who: str) -> None:
    if out is not None:
        raise TypeError(f"{who}: out= is not supported (chainrule values are immutable)")


def _reduced_size(shape: tuple, axis, keepdims: bool) -> tuple[int, tuple]:
    """(number of elements reduced into each result, the result's shape)."""
    ndim = len(shape)
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(a % ndim if ndim else a for a in ((axis,) if isinstance(
            axis, (int, _np.integer)) else axis))
    count = 1
    for a in axes:
        count *= shape[a] if a < ndim else 1
    out = tuple(1 if i in axes else n for i, n in enumerate(shape)) if keepdims else tuple(
        n for i, n in enumerate(shape) if i not in axes)
    return count, out


def _reducer(name: str, op, identity, combine):
    """The NumPy-signature function of reduction ``op`` (identity: the value ``where``
    fills in, None when there is none; combine: how ``initial`` joins the result)."""

    @exposes(op)
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NOVALUE,
               where=_NOVALUE):
        _no_out(out, name)
        a = _asarray(a)
        if dtype is not None:
            a = _ops.astype(a, _np.dtype(dtype))
        if where is not _NOVALUE:
            fill = identity if identity is not None else initial
            if fill is _NOVALUE:
                raise ValueError(f"reduction operation '{name}' does not have an identity, "
                                 f"so to use a where mask one has to specify 'initial'")
            a = _ops.where(_ops.broadcast_to(_asarray(where), tuple(a.shape)), a,
                           _np.asarray(fill, _np.dtype(a.dtype)))
        if initial is _NOVALUE:
            return op(a, axis=axis, keepdims=keepdims)
        count, shape = _reduced_size(tuple(a.shape), axis, keepdims)
        start = _np.full(shape, initial, _np.dtype(a.dtype))
        if count == 0:
            return start
        return combine(op(a, axis=axis, keepdims=keepdims), start)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (f"``np.{name}`` (see the module docstring for ``dtype``, ``initial`` "
                      f"and ``where``).")
    reduce.op = op
    return reduce


sum = _reducer("sum", _ops.sum, 0, _ops.add)  # noqa: A001
prod = _reducer("prod", _ops.prod, 1, _ops.multiply)
max = _reducer("max", _ops.max, None, _ops.maximum)  # noqa: A001
min = _reducer("min", _ops.min, None, _ops.minimum)  # noqa: A001
amax = _reducer("amax", _ops.max, None, _ops.maximum)
amin = _reducer("amin", _ops.min, None, _ops.minimum)


def _logical(name: str, op, identity: bool):
    @exposes(op)
    def reduce(a, axis=None, out=None, keepdims=False, *, where=_NOVALUE):
        _no_out(out, name)
        a = _asarray(a)
        if where is not _NOVALUE:
            a = _ops.where(_ops.broadcast_to(_asarray(where), tuple(a.shape)), a, identity)
        return op(a, axis=axis, keepdims=keepdims)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"``np.{name}``: is {'any' if name == 'any' else 'every'} element true?"
    reduce.op = op
    return reduce


any = _logical("any", _any_op, False)  # noqa: A001
all = _logical("all", _all_op, True)  # noqa: A001


@exposes(_ops.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NOVALUE):
    """``np.mean``; with ``where``, the mean of the selected elements."""
    _no_out(out, "mean")
    a = _asarray(a)
    if dtype is not None:
        a = _ops.astype(a, _np.dtype(dtype))
    if where is _NOVALUE:
        return _ops.mean(a, axis=axis, keepdims=keepdims)
    mask = _ops.broadcast_to(_asarray(where), tuple(a.shape))
    if _np.dtype(a.dtype).kind not in "fc":
        a = _ops.astype(a, _np.float64)
    zero = _np.zeros((), _np.dtype(a.dtype))
    total = _ops.sum(_ops.where(mask, a, zero), axis=axis, keepdims=keepdims)
    count = _ops.sum(_ops.astype(mask, a.dtype), axis=axis, keepdims=keepdims)
    return _ops.divide(total, count)


mean.op = _ops.mean
