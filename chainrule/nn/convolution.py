"""Convolutions with ``torch.nn.functional``'s signatures: ``conv1d``, ``conv2d``,
``conv3d``, ``conv_transpose1d/2d/3d``. Activations are ``(N, C, *spatial)`` (or
``(C, *spatial)`` without a batch axis), weights ``(C_out, C_in / groups, *kernel)``
(``(C_in, C_out / groups, *kernel)`` for the transposed convolutions), as in PyTorch.

They apply the ops of ``chainrule/ops/convolution.py``, whose derivatives are again
convolutions, so every order works (``cr.hessian`` of a CNN's loss included).
"""

from __future__ import annotations

from .. import ops
from ..errors import InvalidValueError
from ._args import Array, Ints, Padding, array, check_rank, ntuple, shape_of


def _padding(padding, n, kernel, dilation, stride, who) -> tuple:
    """PyTorch's ``padding`` (an int, ints, ``"valid"`` or ``"same"``) as (low, high)
    pairs; ``"same"`` puts the odd zero on the high side, as PyTorch does."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise InvalidValueError(f"{who}: padding='same' is not supported for strided "
                                        f"convolutions (stride={stride})")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))
            return tuple(out)
        raise InvalidValueError(f"{who}: padding must be 'valid', 'same', an int or {n} ints, "
                                f"got {padding!r}")
    return tuple((p, p) for p in ntuple(padding, n, who, "padding", low=0))


def _batched(x, n, who, what="input"):
    check_rank(x, (n + 1, n + 2), who, what,
               f"(C, {', '.join('DHW'[3 - n:])}) or (N, C, {', '.join('DHW'[3 - n:])})"
               if n <= 3 else "channels first")
    if len(x.shape) == n + 1:
        return ops.expand_dims(x, axis=(0,)), True
    return x, False


def _groups(groups, who) -> int:
    return ntuple(groups, 1, who, "groups")[0]


def _add_bias(y, bias, channels, n, who):
    if bias is None:
        return y
    bias = array(bias, who, "bias")
    if shape_of(bias) != (channels,):
        raise InvalidValueError(f"{who}: bias must have shape ({channels},) (one value per "
                                f"output channel), got {shape_of(bias)}")
    return y + ops.reshape(bias, (channels,) + (1,) * n)


def conv_nd(n: int, who: str, input, weight, bias, stride, padding, dilation, groups):
    """The convolution of ``n`` spatial axes behind ``conv1d`` / ``conv2d`` / ``conv3d``."""
    x, unbatched = _batched(array(input, who), n, who)
    w = array(weight, who, "weight")
    check_rank(w, (n + 2,), who, "weight", "(C_out, C_in / groups, *kernel)")
    stride = ntuple(stride, n, who, "stride")
    dilation = ntuple(dilation, n, who, "dilation")
    groups = _groups(groups, who)
    c, o, cg = x.shape[1], w.shape[0], w.shape[1]
    if o % groups:
        raise InvalidValueError(f"{who}: the weight's {o} output channels are not divisible by "
                                f"groups={groups}")
    if c % groups:
        raise InvalidValueError(f"{who}: the input's {c} channels are not divisible by "
                                f"groups={groups}")
    if cg * groups != c:
        raise InvalidValueError(f"{who}: weight of shape {shape_of(w)} and groups={groups} "
                                f"expect input with {cg * groups} channels, got input of shape "
                                f"{shape_of(input)}")
    pads = _padding(padding, n, tuple(w.shape[2:]), dilation, stride, who)
    for s, k, (lo, hi), d in zip(x.shape[2:], w.shape[2:], pads, dilation):
        if s + lo + hi < d * (k - 1) + 1:
            raise InvalidValueError(f"{who}: the kernel {tuple(w.shape[2:])} (dilation "
                                    f"{dilation}) is larger than the padded input "
                                    f"{tuple(a + p + q for a, (p, q) in zip(x.shape[2:], pads))}")
    y = ops.convolution(x, w, stride=stride, padding=pads, dilation=dilation, groups=groups)
    y = _add_bias(y, bias, o, n, who)
    return ops.squeeze(y, axis=(0,)) if unbatched else y


def conv_transpose_nd(n: int, who: str, input, weight, bias, stride, padding, output_padding,
                      groups, dilation):
    """The transposed convolution (the input gradient of a convolution) of ``n`` axes."""
    x, unbatched = _batched(array(input, who), n, who)
    w = array(weight, who, "weight")
    check_rank(w, (n + 2,), who, "weight", "(C_in, C_out / groups, *kernel)")
    stride = ntuple(stride, n, who, "stride")
    dilation = ntuple(dilation, n, who, "dilation")
    if isinstance(padding, str):
        raise InvalidValueError(f"{who}: padding must be an int or {n} ints (strings are for "
                                f"conv{n}d), got {padding!r}")
    pad = ntuple(padding, n, who, "padding", low=0)
    out_pad = ntuple(output_padding, n, who, "output_padding", low=0)
    groups = _groups(groups, who)
    c = x.shape[1]
    if w.shape[0] != c:
        raise InvalidValueError(f"{who}: weight of shape {shape_of(w)} expects input with "
                                f"{w.shape[0]} channels, got input of shape {shape_of(input)}")
    if c % groups:
        raise InvalidValueError(f"{who}: the input's {c} channels are not divisible by "
                                f"groups={groups}")
    for op_, s, d in zip(out_pad, stride, dilation):
        if op_ >= s:
            raise InvalidValueError(f"{who}: output_padding {out_pad} must be smaller than the "
                                    f"stride {stride}" + (" (PyTorch also allows it below the "
                                                          "dilation; chainrule does not)"
                                                          if op_ < d else ""))
    kernel = tuple(w.shape[2:])
    shape = tuple((q - 1) * s - 2 * p + d * (k - 1) + op_ + 1 for q, s, p, d, k, op_ in zip(
        x.shape[2:], stride, pad, dilation, kernel, out_pad))
    if any(s < 1 for s in shape):
        raise InvalidValueError(f"{who}: the output would have spatial shape {shape} (padding "
                                f"{pad} is too large for input {shape_of(input)})")
    y = ops.convolution_transpose(x, w, stride=stride, padding=tuple((p, p) for p in pad),
                                  dilation=dilation, groups=groups, shape=shape)
    y = _add_bias(y, bias, w.shape[1] * groups, n, who)
    return ops.squeeze(y, axis=(0,)) if unbatched else y


def conv1d(input: Array, weight: Array, bias: Array | None = None, stride: Ints = 1,
           padding: Padding = 0, dilation: Ints = 1, groups: int = 1) -> Array:
    """1-D convolution (cross-correlation) of ``(N, C_in, L)`` with ``(C_out, C_in/groups,
    k)``, as ``torch.nn.functional.conv1d``; ``padding`` may be ``"same"`` or ``"valid"``.

    >>> import numpy as np
    >>> conv1d(np.array([[[1.0, 2.0, 3.0, 4.0]]]), np.array([[[1.0, -1.0]]]))
    array([[[-1., -1., -1.]]])
    """
    return conv_nd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Array, weight: Array, bias: Array | None = None, stride: Ints = 1,
           padding: Padding = 0, dilation: Ints = 1, groups: int = 1) -> Array:
    """2-D convolution of ``(N, C_in, H, W)`` with ``(C_out, C_in/groups, kH, kW)``, as
    ``torch.nn.functional.conv2d``: ``stride``, ``padding`` (an int, a pair, ``"same"`` or
    ``"valid"``), ``dilation``, ``groups``, ``bias`` of shape ``(C_out,)``.

    >>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
    >>> x, w = np.ones((1, 1, 3, 3)), np.ones((2, 1, 2, 2))
    >>> conv2d(x, w, bias=np.array([0.0, 1.0]), padding="same").shape
    (1, 2, 3, 3)
    >>> cr.grad(lambda w: cnp.sum(conv2d(x, w)))(w)[0, 0]
    array([[4., 4.],
           [4., 4.]])
    """
    return conv_nd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Array, weight: Array, bias: Array | None = None, stride: Ints = 1,
           padding: Padding = 0, dilation: Ints = 1, groups: int = 1) -> Array:
    """3-D convolution of ``(N, C_in, D, H, W)`` with ``(C_out, C_in/groups, kD, kH, kW)``,
    as ``torch.nn.functional.conv3d``."""
    return conv_nd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Array, weight: Array, bias: Array | None = None,
                     stride: Ints = 1, padding: Ints = 0, output_padding: Ints = 0,
                     groups: int = 1, dilation: Ints = 1) -> Array:
    """1-D transposed convolution, as ``torch.nn.functional.conv_transpose1d`` (weight
    ``(C_in, C_out/groups, k)``)."""
    return conv_transpose_nd(1, "conv_transpose1d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose2d(input: Array, weight: Array, bias: Array | None = None,
                     stride: Ints = 1, padding: Ints = 0, output_padding: Ints = 0,
                     groups: int = 1, dilation: Ints = 1) -> Array:
    """2-D transposed convolution ("deconvolution"), as
    ``torch.nn.functional.conv_transpose2d``: the gradient of ``conv2d`` with respect to
    its input. The weight is ``(C_in, C_out/groups, kH, kW)``; the output's size is
    ``(H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    >>> import numpy as np
    >>> conv_transpose2d(np.ones((1, 1, 2, 2)), np.ones((1, 1, 2, 2)), stride=2).shape
    (1, 1, 4, 4)
    """
    return conv_transpose_nd(2, "conv_transpose2d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose3d(input: Array, weight: Array, bias: Array | None = None,
                     stride: Ints = 1, padding: Ints = 0, output_padding: Ints = 0,
                     groups: int = 1, dilation: Ints = 1) -> Array:
    """3-D transposed convolution, as ``torch.nn.functional.conv_transpose3d``."""
    return conv_transpose_nd(3, "conv_transpose3d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]
