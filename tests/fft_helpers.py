"""Shared by the FFT tests: random real and complex inputs, real losses of complex
outputs, central differences in JAX's convention, FFT convolution."""

from __future__ import annotations

import numpy as np

import chainrule.numpy as cnp

F = cnp.fft
rng = np.random.default_rng(17)
NORMS = [None, "backward", "ortho", "forward"]


def Z(*shape):
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def R(*shape):
    return rng.uniform(-1, 1, shape)


def real_loss(f, w):
    """sum(Re(f(...) * w)) for a complex output (w complex), sum(f(...) * w) for a real one."""
    weights_complex = np.iscomplexobj(w)

    def loss(*args):
        out = f(*args)
        return cnp.sum(cnp.real(out * w)) if weights_complex else cnp.sum(out * w)

    return loss


def weights(f, args):
    out = np.asarray(f(*args))
    w = rng.standard_normal(out.shape)
    return w + 1j * rng.standard_normal(out.shape) if out.dtype.kind == "c" else w


def fd_grad(loss, args, i, eps=1e-6):
    """dL/dx - i dL/dy for complex argument i (dL/dx for a real one), central differences."""
    x = args[i]
    is_complex = np.iscomplexobj(x)
    out = np.zeros(np.shape(x), complex if is_complex else float)
    for idx in np.ndindex(np.shape(x)):
        for d in ([1.0, 1j] if is_complex else [1.0]):
            e = np.zeros(np.shape(x), complex if is_complex else float)
            e[idx] = d * eps
            lp = float(loss(*[a + e if k == i else a for k, a in enumerate(args)]))
            lm = float(loss(*[a - e if k == i else a for k, a in enumerate(args)]))
            der = (lp - lm) / (2 * eps)
            out[idx] += der if d == 1.0 else -1j * der
    return out


def fft_convolve(x, k):
    n = x.shape[-1] + k.shape[-1] - 1
    return F.irfft(F.rfft(x, n) * F.rfft(k, n), n)
