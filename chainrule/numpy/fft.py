"""Discrete Fourier transforms, NumPy's ``numpy.fft``: ``import chainrule.numpy as cnp``
then ``cnp.fft.rfft(x)``.

NumPy's signatures and semantics: ``n`` / ``s`` zero-pad or truncate the input,
``axis`` / ``axes`` may be negative (``fftn``'s repeated axes transform again, as
NumPy's do), ``norm`` is None, ``"backward"``, ``"ortho"`` or ``"forward"``; real
inputs of the complex transforms are promoted to complex, and single precision
stays single (float32 -> complex64, as NumPy 2). Every transform is composed of
three linear ops (``chainrule/ops/fft.py``: ``fft`` over several axes, ``rfft``,
``irfft``) with slices and concatenations for ``n`` / ``s``, so each is
differentiable in both modes at every order, compiled and on the tape. Complex
derivatives follow JAX's convention: for a real loss L of z = x + iy,
``grad(L)(z) = dL/dx - i dL/dy``. ``fftfreq`` and ``rfftfreq`` are constants
(differentiable in ``d`` if ``d`` is traced); ``fftshift`` / ``ifftshift`` are
slices and a concatenation.

Assembled like ``chainrule.numpy``: ops that declare ``"fft.<name>"`` in their
``namespace`` appear here, next to the functions written below.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> x = np.array([1.0, 2.0, 0.0, -1.0])
>>> fft(x)
array([2.+0.j, 1.-3.j, 0.+0.j, 1.+3.j])
>>> cr.grad(lambda x: cnp.sum(cnp.abs(fft(x)) ** 2))(x)     # Parseval: 2 n x
array([ 8., 16.,  0., -8.])
>>> irfft(rfft(x), n=4)
array([ 1.,  2.,  0., -1.])
"""

from __future__ import annotations

import sys
import warnings

import numpy as _np

from .. import ops as _ops
from ..errors import ArgumentError, ConcretizationError, TypeInferenceError
from ..ir.op import is_dispatched as _is_dispatched
from ..ops import fft as _fft_ops
from ._assemble import assemble as _assemble
from ._core import exposes
from ._shapes import ShapeArgumentError, _as_value, _concrete, _slice_axis


class FFTAxisError(ShapeArgumentError, IndexError):
    """An axis out of range for the array transformed (NumPy raises an AxisError or
    an IndexError)."""


# the functions written here: NumPy's signatures over the three ops of ops/fft.py
_OWN: list[str] = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
                   "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift",
                   "fftfreq", "rfftfreq"]


# -- argument checks ---------------------------------------------------------------------
def _shape(x) -> tuple:
    return tuple(x.shape)


def _norm(norm, who: str) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in _fft_ops.NORMS:
        raise ShapeArgumentError(f'{who}: invalid norm value {norm!r}; should be "backward", '
                                 f'"ortho" or "forward"')
    return norm


def _static_length(n, who: str, what: str = "n"):
    """None, or ``n`` as a Python int (the result's shape depends on it)."""
    n = _concrete(n)
    if n is None:
        return None
    if _is_dispatched(n):
        raise ConcretizationError(f"{who}: {what} must be a static int: the result's shape "
                                  f"depends on it (a traced value has no value while tracing)")
    if isinstance(n, (bool, _np.bool_)) or not isinstance(n, (int, _np.integer)):
        raise ArgumentError(f"{who}: {what} must be an int or None, got {n!r}")
    return int(n)


def _axis(axis, shape: tuple, who: str) -> int:
    axis = _concrete(axis)
    if isinstance(axis, (bool, _np.bool_)) or not isinstance(axis, (int, _np.integer)):
        raise ArgumentError(f"{who}: an axis must be an int, got {axis!r}")
    if not -len(shape) <= axis < len(shape):
        raise FFTAxisError(f"{who}: axis {int(axis)} is out of bounds for an array of shape "
                           f"{shape} (rank {len(shape)})")
    return int(axis) % len(shape)


def _points(n: int, axis: int, shape: tuple, who: str) -> int:
    if n < 1:
        raise ShapeArgumentError(f"{who}: invalid number of FFT data points ({n}) specified "
                                 f"for axis {axis} of an array of shape {shape}")
    return n


def _into_out(result, out, who: str):
    """NumPy's ``out=``: the result written into ``out`` (NumPy arrays only)."""
    if out is None:
        return result
    if _is_dispatched(result) or not isinstance(out, _np.ndarray):
        raise ArgumentError(f"{who}: out= takes a NumPy array and works on NumPy arrays only "
                            f"(chainrule values are immutable)")
    if out.shape != _np.shape(result):
        raise ShapeArgumentError(f"{who}: out has shape {out.shape}, the result "
                                 f"{_np.shape(result)}")
    _np.copyto(out, result, casting="same_kind")
    return out


# -- dtypes: real inputs of complex transforms, single precision kept --------------------------
def _promote(x, who: str, complex_result: bool):
    kind, dtype = _np.dtype(x.dtype).kind, _np.dtype(x.dtype)
    if kind not in "biufc":
        raise TypeInferenceError(f"{who}: cannot transform an array of dtype {dtype}")
    if kind == "c":
        if not complex_result:
            raise TypeInferenceError(f"{who}: needs a real input, got a {dtype} array of shape "
                                     f"{_shape(x)}")
        return x
    single = dtype in (_np.float16, _np.float32)
    if complex_result:
        target = _np.complex64 if single else _np.complex128
    else:
        target = _np.float32 if single else _np.float64
    return x if dtype == target else _ops.astype(x, target)


def _complex(x, who: str):
    return _promote(x, who, True)


# -- zero-padding and truncation along one axis ------------------------------------------------
def _zeros(like, shape: tuple):
    """Zeros of ``like``'s dtype, made in its trace (no constant of that size is embedded)."""
    if not _is_dispatched(like):
        return _np.zeros(shape, like.dtype)
    seed = like
    if like.ndim:
        seed = (_ops.getitem(like, (0,) * like.ndim) if 0 not in _shape(like)
                else _ops.sum(like))
    return _ops.broadcast_to(_ops.zeros_like(seed), shape)


def _fit(x, axis: int, n: int):
    """x zero-padded or truncated to length n along axis (NumPy's n / s)."""
    shape = _shape(x)
    m = shape[axis]
    if n == m:
        return x
    if n < m:
        return _slice_axis(x, axis, slice(0, n))
    pad = list(shape)
    pad[axis] = n - m
    return _ops.concatenate(x, _zeros(x, tuple(pad)), axis=axis)


# -- the one-axis transforms ------------------------------------------------------------------
def _c2c(x, lengths, axes, inverse: bool, norm: str, who: str, order):
    """The complex transform over ``axes`` (lengths: None for the axis's own), one op
    when the axes are distinct, else one per entry in ``order`` (NumPy's loop)."""
    x = _complex(x, who)
    shape = _shape(x)
    lengths = [shape[a] if n is None else n for n, a in zip(lengths, axes)]
    if len(set(axes)) == len(axes):
        for n, a in zip(lengths, axes):
            x = _fit(x, a, _points(n, a, shape, who))
        return _fft_ops.fft(x, axes=tuple(axes), inverse=inverse, norm=norm)
    for i in order:
        x = _fit(x, axes[i], _points(lengths[i], axes[i], _shape(x), who))
        x = _fft_ops.fft(x, axes=(axes[i],), inverse=inverse, norm=norm)
    return x


def _rfft_1d(x, n, axis: int, norm: str, who: str):
    x = _promote(x, who, False)
    shape = _shape(x)
    n = _points(shape[axis] if n is None else n, axis, shape, who)
    return _fft_ops.rfft(_fit(x, axis, n), axis=axis, norm=norm)


def _irfft_1d(x, n, axis: int, norm: str, who: str):
    half = _np.dtype(x.dtype) == _np.float16  # NumPy's irfft keeps a real float16 input's
    x = _complex(x, who)
    shape = _shape(x)
    n = _points(2 * (shape[axis] - 1) if n is None else n, axis, shape, who)
    out = _fft_ops.irfft(_fit(x, axis, n // 2 + 1), n=n, axis=axis, norm=norm)
    return _ops.astype(out, _np.float16) if half else out


# -- NumPy's functions -----------------------------------------------------------------------
@exposes(_fft_ops.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.fft``: the DFT along ``axis``, zero-padded or truncated to ``n``."""
    x = _as_value(a)
    ax = _axis(axis, _shape(x), "fft")
    y = _c2c(x, [_static_length(n, "fft")], [ax], False, _norm(norm, "fft"), "fft", [0])
    return _into_out(y, out, "fft")


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.ifft``: the inverse DFT along ``axis`` (``norm="backward"``: scaled by 1/n)."""
    x = _as_value(a)
    ax = _axis(axis, _shape(x), "ifft")
    y = _c2c(x, [_static_length(n, "ifft")], [ax], True, _norm(norm, "ifft"), "ifft", [0])
    return _into_out(y, out, "ifft")


@exposes(_fft_ops.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.rfft``: the DFT of a real array, its ``n // 2 + 1`` non-negative
    frequencies."""
    x = _as_value(a)
    ax = _axis(axis, _shape(x), "rfft")
    y = _rfft_1d(x, _static_length(n, "rfft"), ax, _norm(norm, "rfft"), "rfft")
    return _into_out(y, out, "rfft")


@exposes(_fft_ops.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.irfft``: ``n`` real values (default ``2 (m - 1)``) from the ``m``
    non-negative frequencies of a Hermitian spectrum (the imaginary parts of the DC
    term and, for even ``n``, the Nyquist term are ignored)."""
    x = _as_value(a)
    ax = _axis(axis, _shape(x), "irfft")
    y = _irfft_1d(x, _static_length(n, "irfft"), ax, _norm(norm, "irfft"), "irfft")
    return _into_out(y, out, "irfft")


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.hfft``: the (real) DFT of a signal with Hermitian symmetry given by
    its first half: ``irfft(conj(a), n)`` with the norm swapped."""
    x = _as_value(a)
    ax = _axis(axis, _shape(x), "hfft")
    norm = _fft_ops.swap_norm(_norm(norm, "hfft"))
    if _np.dtype(x.dtype).kind == "c":
        x = _ops.conj(x)
    y = _irfft_1d(x, _static_length(n, "hfft"), ax, norm, "hfft")
    return _into_out(y, out, "hfft")


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """``np.fft.ihfft``: the inverse of ``hfft``, ``conj(rfft(a, n))`` with the norm
    swapped."""
    x = _as_value(a)
    ax = _axis(axis, _shape(x), "ihfft")
    norm = _fft_ops.swap_norm(_norm(norm, "ihfft"))
    y = _ops.conj(_rfft_1d(x, _static_length(n, "ihfft"), ax, norm, "ihfft"))
    return _into_out(y, out, "ihfft")


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning raised by our caller at user code (the
    first frame outside chainrule)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("chainrule."):
        level, frame = level + 1, frame.f_back
    return level


def _cook(x, s, axes, who: str, invreal: bool = False):
    """NumPy's ``_cook_nd_args``: the lengths (None: the 1-D default) and axes."""
    shape = _shape(x)
    s, axes = _concrete(s), _concrete(axes)
    if axes is not None:
        if not isinstance(axes, (tuple, list, range, _np.ndarray)):
            raise ArgumentError(f"{who}: axes must be a sequence of ints, got {axes!r}")
        axes = [_axis(a, shape, who) for a in axes]
    if s is None:
        lengths = list(shape) if axes is None else [shape[a] for a in axes]
    else:
        if not isinstance(s, (tuple, list, range, _np.ndarray)):
            raise ArgumentError(f"{who}: s must be a sequence of ints, got {s!r}")
        lengths = [_static_length(n, who, "each entry of s") for n in s]
    if axes is None:
        if s is not None:
            warnings.warn(f"{who}: `axes` should not be None if `s` is not None (deprecated "
                          f"in NumPy 2.0); pass axes=range(-len(s), 0) for this behaviour",
                          DeprecationWarning, stacklevel=_user_stacklevel())
        axes = [_axis(a, shape, who) for a in range(-len(lengths), 0)]
    if len(lengths) != len(axes):
        raise ShapeArgumentError(f"{who}: s and axes have different lengths ({len(lengths)} "
                                 f"and {len(axes)})")
    if invreal and s is None and axes:
        lengths[-1] = 2 * (shape[axes[-1]] - 1)
    if s is not None and None in lengths:
        warnings.warn(f"{who}: None in s is deprecated in NumPy 2.0; pass the length of the "
                      f"1-D transform instead", DeprecationWarning, stacklevel=_user_stacklevel())
    lengths = [shape[a] if n == -1 else n for n, a in zip(lengths, axes)]
    return lengths, axes


def _complex_nd(a, s, axes, norm, out, inverse: bool, who: str):
    x = _as_value(a)
    lengths, axes = _cook(x, s, axes, who)
    norm = _norm(norm, who)
    if not axes:  # NumPy returns the input itself
        return _into_out(x, out, who)
    y = _c2c(x, lengths, axes, inverse, norm, who, range(len(axes) - 1, -1, -1))
    return _into_out(y, out, who)


def fftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.fftn``: the DFT over ``axes`` (default all), each zero-padded or truncated
    to its entry of ``s``."""
    return _complex_nd(a, s, axes, norm, out, False, "fftn")


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.ifftn``: the inverse DFT over ``axes`` (default all)."""
    return _complex_nd(a, s, axes, norm, out, True, "ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.fft2``: ``fftn`` over the last two axes."""
    return _complex_nd(a, s, axes, norm, out, False, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.ifft2``: ``ifftn`` over the last two axes."""
    return _complex_nd(a, s, axes, norm, out, True, "ifft2")


def _rfft_nd(a, s, axes, norm, out, who: str):
    x = _as_value(a)
    lengths, axes = _cook(x, s, axes, who)
    norm = _norm(norm, who)
    if not axes:
        raise FFTAxisError(f"{who}: needs at least one axis to transform")
    y = _rfft_1d(x, lengths[-1], axes[-1], norm, who)
    if len(axes) > 1:
        y = _c2c(y, lengths[:-1], axes[:-1], False, norm, who, range(len(axes) - 2, -1, -1))
    return _into_out(y, out, who)


def _irfft_nd(a, s, axes, norm, out, who: str):
    x = _as_value(a)
    lengths, axes = _cook(x, s, axes, who, invreal=True)
    norm = _norm(norm, who)
    if not axes:
        raise FFTAxisError(f"{who}: needs at least one axis to transform")
    if len(axes) > 1:
        x = _c2c(x, lengths[:-1], axes[:-1], True, norm, who, range(len(axes) - 1))
    y = _irfft_1d(x, lengths[-1], axes[-1], norm, who)
    return _into_out(y, out, who)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.rfftn``: ``rfft`` over the last of ``axes``, then ``fft`` over the others."""
    return _rfft_nd(a, s, axes, norm, out, "rfftn")


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """``np.fft.irfftn``: ``ifft`` over all ``axes`` but the last, then ``irfft`` over it
    (its length ``s[-1]``, by default ``2 (m - 1)``)."""
    return _irfft_nd(a, s, axes, norm, out, "irfftn")


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.rfft2``: ``rfftn`` over the last two axes."""
    return _rfft_nd(a, s, axes, norm, out, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``np.fft.irfft2``: ``irfftn`` over the last two axes."""
    return _irfft_nd(a, s, axes, norm, out, "irfft2")


# -- shifts and frequencies ----------------------------------------------------------------
def _shift(x, axes, sign: int, who: str):
    x = _as_value(x)
    shape = _shape(x)
    axes = _concrete(axes)
    if axes is None:
        axes = range(len(shape))
    elif not isinstance(axes, (tuple, list, range, _np.ndarray)):
        axes = (axes,)
    shifts = dict.fromkeys(range(len(shape)), 0)
    for a in axes:  # a repeated axis shifts again, as np.roll does
        a = _axis(a, shape, who)
        shifts[a] += sign * (shape[a] // 2)
    for a, k in shifts.items():
        n = shape[a]
        k = k % n if n else 0
        if k:  # roll by k: the last k entries move to the front
            x = _ops.concatenate(_slice_axis(x, a, slice(n - k, n)),
                                 _slice_axis(x, a, slice(0, n - k)), axis=a)
    return x


def fftshift(x, axes=None):
    """``np.fft.fftshift``: the zero frequency moved to the center (a roll by n // 2
    along each of ``axes``, default all)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None):
    """``np.fft.ifftshift``: the inverse of ``fftshift`` (a roll by -(n // 2))."""
    return _shift(x, axes, -1, "ifftshift")


def _frequencies(n, d, device, who: str, counts):
    n = _concrete(n)
    if isinstance(n, (bool, _np.bool_)) or not isinstance(n, (int, _np.integer)):
        raise ShapeArgumentError(f"{who}: n should be an integer, got {n!r}")
    if n < 1:
        raise ShapeArgumentError(f"{who}: n must be at least 1, got {int(n)}")
    if device not in (None, "cpu"):
        raise ShapeArgumentError(f"{who}: device must be None or 'cpu', got {device!r}")
    if not _is_dispatched(d):
        return getattr(_np.fft, who)(int(n), d)
    # a traced sample spacing: the same integers times 1 / (n d), differentiable in d
    return _ops.multiply(counts(int(n)), 1.0 / (int(n) * d))


def _signed_counts(n: int) -> _np.ndarray:
    return _np.concatenate([_np.arange(0, (n - 1) // 2 + 1), _np.arange(-(n // 2), 0)])


def fftfreq(n, d=1.0, device=None):
    """``np.fft.fftfreq``: the frequencies of ``fft``'s bins, ``[0, 1, ..., -1] / (n d)``
    (a constant; differentiable in a traced ``d``)."""
    return _frequencies(n, d, device, "fftfreq", _signed_counts)


def rfftfreq(n, d=1.0, device=None):
    """``np.fft.rfftfreq``: the frequencies of ``rfft``'s bins, ``[0, ..., n // 2] / (n d)``
    (a constant; differentiable in a traced ``d``)."""
    return _frequencies(n, d, device, "rfftfreq", lambda n: _np.arange(0, n // 2 + 1))


__all__ = _assemble(globals(), "fft.", _OWN)
