"""Shared by the FFT tests: random real and complex inputs, weights of real losses of
complex outputs (the losses and the central differences: finite_differences.py), FFT
convolution."""

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


def weights(f, args):
    out = np.asarray(f(*args))
    w = rng.standard_normal(out.shape)
    return w + 1j * rng.standard_normal(out.shape) if out.dtype.kind == "c" else w


def fft_convolve(x, k):
    n = x.shape[-1] + k.shape[-1] - 1
    return F.irfft(F.rfft(x, n) * F.rfft(k, n), n)
