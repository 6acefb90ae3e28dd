"""Pooling with ``torch.nn.functional``'s signatures: ``max_pool1d/2d/3d``,
``avg_pool1d/2d/3d`` (``kernel_size``, ``stride`` defaulting to the kernel size,
``padding``, ``ceil_mode``...) and ``adaptive_avg_pool1d/2d``. Pooling reads the
trailing axes, so ``(N, C, H, W)`` and ``(C, H, W)`` both work, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import InvalidValueError
from ._args import Array, Ints, array, check_rank, ntuple, shape_of

_AXES = {1: "L", 2: "H, W", 3: "D, H, W"}


def _window(n, who, input, kernel_size, stride, padding, dilation):
    x = array(input, who)
    check_rank(x, (n + 1, n + 2), who, "input", f"(C, {_AXES[n]}) or (N, C, {_AXES[n]})")
    kernel = ntuple(kernel_size, n, who, "kernel_size")
    stride = kernel if stride is None or stride == () or stride == [] else ntuple(
        stride, n, who, "stride")
    pad = ntuple(padding, n, who, "padding", low=0)
    dil = ntuple(dilation, n, who, "dilation")
    for p, k, d in zip(pad, kernel, dil):
        if 2 * p > d * (k - 1) + 1:
            raise InvalidValueError(f"{who}: padding {pad} should be at most half of the "
                                    f"kernel size {kernel}")
    return x, kernel, stride, pad, dil


def max_pool_nd(n, who, input, kernel_size, stride, padding, dilation, ceil_mode,
                return_indices):
    x, kernel, stride, pad, dil = _window(n, who, input, kernel_size, stride, padding, dilation)
    attrs = {"kernel": kernel, "stride": stride, "padding": pad, "dilation": dil,
             "ceil_mode": bool(ceil_mode)}
    out = ops.max_pool(x, **attrs)
    if not return_indices:
        return out
    # PyTorch's indices: flat positions in each (channel's) pooled plane, read off the
    # same maxima as the values (an index array run through max_pool_select)
    spatial = tuple(x.shape[len(x.shape) - n:])
    flat = np.arange(int(np.prod(spatial)), dtype=np.int64).reshape(spatial)
    where = ops.broadcast_to(flat, shape_of(x))
    return out, ops.max_pool_select(ops.stop_gradient(x), where, **attrs)


def max_pool1d(input: Array, kernel_size: Ints, stride: Ints | None = None,
               padding: Ints = 0, dilation: Ints = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Array | tuple[Array, Array]:
    """1-D max pooling over ``(N, C, L)``, as ``torch.nn.functional.max_pool1d``."""
    return max_pool_nd(1, "max_pool1d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)


def max_pool2d(input: Array, kernel_size: Ints, stride: Ints | None = None,
               padding: Ints = 0, dilation: Ints = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Array | tuple[Array, Array]:
    """2-D max pooling over ``(N, C, H, W)``, as ``torch.nn.functional.max_pool2d``:
    padding counts as -inf, the gradient goes to the first maximum of each window.

    >>> import numpy as np
    >>> max_pool2d(np.arange(16.0).reshape(1, 1, 4, 4), 2)
    array([[[[ 5.,  7.],
             [13., 15.]]]])
    """
    return max_pool_nd(2, "max_pool2d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)


def max_pool3d(input: Array, kernel_size: Ints, stride: Ints | None = None,
               padding: Ints = 0, dilation: Ints = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Array | tuple[Array, Array]:
    """3-D max pooling over ``(N, C, D, H, W)``, as ``torch.nn.functional.max_pool3d``."""
    return max_pool_nd(3, "max_pool3d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)


def avg_pool_nd(n, who, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
    x, kernel, stride, pad, _ = _window(n, who, input, kernel_size, stride, padding, 1)
    if divisor_override is not None:
        divisor_override = ntuple(divisor_override, 1, who, "divisor_override")[0]
    return ops.avg_pool(x, kernel=kernel, stride=stride, padding=pad, ceil_mode=bool(ceil_mode),
                        count_include_pad=bool(count_include_pad),
                        divisor_override=divisor_override)


def avg_pool1d(input: Array, kernel_size: Ints, stride: Ints | None = None,
               padding: Ints = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Array:
    """1-D average pooling, as ``torch.nn.functional.avg_pool1d``."""
    return avg_pool_nd(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, None)


def avg_pool2d(input: Array, kernel_size: Ints, stride: Ints | None = None,
               padding: Ints = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Array:
    """2-D average pooling over ``(N, C, H, W)``, as ``torch.nn.functional.avg_pool2d``
    (``count_include_pad``: whether the zeros of the padding count in the mean).

    >>> import numpy as np
    >>> avg_pool2d(np.arange(16.0).reshape(1, 4, 4), 2)
    array([[[ 2.5,  4.5],
            [10.5, 12.5]]])
    """
    return avg_pool_nd(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)


def avg_pool3d(input: Array, kernel_size: Ints, stride: Ints | None = None,
               padding: Ints = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Array:
    """3-D average pooling, as ``torch.nn.functional.avg_pool3d``."""
    return avg_pool_nd(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)


def _adaptive_matrix(size: int, out: int, dtype) -> np.ndarray:
    """(out, size): row i averages PyTorch's window [floor(i S / o), ceil((i + 1) S / o))."""
    m = np.zeros((out, size), dtype)
    for i in range(out):
        lo, hi = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def adaptive_avg_pool_nd(n, who, input, output_size):
    x = array(input, who)
    check_rank(x, (n + 1, n + 2), who, "input", f"(C, {_AXES[n]}) or (N, C, {_AXES[n]})")
    if isinstance(output_size, (tuple, list)) and len(output_size) == n:
        spatial = tuple(x.shape[len(x.shape) - n:])
        output_size = tuple(s if o is None else o for o, s in zip(output_size, spatial))
    out = ntuple(output_size, n, who, "output_size")
    dtype = x.dtype if np.dtype(x.dtype).kind == "f" else np.float64
    if np.dtype(x.dtype).kind != "f":
        x = ops.astype(x, dtype=np.dtype(dtype))
    # a linear map per axis: matrix products with constant averaging matrices (BLAS, and
    # every derivative is again a product)
    for axis, o in enumerate(out):
        pos = len(x.shape) - n + axis
        size = x.shape[pos]
        if size == o:
            continue
        m = _adaptive_matrix(size, o, dtype)
        moved = pos != len(x.shape) - 1
        if moved:
            x = ops.permute_dims(x, axes=_swap(len(x.shape), pos))
        x = ops.matmul(x, m.T)
        if moved:
            x = ops.permute_dims(x, axes=_swap(len(x.shape), pos))
    return x


def _swap(ndim, axis) -> tuple:
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return tuple(perm)


def adaptive_avg_pool1d(input: Array, output_size: Ints) -> Array:
    """1-D adaptive average pooling to ``output_size`` positions, as
    ``torch.nn.functional.adaptive_avg_pool1d``."""
    return adaptive_avg_pool_nd(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input: Array, output_size: Ints | tuple[int | None, ...]) -> Array:
    """2-D adaptive average pooling to ``output_size`` (an int, a pair; ``None`` keeps that
    axis), as ``torch.nn.functional.adaptive_avg_pool2d``: window i along an axis of size
    S covers ``[floor(i S / o), ceil((i + 1) S / o))``.

    >>> import numpy as np
    >>> adaptive_avg_pool2d(np.arange(16.0).reshape(1, 4, 4), 1)
    array([[[7.5]]])
    """
    return adaptive_avg_pool_nd(2, "adaptive_avg_pool2d", input, output_size)


__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d"]
