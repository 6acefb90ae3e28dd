"""N-dimensional convolution (cross-correlation, as deep learning calls it), channels
first: three ops closed under differentiation.

Activations are ``(N, C, *spatial)``, weights ``(O, C / groups, *kernel)`` (PyTorch's
NCHW / OIHW). With ``T(x, w, g) = <g, convolution(x, w)>`` (a trilinear form), each op
is the gradient of ``T`` with respect to one argument:

- ``convolution(x, w)``: ``dT/dg``, the forward convolution;
- ``convolution_transpose(g, w)``: ``dT/dx``, the transposed convolution (the input
  gradient, PyTorch's ``conv_transpose``);
- ``convolution_weight(x, g)``: ``dT/dw``, the weight gradient.

So the derivative of each is the other two (``chainrule/rules/convolution.py``), at
every order. Attributes: ``stride``, ``dilation`` (one int per spatial axis),
``padding`` (a ``(low, high)`` pair of zeros per spatial axis), ``groups``;
``convolution_transpose`` also takes ``shape`` (the spatial shape of its result: with a
stride, several input sizes give one output size) and ``convolution_weight`` ``kernel``
(the kernel's spatial shape).

The NumPy kernels are im2col and one matrix product (BLAS): the windows are a strided
view (``as_strided``) copied once into columns; the transposed convolution adds the
columns back in one strided slice per kernel offset (never a loop over pixels).

>>> import numpy as np
>>> x = np.arange(16.0).reshape(1, 1, 4, 4)
>>> w = np.ones((1, 1, 2, 2))
>>> convolution(x, w, stride=(2, 2), padding=((0, 0), (0, 0)), dilation=(1, 1),
...             groups=1)[0, 0]
array([[10., 18.],
       [42., 50.]])
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import DType, TensorType
from .common import define, fmt, promote, tensor_types

__all__ = ["convolution", "convolution_transpose", "convolution_weight", "conv_output_size"]


# -- attributes ------------------------------------------------------------------------------
def _ints(name, key, value, n, low) -> tuple:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),) * n
    if (not isinstance(value, (tuple, list)) or len(value) != n or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= low
            for v in value)):
        raise TypeInferenceError(f"{name}: {key} must be {n} int(s) >= {low}, got {value!r}")
    return tuple(int(v) for v in value)


def _pairs(name, value, n) -> tuple:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = ((int(value), int(value)),) * n
    ok = isinstance(value, (tuple, list)) and len(value) == n
    out = []
    for p in value if ok else ():
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
            p = (p, p)
        if not (isinstance(p, (tuple, list)) and len(p) == 2 and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                for v in p)):
            ok = False
            break
        out.append((int(p[0]), int(p[1])))
    if not ok:
        raise TypeInferenceError(f"{name}: padding must be {n} (low, high) pair(s) of ints "
                                 f">= 0, got {value!r}")
    return tuple(out)


def normalize_window_attrs(name: str, attrs: dict, n: int) -> dict:
    """``stride``, ``dilation``, ``padding`` (and ``groups``, ``shape``, ``kernel`` when
    present) in canonical form for ``n`` spatial axes."""
    out = dict(attrs)
    out["stride"] = _ints(name, "stride", attrs["stride"], n, 1)
    out["dilation"] = _ints(name, "dilation", attrs["dilation"], n, 1)
    out["padding"] = _pairs(name, attrs["padding"], n)
    if "groups" in attrs:
        out["groups"] = _ints(name, "groups", attrs["groups"], 1, 1)[0]
    for key in ("shape", "kernel"):
        if key in attrs:
            out[key] = _ints(name, key, attrs[key], n, 1 if key == "kernel" else 0)
    return out


def conv_output_size(size: int, k: int, stride: int, padding: tuple, dilation: int) -> int:
    """The number of window positions along one axis: floor((S + lo + hi - d(k-1) - 1)
    / s) + 1 (0 or less: the kernel does not fit)."""
    return (size + padding[0] + padding[1] - dilation * (k - 1) - 1) // stride + 1


def _static(name, what, t, dims) -> None:
    for d in dims:
        if not isinstance(d, int):
            raise TypeInferenceError(f"{name}: the channel and spatial dimensions of {what} "
                                     f"must be static, got {t!r}")


def _float_dtype(name, types) -> DType:
    dtype = promote(name, types)
    if dtype.numpy.kind == "c":
        raise TypeInferenceError(f"{name}: complex operands are not supported ({fmt(types)})")
    return dtype if dtype.is_float else DType("f64")


def _spatial(name, t, what, n) -> None:
    if t.ndim != n + 2:
        raise TypeInferenceError(f"{name}: {what} must have rank {n + 2} (batch, channels and "
                                 f"{n} spatial axes, as the attributes say), got {t!r}")


def _check_channels(name, x, w, groups, x_what="input") -> tuple:
    """(C, O): the channels of ``x`` and of the weight, checked against ``groups``."""
    c, o, cg = x.shape[1], w.shape[0], w.shape[1]
    if c % groups or o % groups:
        raise TypeInferenceError(f"{name}: groups={groups} must divide the {x_what}'s "
                                 f"channels ({c}) and the weight's output channels ({o})")
    if cg * groups != c:
        raise TypeInferenceError(f"{name}: the weight {w!r} has {cg} input channels per group; "
                                 f"{x_what} {x!r} with groups={groups} needs {c // groups}")
    return c, o


def _out_spatial(name, spatial, kernel, attrs) -> tuple:
    out = tuple(conv_output_size(s, k, st, p, d) for s, k, st, p, d in zip(
        spatial, kernel, attrs["stride"], attrs["padding"], attrs["dilation"]))
    if any(o < 1 for o in out):
        raise TypeInferenceError(
            f"{name}: the kernel {tuple(kernel)} (dilation {attrs['dilation']}) does not fit the "
            f"padded input {tuple(s + p[0] + p[1] for s, p in zip(spatial, attrs['padding']))}")
    return out


def _normalize(name):
    def normalize(types, attrs):
        n = len(attrs["stride"]) if isinstance(attrs["stride"], (tuple, list)) else None
        if n is None:  # an int stride: as many spatial axes as the first operand has
            n = tensor_types(name, types)[0].ndim - 2
        if n < 1:
            raise TypeInferenceError(f"{name}: at least one spatial axis, got {fmt(types)}")
        return normalize_window_attrs(name, attrs, n)

    return normalize


def _conv_type(types, attrs):
    name = "convolution"
    x, w = tensor_types(name, types)
    n = len(attrs["stride"])
    _spatial(name, x, "the input", n)
    _spatial(name, w, "the weight", n)
    _static(name, "the input", x, x.shape[1:])
    _static(name, "the weight", w, w.shape)
    _check_channels(name, x, w, attrs["groups"])
    out = _out_spatial(name, x.shape[2:], w.shape[2:], attrs)
    return TensorType((x.shape[0], w.shape[0], *out), _float_dtype(name, types))


def _transpose_type(types, attrs):
    name = "convolution_transpose"
    g, w = tensor_types(name, types)
    n = len(attrs["stride"])
    _spatial(name, g, "the gradient", n)
    _spatial(name, w, "the weight", n)
    _static(name, "the gradient", g, g.shape[1:])
    _static(name, "the weight", w, w.shape)
    o, groups = w.shape[0], attrs["groups"]
    if g.shape[1] != o or o % groups:
        raise TypeInferenceError(f"{name}: the gradient {g!r} must have the weight's {o} output "
                                 f"channels, divisible by groups={groups}")
    out = _out_spatial(name, attrs["shape"], w.shape[2:], attrs)
    if out != tuple(g.shape[2:]):
        raise TypeInferenceError(f"{name}: a result of spatial shape {attrs['shape']} convolves "
                                 f"to {out}, not to the gradient's {tuple(g.shape[2:])}")
    return TensorType((g.shape[0], w.shape[1] * groups, *attrs["shape"]),
                      _float_dtype(name, types))


def _weight_type(types, attrs):
    name = "convolution_weight"
    x, g = tensor_types(name, types)
    n = len(attrs["stride"])
    _spatial(name, x, "the input", n)
    _spatial(name, g, "the gradient", n)
    _static(name, "the input", x, x.shape[1:])
    _static(name, "the gradient", g, g.shape[1:])
    c, o, groups = x.shape[1], g.shape[1], attrs["groups"]
    if c % groups or o % groups:
        raise TypeInferenceError(f"{name}: groups={groups} must divide the input's channels "
                                 f"({c}) and the gradient's ({o})")
    if x.shape[0] != g.shape[0]:
        raise TypeInferenceError(f"{name}: the input {x!r} and gradient {g!r} have different "
                                 f"batch sizes")
    out = _out_spatial(name, x.shape[2:], attrs["kernel"], attrs)
    if out != tuple(g.shape[2:]):
        raise TypeInferenceError(f"{name}: the input {x!r} convolves to spatial shape {out}, "
                                 f"not to the gradient's {tuple(g.shape[2:])}")
    return TensorType((o, c // groups, *attrs["kernel"]), _float_dtype(name, types))


# -- NumPy kernels ---------------------------------------------------------------------------
def _dtype(*xs) -> np.dtype:
    dtype = np.result_type(*xs)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def pad_spatial(x: np.ndarray, padding, value=0) -> np.ndarray:
    """``x`` with ``padding`` (one (low, high) pair per trailing axis) of ``value``."""
    if not any(lo or hi for lo, hi in padding):
        return x
    n = len(padding)
    lead = x.shape[:x.ndim - n]
    shape = lead + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[x.ndim - n:], padding))
    out = np.full(shape, value, x.dtype)
    out[(Ellipsis, *(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[x.ndim - n:],
                                                               padding)))] = x
    return out


def windows(xp: np.ndarray, out, kernel, stride, dilation) -> np.ndarray:
    """The read-only view ``(*lead, *out, *kernel)`` of the windows of ``xp`` over its
    trailing ``len(kernel)`` axes (no copy)."""
    n = len(kernel)
    lead = xp.ndim - n
    st = xp.strides
    shape = xp.shape[:lead] + tuple(out) + tuple(kernel)
    strides = (st[:lead] + tuple(st[lead + i] * stride[i] for i in range(n))
               + tuple(st[lead + i] * dilation[i] for i in range(n)))
    return as_strided(xp, shape, strides, writeable=False)


def offset_slices(kernel, out, stride, dilation):
    """For each kernel offset (row-major), the slices of the padded input its window
    elements read: ``(offset index, slices)``."""
    for k, idx in enumerate(itertools.product(*(range(k) for k in kernel))):
        yield k, tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
                       for i, d, s, o in zip(idx, dilation, stride, out))


# im2col goes a few samples at a time into one buffer, each chunk multiplied while it is
# still in cache: copying all the columns at once and then reading them back costs as
# much again as the GEMM (measured: 17 ms against 11.5 ms for a 64x32x28x28 3x3 float32
# convolution)
_CHUNK_BYTES = 4 << 20


def _column_chunks(x, kernel, out, stride, padding, dilation, groups):
    """im2col by chunks of samples: ``(samples slice, columns (n, G, C/G * prod(kernel),
    prod(out)))``, the columns in a buffer reused from chunk to chunk (and the padding
    too: each chunk is copied into the middle of a zero-bordered buffer)."""
    n = len(kernel)
    big_n, c = x.shape[:2]
    per_sample = c * math.prod(kernel) * math.prod(out) * x.itemsize
    step = max(1, min(big_n, _CHUNK_BYTES // max(per_sample, 1)))
    padded = any(lo or hi for lo, hi in padding)
    if padded:
        pbuf = np.zeros((step, c, *(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))),
                        x.dtype)
        inner = (slice(None), slice(None), *(slice(lo, lo + s) for s, (lo, _) in zip(
            x.shape[2:], padding)))
    buf = np.empty((step, c, *kernel, *out), x.dtype)
    order = (0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n))
    rows = c // groups * math.prod(kernel)
    for start in range(0, big_n, step):
        stop = min(big_n, start + step)
        if padded:
            source = pbuf[:stop - start]
            source[inner] = x[start:stop]
        else:
            source = x[start:stop]
        part = buf[:stop - start]
        np.copyto(part, windows(source, out, kernel, stride, dilation).transpose(order))
        yield slice(start, stop), part.reshape(stop - start, groups, rows, math.prod(out))


# below this many output positions per sample, one GEMM over all samples at once beats a
# GEMM per sample (a batch of tiny products costs its per-call overhead each)
_WIDE_BELOW = 256


def _wide_columns(x, kernel, out, stride, padding, dilation, groups):
    """im2col with the samples side by side: ``(G, C/G * prod(kernel), prod(out) * N)``,
    the sample index fastest (the copy's inner loop runs over the samples: over a small
    image's short rows it would pay its per-row cost for a handful of elements)."""
    n = len(kernel)
    win = windows(pad_spatial(x, padding), out, kernel, stride, dilation)
    win = win.transpose((1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n), 0))
    rows = x.shape[1] // groups * math.prod(kernel)
    return np.ascontiguousarray(win).reshape(groups, rows, x.shape[0] * math.prod(out))


def _convolution(x, w, stride, padding, dilation, groups):
    dtype = _dtype(x, w)
    x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
    kernel = w.shape[2:]
    out = tuple(conv_output_size(s, k, st, p, d) for s, k, st, p, d in zip(
        x.shape[2:], kernel, stride, padding, dilation))
    o = w.shape[0]
    wm = w.reshape(groups, o // groups, -1)
    if math.prod(out) < _WIDE_BELOW:
        cols = _wide_columns(x, kernel, out, stride, padding, dilation, groups)
        y = np.matmul(wm, cols).reshape(o, *out, x.shape[0])  # (O, *out, N)
        return np.ascontiguousarray(np.moveaxis(y, -1, 0))
    y = np.empty((x.shape[0], groups, o // groups, math.prod(out)), dtype)
    for samples, cols in _column_chunks(x, kernel, out, stride, padding, dilation, groups):
        np.matmul(wm, cols, out=y[samples])  # one GEMM per sample and group
    return y.reshape(x.shape[0], o, *out)


def _convolution_transpose(g, w, stride, padding, dilation, groups, shape):
    dtype = _dtype(g, w)
    g, w = g.astype(dtype, copy=False), w.astype(dtype, copy=False)
    kernel, out = w.shape[2:], g.shape[2:]
    o, cg = w.shape[:2]
    reach = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if all(s == 1 for s in stride) and all(lo <= r and hi <= r for (lo, hi), r in zip(
            padding, reach)):
        # unit stride: the convolution of g, padded by what the windows reach past x's
        # padding, with the kernel flipped and its channel axes swapped (one im2col and
        # one GEMM, as the forward convolution: no scatter of columns)
        n = len(kernel)
        flipped = w.reshape(groups, o // groups, cg, *kernel).swapaxes(1, 2)
        flipped = flipped[(Ellipsis, *(slice(None, None, -1),) * n)]
        flipped = np.ascontiguousarray(flipped).reshape(cg * groups, o // groups, *kernel)
        pads = tuple((r - lo, r - hi) for (lo, hi), r in zip(padding, reach))
        return _convolution(g, flipped, (1,) * n, pads, dilation, groups)
    big_n = g.shape[0]
    wm = w.reshape(groups, o // groups, cg * math.prod(kernel))
    gm = g.reshape(big_n, groups, o // groups, math.prod(out))
    cols = np.matmul(wm.transpose(0, 2, 1), gm)  # (N, G, Cg*K, L)
    cols = cols.reshape(big_n, cg * groups, math.prod(kernel), *out)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(shape, padding))
    dxp = np.zeros((big_n, cg * groups, *padded), dtype)
    for k, sl in offset_slices(kernel, out, stride, dilation):
        dxp[(slice(None), slice(None), *sl)] += cols[:, :, k]
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape, padding))
    return np.ascontiguousarray(dxp[(slice(None), slice(None), *crop)])


def _convolution_weight(x, g, stride, padding, dilation, groups, kernel):
    dtype = _dtype(x, g)
    x, g = x.astype(dtype, copy=False), g.astype(dtype, copy=False)
    out = g.shape[2:]
    big_n, o = g.shape[:2]
    c = x.shape[1]
    if math.prod(out) < _WIDE_BELOW:
        cols = _wide_columns(x, kernel, out, stride, padding, dilation, groups)
        gm = np.ascontiguousarray(np.moveaxis(g, 0, -1)).reshape(
            groups, o // groups, math.prod(out) * big_n)
        return np.matmul(gm, cols.swapaxes(1, 2)).reshape(o, c // groups, *kernel)
    gm = g.reshape(big_n, groups, o // groups, math.prod(out))
    dw = np.zeros((groups, c // groups * math.prod(kernel), o // groups), dtype)
    for samples, cols in _column_chunks(x, kernel, out, stride, padding, dilation, groups):
        # (CgK, L) @ (L, O/G): BLAS reads g's rows transposed in place
        dw += np.matmul(cols, gm[samples].swapaxes(-1, -2)).sum(axis=0)
    return np.ascontiguousarray(dw.swapaxes(1, 2)).reshape(o, c // groups, *kernel)


# -- PyTorch kernels -------------------------------------------------------------------------
def _symmetric(padding) -> bool:
    return all(lo == hi for lo, hi in padding)


def _torch_pad(x, padding):
    import torch.nn.functional as F  # noqa: N812 - PyTorch's own spelling

    flat = [v for lo, hi in reversed(padding) for v in (lo, hi)]
    return F.pad(x, flat) if any(flat) else x


def _torch_cast(*xs):
    import torch

    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = torch.promote_types(dtype, x.dtype)
    if not dtype.is_floating_point:
        dtype = torch.float64
    return [x.to(dtype) for x in xs]


def _torch_conv(ctx, x, w, stride, padding, dilation, groups):
    import torch.nn.functional as F  # noqa: N812

    x, w = _torch_cast(x, w)
    conv = (F.conv1d, F.conv2d, F.conv3d)[len(stride) - 1] if len(stride) <= 3 else None
    if conv is None:
        return ctx.xp.asarray(_convolution(x.cpu().numpy(), w.cpu().numpy(), stride, padding,
                                           dilation, groups))
    if _symmetric(padding):
        return conv(x, w, None, stride, tuple(lo for lo, _ in padding), dilation, groups)
    return conv(_torch_pad(x, padding), w, None, stride, 0, dilation, groups)


def _torch_conv_transpose(ctx, g, w, stride, padding, dilation, groups, shape):
    import torch.nn.functional as F  # noqa: N812

    g, w = _torch_cast(g, w)
    n = len(stride)
    if n > 3:
        import torch

        return torch.from_numpy(_convolution_transpose(
            g.cpu().numpy(), w.cpu().numpy(), stride, padding, dilation, groups, shape))
    full = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1](
        g, w, None, stride, 0, 0, groups, dilation)
    # the transposed convolution without padding covers the padded input up to its last
    # window; the rows past it (which no window reads) get zeros, then the padding is cut
    padded = [s + lo + hi for s, (lo, hi) in zip(shape, padding)]
    tail = tuple((0, p - m) for p, m in zip(padded, full.shape[2:]))
    full = _torch_pad(full, tail)
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape, padding))
    return full[(slice(None), slice(None), *crop)].contiguous()


def _torch_conv_weight(ctx, x, g, stride, padding, dilation, groups, kernel):
    import torch

    x, g = _torch_cast(x, g)
    if len(stride) > 3:
        return torch.from_numpy(_convolution_weight(
            x.cpu().numpy(), g.cpu().numpy(), stride, padding, dilation, groups, kernel))
    xp = x if _symmetric(padding) else _torch_pad(x, padding)
    pad = [lo for lo, _ in padding] if _symmetric(padding) else [0] * len(stride)
    w_shape = [g.shape[1], x.shape[1] // groups, *kernel]
    w = torch.empty(w_shape, dtype=x.dtype, device=x.device)
    _, dw, _ = torch.ops.aten.convolution_backward(
        g, xp, w, None, list(stride), pad, list(dilation), False, [0] * len(stride), groups,
        [False, True, False])
    return dw


def on_numpy(kernel):
    """The NumPy kernel as the kernel of NumPy through the array API (the same arrays)."""

    def run(ctx, *arrays, **attrs):
        return kernel(*arrays, **attrs)

    run.__name__ = kernel.__name__
    return run


_ATTRS = {"stride": REQUIRED, "padding": REQUIRED, "dilation": REQUIRED, "groups": 1}
_FACTS = dict(fresh=True, aliases=False, linear="one")

convolution = define(
    "convolution", _conv_type, _convolution, 2, _ATTRS, _normalize("convolution"),
    kernels={"torch": _torch_conv, "numpy": on_numpy(_convolution)}, **_FACTS,
    doc="convolution(x, w): N-d cross-correlation, channels first (im2col and BLAS)")
convolution_transpose = define(
    "convolution_transpose", _transpose_type, _convolution_transpose, 2,
    {**_ATTRS, "shape": REQUIRED}, _normalize("convolution_transpose"),
    kernels={"torch": _torch_conv_transpose, "numpy": on_numpy(_convolution_transpose)},
    **_FACTS, doc="convolution_transpose(g, w): the adjoint of convolution in its input")
convolution_weight = define(
    "convolution_weight", _weight_type, _convolution_weight, 2,
    {**_ATTRS, "kernel": REQUIRED}, _normalize("convolution_weight"),
    kernels={"torch": _torch_conv_weight, "numpy": on_numpy(_convolution_weight)},
    **_FACTS, doc="convolution_weight(x, g): the adjoint of convolution in its weight")
