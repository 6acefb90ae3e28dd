"""More of NumPy's namespace, written as compositions of the other functions of
``chainrule.numpy`` (so derivatives of every order, vmap, printing and every
backend come for free): NumPy 2's aliases (``acos``, ``pow``, ``concat``,
``cumulative_sum``, ...), ``nanvar``/``nanstd``/``nanprod``/``nancumsum``/
``nancumprod``, ``cov``/``corrcoef``, ``interp``, the ``poly*`` family,
``trapezoid``, ``vander``, ``matvec``/``vecmat``, ``unstack``, the window
functions (constants, NumPy's own), ``float_power``, ``rint``/``fix``/``positive``,
``divmod``/``modf``, ``isneginf``/``isposinf``, the ``*_indices_from`` helpers,
``ediff1d``, ``diagflat``, ``copy``, ``empty``/``empty_like``.

>>> import numpy as np, chainrule as cr
>>> float(cr.grad(lambda c: polyval(c, 2.0))(np.array([1.0, 0.0, 3.0]))[0])
4.0
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..emit.methods import array_method
from ..errors import ArgumentError, InvalidValueError
from ..ir.op import is_dispatched as _is_dispatched
from ._core import _scan_input, ravel
from ._linalg import diag, diagonal
from ._reductions import _axes, _ddof, convolve, diff
from ._shapes import _as_value, concatenate, stack
from ._sorting import searchsorted, take

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bartlett", "blackman",
    "concat", "copy", "corrcoef", "cov", "cumulative_prod", "cumulative_sum",
    "diag_indices_from", "diagflat", "divmod", "ediff1d", "empty", "empty_like", "fix",
    "float_power", "hamming", "hanning", "i0", "interp", "isneginf", "isposinf", "kaiser",
    "matvec", "modf", "nancumprod", "nancumsum", "nanprod", "nanstd", "nanvar", "polyadd",
    "polyder", "polyint", "polymul", "polysub", "polyval", "positive", "pow", "rint",
    "trapezoid", "tril_indices_from", "triu_indices_from", "unstack", "vander", "vecmat",
]


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype)


def _refuse(who: str, **given) -> None:
    """A chainrule error naming the keywords given that are not supported."""
    bad = sorted(k for k, v in given.items() if v is not None)
    if bad:
        raise ArgumentError(f"{who}: {', '.join(k + '=' for k in bad)} not supported")


# -- NumPy 2 aliases ----------------------------------------------------------------------
def _alias(name: str, op_name: str):
    op = getattr(_ops, op_name)

    def alias(*args):
        return op(*args)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"``np.{name}`` (``{op_name}``)."
    return alias


# NumPy 2's names for its inverse trigonometric functions and power
_ALIASES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
            "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}
acos, acosh, asin, asinh, atan, atanh, atan2, pow = (  # noqa: A001
    _alias(name, op_name) for name, op_name in _ALIASES.items())


def concat(arrays, /, *, axis=0):
    """``np.concat`` (``concatenate``)."""
    return concatenate(arrays, axis=axis)


def _cumulative(name, scan, initial):
    def cumulative(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        x = _as_value(x)
        if axis is None:
            if x.ndim > 1:
                raise InvalidValueError(f"{name}: axis must be given for an array of more than "
                                 f"one dimension")
            axis = 0
        if x.ndim == 0:
            raise InvalidValueError(f"{name}: the input must have at least one dimension")
        x, axis = _scan_input(x, axis, dtype, out, name)
        y = scan(x, axis=axis)
        if include_initial:
            shape = list(y.shape)
            shape[axis % y.ndim] = 1
            y = concatenate([_np.full(shape, initial, _dtype(y)), y], axis=axis)
        return y

    cumulative.__name__ = cumulative.__qualname__ = name
    cumulative.__doc__ = f"``np.{name}`` (NumPy 2), with ``include_initial``."
    return cumulative


def _cumprod(x, axis):
    return _ops.prefix_product(x, axis) if _is_dispatched(x) else _np.cumprod(x, axis=axis)


cumulative_sum = _cumulative("cumulative_sum", lambda x, axis: _ops.cumsum(x, axis=axis), 0)
cumulative_prod = _cumulative("cumulative_prod", _cumprod, 1)


# -- elementwise ----------------------------------------------------------------------------
def positive(x):
    """``np.positive``: x itself (a new array for a NumPy input); bool refused as NumPy does."""
    x = _as_value(x)
    if _dtype(x) == _np.bool_:
        raise ArgumentError("The numpy boolean positive, the `+` operator, is not supported.")
    return x if _is_dispatched(x) else _np.positive(x)


def rint(x):
    """``np.rint``: to the nearest integer, ties to even (``round``)."""
    return _ops.round(x)


def fix(x):
    """``np.fix``: toward zero; integer arrays as they are."""
    x = _as_value(x)
    if _dtype(x).kind in "biu":
        return x if _is_dispatched(x) else _np.fix(x)
    return _ops.trunc(x)


def float_power(x1, x2):
    """``np.float_power``: ``power`` in float64 (complex128 for complex inputs)."""
    x1, x2 = _as_value(x1), _as_value(x2)
    wide = _np.complex128 if "c" in (_dtype(x1).kind, _dtype(x2).kind) else _np.float64
    return _ops.power(_ops.astype(x1, wide), _ops.astype(x2, wide))


def isneginf(x):
    """``np.isneginf``: x == -inf."""
    return _ops.equal(x, -_np.inf)


def isposinf(x):
    """``np.isposinf``: x == +inf."""
    return _ops.equal(x, _np.inf)


def divmod(x1, x2):  # noqa: A001
    """``np.divmod``: (floor_divide, remainder)."""
    return _ops.floor_divide(x1, x2), _ops.remainder(x1, x2)


def modf(x):
    """``np.modf``: (fractional part, integral part), both with x's sign; +-inf has
    fractional part +-0, as in C."""
    x = _as_value(x)
    if _dtype(x).kind not in "f":
        x = _ops.astype(x, _np.float64)
    whole = _ops.trunc(x)
    infinite = _ops.isinf(x)
    finite = _ops.where(infinite, _np.zeros((), _dtype(x)), x)  # no inf - inf warning
    # the fractional part has x's sign also when it is 0 (modf(-2.0) = -0.0, as C's):
    # -(|x| - trunc(|x|)) for negative x, whose derivative is 1 as x - trunc(x)'s is
    flipped = _ops.negative(finite)
    frac = _ops.where(_ops.signbit(x),
                      _ops.negative(_ops.subtract(flipped, _ops.trunc(flipped))),
                      _ops.subtract(finite, _ops.trunc(finite)))
    frac = _ops.where(infinite, _ops.copysign(_np.zeros((), _dtype(x)), x), frac)
    return frac, whole


def i0(x):
    """``np.i0``: the modified Bessel function of the first kind, order 0."""
    x = _as_value(x)
    if _dtype(x).kind == "c":
        raise ArgumentError("i0 not supported for complex values")
    return _ops.bessel_i0(x)


# -- nan reductions -------------------------------------------------------------------------
def _isnan(x):
    return _ops.not_equal(x, x)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.nanprod``: the product with NaNs counted as 1."""
    _refuse("nanprod", out=out, initial=initial, where=where)
    a = _as_value(a)
    if dtype is not None:
        a = _ops.astype(a, _np.dtype(dtype))
    if _dtype(a).kind in "fc":
        a = _ops.where(_isnan(a), _np.ones((), _dtype(a)), a)
    return _ops.prod(a, axis=None if axis is None else _axes(axis, a.ndim), keepdims=keepdims)


def _nan_scan(name, scan, fill):
    def nan_scan(a, axis=None, dtype=None, out=None):
        a = _as_value(a)
        if _dtype(a).kind in "fc":
            a = _ops.where(_isnan(a), _np.full((), fill, _dtype(a)), a)
        return scan(a, axis=axis, dtype=dtype, out=out)

    nan_scan.__name__ = nan_scan.__qualname__ = name
    nan_scan.__doc__ = f"``np.{name}``: NaNs counted as {fill}."
    return nan_scan


def _cumsum(a, axis=None, dtype=None, out=None):
    x, axis = _scan_input(a, axis, dtype, out, "nancumsum")
    return _ops.cumsum(x, axis=axis)


def _cumprod_api(a, axis=None, dtype=None, out=None):
    x, axis = _scan_input(a, axis, dtype, out, "nancumprod")
    return _cumprod(x, axis)


nancumsum = _nan_scan("nancumsum", _cumsum, 0)
nancumprod = _nan_scan("nancumprod", _cumprod_api, 1)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """``np.nanvar``: the variance of the non-NaN elements, divided by max(n - ddof, 0)
    (NaN where that is 0, as NumPy gives with a warning)."""
    _refuse("nanvar", out=out, where=where, mean=mean)
    ddof = _ddof(ddof, correction)
    a = _as_value(a)
    if dtype is not None:
        a = _ops.astype(a, _np.dtype(dtype))
    if _dtype(a).kind not in "fc":
        a = _ops.astype(a, _np.float64)
    axes = _axes(axis, a.ndim)
    nan = _isnan(a)
    zero = _np.zeros((), _dtype(a))
    clean = _ops.where(nan, zero, a)
    real = _dtype(a).kind == "f"
    count_dtype = _dtype(a) if real else _np.dtype(_np.float64)
    count = _ops.sum(_ops.astype(_ops.logical_not(nan), count_dtype), axis=axes, keepdims=True)
    m = _ops.divide(_ops.sum(clean, axis=axes, keepdims=True), count)
    centered = _ops.where(nan, zero, _ops.subtract(a, m))
    sq = _ops.multiply(centered, _ops.conj(centered)) if not real else _ops.multiply(
        centered, centered)
    if not real:
        sq = _ops.real(sq)
    total = _ops.sum(sq, axis=axes, keepdims=keepdims)
    n = _ops.subtract(count, ddof)
    if not keepdims:
        n = _ops.reshape(n, tuple(total.shape))
    n = _ops.where(_ops.less_equal(n, 0), _np.nan, n)
    return _ops.divide(total, n)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """``np.nanstd``: sqrt of ``nanvar`` (derivative 0 where the variance is 0)."""
    from ._core import _kinked_root
    return _kinked_root(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                               correction=correction))


# -- statistics -----------------------------------------------------------------------------
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """``np.cov`` without weights: rows are variables (columns with rowvar=False)."""
    _refuse("cov", fweights=fweights, aweights=aweights)
    if ddof is not None and ddof != int(ddof):
        raise InvalidValueError("ddof must be integer")
    m = _as_value(m)
    if m.ndim > 2:
        raise InvalidValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = _np.result_type(_dtype(m), _np.float64)
    x = _ops.astype(m, _np.dtype(dtype))
    x = _ops.reshape(x, (1, -1)) if x.ndim < 2 else x
    if not rowvar and x.shape[0] != 1:
        x = _ops.permute_dims(x, (1, 0))
    if x.shape[0] == 0:
        return _np.array([]).reshape(0, 0)
    if y is not None:
        y = _as_value(y)
        if y.ndim > 2:
            raise InvalidValueError("y has more than 2 dimensions")
        y = _ops.astype(y, _np.dtype(dtype))
        y = _ops.reshape(y, (1, -1)) if y.ndim < 2 else y
        if not rowvar and y.shape[0] != 1:
            y = _ops.permute_dims(y, (1, 0))
        x = concatenate([x, y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1] - ddof
    x = _ops.subtract(x, _ops.mean(x, axis=1, keepdims=True))
    xt = _ops.permute_dims(x, (1, 0))
    if _dtype(x).kind == "c":
        xt = _ops.conj(xt)
    c = _ops.matmul(x, xt)
    c = _ops.divide(c, n) if n > 0 else _ops.divide(c, _np.zeros((), _dtype(c)))
    return _ops.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """``np.corrcoef``: cov / sqrt(diag(cov) outer diag(cov)), clipped to [-1, 1] (real)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return _ops.divide(c, c)
    d = diagonal(c, 0, 0, 1)
    stddev = _ops.sqrt(_ops.real(d) if _dtype(d).kind == "c" else d)
    c = _ops.divide(c, _ops.reshape(stddev, (-1, 1)))
    c = _ops.divide(c, _ops.reshape(stddev, (1, -1)))
    if _dtype(c).kind == "c":
        return c
    return _ops.minimum(_ops.maximum(c, -1.0), 1.0)


# -- interpolation and integration ----------------------------------------------------------
def interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp`` (real values): piecewise-linear through (xp, fp), xp increasing;
    differentiable in x, xp and fp (as jax.numpy.interp: the slope inside each piece)."""
    _refuse("interp", period=period)
    x, xp, fp = _as_value(x), _as_value(xp), _as_value(fp)
    if xp.ndim != 1 or fp.ndim != 1:
        raise InvalidValueError("object too deep for desired array" if max(xp.ndim, fp.ndim) > 1
                         else "object of too small depth for desired array")
    if xp.shape[0] != fp.shape[0]:
        raise InvalidValueError("fp and xp are not of the same length.")
    if xp.shape[0] == 0:
        raise InvalidValueError("array of sample points is empty")
    if any(_dtype(v).kind == "c" for v in (x, xp, fp)):
        raise ArgumentError("interp: complex values are not supported")
    x, xp, fp = (_ops.astype(v, _np.float64) for v in (x, xp, fp))
    n = xp.shape[0]
    first, last = take(fp, 0), take(fp, n - 1)
    left = first if left is None else left
    right = last if right is None else right
    if n == 1:
        inside = _ops.broadcast_to(first, tuple(x.shape))
    else:
        hi = _ops.minimum(_ops.maximum(searchsorted(xp, x, side="right"), 1), n - 1)
        lo = _ops.subtract(hi, 1)
        x_lo, x_hi, f_lo, f_hi = take(xp, lo), take(xp, hi), take(fp, lo), take(fp, hi)
        slope = _ops.divide(_ops.subtract(f_hi, f_lo), _ops.subtract(x_hi, x_lo))
        inside = _ops.add(_ops.multiply(slope, _ops.subtract(x, x_lo)), f_lo)
        # NumPy's fallbacks where the slope is infinite or undefined
        other = _ops.add(_ops.multiply(slope, _ops.subtract(x, x_hi)), f_hi)
        inside = _ops.where(_isnan(inside), other, inside)
        inside = _ops.where(_ops.logical_and(_isnan(inside), _ops.equal(f_lo, f_hi)), f_lo,
                            inside)
        inside = _ops.where(_ops.equal(x, take(xp, n - 1)), last, inside)
    y = _ops.where(_ops.less(x, take(xp, 0)), left, inside)
    y = _ops.where(_ops.greater(x, take(xp, n - 1)), right, y)
    return _ops.astype(y, _np.float64)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid``: the trapezoidal rule along ``axis`` (spacing ``x`` or ``dx``)."""
    y = _as_value(y)
    axis = _axes(axis, y.ndim)[0]
    n = y.shape[axis]
    if x is None:
        d = dx
    else:
        x = _as_value(x)
        if x.ndim == 1:
            d = diff(x)
            shape = [1] * y.ndim
            shape[axis] = -1
            d = _ops.reshape(d, tuple(shape))
        else:
            d = diff(x, axis=axis)
    upper = _ops.getitem(y, (slice(None),) * axis + (slice(1, None),))
    lower = _ops.getitem(y, (slice(None),) * axis + (slice(0, n - 1 if n else 0),))
    avg = _ops.divide(_ops.add(upper, lower), 2.0)
    return _ops.sum(_ops.multiply(d, avg), axis=axis)


# -- polynomials (1-D coefficient arrays, highest power first) ------------------------------
def _poly(p, who):
    if isinstance(p, _np.poly1d):
        raise ArgumentError(f"{who}: poly1d objects are not supported; pass the coefficients")
    p = _as_value(p)
    return _ops.reshape(p, (1,)) if p.ndim == 0 else p


def polyval(p, x):
    """``np.polyval``: Horner's rule, as NumPy evaluates it."""
    p, x = _poly(p, "polyval"), _as_value(x)
    y = _ops.multiply(x, _np.zeros((), _dtype(x)))
    for i in range(p.shape[0]):
        y = _ops.add(_ops.multiply(y, x), take(p, i))
    return y


def _aligned(a1, a2, who: str):
    """Two coefficient arrays, the shorter padded with leading zeros."""
    a1, a2 = _poly(a1, who), _poly(a2, who)
    gap = a2.shape[0] - a1.shape[0]
    if gap > 0:
        a1 = concatenate([_np.zeros(gap, _dtype(a1)), a1])
    elif gap < 0:
        a2 = concatenate([_np.zeros(-gap, _dtype(a2)), a2])
    return a1, a2


def polyadd(a1, a2):
    """``np.polyadd``: the shorter padded with leading zeros."""
    return _ops.add(*_aligned(a1, a2, "polyadd"))


def polysub(a1, a2):
    """``np.polysub``: the shorter padded with leading zeros."""
    return _ops.subtract(*_aligned(a1, a2, "polysub"))


def polymul(a1, a2):
    """``np.polymul``: the full convolution of the coefficients."""
    return convolve(_poly(a1, "polymul"), _poly(a2, "polymul"))


def polyder(p, m=1):
    """``np.polyder``: the m-th derivative's coefficients."""
    m = int(m)
    if m < 0:
        raise InvalidValueError("Order of derivative must be positive (see polyint)")
    p = _poly(p, "polyder")
    for _ in range(m):
        n = p.shape[0] - 1
        p = _ops.multiply(_ops.getitem(p, slice(0, n)), _np.arange(n, 0, -1, dtype=float))
    return p


def polyint(p, m=1, k=None):
    """``np.polyint``: the m-th antiderivative, integration constants ``k`` (0)."""
    m = int(m)
    if m < 0:
        raise InvalidValueError("Order of integral must be positive (see polyder)")
    ks = _np.zeros(m) if k is None else k
    ks = _as_value(ks)
    if ks.ndim == 0:
        ks = _ops.broadcast_to(ks, (m,))
    if ks.shape[0] < m:
        raise InvalidValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _poly(p, "polyint")
    if m == 0:
        return p
    for i in range(m):
        n = p.shape[0]
        p = _ops.divide(p, _np.arange(n, 0, -1, dtype=float))
        p = concatenate([p, _ops.reshape(take(ks, i), (1,))])
    return p


def vander(x, N=None, increasing=False):  # noqa: N803
    """``np.vander``: columns x^(N-1) ... x^0 (reversed with increasing), as products."""
    x = _as_value(x)
    if x.ndim != 1:
        raise InvalidValueError("x must be a one-dimensional array or sequence.")
    N = x.shape[0] if N is None else int(N)  # noqa: N806
    cols = [_ops.full(tuple(x.shape), 1, _dtype(x))][:N]
    for _ in range(1, N):
        cols.append(_ops.multiply(cols[-1], x))
    if not cols:
        return _np.empty((x.shape[0], 0), _dtype(x))
    out = stack(cols if increasing else cols[::-1], axis=1)
    return _ops.astype(out, _dtype(x)) if _dtype(out) != _dtype(x) else out


# -- shapes and assembly --------------------------------------------------------------------
def diagflat(v, k=0):
    """``np.diagflat``: the flattened v on the k-th diagonal."""
    return diag(ravel(_as_value(v)), k)


def ediff1d(ary, to_end=None, to_begin=None):
    """``np.ediff1d``: differences of the flattened array, with optional ends."""
    flat = ravel(_as_value(ary))
    parts = [diff(flat)]
    dt = _dtype(parts[0])
    for extra, at in ((to_begin, 0), (to_end, 1)):
        if extra is not None:
            extra = ravel(_as_value(extra))
            if not _np.can_cast(_dtype(extra), dt, casting="same_kind"):
                raise ArgumentError("dtype of `to_begin`/`to_end` must be compatible with "
                                "input `ary` under the `same_kind` rule.")
            extra = _ops.astype(extra, dt)
            parts.insert(0 if at == 0 else len(parts), extra)
    return concatenate(parts) if len(parts) > 1 else parts[0]


def matvec(x1, x2, /, **kwargs):
    """``np.matvec`` (NumPy 2.2): x1 @ x2 over the last axes, batched."""
    _refuse("matvec", **{k: v for k, v in kwargs.items()})
    x1, x2 = _as_value(x1), _as_value(x2)
    if x1.ndim < 2 or x2.ndim < 1:
        raise InvalidValueError("matvec: x1 must have at least 2 and x2 at least 1 dimension")
    out = _ops.matmul(x1, _ops.expand_dims(x2, -1))
    return _ops.getitem(out, (Ellipsis, 0))


def vecmat(x1, x2, /, **kwargs):
    """``np.vecmat`` (NumPy 2.2): conj(x1) @ x2 over the last axes, batched."""
    _refuse("vecmat", **{k: v for k, v in kwargs.items()})
    x1, x2 = _as_value(x1), _as_value(x2)
    if x1.ndim < 1 or x2.ndim < 2:
        raise InvalidValueError("vecmat: x1 must have at least 1 and x2 at least 2 dimensions")
    if _dtype(x1).kind == "c":
        x1 = _ops.conj(x1)
    out = _ops.matmul(_ops.expand_dims(x1, -2), x2)
    return _ops.getitem(out, (Ellipsis, 0, slice(None)))


def unstack(x, /, *, axis=0):
    """``np.unstack``: the slices along ``axis``, as a tuple."""
    x = _as_value(x)
    if x.ndim == 0:
        raise InvalidValueError("Input array must be at least 1-d.")
    axis = _axes(axis, x.ndim)[0]
    return tuple(_ops.getitem(x, (slice(None),) * axis + (i,)) for i in range(x.shape[axis]))


def copy(a, order="K", subok=False):
    """``np.copy``: chainrule values are immutable, so a traced value is its own copy."""
    a = _as_value(a)
    return a if _is_dispatched(a) else _np.copy(a, order=order)


array_method("copy", copy)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.empty_like``: for a traced value, zeros (NumPy leaves the values unspecified)."""
    p = _as_value(prototype)
    if not _is_dispatched(p):
        return _np.empty_like(p, dtype=dtype, shape=shape)
    dtype = _dtype(p) if dtype is None else _np.dtype(dtype)
    shape = tuple(p.shape) if shape is None else tuple(_np.atleast_1d(shape))
    return _np.zeros(shape, dtype)


# -- constants: NumPy's own (no array to differentiate) -------------------------------------
empty = _np.empty
hamming, hanning, bartlett, blackman, kaiser = (
    _np.hamming, _np.hanning, _np.bartlett, _np.blackman, _np.kaiser)


def _square_shape(arr, who):
    shape = tuple(_as_value(arr).shape)
    if len(shape) != 2:
        raise InvalidValueError("input array must be 2-d")
    return shape


def tril_indices_from(arr, k=0):
    """``np.tril_indices_from``: from the (static) shape of a 2-D array."""
    n, m = _square_shape(arr, "tril_indices_from")
    return _np.tril_indices(n, k=k, m=m)


def triu_indices_from(arr, k=0):
    """``np.triu_indices_from``: from the (static) shape of a 2-D array."""
    n, m = _square_shape(arr, "triu_indices_from")
    return _np.triu_indices(n, k=k, m=m)


def diag_indices_from(arr):
    """``np.diag_indices_from``: from the (static) shape of an array with equal sides."""
    shape = tuple(_as_value(arr).shape)
    if len(shape) < 2:
        raise InvalidValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise InvalidValueError("All dimensions of input must be of equal length")
    return _np.diag_indices(shape[0], len(shape))

