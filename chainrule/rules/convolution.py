"""Rules of the convolution family (``ops/convolution.py``): derivatives and batching.

With ``T(x, w, g) = <g, convolution(x, w)>``, ``convolution``, ``convolution_transpose``
and ``convolution_weight`` are the gradients of ``T`` in ``g``, ``x`` and ``w``: each is
bilinear, and its derivative in either operand is one of the other two, so every order
is again these three ops.

Batching: a batch of inputs is a bigger batch (the vmap axis folded into ``N``); a
batch of weights is a convolution with ``groups`` times the number of lanes (each lane
a group of its own, the lanes' channels side by side).
"""

from __future__ import annotations

from .. import ops
from .batching import CannotBatch, batching_rule
from .registry import jvp_rule, vjp_rule

_conv, _transpose, _weight = (ops.convolution, ops.convolution_transpose,
                              ops.convolution_weight)


def _common(stride, padding, dilation, groups) -> dict:
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


@vjp_rule(_conv)
def convolution_vjp(z, g, x, w, stride, padding, dilation, groups):
    """z = conv(x, w);  dx = conv_transpose(g, w);  dw = conv_weight(x, g)"""
    a = _common(stride, padding, dilation, groups)
    return (_transpose(g, w, shape=tuple(x.shape[2:]), **a),
            _weight(x, g, kernel=tuple(w.shape[2:]), **a))


@jvp_rule(_conv)
def convolution_jvp(z, x, w, stride, padding, dilation, groups):
    """z = conv(x, w);  dz = conv(dx, w) + conv(x, dw)  (bilinear)"""
    a = _common(stride, padding, dilation, groups)
    return (lambda t: _conv(t, w, **a)), (lambda t: _conv(x, t, **a))


@vjp_rule(_transpose)
def convolution_transpose_vjp(z, u, g, w, stride, padding, dilation, groups, shape):
    """z = conv_transpose(g, w) (the adjoint of conv in x);  dg = conv(u, w);
    dw = conv_weight(u, g)"""
    a = _common(stride, padding, dilation, groups)
    return _conv(u, w, **a), _weight(u, g, kernel=tuple(w.shape[2:]), **a)


@jvp_rule(_transpose)
def convolution_transpose_jvp(z, g, w, stride, padding, dilation, groups, shape):
    """z = conv_transpose(g, w);  dz = conv_transpose(dg, w) + conv_transpose(g, dw)"""
    a = _common(stride, padding, dilation, groups)
    return ((lambda t: _transpose(t, w, shape=shape, **a)),
            (lambda t: _transpose(g, t, shape=shape, **a)))


@vjp_rule(_weight)
def convolution_weight_vjp(z, u, x, g, stride, padding, dilation, groups, kernel):
    """z = conv_weight(x, g) (the adjoint of conv in w);  dx = conv_transpose(g, u);
    dg = conv(x, u)"""
    a = _common(stride, padding, dilation, groups)
    return _transpose(g, u, shape=tuple(x.shape[2:]), **a), _conv(x, u, **a)


@jvp_rule(_weight)
def convolution_weight_jvp(z, x, g, stride, padding, dilation, groups, kernel):
    """z = conv_weight(x, g);  dz = conv_weight(dx, g) + conv_weight(x, dg)"""
    a = _common(stride, padding, dilation, groups)
    return ((lambda t: _weight(t, g, kernel=kernel, **a)),
            (lambda t: _weight(x, t, kernel=kernel, **a)))


# -- batching -----------------------------------------------------------------------------------
def _static(*xs) -> None:
    for x in xs:
        if not all(isinstance(d, int) for d in x.shape):
            raise CannotBatch("a convolution of symbolic batch size")


def _fold_batch(x):
    """(B, N, C, *S) -> (B*N, C, *S): the lanes as more samples."""
    return ops.reshape(x, (x.shape[0] * x.shape[1], *x.shape[2:]))


def _unfold_batch(y, lanes):
    return ops.reshape(y, (lanes, y.shape[0] // lanes, *y.shape[1:]))


def _lanes_as_channels(x, batched, lanes):
    """(B, N, C, *S) (or an unbatched (N, C, *S), the same for every lane) ->
    (N, B*C, *S): lane b's channels at b*C .. b*C + C - 1."""
    if batched:
        x = ops.permute_dims(x, axes=(1, 0, *range(2, x.ndim)))
    else:
        x = ops.broadcast_to(ops.expand_dims(x, axis=(1,)), (x.shape[0], lanes, *x.shape[1:]))
    return ops.reshape(x, (x.shape[0], lanes * x.shape[2], *x.shape[3:]))


def _channels_as_lanes(y, lanes):
    """(N, B*C, *S) -> (B, N, C, *S)."""
    y = ops.reshape(y, (y.shape[0], lanes, y.shape[1] // lanes, *y.shape[2:]))
    return ops.permute_dims(y, axes=(1, 0, *range(2, y.ndim)))


def _weights_in_groups(w, lanes):
    """(B, O, Cg, *K) -> (B*O, Cg, *K)."""
    return ops.reshape(w, (lanes * w.shape[1], *w.shape[2:]))


@batching_rule(_conv, _transpose)
def convolution_batch(ctx, args, batched, groups, **attrs):
    """Batched inputs only: the lanes are more samples. A batched weight: one
    convolution with groups * B groups, lane b's channels in groups b*G .. b*G + G - 1."""
    x, w = args
    _static(x, w)
    lanes = ctx.size
    if not batched[1]:
        return _unfold_batch(ctx.op(_fold_batch(x), w, groups=groups, **attrs), lanes), True
    y = ctx.op(_lanes_as_channels(x, batched[0], lanes), _weights_in_groups(w, lanes),
               groups=groups * lanes, **attrs)
    return _channels_as_lanes(y, lanes), True


@batching_rule(_weight)
def convolution_weight_batch(ctx, args, batched, groups, **attrs):
    """A weight gradient per lane: one with groups * B groups, the lanes' channels side
    by side (an unbatched operand repeated for every lane); rows of lane b at b*O."""
    x, g = args
    _static(x, g)
    lanes = ctx.size
    dw = ctx.op(_lanes_as_channels(x, batched[0], lanes),
                _lanes_as_channels(g, batched[1], lanes), groups=groups * lanes, **attrs)
    return ops.reshape(dw, (lanes, dw.shape[0] // lanes, *dw.shape[1:])), True
