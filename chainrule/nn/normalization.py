"""Normalization layers as functions: ``layer_norm``, ``batch_norm``, ``group_norm``, with
``torch.nn.functional``'s arguments, written with chainrule's reductions (mean and
biased variance over the normalized axes, as PyTorch)."""

from __future__ import annotations

from typing import NamedTuple

from .. import ops
from ..errors import InvalidValueError
from ._args import Array, array, check_float, number, shape_of


def _affine(y, weight, bias, shape, who):
    """y * weight + bias, both (when given) reshaped to ``shape`` to broadcast."""
    for value, what in ((weight, "weight"), (bias, "bias")):
        if value is None:
            continue
        value = array(value, who, what)
        size = 1
        for d in shape:
            size *= d
        if int(_size(value)) != size:
            raise InvalidValueError(f"{who}: {what} of shape {shape_of(value)} does not match "
                                    f"the normalized shape {tuple(d for d in shape if d != 1)}")
        value = ops.reshape(value, shape)
        y = y * value if what == "weight" else y + value
    return y


def _size(x) -> int:
    n = 1
    for d in x.shape:
        n *= d
    return n


def _normalize(x, axes, eps):
    mean = ops.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = ops.mean(centered * centered, axis=axes, keepdims=True)
    return centered / ops.sqrt(var + eps), mean, var


def layer_norm(input: Array, normalized_shape: int | tuple[int, ...],
               weight: Array | None = None, bias: Array | None = None,
               eps: float = 1e-5) -> Array:
    """Normalize over the trailing axes ``normalized_shape`` (mean 0, variance 1, biased
    variance), then scale by ``weight`` and shift by ``bias`` (both of that shape), as
    ``torch.nn.functional.layer_norm``.

    >>> import numpy as np
    >>> layer_norm(np.array([[1.0, 3.0]]), (2,)).round(4)
    array([[-1.,  1.]])
    """
    who = "layer_norm"
    x = array(input, who)
    check_float(x, who)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    n = len(normalized_shape)
    if n == 0 or n > len(x.shape) or tuple(x.shape[len(x.shape) - n:]) != normalized_shape:
        raise InvalidValueError(f"{who}: normalized_shape {normalized_shape} must be the "
                                f"trailing axes of the input, whose shape is {shape_of(x)}")
    eps = number(eps, who, "eps", low=0)
    axes = tuple(range(len(x.shape) - n, len(x.shape)))
    y, _, _ = _normalize(x, axes, eps)
    return _affine(y, weight, bias, normalized_shape, who)


class BatchNormResult(NamedTuple):
    """What ``batch_norm`` returns in training mode with running statistics: the output
    and the updated running mean and variance (PyTorch updates its buffers in place)."""

    output: object
    running_mean: object
    running_var: object


def batch_norm(input: Array, running_mean: Array | None, running_var: Array | None,
               weight: Array | None = None, bias: Array | None = None,
               training: bool = False, momentum: float | None = 0.1,
               eps: float = 1e-5) -> Array | BatchNormResult:
    """Normalize each channel (axis 1) over the batch and spatial axes, as
    ``torch.nn.functional.batch_norm``.

    In training mode the batch's statistics normalize (biased variance). Where PyTorch
    then updates ``running_mean`` / ``running_var`` in place, chainrule never changes an
    array: with running statistics given, training mode returns a ``BatchNormResult``
    ``(output, new_running_mean, new_running_var)``, the new statistics being
    ``(1 - momentum) * old + momentum * batch`` (the batch variance unbiased, as PyTorch);
    keep them for the next step. They carry no gradient (PyTorch's buffers do not).
    Without running statistics, or in evaluation mode (which normalizes with the running
    statistics), it returns the output alone, as PyTorch.

    >>> import numpy as np
    >>> x = np.array([[1.0], [3.0]])
    >>> out, mean, var = batch_norm(x, np.zeros(1), np.ones(1), training=True)
    >>> out.round(4), mean, var
    (array([[-1.],
           [ 1.]]), array([0.2]), array([1.1]))
    >>> batch_norm(x, mean, var).round(4)              # evaluation mode
    array([[0.7628],
           [2.6697]])
    """
    who = "batch_norm"
    x = array(input, who)
    check_float(x, who)
    if len(x.shape) < 2:
        raise InvalidValueError(f"{who}: expected an input of rank >= 2 (N, C, ...), got shape "
                                f"{shape_of(x)}")
    c = x.shape[1]
    eps = number(eps, who, "eps", low=0)
    channel = (1, c) + (1,) * (len(x.shape) - 2)
    axes = (0, *range(2, len(x.shape)))
    stats = []
    for value, what in ((running_mean, "running_mean"), (running_var, "running_var")):
        if value is not None:
            value = array(value, who, what)
            if shape_of(value) != (c,):
                raise InvalidValueError(f"{who}: {what} must have shape ({c},) (one value per "
                                        f"channel), got {shape_of(value)}")
        stats.append(value)
    running_mean, running_var = stats
    if (running_mean is None) != (running_var is None):
        raise InvalidValueError(f"{who}: give both running_mean and running_var, or neither")
    if not training:
        if running_mean is None:
            raise InvalidValueError(f"{who}: running_mean and running_var must be given in "
                                    f"evaluation mode (training=False)")
        y = (x - ops.reshape(running_mean, channel)) / ops.sqrt(
            ops.reshape(running_var, channel) + eps)
        return _affine(y, weight, bias, channel, who)
    count = 1
    for a in axes:
        count *= x.shape[a]
    if count <= 1:
        raise InvalidValueError(f"{who}: expected more than 1 value per channel when training, "
                                f"got input of shape {shape_of(x)}")
    y, mean, var = _normalize(x, axes, eps)
    out = _affine(y, weight, bias, channel, who)
    if running_mean is None:
        return out
    if momentum is None:
        raise InvalidValueError(f"{who}: momentum=None (a cumulative average over all batches) "
                                f"needs a batch counter; pass a momentum, e.g. 1 / (step + 1)")
    m = number(momentum, who, "momentum", low=0, high=1)
    batch_mean = ops.stop_gradient(ops.reshape(mean, (c,)))
    batch_var = ops.stop_gradient(ops.reshape(var, (c,))) * (count / (count - 1))
    return BatchNormResult(out, (1 - m) * running_mean + m * batch_mean,
                           (1 - m) * running_var + m * batch_var)


def group_norm(input: Array, num_groups: int, weight: Array | None = None,
               bias: Array | None = None, eps: float = 1e-5) -> Array:
    """Normalize the channels (axis 1) in ``num_groups`` groups, each over its channels and
    the spatial axes, then scale and shift per channel, as
    ``torch.nn.functional.group_norm``.

    >>> import numpy as np
    >>> group_norm(np.array([[1.0, 3.0, 5.0, 9.0]]), 2).round(4)
    array([[-1.,  1., -1.,  1.]])
    """
    who = "group_norm"
    x = array(input, who)
    check_float(x, who)
    if len(x.shape) < 2:
        raise InvalidValueError(f"{who}: expected an input of rank >= 2 (N, C, ...), got shape "
                                f"{shape_of(x)}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
        raise InvalidValueError(f"{who}: num_groups must be a positive int, got {num_groups!r}")
    n, c = x.shape[0], x.shape[1]
    if c % num_groups:
        raise InvalidValueError(f"{who}: the input's {c} channels are not divisible by "
                                f"num_groups={num_groups}")
    eps = number(eps, who, "eps", low=0)
    rest = tuple(x.shape[2:])
    grouped = ops.reshape(x, (n, num_groups, c // num_groups, *rest))
    y, _, _ = _normalize(grouped, tuple(range(2, len(grouped.shape))), eps)
    y = ops.reshape(y, shape_of(x))
    return _affine(y, weight, bias, (1, c) + (1,) * len(rest), who)


__all__ = ["layer_norm", "batch_norm", "group_norm", "BatchNormResult"]
