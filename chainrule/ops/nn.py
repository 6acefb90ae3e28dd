"""Neural-network operators with numerically stable kernels: softmax,
log_softmax, logsumexp (along one or more axes).

>>> import numpy as np
>>> float(logsumexp(np.array([1000.0, 1000.0])))  # no overflow
1000.6931471805599
"""

from __future__ import annotations

import numpy as np

from .common import DType, TensorType, define, normalize_axes, tensor_types


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


softmax = define("softmax", lambda types, attrs: _float(types[0]), _softmax, 1,
                 {"axis": -1}, _axis_normalize("softmax"))
log_softmax = define("log_softmax", lambda types, attrs: _float(types[0]), _log_softmax, 1,
                     {"axis": -1}, _axis_normalize("log_softmax"))
logsumexp = define("logsumexp", _lse_type, _logsumexp, 1, {"axis": None, "keepdims": False},
                   _axis_normalize("logsumexp"))
