"""SciPy's ``scipy.special``, differentiable: ops that declare ``"scipy.special.<name>"`` in
their ``namespace`` appear here, next to the functions written below.

The ops' kernels call SciPy (``pip install chainrule[scipy]``); the functions
written here are composites of ops with SciPy's signatures (they differentiate
through the ops' rules).
"""

from __future__ import annotations

import math as _math

import numpy as _np

from .. import ops as _ops
from ..errors import ChainruleError as _ChainruleError
from ..ir.op import is_dispatched as _is_dispatched
from ..numpy._assemble import assemble as _assemble
from ..numpy._core import exposes


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def expit(x):
    """The logistic function 1 / (1 + exp(-x)) (the op ``sigmoid``: stable for large
    |x|)."""
    return _ops.sigmoid(x)


def logit(p):
    """log(p / (1 - p)), as SciPy computes it: log1p(s) - log1p(-s) with s = 2 (p - 1/2)
    for 0.3 <= p <= 0.65 (no cancellation near 1/2), log(p / (1 - p)) elsewhere. Each
    branch reads a safe input where the other is taken, so derivatives stay finite."""
    mid = _ops.logical_and(_ops.greater_equal(p, 0.3), _ops.less_equal(p, 0.65))
    s = 2 * (_ops.where(mid, p, 0.5) - 0.5)
    q = _ops.where(mid, 0.25, p)
    return _ops.where(mid, _ops.log1p(s) - _ops.log1p(-s), _ops.log(q / (1 - q)))


def _axes(axis, ndim: int):
    if axis is None:
        return None
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a), axis)), SciPy's signature. Without ``b`` and ``return_sign``
    this is the op ``logsumexp``. With them: the maximum m of ``a`` (held constant) is
    subtracted, s = sum(b exp(a - m)), the result is log|s| + m and, with
    ``return_sign``, sign(s) too (without it a negative sum gives NaN, as SciPy). The
    derivative with respect to b_i is exp(a_i - m) / s: finite where b_i = 0."""
    if b is None and not return_sign:
        return _ops.logsumexp(a, axis, keepdims)
    if b is not None:
        shape = _np.broadcast_shapes(_shape(a), _shape(b))
        if _shape(a) != shape:
            a = _ops.broadcast_to(a, shape)
    ndim = len(_shape(a))
    axes = _axes(axis, ndim)
    m = _ops.stop_gradient(_ops.max(a, axes, True))
    m = _ops.where(_ops.less(_ops.abs(m), _np.inf), m, 0)
    e = _ops.exp(a - m)
    s = _ops.sum(e if b is None else e * b, axes, True)
    if return_sign:
        out = _ops.log(_ops.abs(s)) + m
        sign = _ops.sign(s)
    else:
        out = _ops.log(s) + m
    if not keepdims:
        kept = tuple(d for i, d in enumerate(_shape(out))
                     if axes is not None and i not in axes)
        out = _ops.reshape(out, kept)
        if return_sign:
            sign = _ops.reshape(sign, kept)
    return (out, sign) if return_sign else out


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (an int):
    d (d - 1) / 4 log(pi) + sum_{j=0}^{d-1} gammaln(a - j / 2). SciPy requires
    a > (d - 1) / 2, checked on concrete values."""
    if not isinstance(d, (int, _np.integer)) or isinstance(d, bool) or d < 1:
        raise _ChainruleError(f"multigammaln: d must be a positive int, got {d!r}")
    d = int(d)
    if not _is_dispatched(a) and _np.any(_np.asarray(a) <= 0.5 * (d - 1)):
        raise _ChainruleError(f"multigammaln: condition a > (d - 1) / 2 = {0.5 * (d - 1)} "
                              f"not met by a = {a!r}")
    out = _ops.gammaln(a)
    for j in range(1, d):
        out = out + _ops.gammaln(a - 0.5 * j)
    return out + (d * (d - 1) * 0.25 * _math.log(_math.pi))


# the functions written here (besides the ops that declare "scipy.special.<name>")
def psi(x):
    """``scipy.special.psi``: SciPy's other name of ``digamma``."""
    return _ops.digamma(x)


@exposes(_ops.bessel_yn)
def yn(n, x):
    """The Bessel function of the second kind of integer order n (an int or an integer
    array, broadcast against x; a float order is refused: SciPy would truncate it). Its
    derivative in x is (yn(n - 1, x) - yn(n + 1, x)) / 2; n has none."""
    if isinstance(n, (int, _np.integer)) and not isinstance(n, bool):
        n = _np.int64(n)  # a Python int stays an integer (not the dtype of x)
    return _ops.bessel_yn(n, x)


_OWN: list[str] = ["expit", "logit", "logsumexp", "multigammaln", "psi", "yn"]

__all__ = _assemble(globals(), "scipy.special.", _OWN)
