"""Rules of the reductions, scans and the softmax family, VJP and JVP side by
side. Reduced cotangents are reshaped to broadcast against the operand
(``expand_reduced``)."""

from __future__ import annotations

import numpy as np

from .. import ops
from .common import element_count, expand_reduced, linear_self, prod_others
from .registry import jvp_rule, vjp_rule


@vjp_rule(ops.sum)
def sum_vjp(z, g, x, axis, keepdims):
    """z = sum(x, axis);  dx = broadcast(g) over the summed axes"""
    return (ops.broadcast_to(expand_reduced(g, x.shape, axis, keepdims), x.shape),)


@vjp_rule(ops.mean)
def mean_vjp(z, g, x, axis, keepdims):
    """z = mean(x, axis);  dx = broadcast(g) / n"""
    # a symbolic axis (f64[n, 3]): n is counted when the program runs
    n = element_count(x, axis, g.dtype, keepdims=True)
    return (ops.broadcast_to(expand_reduced(g, x.shape, axis, keepdims) / n, x.shape),)


jvp_rule(ops.sum)(linear_self(ops.sum))
jvp_rule(ops.mean)(linear_self(ops.mean))


def extremum_vjp(z, g, x, axis, keepdims):
    """z = max(x, axis);  dx = g at the positions equal to the extremum, shared evenly
    among ties"""
    hit = ops.astype(x == expand_reduced(z, x.shape, axis, keepdims), g.dtype)
    share = expand_reduced(g, x.shape, axis, keepdims) / ops.sum(hit, axis=axis, keepdims=True)
    return (share * hit,)


def extremum_jvp(z, x, axis, keepdims):
    """z = max(x, axis);  dz = sum(dx * hit / count(hit), axis)  (ties share)"""
    hit = ops.astype(x == expand_reduced(z, x.shape, axis, keepdims), x.dtype)
    weight = hit / ops.sum(hit, axis=axis, keepdims=True)
    return (lambda t: ops.sum(t * weight, axis=axis, keepdims=keepdims),)


for _op in (ops.max, ops.min):
    vjp_rule(_op)(extremum_vjp)
    jvp_rule(_op)(extremum_jvp)


@vjp_rule(ops.prod)
def prod_vjp(z, g, x, axis, keepdims):
    """z = prod(x, axis);  dx_i = g * prod_{j != i} x_j"""
    return (expand_reduced(g, x.shape, axis, keepdims) * prod_others(x, axis),)


@jvp_rule(ops.prod)
def prod_jvp(z, x, axis, keepdims):
    """z = prod(x, axis);  dz = sum(dx * prod_{j != i} x_j, axis)"""
    others = prod_others(x, axis)
    return (lambda t: ops.sum(t * others, axis=axis, keepdims=keepdims),)


@vjp_rule(ops.cumsum)
def cumsum_vjp(z, g, x, axis, reverse):
    """z = cumsum(x, axis);  dx = reverse cumsum of g"""
    return (ops.cumsum(g, axis=axis, reverse=not reverse),)


jvp_rule(ops.cumsum)(linear_self(ops.cumsum))


def _softmax_of(x, axis):
    """exp(x - m) / sum(exp(x - m)) with m the (finite) maximum, held constant: the
    weights of logsumexp's derivative without cancellation at large magnitudes
    (exp(x - logsumexp(x)) rounds to 1 when |x| ~ 1e16), at every order. A slice of -inf
    only (a fully masked row) gets uniform weights, the limit along the diagonal (as
    logaddexp(-inf, -inf) gives 1/2 each; JAX and PyTorch give nan): its exponentials are
    all 0, and 1 is added to each (a per-slice constant, 0 elsewhere: one extra pass).
    Computed in the dtype of the exponentials (float32 stays float32)."""
    top = ops.stop_gradient(ops.max(x, axis=axis, keepdims=True))
    e = ops.exp(x - ops.where(ops.isfinite(top), top, 0))
    w = e + ops.astype(top == -np.inf, e.dtype)
    return w / ops.sum(w, axis=axis, keepdims=True)


@vjp_rule(ops.logsumexp)
def logsumexp_vjp(z, g, x, axis, keepdims):
    """z = log(sum(exp(x), axis));  dx = g * softmax(x, axis)"""
    return (expand_reduced(g, x.shape, axis, keepdims) * _softmax_of(x, axis),)


@jvp_rule(ops.logsumexp)
def logsumexp_jvp(z, x, axis, keepdims):
    """z = logsumexp(x);  dz = sum(dx * softmax(x, axis), axis)"""
    p = _softmax_of(x, axis)
    return (lambda t: ops.sum(t * p, axis=axis, keepdims=keepdims),)


@vjp_rule(ops.softmax)
def softmax_vjp(z, g, x, axis):
    """z = softmax(x);  dx = z * (g - sum(g * z, axis))"""
    return (z * (g - ops.sum(g * z, axis=axis, keepdims=True)),)


@jvp_rule(ops.softmax)
def softmax_jvp(z, x, axis):
    """z = softmax(x);  dz = z * (dx - sum(dx * z, axis))"""
    return (lambda t: z * (t - ops.sum(t * z, axis=axis, keepdims=True)),)


@vjp_rule(ops.log_softmax)
def log_softmax_vjp(z, g, x, axis):
    """z = log_softmax(x);  dx = g - exp(z) * sum(g, axis)"""
    return (g - ops.exp(z) * ops.sum(g, axis=axis, keepdims=True),)


@jvp_rule(ops.log_softmax)
def log_softmax_jvp(z, x, axis):
    """z = log_softmax(x);  dz = dx - sum(dx * exp(z), axis)"""
    p = ops.exp(z)
    return (lambda t: t - ops.sum(t * p, axis=axis, keepdims=True),)


# -- convolution and correlation ---------------------------------------------------------------
@vjp_rule(ops.reduction.correlate_valid)
def correlate_valid_vjp(z, g, x, w):
    """z[k] = sum_j x[k + j] w[j]  (valid: z has shape N - M + 1);
    dx[i] = sum_k g[k] w[i - k] = correlate_valid(pad(g, M - 1), flip(w))  (shape N);
    dw[j] = sum_k g[k] x[k + j] = correlate_valid(x, g)  (shape M)"""
    cv = ops.reduction.correlate_valid
    m = tuple(w.shape)
    lo = tuple(1 - d for d in m)
    hi = tuple(n + d - 1 for n, d in zip(g.shape, m))
    dx = cv(ops.reduction.window(g, lo, hi), ops.flip(w))
    dw = cv(x, g)
    return dx, dw


@jvp_rule(ops.reduction.correlate_valid)
def correlate_valid_jvp(z, x, w):
    """z = correlate_valid(x, w), bilinear;  dz = correlate_valid(dx, w) + correlate_valid(x, dw)"""
    cv = ops.reduction.correlate_valid
    return (lambda t: cv(t, w)), (lambda t: cv(x, t))
