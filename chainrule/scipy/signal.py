"""SciPy's ``scipy.signal``, differentiable: ops that declare ``"scipy.signal.<name>"`` in
their ``namespace`` appear here, next to the functions written below.

``convolve`` and ``correlate`` (n-D, modes 'full', 'same', 'valid') and their 2-D
forms compute what ``scipy.signal`` computes with ``method="direct"`` (any
``method`` gives the direct sum here), as the ``correlate_valid`` op applied to a
zero-padded window of ``in1``: differentiable in both inputs at every order (the
derivative of a correlation is a correlation with the cotangent). Cost: a
multiply-add per output element and kernel element, and as much again per
derivative; no FFT.
"""

from __future__ import annotations

import numpy as _np

from ..errors import ChainruleError
from ..ir.op import is_dispatched as _is_dispatched
from ..numpy._assemble import assemble as _assemble
from ..numpy._reductions import correlate_nd as _correlate_nd

# the functions written here (besides the ops that declare "scipy.signal.<name>")
_OWN: list[str] = ["convolve", "convolve2d", "correlate", "correlate2d"]


def _asarray(x):
    return x if _is_dispatched(x) else _np.asarray(x)


def _method(method):
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Acceptable method flags are 'auto', 'direct', or 'fft', "
                         f"got {method!r}")


def _real(who, *xs):
    if any(_np.dtype(x.dtype).kind == "c" for x in xs):
        raise ChainruleError(f"{who}: complex inputs are not supported")


def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``: z[k] = sum_j in1[k - j] in2[j] over every dimension,
    'full', 'same' (in1's shape, centred) or 'valid'; computed directly whatever
    ``method`` says. Differentiable in both inputs."""
    _method(method)
    in1, in2 = _asarray(in1), _asarray(in2)
    _real("convolve", in1, in2)
    return _correlate_nd(in1, in2, mode, True)


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate`` of real arrays: z[k] = sum_j in1[k + j - (M - 1)] in2[j]
    in 'full' coordinates, modes 'full', 'same' (in1's shape, centred) and 'valid'.
    Differentiable in both inputs."""
    _method(method)
    in1, in2 = _asarray(in1), _asarray(in2)
    _real("correlate", in1, in2)
    return _correlate_nd(in1, in2, mode, False)


def _two_d(who, in1, in2, boundary, fillvalue):
    in1, in2 = _asarray(in1), _asarray(in2)
    if in1.ndim != 2 or in2.ndim != 2:
        raise ValueError(f"{who} inputs must both be 2-D arrays")
    if boundary not in ("fill", "fillvalue") or fillvalue != 0:
        raise ChainruleError(f"{who}: only boundary='fill' with fillvalue=0 is supported")
    _real(who, in1, in2)
    return in1, in2


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.convolve2d`` with zero fill (``boundary='fill'``, ``fillvalue=0``)."""
    in1, in2 = _two_d("convolve2d", in1, in2, boundary, fillvalue)
    return _correlate_nd(in1, in2, mode, True)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.correlate2d`` with zero fill (``boundary='fill'``, ``fillvalue=0``)."""
    in1, in2 = _two_d("correlate2d", in1, in2, boundary, fillvalue)
    # scipy centres 'same' differently here than in correlate: at M // 2, not (M - 1) // 2
    return _correlate_nd(in1, in2, mode, False, (tuple(m // 2 for m in in2.shape), in1.shape))


__all__ = _assemble(globals(), "scipy.signal.", _OWN)
