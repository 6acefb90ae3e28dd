"""Functional updates besides ``index_add``: ``x.at[key].set(v)``, ``.multiply(v)``,
``.min(v)`` and ``.max(v)`` (JAX's scatter family), with NumPy's indexing.

Each returns a new array: ``x`` with the positions ``key`` selects replaced by
``v``, multiplied by ``v``, or by the smaller / larger of the two. ``v``
broadcasts to the indexed shape and is cast to ``x``'s dtype, as in JAX.
Repeated index-array positions combine: ``set`` keeps the last write (NumPy's
order), ``multiply`` / ``min`` / ``max`` accumulate like ``np.multiply.at``.

>>> import numpy as np
>>> from chainrule.ir.indexing import ArrayIndex
>>> x = np.zeros(4)
>>> index_set(x, np.array([1.0, 2.0]), np.array([0, 0]), key=(ArrayIndex(0),))
array([2., 0., 0., 0.])
>>> index_max(np.ones(3), np.array(5.0), np.array([2, 0]), key=(ArrayIndex(0),))
array([5., 1., 5.])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir import printer as _printer
from ..ir.indexing import key_to_python
from ..ir.op import REQUIRED
from ..ir.types import TensorType
from . import templates
from .common import broadcast_shapes, define, tensor_types
from .indexing import _normalize_key, indexed_shape

__all__ = ["index_set", "index_multiply", "index_min", "index_max", "SCATTER_METHODS"]


def _normalize(name):
    def normalize(types, attrs):
        if len(types) < 2:
            raise TypeInferenceError(f"{name}: needs the base array and the value")
        base, _, *idx = tensor_types(name, types)
        return {"key": _normalize_key(name, base, attrs["key"], idx)}

    return normalize


def _type(name, method):
    def infer(types, attrs):
        base, value, *idx = types
        target = TensorType(indexed_shape(name, base, attrs["key"], idx), base.dtype)
        try:
            fits = broadcast_shapes(name, [target, value]) == target.shape
        except TypeInferenceError:
            fits = False
        if not fits:
            raise TypeInferenceError(
                f"{name}: x.at[...].{method}(v) with v of type {value!r}, which does not "
                f"broadcast to the indexed shape {target.shape} of {base!r}")
        if base.dtype.is_bool and method == "multiply":
            raise TypeInferenceError(f"{name}: not defined on a bool array ({base!r})")
        if not np.can_cast(value.dtype.numpy, base.dtype.numpy, "same_kind"):
            raise TypeInferenceError(
                f"{name}: x.at[...].{method}(v) would cast v ({value!r}) to {base.dtype}, "
                f"losing information; convert it with .astype() if that is what you mean")
        return base

    return infer


def _kernel(ufunc):
    def kernel(base, value, *arrays, key):
        out = np.array(base, copy=True)
        k = key_to_python(key, arrays)
        value = np.asarray(value).astype(out.dtype, copy=False)
        if ufunc is None:
            out[k] = value
        elif arrays:
            ufunc.at(out, k, value)  # repeated positions accumulate
        else:
            out[k] = ufunc(out[k], value)
        return out

    return kernel


def _emit(ufunc_name):
    def emit(e):
        base, value, *arrays = e.args
        key = templates.key_text(e.attrs["key"], arrays)
        if key is None:
            return None
        t = e.target
        lines = [f"{t} = {base}" if 0 in e.reuse else f"{t} = np.array({base}, copy=True)"]
        if e.types[1].dtype != e.types[0].dtype:
            value = f"np.asarray({value}).astype({t}.dtype)"
        if ufunc_name is None:
            lines.append(f"{t}[{key}] = {value}")
        elif arrays:
            lines.append(f"np.{ufunc_name}.at({t}, np.s_[{key}], {value})")
        else:
            lines.append(f"{t}[{key}] = np.{ufunc_name}({t}[{key}], {value})")
        return lines

    return emit


# x.at[key].<method>(v) -> the op
SCATTER_METHODS: dict[str, object] = {}


def _scatter(method: str, ufunc, linear, doc: str):
    name = f"index_{method}"
    op = define(name, _type(name, method), _kernel(ufunc), None, {"key": REQUIRED},
                _normalize(name), linear=linear,
                emit=_emit(None if ufunc is None else ufunc.__name__), fresh=True,
                aliases=False, inplace=True, doc=doc)
    SCATTER_METHODS[method] = op

    def print_call(call, args):
        key = _printer.format_index_key(call.attrs["key"], args[2:])
        return f"{args[0]}.at[{key}].{method}({args[1]})"

    _printer.SPECIAL_PRINT[name] = print_call
    return op


index_set = _scatter("set", None, (0, 1), "x with x[key] = v (the last write wins)")
index_multiply = _scatter("multiply", np.multiply, None, "x with x[key] *= v (accumulating)")
index_min = _scatter("min", np.minimum, None, "x with x[key] = minimum(x[key], v)")
index_max = _scatter("max", np.maximum, None, "x with x[key] = maximum(x[key], v)")
