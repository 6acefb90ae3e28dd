"""Discrete Fourier transforms: three linear ops.

- ``fft(x, axes, inverse, norm)``: the complex DFT (or its inverse) over the
  distinct ``axes`` of a complex array, NumPy's ``fftn`` / ``ifftn``;
- ``rfft(x, axis, norm)``: the DFT of a real array along one axis, keeping
  the ``n // 2 + 1`` non-negative frequencies (NumPy's ``rfft``);
- ``irfft(x, n, axis, norm)``: its inverse, a real array of length ``n`` from
  exactly ``n // 2 + 1`` frequencies (the imaginary parts of the DC term, and
  of the Nyquist term for even ``n``, are ignored, as NumPy does).

``norm`` is NumPy's: ``"backward"`` (the forward transform unscaled, the inverse
scaled by 1/n), ``"ortho"`` (both by 1/sqrt(n)) or ``"forward"`` (the forward
by 1/n). Each op transforms arrays of its own precision (complex64 stays
complex64). Zero-padding and truncation (NumPy's ``n`` / ``s``), real inputs
of complex transforms, ``hfft`` / ``ihfft`` and the multi-axis real transforms
are composed from these in ``chainrule.numpy.fft``; their derivatives (the
transposes, see ``rules/fft.py``) are these ops again.

>>> import numpy as np
>>> fft(np.array([1.0, 2.0, 3.0, 4.0], complex), axes=(0,))
array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
>>> rfft(np.array([1.0, 2.0, 3.0, 4.0]), axis=0)
array([10.+0.j, -2.+2.j, -2.+0.j])
>>> irfft(np.array([10.0, -2 + 2j, -2.0]), n=4, axis=0)
array([1., 2., 3., 4.])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import DType, TensorType
from .common import define, normalize_axes, normalize_axis
from .common import tensor_types as _tensor_types

__all__ = ["NORMS", "fft", "irfft", "rfft", "swap_norm"]

NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_REAL_OF = {"c64": "f32", "c128": "f64"}
_FACTS = dict(linear=(0,), fresh=True, aliases=False)


def swap_norm(norm: str) -> str:
    """The norm whose scale is that of ``norm`` in the other direction: the forward
    transform under ``"backward"`` is scaled like the inverse one under ``"forward"``."""
    return _SWAPPED[norm]


def _check_norm(name: str, norm) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in NORMS:
        raise TypeInferenceError(f'{name}: invalid norm {norm!r}; should be "backward", '
                                 f'"ortho" or "forward"')
    return str(norm)


def _check_length(name: str, t: TensorType, axis: int) -> None:
    n = t.shape[axis]
    if isinstance(n, int) and n < 1:
        raise TypeInferenceError(f"{name}: axis {axis} of {t!r} has length {n}; a transform "
                                 f"needs at least one point")


def _norm_text(norm) -> str | None:
    return repr(norm) if norm in NORMS else None


# -- fft: the complex transform over several axes -------------------------------------------
def _fft_normalize(types, attrs):
    (t,) = _tensor_types("fft", types)
    if not t.dtype.is_complex:
        raise TypeInferenceError(f"fft: needs a complex operand, got {t!r} (cast it to a "
                                 f"complex dtype first)")
    axes = normalize_axes("fft", attrs["axes"], t.ndim)
    if not axes:
        raise TypeInferenceError(f"fft: needs at least one axis to transform, got "
                                 f"{attrs['axes']!r} for {t!r}")
    inverse = attrs["inverse"]
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeInferenceError(f"fft: inverse must be a bool, got {inverse!r}")
    return {"axes": axes, "inverse": bool(inverse), "norm": _check_norm("fft", attrs["norm"])}


def _fft_type(types, attrs):
    (t,) = types
    for a in attrs["axes"]:
        _check_length("fft", t, a)
    return t


def _fft_kernel(x, axes, inverse, norm):
    if len(axes) == 1:
        return (np.fft.ifft if inverse else np.fft.fft)(x, axis=axes[0], norm=norm)
    return (np.fft.ifftn if inverse else np.fft.fftn)(x, axes=axes, norm=norm)


def _fft_emit(e):
    axes, norm = e.attrs["axes"], _norm_text(e.attrs["norm"])
    if norm is None or not all(isinstance(a, int) for a in axes) or not axes:
        return None
    name = "ifft" if e.attrs["inverse"] else "fft"
    if len(axes) == 1:
        return f"np.fft.{name}({e.args[0]}, axis={int(axes[0])}, norm={norm})"
    text = ", ".join(str(int(a)) for a in axes)
    return f"np.fft.{name}n({e.args[0]}, axes=({text}), norm={norm})"


fft = define(
    "fft", _fft_type, _fft_kernel, 1, {"axes": REQUIRED, "inverse": False, "norm": "backward"},
    _fft_normalize, emit=_fft_emit, **_FACTS,
    doc="The complex DFT of x over axes (inverse=True: the inverse DFT), scaled as norm says")


# -- rfft / irfft: real signals along one axis ------------------------------------------------
def _one_axis(name, t, attrs):
    axis = normalize_axis(name, attrs["axis"], t.ndim)
    n = t.shape[axis]
    if not isinstance(n, int):
        raise TypeInferenceError(f"{name}: the length of axis {axis} of {t!r} must be known")
    return axis


def _rfft_normalize(types, attrs):
    (t,) = _tensor_types("rfft", types)
    if str(t.dtype) not in _COMPLEX_OF:
        raise TypeInferenceError(f"rfft: needs a float32 or float64 operand, got {t!r}")
    return {"axis": _one_axis("rfft", t, attrs), "norm": _check_norm("rfft", attrs["norm"])}


def _rfft_type(types, attrs):
    (t,) = types
    axis = attrs["axis"]
    _check_length("rfft", t, axis)
    shape = list(t.shape)
    shape[axis] = t.shape[axis] // 2 + 1
    return TensorType(shape, DType(_COMPLEX_OF[str(t.dtype)]))


def _rfft_kernel(x, axis, norm):
    return np.fft.rfft(x, axis=axis, norm=norm)


def _rfft_emit(e):
    norm = _norm_text(e.attrs["norm"])
    axis = e.attrs["axis"]
    if norm is None or not isinstance(axis, int):
        return None
    return f"np.fft.rfft({e.args[0]}, axis={int(axis)}, norm={norm})"


rfft = define(
    "rfft", _rfft_type, _rfft_kernel, 1, {"axis": -1, "norm": "backward"}, _rfft_normalize,
    emit=_rfft_emit, **_FACTS,
    doc="The DFT of a real x along axis: its n // 2 + 1 non-negative frequencies")


def _irfft_normalize(types, attrs):
    (t,) = _tensor_types("irfft", types)
    if str(t.dtype) not in _REAL_OF:
        raise TypeInferenceError(f"irfft: needs a complex64 or complex128 operand, got {t!r}")
    n = attrs["n"]
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise TypeInferenceError(f"irfft: n must be an int >= 1 (the output length), got "
                                 f"{n!r}")
    return {"n": int(n), "axis": _one_axis("irfft", t, attrs),
            "norm": _check_norm("irfft", attrs["norm"])}


def _irfft_type(types, attrs):
    (t,) = types
    n, axis = attrs["n"], attrs["axis"]
    if t.shape[axis] != n // 2 + 1:
        raise TypeInferenceError(f"irfft: an output of length n = {n} needs n // 2 + 1 = "
                                 f"{n // 2 + 1} frequencies along axis {axis}, got {t!r} "
                                 f"(pad or truncate it first)")
    shape = list(t.shape)
    shape[axis] = n
    return TensorType(shape, DType(_REAL_OF[str(t.dtype)]))


def _irfft_kernel(x, n, axis, norm):
    return np.fft.irfft(x, n=n, axis=axis, norm=norm)


def _irfft_emit(e):
    norm = _norm_text(e.attrs["norm"])
    n, axis = e.attrs["n"], e.attrs["axis"]
    if norm is None or not isinstance(axis, int) or not isinstance(n, int):
        return None
    return f"np.fft.irfft({e.args[0]}, n={int(n)}, axis={int(axis)}, norm={norm})"


irfft = define(
    "irfft", _irfft_type, _irfft_kernel, 1, {"n": REQUIRED, "axis": -1, "norm": "backward"},
    _irfft_normalize, emit=_irfft_emit, **_FACTS,
    doc="The real inverse of rfft: n real values along axis from n // 2 + 1 frequencies")
