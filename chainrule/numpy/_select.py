"""User-namespace grids and selection: ``meshgrid``, ``broadcast_arrays``,
``where`` / ``select`` / ``piecewise`` with NumPy's full semantics, and the
index expressions ``r_`` / ``c_``, as composites of the basic ops (see
``_shapes``): no rules of their own, every order.

>>> import numpy as np
>>> r_[np.array([1.0, 2.0]), 0.0, 1:3]
array([1., 2., 0., 1., 2.])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..errors import ConcretizationError, TraceError
from ..ir.array import as_user_array
from ..ir.op import is_dispatched as _is_dispatched
from ._core import _shape, exposes
from ._shapes import (
    ShapeArgumentError,
    _as_value,
    _cast,
    _dtype,
    _ndim,
    _nested_dispatched,
    _with_ndmin,
    concatenate,
)


# -- grids and broadcasting ----------------------------------------------------------------
def broadcast_shapes(*args):
    """``np.broadcast_shapes``: the shape arrays of these shapes broadcast to."""
    return _np.broadcast_shapes(*args)


def broadcast_arrays(*args, subok=False):
    """``np.broadcast_arrays``: a tuple of the arrays broadcast to one shape."""
    args = [_as_value(a) for a in args]
    if not any(_is_dispatched(a) for a in args):
        return _np.broadcast_arrays(*args, subok=subok)
    shape = _np.broadcast_shapes(*[tuple(_shape(a)) for a in args])
    return tuple(a if tuple(_shape(a)) == shape else _ops.broadcast_to(a, shape)
                 for a in args)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``np.meshgrid``: a tuple of coordinate arrays (``indexing`` 'xy' or 'ij',
    ``sparse`` keeps the broadcastable shapes)."""
    if indexing not in ("xy", "ij"):
        raise ShapeArgumentError("meshgrid: Valid values for `indexing` are 'xy' and 'ij'.")
    xi = [_as_value(x) for x in xi]
    if not any(_is_dispatched(x) for x in xi):
        return _np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing)
    nd = len(xi)
    ones = (1,) * nd
    out = [_ops.reshape(x, ones[:i] + (-1,) + ones[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = _ops.reshape(out[0], (1, -1) + ones[2:])
        out[1] = _ops.reshape(out[1], (-1, 1) + ones[2:])
    if not sparse:
        return broadcast_arrays(*out)
    return tuple(out)


# -- selection ----------------------------------------------------------------------------
_NO = object()


@exposes(_ops.where)
def _has_array(value) -> bool:
    """Whether an array, NumPy scalar, traced value or tape tensor is in ``value``."""
    if isinstance(value, (list, tuple)):
        return any(_has_array(v) for v in value)
    return not isinstance(value, (bool, int, float, complex))


def where(condition, x=_NO, y=_NO):
    """``np.where``. With ``x`` and ``y``: elements of ``x`` where ``condition`` holds,
    else of ``y``, all three broadcast together; a non-bool condition means
    ``condition != 0``; the keyword form ``where(condition=c, x=a, y=b)`` works.
    When ``condition``, ``x`` and ``y`` are all Python values (numbers, lists; no array
    anywhere), the result is a Python value too (``where(True, 1, 2)`` is ``1``), as in
    autograd.numpy; NumPy and JAX give an array.
    With the condition alone: the indices where it holds (``np.nonzero``), on concrete
    arrays and tape tensors only: their number depends on the data, so a traced
    condition is an error (as in JAX without ``size=``)."""
    if x is _NO and y is _NO:
        if _nested_dispatched(condition):
            value = getattr(condition, "_cr_value", None)
            if value is None:
                raise ConcretizationError(
                    "where(condition) with one argument returns the indices where the "
                    "condition holds: how many depends on the data, so it has no static "
                    "shape while tracing. Use where(condition, x, y) to select elements, or "
                    "compute the indices on a NumPy array outside the traced function")
            condition = value()
        return _np.nonzero(_np.asarray(condition))
    if x is _NO or y is _NO:
        raise ShapeArgumentError("where: either both or neither of x and y should be given")
    if not any(_has_array(v) for v in (condition, x, y)):
        result = _np.where(condition, x, y)
        return result.tolist() if isinstance(result, _np.ndarray) else result
    if isinstance(x, (list, tuple)):
        x = _as_value(x)
    if isinstance(y, (list, tuple)):
        y = _as_value(y)
    c = _as_value(condition)
    if not (_is_dispatched(c) or _is_dispatched(x) or _is_dispatched(y)):
        return _np.where(c, x, y)
    if _dtype(c) != _np.bool_:
        c = _ops.not_equal(c, 0) if _is_dispatched(c) else c.astype(bool)
    return _ops.where(c, x, y)


def _weak(v):
    """A choice as NumPy's ``select`` types it: Python numbers stay weak."""
    return v if type(v) in (int, float, complex) else _as_value(v)


def select(condlist, choicelist, default=0):
    """``np.select``: the element of the first choice whose condition holds, else
    ``default`` (a chain of ``where``, the first condition taking precedence)."""
    if len(condlist) != len(choicelist):
        raise ShapeArgumentError("select: list of cases must be same length as list of "
                            "conditions")
    if len(condlist) == 0:
        raise ShapeArgumentError("select with an empty condition list is not possible")
    if not any(_nested_dispatched(v) for v in (*condlist, *choicelist, default)):
        return _np.select(condlist, choicelist, default)
    choices = [_weak(c) for c in choicelist]
    default = _weak(default)
    dtype = _np.result_type(*[v if type(v) in (int, float, complex) else _dtype(v)
                              for v in (*choices, default)])
    conds = [_as_value(c) for c in condlist]
    for i, c in enumerate(conds):
        if _dtype(c) != _np.bool_:
            raise TypeError(f"select: invalid entry {i} in condlist: should be boolean "
                            f"ndarray")
    shape = _np.broadcast_shapes(*[tuple(_shape(v)) for v in (*conds, *choices, default)])
    result = _cast(default, dtype)
    for cond, choice in reversed(list(zip(conds, choices))):
        result = _ops.where(cond, _cast(choice, dtype), result)
    if tuple(_shape(result)) != shape:
        result = _ops.broadcast_to(result, shape)
    return result


class _TracedResult(Exception):
    pass


def _concrete_results(f):
    def call(*args, **kw):
        out = f(*args, **kw)
        if _nested_dispatched(out):
            raise _TracedResult
        return out

    return call


def piecewise(x, condlist, funclist, *args, **kw):
    """``np.piecewise``: ``funclist[i]`` (a function of ``x``, or a constant) where
    ``condlist[i]`` holds, later conditions winning, 0 elsewhere; one extra function
    is the value where no condition holds. The result has ``x``'s dtype.

    On traced values each function is applied to all of ``x`` and the results are
    chosen with ``where`` (as in JAX): functions must be elementwise, and a function
    with an infinite derivative where its condition is false (``sqrt`` at negative
    ``x``) gives NaN derivatives there, as ``where`` does."""
    x = _as_value(x)
    if not _is_dispatched(x) and not _nested_dispatched(condlist) and not any(
            _nested_dispatched(f) for f in funclist if not callable(f)):
        try:  # NumPy itself, unless a function returns a traced value
            return _np.piecewise(x, condlist, [_concrete_results(f) if callable(f) else f
                                               for f in funclist], *args, **kw)
        except _TracedResult:
            pass
    xnd = _ndim(x)

    def like_array(c):
        return (isinstance(c, (list, _np.ndarray))
                or (_is_dispatched(c) and _ndim(c) > 0))

    if _is_dispatched(condlist):
        conds = (list(condlist) if _ndim(condlist) > 1
                 or (_ndim(condlist) == 1 and xnd == 0) else [condlist])
    elif _np.isscalar(condlist) or (not like_array(condlist[0]) and xnd != 0):
        conds = [condlist]
    else:
        conds = list(condlist)
    conds = [_as_value(c) for c in conds]
    conds = [c if _dtype(c) == _np.bool_ else
             (_ops.not_equal(c, 0) if _is_dispatched(c) else c.astype(bool)) for c in conds]
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:
        anyc = conds[0]
        for c in conds[1:]:
            anyc = _ops.logical_or(anyc, c)
        conds.append(_ops.logical_not(anyc))
    elif n != n2:
        raise ShapeArgumentError(f"piecewise: with {n} condition(s), either {n} or {n + 1} "
                            f"functions are expected")
    dtype = _dtype(x)
    y = _ops.zeros_like(x)
    for cond, f in zip(conds, funclist):
        value = f(x, *args, **kw) if callable(f) else _as_value(f)
        y = _ops.where(cond, _cast(value, dtype), y)
    if tuple(_shape(y)) != tuple(_shape(x)):
        raise ShapeArgumentError(f"piecewise: conditions of shape {_shape(y)} for x of shape "
                            f"{_shape(x)}")
    return y


# -- index expressions: r_, c_ ------------------------------------------------------------
class AxisConcatenator:
    """``np.r_`` / ``np.c_``: ``r_[a, b, 1.0, 0:3]`` concatenates arrays, scalars and
    slices (``start:stop:step`` an ``arange``, ``start:stop:nj`` a ``linspace``);
    a first string ``"axis"``, ``"axis,ndmin"`` or ``"axis,ndmin,trans1d"`` sets how.
    Traced values and tape tensors may appear anywhere (NumPy's matrix forms
    ``"r"``/``"c"`` are not supported on them)."""

    __slots__ = ("axis", "ndmin", "trans1d", "_numpy")

    def __init__(self, axis, ndmin, trans1d, numpy_version):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d
        self._numpy = numpy_version

    def __len__(self) -> int:
        return 0

    def __getitem__(self, key):
        if isinstance(key, str):
            raise TraceError(f"{self._name()}: the matrix-string form (np.bmat) is not "
                             f"supported; use NumPy's")
        if not isinstance(key, tuple):
            key = (key,)
        if not _nested_dispatched(key):
            return as_user_array(self._numpy[key])
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, kinds = [], []
        for k, item in enumerate(key):
            scalar = False
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, (complex, _np.complexfloating)):
                    obj = _np.linspace(start, item.stop, num=int(abs(step)))
                else:
                    obj = _np.arange(start, item.stop, step)
                if ndmin > 1:
                    obj = _np.array(obj, ndmin=ndmin)
                    if trans1d != -1:
                        obj = obj.swapaxes(-1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ShapeArgumentError(f"{self._name()}: special directives must be the "
                                        f"first entry.")
                if item in ("r", "c"):
                    raise TraceError(f"{self._name()}: the matrix directives 'r'/'c' are not "
                                     f"supported on traced values")
                try:
                    vec = [int(v) for v in item.split(",")]
                except ValueError:
                    raise ShapeArgumentError(f"{self._name()}: unknown special directive "
                                        f"{item!r}") from None
                if len(vec) == 1:
                    axis = vec[0]
                else:
                    axis, ndmin = vec[:2]
                    trans1d = vec[2] if len(vec) == 3 else trans1d
                continue
            elif type(item) in _np.ScalarType:
                scalar = True
                obj = item
            else:
                value = _as_value(item)
                item_ndim = _ndim(value)
                obj = _with_ndmin(value, ndmin) if _is_dispatched(value) else _np.array(
                    value, ndmin=ndmin)
                if trans1d != -1 and item_ndim < ndmin:
                    k2 = ndmin - item_ndim
                    k1 = trans1d + (k2 + 1 if trans1d < 0 else 0)
                    axes = list(range(ndmin))
                    axes = axes[:k1] + axes[k2:] + axes[k1:k2]
                    obj = (_ops.permute_dims(obj, tuple(axes)) if _is_dispatched(obj)
                           else obj.transpose(axes))
            objs.append(obj)
            kinds.append(item if scalar else _dtype(obj))
        final = _np.result_type(*kinds)
        objs = [_with_ndmin(_cast(o, final), ndmin) for o in objs]
        return concatenate(objs, axis=axis)

    def _name(self) -> str:
        return "r_" if self._numpy is _np.r_ else "c_"


r_ = AxisConcatenator(0, 1, -1, _np.r_)
c_ = AxisConcatenator(-1, 2, 0, _np.c_)
s_, index_exp = _np.s_, _np.index_exp


__all__ = [
    "broadcast_arrays", "broadcast_shapes", "c_", "index_exp", "meshgrid", "piecewise", "r_",
    "s_", "select", "where",
]
