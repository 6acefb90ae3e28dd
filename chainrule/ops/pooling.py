"""Pooling over the trailing axes of an array (PyTorch's ``max_pool`` / ``avg_pool``
semantics: windows of ``kernel``, ``stride``, symmetric implicit ``padding``,
``ceil_mode``): the leading axes (batch, channels, a vmap axis) are independent.

Max pooling is three ops closed under differentiation. With ``i(x)`` the position of
each window's maximum (the first one, as PyTorch picks; a NaN wins, as in PyTorch, the
first NaN of a window where PyTorch takes the last):

- ``max_pool(x) = x[i(x)]``;
- ``max_pool_select(x, v) = v[i(x)]`` (the JVP of ``max_pool``: linear in ``v``);
- ``max_pool_scatter(x, g)``: ``g`` added at the positions ``i(x)`` of an array shaped
  like ``x`` (the VJP of ``max_pool``), the transpose of ``max_pool_select`` in ``v``.

``i(x)`` is piecewise constant, so ``x`` has no derivative through it. Average pooling
is linear: ``avg_pool`` and its transpose ``avg_pool_transpose``, each the other's VJP.

The kernels loop over the kernel's offsets (a strided slice of the whole array each),
never over pixels.

>>> import numpy as np
>>> x = np.arange(16.0).reshape(4, 4)
>>> max_pool(x, kernel=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1),
...          ceil_mode=False)
array([[ 5.,  7.],
       [13., 15.]])
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import DType, TensorType
from .common import define, fmt, tensor_types
from .convolution import offset_slices, on_numpy

__all__ = ["max_pool", "max_pool_select", "max_pool_scatter", "avg_pool",
           "avg_pool_transpose", "pool_output_size"]


def pool_output_size(size, k, stride, pad, dilation, ceil_mode) -> int:
    """PyTorch's pooling output size along one axis (``pooling_output_shape``): with
    ``ceil_mode`` a last partial window is kept if it starts inside the input or the
    low padding."""
    span = size + 2 * pad - dilation * (k - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _ints(name, key, value, n, low):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),) * n
    if (not isinstance(value, (tuple, list)) or len(value) != n or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= low
            for v in value)):
        raise TypeInferenceError(f"{name}: {key} must be {n} int(s) >= {low}, got {value!r}")
    return tuple(int(v) for v in value)


def _normalize(name):
    def normalize(types, attrs):
        k = attrs["kernel"]
        n = len(k) if isinstance(k, (tuple, list)) else None
        if n is None or n < 1:
            raise TypeInferenceError(f"{name}: kernel must be a tuple of ints, one per pooled "
                                     f"axis, got {k!r}")
        out = dict(attrs)
        out["kernel"] = _ints(name, "kernel", k, n, 1)
        out["stride"] = _ints(name, "stride", attrs["stride"], n, 1)
        out["padding"] = _ints(name, "padding", attrs["padding"], n, 0)
        if "dilation" in attrs:
            out["dilation"] = _ints(name, "dilation", attrs["dilation"], n, 1)
        if "shape" in attrs:
            out["shape"] = _ints(name, "shape", attrs["shape"], n, 0)
        for key in ("ceil_mode", "count_include_pad"):
            if key in attrs:
                if not isinstance(attrs[key], (bool, np.bool_)):
                    raise TypeInferenceError(f"{name}: {key} must be a bool, got "
                                             f"{attrs[key]!r}")
                out[key] = bool(attrs[key])
        d = attrs.get("divisor_override")
        if d is not None and (not isinstance(d, (int, np.integer)) or isinstance(d, bool)
                              or d < 1):
            raise TypeInferenceError(f"{name}: divisor_override must be None or an int >= 1, "
                                     f"got {d!r}")
        if "divisor_override" in attrs:
            out["divisor_override"] = None if d is None else int(d)
        return out

    return normalize


def _dilation(attrs):
    return attrs.get("dilation") or (1,) * len(attrs["kernel"])


def _pooled_shape(name, spatial, attrs) -> tuple:
    kernel, stride, pad = attrs["kernel"], attrs["stride"], attrs["padding"]
    dilation = _dilation(attrs)
    for s, k, p, d in zip(spatial, kernel, pad, dilation):
        if not isinstance(s, int):
            raise TypeInferenceError(f"{name}: the pooled axes must be static, got {spatial}")
        if 2 * p > d * (k - 1) + 1:
            raise TypeInferenceError(f"{name}: padding {pad} must be at most half of the "
                                     f"kernel {kernel}" + (f" (dilation {dilation})" if any(
                                         v != 1 for v in dilation) else ""))
    out = tuple(pool_output_size(s, k, st, p, d, attrs["ceil_mode"]) for s, k, st, p, d in zip(
        spatial, kernel, stride, pad, dilation))
    if any(o < 1 for o in out):
        raise TypeInferenceError(f"{name}: the kernel {kernel} does not fit the input's pooled "
                                 f"axes {tuple(spatial)} (padding {pad})")
    return out


def _split(name, t, n):
    if t.ndim < n:
        raise TypeInferenceError(f"{name}: pooling {n} axes needs an operand of rank >= {n}, "
                                 f"got {t!r}")
    return t.shape[:t.ndim - n], t.shape[t.ndim - n:]


def _pool_type(name, float_only):
    def infer(types, attrs):
        (x,) = tensor_types(name, types)
        lead, spatial = _split(name, x, len(attrs["kernel"]))
        out = _pooled_shape(name, spatial, attrs)
        dtype = x.dtype
        if dtype.numpy.kind == "c":
            raise TypeInferenceError(f"{name}: complex operands are not supported ({x!r})")
        if float_only and not dtype.is_float:
            dtype = DType("f64")
        return TensorType((*lead, *out), dtype)

    return infer


def _select_type(types, attrs):
    name = "max_pool_select"
    x, v = tensor_types(name, types)
    if tuple(x.shape) != tuple(v.shape):
        raise TypeInferenceError(f"{name}: the values {v!r} must have the shape of {x!r}")
    lead, spatial = _split(name, x, len(attrs["kernel"]))
    return TensorType((*lead, *_pooled_shape(name, spatial, attrs)), v.dtype)


def _scatter_type(types, attrs):
    name = "max_pool_scatter"
    x, g = tensor_types(name, types)
    lead, spatial = _split(name, x, len(attrs["kernel"]))
    want = (*lead, *_pooled_shape(name, spatial, attrs))
    if tuple(g.shape) != want:
        raise TypeInferenceError(f"{name}: the gradient {g!r} must have the pooled shape "
                                 f"{want} of {x!r}")
    return TensorType(x.shape, g.dtype)


def _avg_transpose_type(types, attrs):
    name = "avg_pool_transpose"
    (g,) = tensor_types(name, types)
    n = len(attrs["kernel"])
    lead, pooled = _split(name, g, n)
    want = _pooled_shape(name, attrs["shape"], attrs)
    if tuple(pooled) != want:
        raise TypeInferenceError(f"{name}: an input of shape {attrs['shape']} pools to {want}, "
                                 f"not to the gradient's {tuple(pooled)} ({fmt(types)})")
    dtype = g.dtype if g.dtype.is_float else DType("f64")
    return TensorType((*lead, *attrs["shape"]), dtype)


# -- NumPy kernels ----------------------------------------------------------------------------
def _layout(spatial, kernel, stride, padding, dilation, ceil_mode):
    """(pooled shape, (low, high) padding covering every window)."""
    out = tuple(pool_output_size(s, k, st, p, d, ceil_mode) for s, k, st, p, d in zip(
        spatial, kernel, stride, padding, dilation))
    pads = tuple((p, max(p, (o - 1) * st + d * (k - 1) + 1 - s - p)) for s, k, st, p, d, o in zip(
        spatial, kernel, stride, padding, dilation, out))
    return out, pads


def _lowest(dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind == "b":
        return False
    return np.iinfo(dtype).min


class _Plan(NamedTuple):
    out: tuple  # the pooled shape
    pads: tuple  # (low, high) per pooled axis, covering every window
    padded: tuple  # the padded shape of the pooled axes
    slices: tuple  # per kernel offset, the index of the padded array it reads
    crop: tuple | None  # the index of the input inside the padded array (None: no padding)
    disjoint: bool  # windows that never overlap


@functools.lru_cache(maxsize=512)
def _plan(ndim, spatial, kernel, stride, padding, dilation, ceil_mode) -> _Plan:
    """Everything about a pooling's layout that does not depend on values, worked out
    once per shape: the kernels then run a few NumPy calls per kernel offset and no
    Python arithmetic (on a small batch that arithmetic costs more than the pooling)."""
    out, pads = _layout(spatial, kernel, stride, padding, dilation, ceil_mode)
    lead = (slice(None),) * (ndim - len(kernel))
    slices = tuple((*lead, *sl) for _, sl in offset_slices(kernel, out, stride, dilation))
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
    crop = None
    if any(lo or hi for lo, hi in pads):
        crop = (*lead, *(slice(lo, lo + s) for s, (lo, _) in zip(spatial, pads)))
    disjoint = all(st >= (k - 1) * d + 1 for k, st, d in zip(kernel, stride, dilation))
    return _Plan(out, pads, padded, slices, crop, disjoint)


def _plan_of(x, kernel, stride, padding, dilation, ceil_mode) -> _Plan:
    n = len(kernel)
    return _plan(x.ndim, tuple(x.shape[x.ndim - n:]), tuple(kernel), tuple(stride),
                 tuple(padding), tuple(dilation), bool(ceil_mode))


def _padded(x, plan: _Plan, value=0):
    if plan.crop is None:
        return x
    xp = np.full((*x.shape[:x.ndim - len(plan.out)], *plan.padded), value, x.dtype)
    xp[plan.crop] = x
    return xp


def _max_of(xp, plan: _Plan):
    # elementwise maxima of strided slices: NumPy reduces a short window axis (np.max
    # over a (..., k*k) view) an order of magnitude slower
    first, *rest = plan.slices
    acc = xp[first].copy()
    for sl in rest:
        np.maximum(acc, xp[sl], out=acc)  # NaN propagates, as in PyTorch
    return acc


def _max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    plan = _plan_of(x, kernel, stride, padding, dilation, ceil_mode)
    return _max_of(_padded(x, plan, _lowest(x.dtype)), plan)


def _first_maxima(x, plan: _Plan) -> list:
    """For each kernel offset, where it holds its window's first maximum (or first NaN):
    exactly one offset hits per window."""
    xp = _padded(x, plan, _lowest(x.dtype))
    top = _max_of(xp, plan)
    nans = x.dtype.kind == "f" and bool(np.isnan(top).any())
    taken = None
    hits = []
    for sl in plan.slices:
        part = xp[sl]
        hit = np.equal(part, top)
        if nans:
            hit |= np.isnan(part) & np.isnan(top)
        if taken is None:
            taken = hit.copy()
        else:
            np.greater(hit, taken, out=hit)  # a hit where no earlier offset hit
            taken |= hit
        hits.append(hit)
    return hits


def _max_pool_select(x, v, kernel, stride, padding, dilation, ceil_mode):
    plan = _plan_of(x, kernel, stride, padding, dilation, ceil_mode)
    hits = _first_maxima(x, plan)
    vp = _padded(v, plan)
    res = np.zeros(hits[0].shape, v.dtype)
    for sl, hit in zip(plan.slices, hits):
        np.copyto(res, vp[sl], where=hit)
    return res


def _max_pool_scatter(x, g, kernel, stride, padding, dilation, ceil_mode):
    plan = _plan_of(x, kernel, stride, padding, dilation, ceil_mode)
    hits = _first_maxima(x, plan)
    dxp = np.zeros((*x.shape[:x.ndim - len(kernel)], *plan.padded), g.dtype)
    # g * hit is g or 0 exactly when g is finite, and a product into a strided slice
    # costs a quarter of a masked copy (np.copyto with where=)
    finite = g.dtype.kind != "f" or bool(np.isfinite(g).all())
    for sl, hit in zip(plan.slices, hits):
        target = dxp[sl]
        if finite and plan.disjoint:  # windows that do not overlap: one write per position
            np.multiply(g, hit, out=target)
        elif finite:
            target += g * hit
        else:
            np.add(target, g, out=target, where=hit)
    return dxp if plan.crop is None else np.ascontiguousarray(dxp[plan.crop])


@functools.lru_cache(maxsize=256)
def avg_pool_divisor(spatial, kernel, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, out) -> np.ndarray | int:
    """What each window's sum is divided by (PyTorch's rule): the window's size clipped
    to the padded input (``count_include_pad``) or to the input, or the override; an int
    when it is the same for every window."""
    if divisor_override is not None:
        return divisor_override
    per_axis = []
    for s, k, st, p, o in zip(spatial, kernel, stride, padding, out):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        size = end - start
        if not count_include_pad:
            size = np.minimum(end, s) - np.maximum(start, 0)
        per_axis.append(size)
    div = per_axis[0]
    for a in per_axis[1:]:
        div = np.multiply.outer(div, a)
    if np.all(div == div.flat[0]):
        return int(div.flat[0])
    div.flags.writeable = False  # cached: shared by every call of this shape
    return div


def _avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    x = x.astype(dtype, copy=False)
    n = len(kernel)
    plan = _plan_of(x, kernel, stride, padding, (1,) * n, ceil_mode)
    xp = _padded(x, plan)
    first, *rest = plan.slices
    acc = xp[first].copy()
    for sl in rest:
        acc += xp[sl]
    acc /= _divisor(x.shape[x.ndim - n:], kernel, stride, padding, ceil_mode,
                    count_include_pad, divisor_override, plan.out, dtype)
    return acc


def _avg_pool_transpose(g, kernel, stride, padding, ceil_mode, count_include_pad,
                        divisor_override, shape):
    dtype = g.dtype if g.dtype.kind == "f" else np.dtype(np.float64)
    n = len(kernel)
    lead = g.shape[:g.ndim - n]
    plan = _plan(len(lead) + n, tuple(shape), tuple(kernel), tuple(stride), tuple(padding),
                 (1,) * n, bool(ceil_mode))
    gd = g.astype(dtype) / _divisor(shape, kernel, stride, padding, ceil_mode,
                                    count_include_pad, divisor_override, plan.out, dtype)
    dxp = np.zeros((*lead, *plan.padded), dtype)
    for sl in plan.slices:
        dxp[sl] += gd
    return dxp if plan.crop is None else np.ascontiguousarray(dxp[plan.crop])


def _divisor(spatial, kernel, stride, padding, ceil_mode, count_include_pad,
             divisor_override, out, dtype):
    div = avg_pool_divisor(tuple(spatial), tuple(kernel), tuple(stride), tuple(padding),
                           bool(ceil_mode), bool(count_include_pad), divisor_override,
                           tuple(out))
    return dtype.type(div) if isinstance(div, int) else div.astype(dtype)


# -- PyTorch kernels --------------------------------------------------------------------------
# Pooling over n trailing axes runs as torch's (n)d pooling on the array reshaped to
# (rest, *pooled axes): torch takes one leading axis besides the pooled ones.
def _flat(x, n):
    return x.reshape((-1, *x.shape[x.ndim - n:])), tuple(x.shape[:x.ndim - n])


def _torch_max(x, kernel, stride, padding, dilation, ceil_mode, indices):
    import torch.nn.functional as F  # noqa: N812 - PyTorch's own spelling

    n = len(kernel)
    fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    flat, lead = _flat(x, n)
    return fn(flat, kernel, stride, padding, dilation, ceil_mode=ceil_mode,
              return_indices=indices), lead


def _torch_max_pool(ctx, x, kernel, stride, padding, dilation, ceil_mode):
    if len(kernel) > 3:
        return ctx.xp.asarray(_max_pool(x.cpu().numpy(), kernel, stride, padding, dilation,
                                        ceil_mode))
    y, lead = _torch_max(x, kernel, stride, padding, dilation, ceil_mode, False)
    return y.reshape((*lead, *y.shape[1:]))


def _torch_max_select(ctx, x, v, kernel, stride, padding, dilation, ceil_mode):
    n = len(kernel)
    if n > 3:
        return ctx.xp.asarray(_max_pool_select(x.cpu().numpy(), v.cpu().numpy(), kernel, stride,
                                               padding, dilation, ceil_mode))
    (_, idx), lead = _torch_max(x, kernel, stride, padding, dilation, ceil_mode, True)
    vf = _flat(v, n)[0].flatten(1)
    out = vf.gather(1, idx.flatten(1))
    return out.reshape((*lead, *idx.shape[1:]))


def _torch_max_scatter(ctx, x, g, kernel, stride, padding, dilation, ceil_mode):
    import torch

    n = len(kernel)
    if n > 3:
        return ctx.xp.asarray(_max_pool_scatter(x.cpu().numpy(), g.cpu().numpy(), kernel,
                                                stride, padding, dilation, ceil_mode))
    (_, idx), _ = _torch_max(x, kernel, stride, padding, dilation, ceil_mode, True)
    flat = _flat(x, n)[0]
    dx = torch.zeros(flat.shape, dtype=g.dtype, device=g.device).flatten(1)
    dx.scatter_add_(1, idx.flatten(1), g.reshape(idx.shape).flatten(1))
    return dx.reshape(x.shape)


def _torch_avg_pool(ctx, x, kernel, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
    import torch.nn.functional as F  # noqa: N812

    n = len(kernel)
    if not x.dtype.is_floating_point:
        x = x.to(ctx.dtype("float64"))
    if n > 3 or (n == 1 and divisor_override is not None):
        return ctx.xp.asarray(_avg_pool(x.cpu().numpy(), kernel, stride, padding, ceil_mode,
                                        count_include_pad, divisor_override))
    flat, lead = _flat(x, n)
    if n == 1:
        y = F.avg_pool1d(flat, kernel, stride, padding, ceil_mode, count_include_pad)
    else:
        y = (F.avg_pool2d, F.avg_pool3d)[n - 2](flat, kernel, stride, padding, ceil_mode,
                                                count_include_pad, divisor_override)
    return y.reshape((*lead, *y.shape[1:]))


def _torch_avg_transpose(ctx, g, kernel, stride, padding, ceil_mode, count_include_pad,
                         divisor_override, shape):
    import torch

    n = len(kernel)
    if not g.dtype.is_floating_point:
        g = g.to(ctx.dtype("float64"))
    if n > 3:
        return ctx.xp.asarray(_avg_pool_transpose(g.cpu().numpy(), kernel, stride, padding,
                                                  ceil_mode, count_include_pad,
                                                  divisor_override, shape))
    flat, lead = _flat(g, n)
    if n == 1:  # torch has no 1-d average pooling backward: the 2-d one with a unit axis
        flat, kernel, stride, padding, shape = (flat[..., None, :], (1, *kernel),
                                                (1, *stride), (0, *padding), (1, *shape))
    like = torch.empty((flat.shape[0], *shape), dtype=g.dtype, device=g.device)
    back = (torch.ops.aten.avg_pool2d_backward if len(kernel) == 2
            else torch.ops.aten.avg_pool3d_backward)
    dx = back(flat, like, list(kernel), list(stride), list(padding), ceil_mode,
              count_include_pad, divisor_override)
    return dx.reshape((*lead, *shape[len(shape) - n:]))


_MAX_ATTRS = {"kernel": REQUIRED, "stride": REQUIRED, "padding": REQUIRED,
              "dilation": REQUIRED, "ceil_mode": False}
_AVG_ATTRS = {"kernel": REQUIRED, "stride": REQUIRED, "padding": REQUIRED, "ceil_mode": False,
              "count_include_pad": True, "divisor_override": None}

def _kernels(numpy_kernel, torch_kernel) -> dict:
    return {"torch": torch_kernel, "numpy": on_numpy(numpy_kernel)}


max_pool = define(
    "max_pool", _pool_type("max_pool", False), _max_pool, 1, _MAX_ATTRS,
    _normalize("max_pool"), fresh=True, aliases=False,
    kernels=_kernels(_max_pool, _torch_max_pool),
    doc="max_pool(x): the maximum of each window over the trailing axes")
max_pool_select = define(
    "max_pool_select", _select_type, _max_pool_select, 2, _MAX_ATTRS,
    _normalize("max_pool_select"), fresh=True, aliases=False, linear=(1,),
    kernels=_kernels(_max_pool_select, _torch_max_select),
    doc="max_pool_select(x, v): v at the positions of the maxima of x's windows")
max_pool_scatter = define(
    "max_pool_scatter", _scatter_type, _max_pool_scatter, 2, _MAX_ATTRS,
    _normalize("max_pool_scatter"), fresh=True, aliases=False, linear=(1,),
    kernels=_kernels(_max_pool_scatter, _torch_max_scatter),
    doc="max_pool_scatter(x, g): g added at the positions of the maxima of x's windows")
avg_pool = define(
    "avg_pool", _pool_type("avg_pool", True), _avg_pool, 1, _AVG_ATTRS,
    _normalize("avg_pool"), fresh=True, aliases=False, linear="all",
    kernels=_kernels(_avg_pool, _torch_avg_pool),
    doc="avg_pool(x): the mean of each window over the trailing axes")
avg_pool_transpose = define(
    "avg_pool_transpose", _avg_transpose_type, _avg_pool_transpose, 1,
    {**_AVG_ATTRS, "shape": REQUIRED}, _normalize("avg_pool_transpose"), fresh=True,
    aliases=False, linear="all", kernels=_kernels(_avg_pool_transpose, _torch_avg_transpose),
    doc="avg_pool_transpose(g): the transpose of avg_pool (each window's share spread back)")
