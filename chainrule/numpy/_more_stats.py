"""More of NumPy's namespace (see ``_more``): ``nanquantile``/``nanpercentile``/
``nanmedian`` (a scalar q: the linear interpolation between the order statistics of
each slice's non-NaN elements, which sort first), ``isin``, ``array_equal``,
``array_equiv`` and ``block``, compositions of the other functions of
``chainrule.numpy``.

>>> import numpy as np
>>> float(nanmedian(np.array([3.0, np.nan, 1.0, 2.0])))
2.0
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..errors import ArgumentError, InvalidValueError
from ..ir.op import is_dispatched as _is_dispatched
from ..ops.reduction import all as _all_op
from ..ops.reduction import any as _any_op
from ._more import _refuse
from ._reductions import _to_last, median, quantile
from ._shapes import _as_value, concatenate
from ._sorting import sort, take_along_axis

__all__ = ["array_equal", "array_equiv", "block", "isin", "nanmedian", "nanpercentile",
           "nanquantile"]


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype)


def _isnan(x):
    return _ops.not_equal(x, x)


def _nan_order_stat(a, q: float, axis, keepdims: bool, median_of: bool):
    a = _as_value(a)
    if _dtype(a).kind in "biu":  # no NaNs: NumPy's median and quantile
        return median(a, axis, keepdims=keepdims) if median_of else quantile(
            a, q, axis, keepdims=keepdims)
    if _dtype(a).kind != "f":
        raise ArgumentError("nanquantile: complex arrays are not supported")
    y, kd_shape = _to_last(a, axis)
    size = y.shape[-1]
    if size == 0:
        res = _np.full(tuple(y.shape[:-1]), _np.nan, _dtype(y))
        return _np.reshape(res, kd_shape) if keepdims else res
    s = sort(y, axis=-1)  # NaNs sort last
    n = _ops.sum(_ops.astype(_ops.logical_not(_isnan(y)), _np.int64), axis=-1, keepdims=True)
    top = _ops.maximum(_ops.subtract(n, 1), 0)
    pos = _ops.multiply(_ops.astype(top, _np.float64), q)
    if median_of:  # the middle one (n odd) or two
        lo = _ops.maximum(_ops.floor_divide(_ops.subtract(n, 1), 2), 0)
        hi = _ops.floor_divide(n, 2)
    else:
        lo = _ops.minimum(_ops.astype(_ops.floor(pos), _np.int64), top)
        hi = _ops.minimum(_ops.add(lo, 1), top)
    a_lo = _ops.getitem(take_along_axis(s, lo, axis=-1), (Ellipsis, 0))
    a_hi = _ops.getitem(take_along_axis(s, hi, axis=-1), (Ellipsis, 0))
    if median_of:  # NumPy: the mean of the middle one or two
        res = _ops.multiply(_ops.add(a_lo, a_hi), _np.asarray(0.5, _dtype(y)))
    else:  # NumPy's lerp
        gamma = _ops.astype(_ops.getitem(_ops.subtract(pos, _ops.floor(pos)), (Ellipsis, 0)),
                            _dtype(y))
        d = _ops.subtract(a_hi, a_lo)
        res = _ops.where(_ops.greater_equal(gamma, 0.5),
                         _ops.subtract(a_hi, _ops.multiply(d, _ops.subtract(1, gamma))),
                         _ops.add(a_lo, _ops.multiply(d, gamma)))
    res = _ops.where(_ops.equal(_ops.getitem(n, (Ellipsis, 0)), 0), _np.nan, res)
    return _ops.reshape(res, kd_shape) if keepdims else res


def _scalar_q(q, who: str, scale: float) -> float:
    if _is_dispatched(q) or _np.ndim(q) != 0:
        raise ArgumentError(f"{who}: only a concrete scalar q is supported")
    q = float(q)
    if not 0 <= q <= scale:
        raise InvalidValueError(f"{'Percentiles' if scale == 100 else 'Quantiles'} must be in the "
                         f"range [0, {scale:g}]")
    return q / scale


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """``np.nanquantile`` (method "linear", a scalar q): NaNs ignored, NaN for an
    all-NaN slice. Differentiable in ``a`` (the two order statistics)."""
    _refuse("nanquantile", out=out, weights=weights)
    if method != "linear":
        raise ArgumentError(f"nanquantile: method={method!r} is not supported, only 'linear'")
    return _nan_order_stat(a, _scalar_q(q, "nanquantile", 1), axis, keepdims, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """``np.nanpercentile``: ``nanquantile(a, q / 100)``."""
    _refuse("nanpercentile", out=out, weights=weights)
    if method != "linear":
        raise ArgumentError(f"nanpercentile: method={method!r} is not supported, only "
                            f"'linear'")
    return _nan_order_stat(a, _scalar_q(q, "nanpercentile", 100), axis, keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.nanmedian``: the mean of the middle one or two non-NaN elements."""
    _refuse("nanmedian", out=out)
    return _nan_order_stat(a, 0.5, axis, keepdims, True)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """``np.isin``: is each element among ``test_elements`` (compared all pairs)?"""
    _refuse("isin", kind=kind)
    element, tests = _as_value(element), _as_value(test_elements)
    flat = _ops.reshape(tests, (-1,))
    found = _any_op(_ops.equal(_ops.expand_dims(element, -1), flat), axis=-1)
    return _ops.logical_not(found) if invert else found


def array_equal(a1, a2, equal_nan=False):
    """``np.array_equal``: same shape and elements; a Python bool for arrays, a 0-d
    bool value for traced ones."""
    a1, a2 = _as_value(a1), _as_value(a2)
    if not (_is_dispatched(a1) or _is_dispatched(a2)):
        return _np.array_equal(a1, a2, equal_nan=equal_nan)
    if tuple(a1.shape) != tuple(a2.shape):
        return _np.bool_(False)
    same = _ops.equal(a1, a2)
    if equal_nan:
        same = _ops.logical_or(same, _ops.logical_and(_isnan(a1), _isnan(a2)))
    return _all_op(same)


def array_equiv(a1, a2):
    """``np.array_equiv``: equal after broadcasting (False when they do not broadcast)."""
    a1, a2 = _as_value(a1), _as_value(a2)
    if not (_is_dispatched(a1) or _is_dispatched(a2)):
        return _np.array_equiv(a1, a2)
    try:
        _np.broadcast_shapes(tuple(a1.shape), tuple(a2.shape))
    except ValueError:
        return _np.bool_(False)
    return _all_op(_ops.equal(a1, a2))


def _depth(x, where: str) -> int:
    if isinstance(x, tuple):
        raise ArgumentError(f"{where} is a tuple. Only lists can be used to arrange blocks, and "
                        f"np.block does not allow implicit conversion from tuple to ndarray.")
    if not isinstance(x, list):
        return 0
    if not x:
        raise InvalidValueError(f"{where} cannot be empty. Lists cannot contain empty lists.")
    depths = {_depth(e, f"{where}[{i}]") for i, e in enumerate(x)}
    if len(depths) != 1:
        raise InvalidValueError(f"List depths are mismatched at {where}.")
    return 1 + depths.pop()


def block(arrays):
    """``np.block``: assemble from nested lists of blocks, the innermost lists joined
    along the last axis."""
    depth = _depth(arrays, "arrays")

    def leaves(x):
        return [leaf for e in x for leaf in leaves(e)] if isinstance(x, list) else [x]

    values = [_as_value(v) for v in leaves(arrays)]
    if not any(_is_dispatched(v) for v in values):
        return _np.block(arrays)
    ndim = max(depth, *(v.ndim for v in values))

    def assemble(x, level):
        if level == depth:
            v = _as_value(x)
            return _ops.reshape(v, (1,) * (ndim - v.ndim) + tuple(v.shape))
        return concatenate([assemble(e, level + 1) for e in x], axis=-(depth - level))

    return assemble(arrays, 0)
