"""Rules of ``ops/fft.py``. Every transform is linear, so its JVP is the op itself
applied to the tangent and its VJP is its transpose: JAX's convention, the
transpose and not the adjoint (no conjugation of the matrix). For a real loss L
the cotangent of a complex value y is dL/dRe(y) - i dL/dIm(y), and the
cotangent of a real input x of a linear map y = A x is Re(A^T ct).

Notation: n the transform length, m = n // 2 + 1, th_jk = 2 pi j k / n, s the
scale ``norm`` gives the op (1, 1/sqrt(n) or 1/n), ``swap`` the norm with that
scale in the other direction (backward <-> forward, ortho unchanged).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.fft import fft, irfft, rfft, swap_norm
from .common import linear_self
from .registry import jvp_rule, vjp_rule

for _op in (fft, rfft, irfft):
    jvp_rule(_op)(linear_self(_op))


def _bin_weights(g, m: int, n: int, axis: int, inner: float, ends: float):
    """A real constant shaped to broadcast along ``axis`` of ``g``: ``ends`` at the DC
    bin and, for even n, at the Nyquist bin (the bins the Hermitian extension of a
    half spectrum does not repeat), ``inner`` elsewhere; of g's real precision."""
    w = np.full(m, inner, np.empty(0, g.dtype).real.dtype)
    w[0] = ends
    if n % 2 == 0:
        w[-1] = ends
    shape = [1] * g.ndim
    shape[axis] = m
    return w.reshape(shape)


@vjp_rule(fft)
def fft_vjp(z, g, x, axes, inverse, norm):
    """z = s F x over axes (F the DFT matrix, or its inverse's with inverse=True);
    F is symmetric, so the transpose is the same transform:  dx = s F g"""
    return (fft(g, axes=axes, inverse=inverse, norm=norm),)


@vjp_rule(rfft)
def rfft_vjp(z, g, x, axis, norm):
    """z_k = s sum_j x_j e^{-i th_jk} for k < m (x real);
    dx_j = Re(sum_k g_k s e^{-i th_jk}) = s Re(sum_k conj(g_k) e^{+i th_jk})
         = irfft(conj(g) w, n, norm=swap(norm)),  w = 1 at DC (and Nyquist for even n),
    1/2 at the other bins: irfft counts those twice (with their mirror images), and
    the real part drops the imaginary parts irfft ignores at DC and Nyquist."""
    n = x.shape[axis]
    w = _bin_weights(g, n // 2 + 1, n, axis, 0.5, 1.0)
    return (irfft(ops.conj(g) * w, n=n, axis=axis, norm=swap_norm(norm)),)


@vjp_rule(irfft)
def irfft_vjp(z, g, x, n, axis, norm):
    """z_j = s [Re x_0 + 2 sum_{0<k<n/2} Re(x_k e^{+i th_jk}) + Re x_{n/2} (-1)^j]
    (the last term for even n only; g real);
    dx_k = dL/dRe x_k - i dL/dIm x_k = s w_k sum_j g_j e^{+i th_jk}
         = conj(rfft(g, norm=swap(norm))) w,  w = 1 at DC (and Nyquist for even n),
    2 elsewhere: real at DC and Nyquist, whose imaginary parts z ignores."""
    w = _bin_weights(g, n // 2 + 1, n, axis, 2.0, 1.0)
    return (ops.conj(rfft(g, axis=axis, norm=swap_norm(norm))) * w,)
