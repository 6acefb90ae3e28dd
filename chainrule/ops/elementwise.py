"""Elementwise operators: arithmetic, transcendental, comparison, selection, casts.

Binary ops broadcast like NumPy and promote dtypes with ``np.result_type``.

>>> import numpy as np
>>> add(np.ones(3, np.float32), np.ones((2, 1), np.float32)).shape
(2, 3)
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from .common import (
    REQUIRED,
    DType,
    TensorType,
    broadcast_shapes,
    define,
    fmt,
    promote,
    tensor_types,
)


def _binary_type(name, result_dtype=None):
    def infer(types, attrs):
        types = tensor_types(name, types)
        shape = broadcast_shapes(name, types)
        dtype = promote(name, types)
        if result_dtype == "bool":
            dtype = DType("bool")
        elif result_dtype == "float" and not dtype.is_float:
            dtype = DType("f64")
        elif result_dtype == "number" and dtype.is_bool:
            raise TypeInferenceError(f"{name}: not defined on bool operands ({fmt(types)})")
        return TensorType(shape, dtype)

    return infer


def _unary_type(name, kind="same"):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        if kind == "float" and not t.dtype.is_float:
            return TensorType(t.shape, "f64")
        if kind == "number" and t.dtype.is_bool:
            raise TypeInferenceError(f"{name}: not defined on a bool operand ({t!r})")
        if kind == "bool":
            if not t.dtype.is_bool:
                raise TypeInferenceError(f"{name}: needs a bool operand, got {t!r}")
        return t

    return infer


def _float_kernel(fn):
    """NumPy gives small ints small floats (exp(int8) is f16); the type rule says f64.
    Operands are cast only when none is a float: f32 / i8 stays f32, as promoted."""

    def kernel(*xs):
        if any(x.dtype.kind in "fc" for x in xs):
            return fn(*xs)
        return fn(*[x.astype(np.float64) for x in xs])

    return kernel


add = define("add", _binary_type("add", "number"), np.add, 2)
subtract = define("subtract", _binary_type("subtract", "number"), np.subtract, 2)
multiply = define("multiply", _binary_type("multiply", "number"), np.multiply, 2)
divide = define("divide", _binary_type("divide", "float"), _float_kernel(np.true_divide), 2)
power = define("power", _binary_type("power", "number"), np.power, 2)
maximum = define("maximum", _binary_type("maximum"), np.maximum, 2)
minimum = define("minimum", _binary_type("minimum"), np.minimum, 2)

equal = define("equal", _binary_type("equal", "bool"), np.equal, 2)
not_equal = define("not_equal", _binary_type("not_equal", "bool"), np.not_equal, 2)
less = define("less", _binary_type("less", "bool"), np.less, 2)
less_equal = define("less_equal", _binary_type("less_equal", "bool"), np.less_equal, 2)
greater = define("greater", _binary_type("greater", "bool"), np.greater, 2)
greater_equal = define("greater_equal", _binary_type("greater_equal", "bool"), np.greater_equal, 2)


def _logical_type(name):
    def infer(types, attrs):
        types = tensor_types(name, types)
        for t in types:
            if not t.dtype.is_bool:
                raise TypeInferenceError(f"{name}: needs bool operands, got {fmt(types)}")
        return TensorType(broadcast_shapes(name, types), "bool")

    return infer


logical_and = define("logical_and", _logical_type("logical_and"), np.logical_and, 2)
logical_or = define("logical_or", _logical_type("logical_or"), np.logical_or, 2)
logical_not = define("logical_not", _logical_type("logical_not"), np.logical_not, 1)

negative = define("negative", _unary_type("negative", "number"), np.negative)
abs = define("abs", _unary_type("abs", "number"), np.abs)  # noqa: A001
sign = define("sign", _unary_type("sign", "number"), np.sign)
exp = define("exp", _unary_type("exp", "float"), _float_kernel(np.exp))
log = define("log", _unary_type("log", "float"), _float_kernel(np.log))
log1p = define("log1p", _unary_type("log1p", "float"), _float_kernel(np.log1p))
expm1 = define("expm1", _unary_type("expm1", "float"), _float_kernel(np.expm1))
sin = define("sin", _unary_type("sin", "float"), _float_kernel(np.sin))
cos = define("cos", _unary_type("cos", "float"), _float_kernel(np.cos))
tan = define("tan", _unary_type("tan", "float"), _float_kernel(np.tan))
tanh = define("tanh", _unary_type("tanh", "float"), _float_kernel(np.tanh))
arctan = define("arctan", _unary_type("arctan", "float"), _float_kernel(np.arctan))
sqrt = define("sqrt", _unary_type("sqrt", "float"), _float_kernel(np.sqrt))
square = define("square", _unary_type("square", "number"), np.square)
reciprocal = define("reciprocal", _unary_type("reciprocal", "float"),
                    _float_kernel(np.reciprocal))
floor = define("floor", _unary_type("floor", "number"), np.floor)
round = define("round", _unary_type("round", "number"), np.round)  # noqa: A001


def _sigmoid(x):
    # stable for large |x|: exp of a non-positive number only
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


sigmoid = define("sigmoid", _unary_type("sigmoid", "float"), _float_kernel(_sigmoid))
relu = define("relu", _unary_type("relu", "number"), _relu)


def _where_type(types, attrs):
    c, x, y = tensor_types("where", types)
    if not c.dtype.is_bool:
        raise TypeInferenceError(
            f"where: the condition must be bool, got {c!r} (compare it, e.g. x > 0)"
        )
    return TensorType(broadcast_shapes("where", [c, x, y]), promote("where", [x, y]))


where = define("where", _where_type, np.where, 3)


def _astype_normalize(types, attrs):
    return {"dtype": DType(attrs["dtype"])}


def _astype_type(types, attrs):
    (t,) = tensor_types("astype", types)
    return TensorType(t.shape, attrs["dtype"])


astype = define("astype", _astype_type, lambda x, dtype: x.astype(dtype.numpy), 1,
                {"dtype": REQUIRED}, _astype_normalize)


def _identity_type(types, attrs):
    (t,) = tensor_types("stop_gradient", types)
    return t


stop_gradient = define("stop_gradient", _identity_type, lambda x: x)
