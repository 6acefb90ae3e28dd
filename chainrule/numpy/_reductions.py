"""User-namespace reductions, scans and statistics (adapters and composites).

Everything here is written with ops, so it computes on arrays, traces and
records, and differentiates at every order: ``median`` and ``quantile`` gather
from a partition or sort (``_sorting``), ``diff`` and ``gradient`` are slices
and differences, the ``nan*`` reductions mask with ``where``, ``convolve`` and
``correlate`` are the ``correlate_valid`` op on a zero-padded window.

``var`` and ``std`` here supersede the versions in ``_core`` (the namespace
imports this module after it): NumPy divides by ``max(n - ddof, 0)`` and
accepts ``correction=``, ``dtype=`` and ``mean=``.

Conventions (jax.numpy's): the gradient of ``max``/``min`` is shared evenly
among tied extrema (the ``max`` rule); ``median``/``quantile`` route the
cotangent to the order statistics they interpolate (each tie to one element);
``allclose`` on traced values returns a 0-d bool array (``bool()`` of it then
needs a concrete value), on arrays a Python bool, as NumPy's.

>>> import numpy as np
>>> import chainrule as cr
>>> cr.grad(lambda x: median(x))(np.array([3.0, 1.0, 2.0, 10.0]))
array([0.5, 0. , 0.5, 0. ])
"""

from __future__ import annotations

import builtins

import numpy as _np

from .. import ops as _ops
from ..emit.methods import array_method
from ..errors import ArgumentError, ChainruleError, InvalidIndexError, InvalidValueError
from ..ir.op import is_dispatched as _is_dispatched
from ..ops.reduction import all as _all
from ..ops.reduction import correlate_valid as _correlate_valid
from ..ops.reduction import window as _window
from ..rules.common import element_count
from ._core import _kinked_root, exposes
from ._shapes import _as_value
from ._sorting import partition, sort, take

__all__ = ["allclose", "average", "convolve", "correlate", "count_nonzero", "diff", "gradient",
           "isclose", "median", "nanmax", "nanmean", "nanmin", "nansum", "percentile", "ptp",
           "quantile", "std", "var"]

_NOVALUE = object()


def _asarray(x):
    return _as_value(x)  # lists holding traced values or tape tensors are assembled


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype)


def _is_float(x) -> bool:
    return _dtype(x).kind in "fc"


def _axes(axis, ndim: int) -> tuple:
    """The reduced axes as a sorted tuple of non-negative ints (all of them for None)."""
    if axis is None:
        return tuple(range(ndim))
    out = []
    for a in axis if isinstance(axis, (tuple, list)) else (axis,):
        if isinstance(a, bool) or not isinstance(a, (int, _np.integer)):
            raise ArgumentError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
        if not -ndim <= a < ndim:
            raise _np.exceptions.AxisError(a, ndim)
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise InvalidValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def _count(shape, axes) -> int:
    return int(_np.prod([shape[a] for a in axes], dtype=_np.int64))


def _isnan(x):
    return _ops.not_equal(x, x)


def _keepdims_shape(shape, axes) -> tuple:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _to_last(a, axis):
    """``a`` with the reduced axes moved last and merged into one; also the shape the
    result has with keepdims (the reduced axes as 1s)."""
    a = _asarray(a)
    axes = _axes(axis, a.ndim)
    rest = tuple(i for i in range(a.ndim) if i not in axes)
    if rest + axes != tuple(range(a.ndim)):
        a = _ops.permute_dims(a, rest + axes)
    kept = tuple(a.shape[:len(rest)])
    return (_ops.reshape(a, kept + (_count(a.shape, range(len(rest), a.ndim)),)),
            _keepdims_shape(_shape_of(a, rest, axes), axes))


def _shape_of(moved, rest, axes) -> tuple:
    """The original shape, from the array with ``rest + axes`` moved into place."""
    shape = [0] * (len(rest) + len(axes))
    for pos, i in enumerate(rest + axes):
        shape[i] = moved.shape[pos]
    return tuple(shape)


def _nan_check(res, has_nan):
    return _ops.where(has_nan, _np.nan, res)


def _ddof(ddof, correction):
    """The divisor's offset of ``var``/``std`` given NumPy's two spellings of it."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise InvalidValueError("ddof and correction can't be provided simultaneously.")
    return correction


# -- var / std -----------------------------------------------------------------------------
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """``np.var``: sum((a - mean)^2) / max(n - ddof, 0) (inf or nan where that is 0)."""
    _no_out(out, "var")
    if where is not None:
        raise ChainruleError("var: where= is not supported")
    ddof = _ddof(ddof, correction)
    a = _asarray(a)
    if dtype is not None:
        a = _ops.astype(a, dtype)
    axes = _axes(axis, a.ndim)
    m = _ops.mean(a, axis=axes, keepdims=True) if mean is None else mean
    centered = _ops.subtract(a, m)
    sq = _ops.sum(_ops.multiply(centered, centered), axis=axes, keepdims=keepdims)
    if not _is_float(sq):
        sq = _ops.astype(sq, _np.float64)
    if any(isinstance(a.shape[i], str) for i in axes):  # symbolic (f64[n]): counted at run time
        n = element_count(a, axes, _dtype(sq), keepdims)
        return _ops.divide(sq, _ops.maximum(_ops.subtract(n, ddof), 0))
    n = builtins.max(_count(a.shape, axes) - ddof, 0)
    if n == 0:  # NumPy: inf (or nan for 0 / 0), with a warning
        return _ops.divide(sq, _np.zeros((), _dtype(sq)))
    return _ops.divide(sq, n)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """``np.std``: sqrt(var); where var is 0 (a constant slice) its derivative is 0, the
    subgradient at the kink, as for |x| (JAX: nan)."""
    return _kinked_root(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                         correction=correction))


def _no_out(out, who):
    if out is not None:
        raise ArgumentError(f"{who}: out= is not supported (chainrule values are immutable)")


# -- boolean and counting reductions -----------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``np.isclose``: |a - b| <= atol + rtol |b| where b is finite, else a == b (and
    NaN == NaN with ``equal_nan``). Not differentiable (a bool array)."""
    x, y = _asarray(a), _asarray(b)
    if not _is_float(y):
        y = _ops.astype(y, _np.result_type(_dtype(y), 1.0))
    close = _ops.less_equal(_ops.abs(_ops.subtract(x, y)),
                            _ops.add(atol, _ops.multiply(rtol, _ops.abs(y))))
    finite = _ops.less(_ops.abs(y), _np.inf)
    result = _ops.logical_or(_ops.logical_and(close, finite), _ops.equal(x, y))
    if equal_nan:
        result = _ops.logical_or(result, _ops.logical_and(_isnan(x), _isnan(y)))
    return result


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``np.allclose``: a Python bool on arrays; on traced values a 0-d bool array, as
    jax.numpy's (branching on it in Python needs a concrete value)."""
    result = _all(isclose(a, b, rtol, atol, equal_nan))
    return result if _is_dispatched(result) else builtins.bool(result)


def count_nonzero(a, axis=None, *, keepdims=False):
    """``np.count_nonzero`` (int64; a Python int on arrays with ``axis=None``, as NumPy)."""
    a = _asarray(a)
    if not _is_dispatched(a):
        return _np.count_nonzero(a, axis=axis, keepdims=keepdims)
    return _ops.sum(_ops.astype(_ops.not_equal(a, 0), _np.int64), axis=_axes(axis, a.ndim),
                    keepdims=keepdims)


# -- NaN-ignoring reductions ------------------------------------------------------------------
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.nansum``: the sum with NaNs counted as 0 (their derivative is 0)."""
    _no_out(out, "nansum")
    if where is not None:
        raise ChainruleError("nansum: where= is not supported")
    a = _asarray(a)
    if dtype is not None:
        a = _ops.astype(a, dtype)
    if _is_float(a):
        a = _ops.where(_isnan(a), 0, a)
    total = _ops.sum(a, axis=_axes(axis, a.ndim), keepdims=keepdims)
    return total if initial is None else _ops.add(total, initial)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """``np.nanmean``: the mean of the non-NaN elements (NaN where there are none)."""
    _no_out(out, "nanmean")
    if where is not None:
        raise ChainruleError("nanmean: where= is not supported")
    a = _asarray(a)
    if dtype is not None:
        a = _ops.astype(a, dtype)
    axes = _axes(axis, a.ndim)
    if not _is_float(a):
        return _ops.mean(a, axis=axes, keepdims=keepdims)
    nan = _isnan(a)
    total = _ops.sum(_ops.where(nan, 0, a), axis=axes, keepdims=keepdims)
    count = _ops.sum(_ops.astype(_ops.logical_not(nan), _dtype(a)), axis=axes,
                     keepdims=keepdims)
    return _ops.divide(total, count)


def _nan_extremum(op, fill):
    def reduce(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        _no_out(out, op.name)
        if initial is not None or where is not None:
            raise ChainruleError(f"nan{op.name}: initial= and where= are not supported")
        a = _asarray(a)
        axes = _axes(axis, a.ndim)
        if not _is_float(a):
            return op(a, axis=axes, keepdims=keepdims)
        nan = _isnan(a)
        m = op(_ops.where(nan, fill, a), axis=axes, keepdims=keepdims)
        return _nan_check(m, _all(nan, axis=axes, keepdims=keepdims))

    reduce.__name__ = reduce.__qualname__ = f"nan{op.name}"
    reduce.__doc__ = (f"``np.nan{op.name}``: the {op.name}imum ignoring NaNs (NaN where all "
                      f"are NaN); ties share the gradient, NaNs get none.")
    return reduce


nanmax = _nan_extremum(_ops.max, -_np.inf)
nanmin = _nan_extremum(_ops.min, _np.inf)


def ptp(a, axis=None, out=None, keepdims=False):
    """``np.ptp``: max - min along ``axis``."""
    _no_out(out, "ptp")
    a = _asarray(a)
    axes = _axes(axis, a.ndim)
    return _ops.subtract(_ops.max(a, axis=axes, keepdims=keepdims),
                         _ops.min(a, axis=axes, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``np.average``: sum(a w) / sum(w) along ``axis`` (the mean without weights);
    with ``returned``, also sum(w) broadcast to the result's shape. Differentiable in
    ``a`` and ``weights``."""
    a = _asarray(a)
    axes = _axes(axis, a.ndim)
    if weights is None:
        avg = _ops.mean(a, axis=axes, keepdims=keepdims)
        scl = _np.asarray(_count(a.shape, axes), _dtype(avg))
    else:
        w = _asarray(weights)
        if tuple(w.shape) != tuple(a.shape):
            if axis is None:
                raise ArgumentError("Axis must be specified when shapes of a and weights differ.")
            want = tuple(a.shape[i] for i in _axes(axis, a.ndim))
            if tuple(w.shape) != want:
                raise InvalidValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            w = _ops.reshape(w, tuple(a.shape[i] if i in axes else 1 for i in range(a.ndim)))
        dtype = _np.result_type(_dtype(a), _dtype(w), *([] if _is_float(a) else ["f8"]))
        a, w = _ops.astype(a, dtype), _ops.astype(w, dtype)
        scl = _ops.sum(_ops.broadcast_to(w, tuple(a.shape)), axis=axes, keepdims=keepdims)
        if not _is_dispatched(scl) and _np.any(scl == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = _ops.divide(_ops.sum(_ops.multiply(a, w), axis=axes, keepdims=keepdims), scl)
    if not returned:
        return avg
    if tuple(_np.shape(scl)) != tuple(avg.shape):
        scl = _ops.broadcast_to(scl, tuple(avg.shape))
    return avg, scl


# -- differences ---------------------------------------------------------------------------
def _slab(x, axis: int, lo, hi):
    return _ops.getitem(x, (slice(None),) * axis + (slice(lo, hi),))


def diff(a, n=1, axis=-1, prepend=_NOVALUE, append=_NOVALUE):
    """``np.diff``: the n-th forward difference along ``axis`` (``not_equal`` for bools),
    after joining ``prepend`` and ``append`` (scalars are broadcast). Linear."""
    if n == 0:
        return a
    if n < 0:
        raise InvalidValueError(f"order must be non-negative but got {n!r}")
    a = _asarray(a)
    if a.ndim == 0:
        raise InvalidValueError("diff requires input that is at least one dimensional")
    axis = _axes(axis, a.ndim)[0]
    parts = []
    for extra in (prepend, a, append):
        if extra is _NOVALUE:
            continue
        extra = _asarray(extra)
        if extra is not a and extra.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            extra = _ops.broadcast_to(extra, tuple(shape))
        parts.append(extra)
    if len(parts) > 1:
        a = _ops.concatenate(*parts, axis=axis)
    for _ in range(n):
        hi, lo = _slab(a, axis, 1, None), _slab(a, axis, None, -1)
        a = _ops.not_equal(hi, lo) if _dtype(a).kind == "b" else _ops.subtract(hi, lo)
    return a


def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient``: second-order central differences inside and one-sided ones of
    order ``edge_order`` (1 or 2) at the edges, along each axis; spacings are scalars
    or coordinate arrays, as in NumPy. A tuple for several axes. Linear in ``f``;
    differentiable in the spacings too."""
    f = _asarray(f)
    if axis is None:
        axes = tuple(range(f.ndim))
    else:  # in the order given, as NumPy
        given = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        _axes(given, f.ndim)  # checks them
        axes = tuple(int(a) % f.ndim for a in given)
    if len(varargs) == 0:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and _np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        dx = []
        for i, d in enumerate(varargs):
            d = _asarray(d)
            if d.ndim == 0:
                dx.append(d)
                continue
            if d.ndim != 1:
                raise InvalidValueError("distances must be either scalars or 1d")
            if d.shape[0] != f.shape[axes[i]]:
                raise InvalidValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            if not _is_float(d):
                d = _ops.astype(d, _np.float64)
            step = diff(d)
            if not _is_dispatched(step) and step.size and _np.all(step == step[0]):
                step = step[0]  # uniform coordinates: a scalar spacing, as NumPy
            dx.append(step)
    else:
        raise ArgumentError("invalid number of arguments")
    if edge_order > 2:
        raise InvalidValueError("'edge_order' greater than 2 not supported")
    if not _is_float(f):
        f = _ops.astype(f, _np.float64)
    out = tuple(_gradient_axis(f, ax, h, edge_order) for ax, h in zip(axes, dx))
    return out[0] if len(out) == 1 else out


def _gradient_axis(f, axis, h, edge_order):
    n = f.shape[axis]
    if n < edge_order + 1:
        raise InvalidValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least (edge_order + 1) elements are required.")

    def at(lo, hi=_NOVALUE):
        return _slab(f, axis, lo, lo + 1 if hi is _NOVALUE else hi)

    def along(v):  # a 1-D spacing array, shaped to broadcast along the axis
        shape = [1] * f.ndim
        shape[axis] = -1
        return _ops.reshape(v, tuple(shape))

    sub, add, mul, div = _ops.subtract, _ops.add, _ops.multiply, _ops.divide
    uniform = _np.ndim(h) == 0
    if uniform:
        inner = div(sub(at(2, None), at(0, -2)), mul(2.0, h))
    else:
        dx1, dx2 = along(h[:-1]), along(h[1:])
        a = div(_ops.negative(dx2), mul(dx1, add(dx1, dx2)))
        b = div(sub(dx2, dx1), mul(dx1, dx2))
        c = div(dx1, mul(dx2, add(dx1, dx2)))
        inner = add(add(mul(a, at(0, -2)), mul(b, at(1, -1))), mul(c, at(2, None)))
    if edge_order == 1:
        first = div(sub(at(1), at(0)), h if uniform else h[0])
        last = div(sub(at(n - 1), at(n - 2)), h if uniform else h[-1])
    else:
        if uniform:
            a, b, c = div(-1.5, h), div(2.0, h), div(-0.5, h)
        else:
            dx1, dx2 = h[0], h[1]
            a = div(_ops.negative(add(mul(2.0, dx1), dx2)), mul(dx1, add(dx1, dx2)))
            b = div(add(dx1, dx2), mul(dx1, dx2))
            c = div(_ops.negative(dx1), mul(dx2, add(dx1, dx2)))
        first = add(add(mul(a, at(0)), mul(b, at(1))), mul(c, at(2)))
        if uniform:
            a, b, c = div(0.5, h), div(-2.0, h), div(1.5, h)
        else:
            dx1, dx2 = h[-2], h[-1]
            a = div(dx2, mul(dx1, add(dx1, dx2)))
            b = div(_ops.negative(add(dx2, dx1)), mul(dx1, dx2))
            c = div(add(mul(2.0, dx2), dx1), mul(dx2, add(dx1, dx2)))
        last = add(add(mul(a, at(n - 3)), mul(b, at(n - 2))), mul(c, at(n - 1)))
    out = _ops.concatenate(first, inner, last, axis=axis)
    return _ops.astype(out, _dtype(f)) if _dtype(out) != _dtype(f) else out


# -- order statistics -------------------------------------------------------------------------
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median``: the mean of the middle one or two elements of each slice (NaN where
    a slice holds a NaN); the cotangent goes to those elements."""
    _no_out(out, "median")
    y, kd_shape = _to_last(a, axis)
    n = y.shape[-1]
    if n == 0:
        res = _ops.mean(y, axis=-1)  # NaN, as NumPy (which warns)
    else:
        kth = sorted({(n - 1) // 2, n // 2, n - 1})  # the last: NaNs, which sort last
        part = partition(y, kth, axis=-1)
        res = _ops.mean(part[..., (n - 1) // 2:n // 2 + 1], axis=-1)
        if _is_float(y):
            res = _nan_check(res, _isnan(part[..., -1]))
    return _ops.reshape(res, kd_shape) if keepdims else res


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """``np.quantile`` with ``method="linear"``: with p = q (n - 1) along the sorted
    slice, a[floor p] + (p - floor p)(a[floor p + 1] - a[floor p]) (NumPy's lerp).
    Differentiable in ``a`` (the two order statistics) and in a traced ``q``."""
    _no_out(out, "quantile")
    if method != "linear":
        raise ChainruleError(f"quantile: method={method!r} is not supported, only 'linear'")
    if weights is not None:
        raise ChainruleError("quantile: weights= is not supported")
    q = q if _is_dispatched(q) or type(q) in (int, float) else _np.asarray(q)
    if not _is_dispatched(q) and not (_np.all(0 <= _np.asarray(q))
                                      and _np.all(_np.asarray(q) <= 1)):
        raise InvalidValueError("Quantiles must be in the range [0, 1]")
    return _quantile(a, q, axis, keepdims)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """``np.percentile``: ``quantile(a, q / 100)``."""
    q = q if _is_dispatched(q) or type(q) in (int, float) else _np.asarray(q)
    if not _is_dispatched(q) and not (_np.all(0 <= _np.asarray(q))
                                      and _np.all(_np.asarray(q) <= 100)):
        raise InvalidValueError("Percentiles must be in the range [0, 100]")
    return quantile(a, _ops.divide(q, 100) if _is_dispatched(q) else _np.true_divide(q, 100),
                    axis, out, overwrite_input, method, keepdims, weights=weights)


def _quantile(a, q, axis, keepdims):
    y, kd_shape = _to_last(a, axis)
    n = y.shape[-1]
    if n == 0:
        raise InvalidIndexError("quantile of an empty slice: index -1 is out of bounds")
    float_type = _dtype(y) if _is_float(y) else _np.dtype(_np.float64)
    out_type = _np.result_type(float_type, q if type(q) in (int, float) else _dtype(q))
    q_nd = _np.ndim(q)
    pos = _ops.multiply(q, n - 1)
    lo = _ops.astype(_ops.maximum(_ops.minimum(_ops.floor(pos), n - 1), 0), _np.int64)
    hi = _ops.minimum(_ops.add(lo, 1), n - 1)
    gamma = _ops.astype(_ops.subtract(pos, _ops.astype(lo, _dtype(pos))), out_type)
    if _is_dispatched(lo):  # a traced q: gather from the sorted slice
        s = sort(y, axis=-1)
    else:  # a concrete q: only the order statistics it needs are put in place
        s = partition(y, sorted({*_np.ravel(lo).tolist(), *_np.ravel(hi).tolist(), n - 1}),
                      axis=-1)
    a_lo, a_hi = (_ops.astype(take(s, i, axis=-1), out_type) for i in (lo, hi))
    if q_nd:  # q's dimensions first, as NumPy
        nr = len(y.shape) - 1
        order = tuple(range(nr, nr + q_nd)) + tuple(range(nr))
        a_lo, a_hi = _ops.permute_dims(a_lo, order), _ops.permute_dims(a_hi, order)
        gamma = _ops.reshape(gamma, tuple(_np.shape(q)) + (1,) * nr)
    d = _ops.subtract(a_hi, a_lo)
    res = _ops.where(_ops.greater_equal(gamma, 0.5),
                     _ops.subtract(a_hi, _ops.multiply(d, _ops.subtract(1, gamma))),
                     _ops.add(a_lo, _ops.multiply(d, gamma)))
    if _is_float(y):
        res = _nan_check(res, _isnan(s[..., -1]))
    if keepdims:
        res = _ops.reshape(res, tuple(_np.shape(q)) + kd_shape)
    return res


# -- convolution and correlation --------------------------------------------------------------
def correlate_nd(in1, in2, mode: str, convolve: bool, same=None):
    """The full, same or valid correlation (or convolution) of two arrays of one rank, as
    ``scipy.signal`` computes them (direct method): in full coordinates,
    ``z[k] = sum_j in1[k + j - (M - 1)] in2[j]`` (in2 flipped for a convolution), of
    which 'same' keeps ``[(M - 1) // 2, +N)`` and 'valid' ``[min - 1, max)`` per
    dimension (``same``, a pair of tuples, gives other starts and lengths). Cost:
    O(out.size * in2.size) multiply-adds, and as much again for each derivative."""
    in1, in2 = _asarray(in1), _asarray(in2)
    if in1.ndim != in2.ndim:
        raise InvalidValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("full", "same", "valid"):
        raise InvalidValueError("Acceptable mode flags are 'valid', 'same', or 'full'.")
    if in1.ndim == 0:
        return _ops.multiply(in1, in2)
    if in2.size == 0 or in1.size == 0 and mode != "same":
        raise InvalidValueError("in1 and in2 must not be empty")
    if in1.size == 0:  # 'same': in1's (empty) shape, as scipy
        return _np.zeros(in1.shape, _np.result_type(in1.dtype, in2.dtype))
    s1, s2 = tuple(in1.shape), tuple(in2.shape)
    if mode == "valid" and not (builtins.all(a >= b for a, b in zip(s1, s2))
                                or builtins.all(b >= a for a, b in zip(s1, s2))):
        raise InvalidValueError("For 'valid' mode, one must be at least as large as the other in "
                         "every dimension")
    lo, hi = [], []
    for i, (n, m) in enumerate(zip(s1, s2)):
        if mode == "full":
            a, b = 0, n + m - 1
        elif mode == "same":
            a, b = ((m - 1) // 2, n) if same is None else (same[0][i], same[1][i])
            b += a
        else:
            a, b = builtins.min(n, m) - 1, builtins.max(n, m)
        lo.append(a - (m - 1))
        hi.append(b)
    w = _ops.flip(in2) if convolve else in2
    return _correlate_valid(_window(in1, tuple(lo), tuple(hi)), w)


def _check_1d(a, v):
    a, v = _asarray(a), _asarray(v)
    if a.ndim == 0:
        a = _ops.reshape(a, (1,))
    if v.ndim == 0:
        v = _ops.reshape(v, (1,))
    if a.ndim != 1 or v.ndim != 1:
        raise InvalidValueError("object too deep for desired array")
    if a.shape[0] == 0:
        raise InvalidValueError("a cannot be empty")
    if v.shape[0] == 0:
        raise InvalidValueError("v cannot be empty")
    return a, v


@exposes(_correlate_valid)
def convolve(a, v, mode="full"):
    """``np.convolve`` of two 1-D arrays, modes 'full', 'same' (length max(N, M)) and
    'valid'; differentiable in both, at every order (the derivatives are correlations)."""
    a, v = _check_1d(a, v)
    n, m = a.shape[0], v.shape[0]
    return correlate_nd(a, v, mode, True, (((builtins.min(n, m) - 1) // 2,),
                                            (builtins.max(n, m),)))


def correlate(a, v, mode="valid"):
    """``np.correlate`` of two 1-D real arrays: ``z[k] = sum_n a[n + k] v[n]``, modes
    'valid' (the default), 'same' and 'full', as NumPy's."""
    a, v = _check_1d(a, v)
    if _dtype(a).kind == "c" or _dtype(v).kind == "c":
        raise ChainruleError("correlate: complex inputs are not supported")
    n, m = a.shape[0], v.shape[0]
    return correlate_nd(a, v, mode, False, ((((m - 1) // 2 if m <= n else n // 2),),
                                            (builtins.max(n, m),)))


# -- array methods ------------------------------------------------------------------------
array_method("var", lambda self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
             var(self, axis, dtype, out, ddof, keepdims, **kw))
array_method("std", lambda self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
             std(self, axis, dtype, out, ddof, keepdims, **kw))
