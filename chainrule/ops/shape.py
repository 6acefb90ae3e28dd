"""Shape operators and array creation.

>>> import numpy as np
>>> collapse_sum_to(np.ones((2, 3, 4)), shape=(3, 1))
array([[8.],
       [8.],
       [8.]])
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import TypeInferenceError
from ..ir import dims
from ..ir.op import REQUIRED
from ..ir.types import DType, TensorType, TupleType
from . import templates
from .common import (
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
    if -1 in shape and not t.is_static:
        shape = _infer_symbolic(t, shape)
    if -1 in shape:
        total, known = t.size, static_size([d for d in shape if d != -1])
        if total is None or known is None:
            raise TypeInferenceError(f"reshape: cannot infer -1 in {shape} for {t!r}")
        if known == 0 or total % known:
            raise TypeInferenceError(f"reshape: cannot reshape {t!r} into {shape}")
        shape = tuple(total // known if d == -1 else d for d in shape)
    return {"shape": check_shape("reshape", shape)}


def _product(shape):
    """The number of elements of ``shape``: an int, or an expression of its symbols."""
    return functools.reduce(dims.mul, shape, 1)


def _shape_text(shape) -> str:
    """``(n - 1, 3)``: a shape as the text format writes it (symbols bare)."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _divide(total, known):
    """``total / known`` as a dimension when ``known`` (one term: ``3``, ``2*n``) divides
    every term of ``total`` exactly; None otherwise."""
    divisor = dims.poly_of(known)
    if len(divisor) != 1:
        return None
    (factors, coefficient), = divisor.items()
    out = {}
    for mono, c in dims.poly_of(total).items():
        rest = list(mono)
        for f in factors:
            if f not in rest:
                return None
            rest.remove(f)
        if c % coefficient:
            return None
        out[tuple(rest)] = c // coefficient
    return dims.dim(out)


def _infer_symbolic(t, shape) -> tuple:
    """``shape`` with its -1 inferred for a symbolic ``t``: ``f64[n, 3]`` to ``(-1,)`` is
    ``(3*n,)``, ``f64[3*n]`` to ``(n, -1)`` is ``(n, 3)``."""
    total, known = _product(t.shape), _product([d for d in shape if d != -1])
    fill = _divide(total, known)
    if fill is None:
        raise TypeInferenceError(
            f"reshape: cannot infer -1 in {_shape_text(shape)} for {t!r}: {total} elements "
            f"are not a whole multiple of {known}")
    return tuple(fill if d == -1 else d for d in shape)


def _reshape_type(types, attrs):
    (t,) = types
    shape = attrs["shape"]
    a, b = t.size, static_size(shape)
    if a is not None and b is not None and a != b:
        raise TypeInferenceError(f"reshape: cannot reshape {t!r} ({a} elements) into {shape}")
    if (a is None or b is None) and _product(t.shape) != _product(shape):
        raise TypeInferenceError(
            f"reshape: cannot reshape {t!r} ({_product(t.shape)} elements) into "
            f"{_shape_text(shape)} ({_product(shape)} elements)")
    return TensorType(shape, t.dtype)


_SHAPE_FACTS = dict(linear=(0,), emit=templates.reshape_to_out)
reshape = define("reshape", _reshape_type, lambda x, shape: np.reshape(x, shape), 1,
                 {"shape": REQUIRED}, _reshape_normalize, namespace=("reshape",),
                 **_SHAPE_FACTS)

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


def _permute_emit(e):
    axes = e.attrs["axes"]
    if len(axes) == 2 and tuple(axes) == (1, 0):
        return f"{e.args[0]}.T"
    text = templates.literal(tuple(axes))
    return None if text is None else f"{e.args[0]}.transpose({text})"


permute_dims = define(
    "permute_dims",
    lambda types, attrs: TensorType([types[0].shape[a] for a in attrs["axes"]], types[0].dtype),
    lambda x, axes: np.transpose(x, axes), 1, {"axes": None}, _permute_normalize,
    linear=(0,), emit=_permute_emit, namespace=("permute_dims",))

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
                     {"axis": REQUIRED}, _expand_normalize, namespace=("expand_dims",),
                     **_SHAPE_FACTS)


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
    lambda x, axis: np.squeeze(x, axis), 1, {"axis": None}, _squeeze_normalize,
    namespace=("squeeze",), methods=("squeeze",), **_SHAPE_FACTS)

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


def _broadcast_to_emit(e):
    shape = templates.static_shape(e.out)
    return None if shape is None else f"np.broadcast_to({e.args[0]}, {templates.literal(shape)})"


broadcast_to = define("broadcast_to", _broadcast_to_type,
                      lambda x, shape: np.broadcast_to(x, shape), 1,
                      {"shape": REQUIRED}, _shape_normalize("broadcast_to"), linear=(0,),
                      emit=_broadcast_to_emit, namespace=("broadcast_to",), broadcast=True,
                      scalar="{0}")  # one element: the operand's at the broadcast index


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


def _collapse_sum_to_emit(e):
    in_shape, shape = templates.static_shape(e.types[0]), templates.static_shape(e.out)
    dt = templates.dtype_text(e.out.dtype)
    if in_shape is None or shape is None or dt is None:
        return None
    leading, kept = collapse_axes(in_shape, shape)
    text = e.args[0]
    if kept:
        text += f".sum(axis={templates.literal(kept)}, keepdims=True, dtype={dt})"
    if leading:
        text += f".sum(axis={templates.literal(leading)}, dtype={dt})"
    if not kept and not leading:
        return f"np.asarray({text}).reshape({templates.literal(shape)})"
    return text


collapse_sum_to = define("collapse_sum_to", _collapse_type, _collapse_kernel, 1,
                         {"shape": REQUIRED}, _shape_normalize("collapse_sum_to"), linear=(0,),
                         emit=_collapse_sum_to_emit, namespace=("collapse_sum_to",))

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
        total = dims.add(total, t.shape[axis])  # n + m, n + 3: an expression (ir.dims)
    shape = list(first.shape)
    shape[axis] = total
    return TensorType(shape, promote("concatenate", types))


def _concatenate_emit(e):
    axis = templates.int_literal(e.attrs["axis"])
    if axis is None:
        return None
    xs = ", ".join(e.args) + ("," if len(e.args) == 1 else "")
    return f"np.concatenate(({xs}), axis={axis})"


concatenate = define("concatenate", _concat_type,
                     lambda *xs, axis: np.concatenate(xs, axis=axis), None, {"axis": 0},
                     _concat_normalize, linear="all", emit=_concatenate_emit, fresh=True,
                     aliases=False)


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
        if not all(isinstance(i, str) and not isinstance(n, int) or isinstance(
                i, (int, np.integer)) and not isinstance(i, bool) for i in spec):
            raise TypeInferenceError(f"split: indices must be ints, got {spec!r}")
        # boundaries along a symbolic axis may be symbolic too (n, n + m: ir.dims)
        spec = tuple(check_shape("split", (i,))[0] if isinstance(i, str) else int(i)
                     for i in spec)
        symbolic = not isinstance(n, int) or any(isinstance(i, str) for i in spec)
        if symbolic and any(isinstance(i, int) and i < 0 for i in spec):
            raise TypeInferenceError(f"split: negative index in {spec} along the symbolic "
                                     f"axis {axis} of {t!r}")
        if not symbolic and (any(not 0 <= i <= n for i in spec) or list(spec) != sorted(spec)):
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
        shape[axis] = dims.sub(hi, lo)
        parts.append(TensorType(shape, t.dtype))
    return TupleType(parts)


def _split_emit(e):
    shape = templates.static_shape(e.types[0])
    axis, idx = e.attrs["axis"], e.attrs["indices_or_sections"]
    if shape is None or templates.literal(idx) is None or templates.int_literal(axis) is None:
        return None
    bounds = [0, *idx, shape[axis]]
    head = ":, " * int(axis)
    parts = [f"{e.args[0]}[{head}{templates.slice_text(lo, hi)}]"
             for lo, hi in zip(bounds, bounds[1:])]
    return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


split = define("split", _split_type,
               lambda x, indices_or_sections, axis: tuple(np.split(x, indices_or_sections, axis)),
               1, {"indices_or_sections": REQUIRED, "axis": 0}, _split_normalize, linear=(0,),
               emit=_split_emit)


def _flip_normalize(types, attrs):
    (t,) = tensor_types("flip", types)
    axes = normalize_axes("flip", attrs["axis"], t.ndim)
    return {"axis": tuple(range(t.ndim)) if axes is None else axes}


def _flip_emit(e):
    ndim = e.types[0].ndim
    axes = e.attrs["axis"]
    if ndim == 0 or templates.literal(axes) is None:
        return None
    key = ["::-1" if i in axes else ":" for i in range(ndim)]
    while key and key[-1] == ":":
        key.pop()
    return f"{e.args[0]}[{', '.join(key)}]"


flip = define("flip", lambda types, attrs: types[0], lambda x, axis: np.flip(x, axis), 1,
              {"axis": None}, _flip_normalize, linear=(0,), emit=_flip_emit,
              namespace=("flip",))

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


def _creation_emit(fill):
    def template(e):
        dt = templates.dtype_text(e.attrs["dtype"])
        if dt is None:
            return None
        if e.args:
            shape = f"{e.args[0]}.shape"
        else:
            s = templates.static_shape(e.out)
            if s is None:
                return None
            shape = templates.literal(s)
        if fill == "full":
            value = templates.literal(e.attrs["fill_value"])
            if value is None or isinstance(e.attrs["fill_value"], tuple):
                return None
            return f"np.full({shape}, {value}, {dt})"
        return f"np.{fill}({shape}, {dt})"

    return template


def _creation(name, kernel, nargs, attrs, fill):
    # full / full_like: the namespace functions (chainrule/numpy/_creation.py) also take a
    # traced or array fill value, which these ops (a number attribute) do not
    return define(name, _creation_type, kernel, nargs, attrs,
                  _creation_normalize(name, like=nargs == 1), emit=_creation_emit(fill),
                  differentiable=False, fresh=True, aliases=False,
                  namespace=() if fill == "full" else (name,))


zeros = _creation("zeros", lambda shape, dtype: np.zeros(shape, dtype.numpy), 0,
                  {"shape": REQUIRED, "dtype": None}, "zeros")
ones = _creation("ones", lambda shape, dtype: np.ones(shape, dtype.numpy), 0,
                 {"shape": REQUIRED, "dtype": None}, "ones")
full = _creation("full", lambda shape, fill_value, dtype: np.full(shape, fill_value, dtype.numpy),
                 0, {"shape": REQUIRED, "fill_value": REQUIRED, "dtype": None}, "full")
zeros_like = _creation("zeros_like", lambda x, dtype: np.zeros(x.shape, dtype.numpy), 1,
                       {"dtype": None}, "zeros")
ones_like = _creation("ones_like", lambda x, dtype: np.ones(x.shape, dtype.numpy), 1,
                      {"dtype": None}, "ones")
full_like = _creation("full_like",
                      lambda x, fill_value, dtype: np.full(x.shape, fill_value, dtype.numpy), 1,
                      {"fill_value": REQUIRED, "dtype": None}, "full")


def _arange_normalize(types, attrs):
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:  # arange(n) counts from 0, as NumPy's
        start, stop = 0, start
    start, stop, step = (v.item() if isinstance(v, np.generic) else v
                         for v in (start, stop, step))
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


def _arange_emit(e):
    dt = templates.dtype_text(e.attrs["dtype"])
    bounds = [templates.literal(e.attrs[k]) for k in ("start", "stop", "step")]
    if dt is None or None in bounds:
        return None
    return f"np.arange({', '.join(bounds)}, dtype={dt})"


arange = define(
    "arange", _arange_type,
    lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype.numpy), 0,
    {"start": 0, "stop": None, "step": 1, "dtype": None}, _arange_normalize,
    emit=_arange_emit, differentiable=False, fresh=True, aliases=False, namespace=("arange",))
