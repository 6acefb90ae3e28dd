"""Neural-network operators with numerically stable kernels: softmax,
log_softmax, logsumexp (along one or more axes).

>>> import numpy as np
>>> float(logsumexp(np.array([1000.0, 1000.0])))  # no overflow
1000.6931471805599
"""

from __future__ import annotations

import numpy as np

from ..ir.types import DType, TensorType
from . import templates
from .common import define, normalize_axes, tensor_types


def _axis_normalize(name):
    def normalize(types, attrs):
        (t,) = tensor_types(name, types)
        out = dict(attrs)
        out["axis"] = normalize_axes(name, attrs["axis"], t.ndim)
        if "keepdims" in out:
            out["keepdims"] = bool(out["keepdims"])
        return out

    return normalize


def _float(t: TensorType) -> TensorType:
    return t if t.dtype.is_float else TensorType(t.shape, DType("f64"))


def _softmax(x, axis):
    x = x if x.dtype.kind == "f" else x.astype(np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def _log_softmax(x, axis):
    x = x if x.dtype.kind == "f" else x.astype(np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _logsumexp(x, axis, keepdims):
    x = x if x.dtype.kind == "f" else x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros((), x.dtype))
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return out


def _lse_type(types, attrs):
    t = _float(types[0])
    axes = attrs["axis"] if attrs["axis"] is not None else tuple(range(t.ndim))
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    else:
        shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return TensorType(shape, t.dtype)


def _logsumexp_emit(e):
    """The kernel of ``logsumexp`` written out (same NumPy calls, no wrappers)."""
    t = e.types[0]
    axis, keepdims = e.attrs["axis"], e.attrs["keepdims"]
    out_shape = templates.static_shape(e.out)
    if (not t.dtype.is_float or t.ndim == 0 or out_shape is None
            or not isinstance(keepdims, bool) or e.out.dtype != t.dtype):
        return None
    if axis is not None and templates.literal(tuple(axis)) is None:
        return None
    ax = "" if axis is None else f"axis={templates.literal(tuple(axis))}, "
    x, m = e.arg(0), e.target
    lines = [f"{m} = {x}.max({ax}keepdims=True)",
             f"{m}[~np.isfinite({m})] = 0",
             f"{m} = np.log(np.exp({x} - {m}).sum({ax}keepdims=True)) + {m}"]
    if not keepdims:
        lines.append(f"{m} = {m}.reshape({templates.literal(out_shape)})")
    return lines


softmax = define("softmax", lambda types, attrs: _float(types[0]), _softmax, 1,
                 {"axis": -1}, _axis_normalize("softmax"), aliases=False,
                 namespace=("softmax",))
log_softmax = define("log_softmax", lambda types, attrs: _float(types[0]), _log_softmax, 1,
                     {"axis": -1}, _axis_normalize("log_softmax"), aliases=False,
                     namespace=("log_softmax",))
logsumexp = define("logsumexp", _lse_type, _logsumexp, 1, {"axis": None, "keepdims": False},
                   _axis_normalize("logsumexp"), emit=_logsumexp_emit, aliases=False,
                   namespace=("logsumexp",))
