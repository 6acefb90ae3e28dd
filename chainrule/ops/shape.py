"""Shape operators and array creation.

>>> import numpy as np
>>> collapse_sum_to(np.ones((2, 3, 4)), shape=(3, 1))
array([[8.],
       [8.],
       [8.]])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from .common import (
    REQUIRED,
    DType,
    TensorType,
    TupleType,
    broadcast_shapes,
    check_shape,
    define,
    fmt,
    normalize_axes,
    normalize_axis,
    promote,
    static_size,
    tensor_types,
)

# -- reshape ------------------------------------------------------------------------------


def _reshape_normalize(types, attrs):
    (t,) = tensor_types("reshape", types)
    shape = attrs["shape"]
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeInferenceError(f"reshape: shape must be a tuple, got {shape!r}")
    shape = tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in shape)
    if shape.count(-1) > 1:
        raise TypeInferenceError(f"reshape: at most one -1 in {shape}")
    if -1 in shape:
        total, known = t.size, static_size([d for d in shape if d != -1])
        if total is None or known is None:
            raise TypeInferenceError(f"reshape: cannot infer -1 in {shape} for {t!r}")
        if known == 0 or total % known:
            raise TypeInferenceError(f"reshape: cannot reshape {t!r} into {shape}")
        shape = tuple(total // known if d == -1 else d for d in shape)
    return {"shape": check_shape("reshape", shape)}


def _reshape_type(types, attrs):
    (t,) = types
    shape = attrs["shape"]
    a, b = t.size, static_size(shape)
    if a is not None and b is not None and a != b:
        raise TypeInferenceError(f"reshape: cannot reshape {t!r} ({a} elements) into {shape}")
    return TensorType(shape, t.dtype)


reshape = define("reshape", _reshape_type, lambda x, shape: np.reshape(x, shape), 1,
                 {"shape": REQUIRED}, _reshape_normalize)

# -- permute_dims -------------------------------------------------------------------


def _permute_normalize(types, attrs):
    (t,) = tensor_types("permute_dims", types)
    axes = attrs["axes"]
    if axes is None:
        axes = tuple(reversed(range(t.ndim)))
    if not isinstance(axes, (tuple, list)):
        raise TypeInferenceError(f"permute_dims: axes must be a tuple of ints, got {axes!r}")
    axes = tuple(normalize_axis("permute_dims", a, t.ndim) for a in axes)
    if sorted(axes) != list(range(t.ndim)):
        raise TypeInferenceError(f"permute_dims: {axes} is not a permutation of the axes of {t!r}")
    return {"axes": axes}


permute_dims = define(
    "permute_dims",
    lambda types, attrs: TensorType([types[0].shape[a] for a in attrs["axes"]], types[0].dtype),
    lambda x, axes: np.transpose(x, axes), 1, {"axes": None}, _permute_normalize)

# -- expand_dims / squeeze ----------------------------------------------------------------


def _expand_normalize(types, attrs):
    (t,) = tensor_types("expand_dims", types)
    axis = attrs["axis"]
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return {"axis": normalize_axes("expand_dims", axes, t.ndim + len(axes))}


def _expand_type(types, attrs):
    t = types[0]
    axes = attrs["axis"]
    it = iter(t.shape)
    shape = [1 if i in axes else next(it) for i in range(t.ndim + len(axes))]
    return TensorType(shape, t.dtype)


expand_dims = define("expand_dims", _expand_type, lambda x, axis: np.expand_dims(x, axis), 1,
                     {"axis": REQUIRED}, _expand_normalize)


def _squeeze_normalize(types, attrs):
    (t,) = tensor_types("squeeze", types)
    axis = attrs["axis"]
    if axis is None:
        axes = tuple(i for i, d in enumerate(t.shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, t.ndim)
    for a in axes:
        if t.shape[a] != 1:
            raise TypeInferenceError(f"squeeze: axis {a} of {t!r} has size {t.shape[a]}, not 1")
    return {"axis": axes}


squeeze = define(
    "squeeze",
    lambda types, attrs: TensorType(
        [d for i, d in enumerate(types[0].shape) if i not in attrs["axis"]], types[0].dtype),
    lambda x, axis: np.squeeze(x, axis), 1, {"axis": None}, _squeeze_normalize)

# -- broadcast_to / collapse_sum_to ---------------------------------------------------


def _shape_normalize(name):
    def normalize(types, attrs):
        tensor_types(name, types)
        return {"shape": check_shape(name, attrs["shape"])}

    return normalize


def _broadcast_to_type(types, attrs):
    (t,) = types
    shape = attrs["shape"]
    target = TensorType(shape, t.dtype)
    try:
        fits = len(shape) >= t.ndim and broadcast_shapes("broadcast_to", [t, target]) == shape
    except TypeInferenceError:
        fits = False
    if not fits:
        raise TypeInferenceError(f"broadcast_to: cannot broadcast {t!r} to shape {shape}")
    return target


broadcast_to = define("broadcast_to", _broadcast_to_type,
                      lambda x, shape: np.broadcast_to(x, shape), 1,
                      {"shape": REQUIRED}, _shape_normalize("broadcast_to"))


def _collapse_type(types, attrs):
    (t,) = types
    shape = attrs["shape"]
    target = TensorType(shape, t.dtype)
    try:
        fits = (len(shape) <= t.ndim
                and broadcast_shapes("collapse_sum_to", [t, target]) == t.shape)
    except TypeInferenceError:
        fits = False
    if not fits:
        raise TypeInferenceError(
            f"collapse_sum_to: shape {shape} does not broadcast to {t!r}, so {t!r} cannot be "
            f"summed down to it")
    return target


def collapse_axes(in_shape: tuple, shape: tuple) -> tuple[tuple, tuple]:
    """Axes to sum (leading, then kept-as-1) so that in_shape collapses to shape."""
    lead = len(in_shape) - len(shape)
    leading = tuple(range(lead))
    kept = tuple(lead + i for i, d in enumerate(shape) if d == 1 and in_shape[lead + i] != 1)
    return leading, kept


def _collapse_kernel(x, shape):
    leading, kept = collapse_axes(x.shape, shape)
    if kept:  # dtype=: the result keeps x's dtype, as the type rule says
        x = np.sum(x, axis=kept, keepdims=True, dtype=x.dtype)
    if leading:
        x = np.sum(x, axis=leading, dtype=x.dtype)
    return np.asarray(x).reshape(shape) if not leading and not kept else x


collapse_sum_to = define("collapse_sum_to", _collapse_type, _collapse_kernel, 1,
                         {"shape": REQUIRED}, _shape_normalize("collapse_sum_to"))

# -- concatenate / split / flip ---------------------------------------------------------


def _concat_normalize(types, attrs):
    types = tensor_types("concatenate", types)
    if not types:
        raise TypeInferenceError("concatenate: needs at least one array")
    return {"axis": normalize_axis("concatenate", attrs["axis"], types[0].ndim)}


def _concat_type(types, attrs):
    axis = attrs["axis"]
    first = types[0]
    total = 0
    for t in types:
        if t.ndim != first.ndim or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis
        ):
            raise TypeInferenceError(
                f"concatenate: shapes {fmt(types)} differ outside axis {axis}")
        d = t.shape[axis]
        total = total + d if isinstance(total, int) and isinstance(d, int) else "?"
    if total == "?":
        raise TypeInferenceError("concatenate: symbolic sizes along the axis are not supported")
    shape = list(first.shape)
    shape[axis] = total
    return TensorType(shape, promote("concatenate", types))


concatenate = define("concatenate", _concat_type,
                     lambda *xs, axis: np.concatenate(xs, axis=axis), None, {"axis": 0},
                     _concat_normalize)


def _split_normalize(types, attrs):
    (t,) = tensor_types("split", types)
    axis = normalize_axis("split", attrs["axis"], t.ndim)
    n = t.shape[axis]
    spec = attrs["indices_or_sections"]
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if not isinstance(n, int) or spec <= 0 or n % spec:
            raise TypeInferenceError(
                f"split: {t!r} axis {axis} does not split into {spec} equal parts")
        spec = tuple(range(n // spec, n, n // spec))
    elif isinstance(spec, (tuple, list)):
        if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in spec):
            raise TypeInferenceError(f"split: indices must be ints, got {spec!r}")
        spec = tuple(int(i) for i in spec)
        if not isinstance(n, int):
            raise TypeInferenceError(f"split: cannot split the symbolic axis {axis} of {t!r}")
        if any(not 0 <= i <= n for i in spec) or list(spec) != sorted(spec):
            raise TypeInferenceError(f"split: indices {spec} out of order or range for size {n}")
    else:
        raise TypeInferenceError(
            f"split: indices_or_sections must be an int or tuple, got {spec!r}")
    return {"indices_or_sections": spec, "axis": axis}


def _split_type(types, attrs):
    t = types[0]
    axis, idx = attrs["axis"], attrs["indices_or_sections"]
    bounds = [0, *idx, t.shape[axis]]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        shape = list(t.shape)
        shape[axis] = hi - lo
        parts.append(TensorType(shape, t.dtype))
    return TupleType(parts)


split = define("split", _split_type,
               lambda x, indices_or_sections, axis: tuple(np.split(x, indices_or_sections, axis)),
               1, {"indices_or_sections": REQUIRED, "axis": 0}, _split_normalize)


def _flip_normalize(types, attrs):
    (t,) = tensor_types("flip", types)
    axes = normalize_axes("flip", attrs["axis"], t.ndim)
    return {"axis": tuple(range(t.ndim)) if axes is None else axes}


flip = define("flip", lambda types, attrs: types[0], lambda x, axis: np.flip(x, axis), 1,
              {"axis": None}, _flip_normalize)

# -- creation ---------------------------------------------------------------------------


def _creation_normalize(name, like: bool):
    def normalize(types, attrs):
        out = dict(attrs)
        if like:
            (t,) = tensor_types(name, types)
            if out.get("dtype") is None:
                out["dtype"] = t.dtype
        else:
            out["shape"] = check_shape(name, attrs["shape"])
        out["dtype"] = DType(out["dtype"]) if out["dtype"] is not None else None
        if "fill_value" in out:
            v = out["fill_value"]
            if isinstance(v, np.generic):
                v = v.item()
            if not isinstance(v, (bool, int, float)):
                raise TypeInferenceError(f"{name}: fill_value must be a number, got {v!r}")
            out["fill_value"] = v
            if out["dtype"] is None:
                out["dtype"] = DType(np.result_type(v))
        elif out["dtype"] is None:
            out["dtype"] = DType("f64")
        return out

    return normalize


def _creation_type(types, attrs):
    shape = types[0].shape if types else attrs["shape"]
    return TensorType(shape, attrs["dtype"])


zeros = define("zeros", _creation_type, lambda shape, dtype: np.zeros(shape, dtype.numpy), 0,
               {"shape": REQUIRED, "dtype": None}, _creation_normalize("zeros", False))
ones = define("ones", _creation_type, lambda shape, dtype: np.ones(shape, dtype.numpy), 0,
              {"shape": REQUIRED, "dtype": None}, _creation_normalize("ones", False))
full = define("full", _creation_type,
              lambda shape, fill_value, dtype: np.full(shape, fill_value, dtype.numpy), 0,
              {"shape": REQUIRED, "fill_value": REQUIRED, "dtype": None},
              _creation_normalize("full", False))
zeros_like = define("zeros_like", _creation_type,
                    lambda x, dtype: np.zeros(x.shape, dtype.numpy), 1, {"dtype": None},
                    _creation_normalize("zeros_like", True))
ones_like = define("ones_like", _creation_type,
                   lambda x, dtype: np.ones(x.shape, dtype.numpy), 1, {"dtype": None},
                   _creation_normalize("ones_like", True))
full_like = define("full_like", _creation_type,
                   lambda x, fill_value, dtype: np.full(x.shape, fill_value, dtype.numpy), 1,
                   {"fill_value": REQUIRED, "dtype": None}, _creation_normalize("full_like", True))


def _arange_normalize(types, attrs):
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    for v in (start, stop, step):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
            raise TypeInferenceError(f"arange: bounds must be finite numbers, got {v!r}")
    if step == 0:
        raise TypeInferenceError("arange: step cannot be zero")
    dtype = attrs["dtype"]
    dtype = DType(np.result_type(start, stop, step) if dtype is None else dtype)
    return {"start": start, "stop": stop, "step": step, "dtype": dtype}


def _arange_type(types, attrs):
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    n = max(0, int(np.ceil((stop - start) / step)))  # NumPy's length rule, no allocation
    return TensorType((n,), attrs["dtype"])


arange = define(
    "arange", _arange_type,
    lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype.numpy), 0,
    {"start": 0, "stop": REQUIRED, "step": 1, "dtype": None}, _arange_normalize)
