"""Elementwise operators: arithmetic, transcendental, comparison, selection, casts.

Binary ops broadcast like NumPy and promote dtypes with ``np.result_type``.
Each declaration carries its facts: the NumPy ufunc the generated code
calls, whether it is linear, commutative, differentiable, and its names in
``chainrule.numpy``.

>>> import numpy as np
>>> add(np.ones(3, np.float32), np.ones((2, 1), np.float32)).shape
(2, 3)
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import DType, TensorType
from . import templates
from .common import ScalarForm, broadcast_shapes, define, fmt, promote, tensor_types


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


_REAL_OF = {"c64": "f32", "c128": "f64"}


def real_dtype(dtype) -> DType:
    """The real dtype of the same precision (c64 -> f32); real dtypes unchanged."""
    return DType(_REAL_OF.get(str(dtype), dtype))


def _unary_type(name, kind="same"):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        if kind == "magnitude":  # |z| of a complex z is real
            if t.dtype.is_bool:
                raise TypeInferenceError(f"{name}: not defined on a bool operand ({t!r})")
            return TensorType(t.shape, real_dtype(t.dtype))
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
        for x in xs:  # a loop, not any(<generator>): this runs on every eager sin/tanh
            if x.dtype.kind in "fc":
                return fn(*xs)
        return fn(*[x.astype(np.float64) for x in xs])

    # the kernel when an operand is a float: what a caller that knows the operands'
    # dtypes in advance (the tape, per recorded signature) calls without this wrapper
    kernel.on_floats = fn
    return kernel


_UFUNC_FACTS = dict(elementwise=True, fresh=True, aliases=False, inplace=True)


def binary(name: str, result: str | None = None, symbol: str | None = None,
           ufunc: str | None = None, float_result: bool = False, namespace=None, **facts):
    """Declare a binary NumPy ufunc ``np.<ufunc>`` as an op (``a <symbol> b`` in code).

    On one element it is ``a <symbol> b``, or the ufunc itself (numba compiles NumPy's
    ufuncs on scalars) unless ``scalar=`` says otherwise; a comparison (``result="bool"``)
    computes in its operands' common dtype, not its bool result's."""
    ufunc = ufunc or name
    fn = getattr(np, ufunc)
    kernel = _float_kernel(fn) if float_result else fn
    facts.setdefault("scalar", f"{{0}} {symbol} {{1}}" if symbol else f"np.{ufunc}({{0}}, {{1}})")
    if result == "bool":
        facts.setdefault("operands_in_result_dtype", ())
    return define(name, _binary_type(name, "float" if float_result else result), kernel, 2,
                  emit=templates.ufunc_binary(ufunc, symbol, facts.get("commutative", False),
                                              casts_ints=float_result),
                  namespace=(name,) if namespace is None else namespace,
                  **_UFUNC_FACTS, **facts)


def unary(name: str, kind: str = "same", ufunc: str | None = None, prefix: str | None = None,
          namespace=None, **facts):
    """Declare a unary NumPy ufunc as an op; ``kind="float"`` gives integer operands a
    float64 result (the kernel casts them). On one element it is ``<prefix>x`` or the
    ufunc itself unless ``scalar=`` says otherwise; |z| (``kind="magnitude"``) computes
    in its operand's dtype (complex for a complex z), not its real result's."""
    ufunc = ufunc or name
    fn = getattr(np, ufunc)
    casts = kind == "float"
    facts.setdefault("scalar", f"{prefix}{{0}}" if prefix else f"np.{ufunc}({{0}})")
    if kind == "magnitude":
        facts.setdefault("operands_in_result_dtype", ())
    return define(name, _unary_type(name, kind), _float_kernel(fn) if casts else fn, 1,
                  emit=templates.ufunc_unary(ufunc, casts_ints=casts, prefix=prefix),
                  namespace=(name,) if namespace is None else namespace,
                  **_UFUNC_FACTS, **facts)


# -- arithmetic ---------------------------------------------------------------------------
add = binary("add", "number", "+", linear="all", commutative=True, array_api_name="add")
subtract = binary("subtract", "number", "-", linear="all", array_api_name="subtract")
multiply = binary("multiply", "number", "*", linear="one", commutative=True,
                  array_api_name="multiply")
divide = binary("divide", symbol="/", ufunc="divide", float_result=True, linear=(0,),
                namespace=("divide", "true_divide"), array_api_name="divide")
# integer powers are NumPy's (a negative exponent raises), not the loop's
power = binary("power", "number", array_api_name="pow",
               scalar=ScalarForm("{0} ** {1}", floats_only=True))
maximum = binary("maximum", array_api_name="maximum")
minimum = binary("minimum", array_api_name="minimum")

# -- comparisons and logic ------------------------------------------------------------------
_NONDIFF = dict(differentiable=False)
equal = binary("equal", "bool", "==", commutative=True, array_api_name="equal", **_NONDIFF)
not_equal = binary("not_equal", "bool", "!=", commutative=True, array_api_name="not_equal",
                   **_NONDIFF)
less = binary("less", "bool", "<", array_api_name="less", **_NONDIFF)
less_equal = binary("less_equal", "bool", "<=", array_api_name="less_equal", **_NONDIFF)
greater = binary("greater", "bool", ">", array_api_name="greater", **_NONDIFF)
greater_equal = binary("greater_equal", "bool", ">=", array_api_name="greater_equal",
                       **_NONDIFF)


def _logical_type(name):
    def infer(types, attrs):
        types = tensor_types(name, types)
        for t in types:
            if not t.dtype.is_bool:
                raise TypeInferenceError(f"{name}: needs bool operands, got {fmt(types)}")
        return TensorType(broadcast_shapes(name, types), "bool")

    return infer


def _logical(name, nargs, scalar, commutative=False):
    fn = getattr(np, name)
    emit = (templates.ufunc_binary(name, commutative=commutative) if nargs == 2
            else templates.ufunc_unary(name))
    return define(name, _logical_type(name), fn, nargs, emit=emit, namespace=(name,),
                  commutative=commutative, differentiable=False, array_api_name=name,
                  scalar=scalar, **_UFUNC_FACTS)


logical_and = _logical("logical_and", 2, "(bool({0}) & bool({1}))", commutative=True)
logical_or = _logical("logical_or", 2, "(bool({0}) | bool({1}))", commutative=True)
logical_xor = _logical("logical_xor", 2, "(bool({0}) != bool({1}))", commutative=True)
logical_not = _logical("logical_not", 1, "(not {0})")

# -- unary --------------------------------------------------------------------------------
negative = unary("negative", "number", prefix="-", linear="all", array_api_name="negative")
abs = unary("abs", "magnitude", ufunc="absolute", namespace=("abs", "absolute"),  # noqa: A001
            array_api_name="abs", scalar="np.abs({0})")
sign = unary("sign", "number", differentiable=False, array_api_name="sign",
             scalar=ScalarForm("np.sign({0})", floats_only=True))
exp = unary("exp", "float", array_api_name="exp")
log = unary("log", "float", array_api_name="log")
log1p = unary("log1p", "float", array_api_name="log1p")
expm1 = unary("expm1", "float", array_api_name="expm1")
sin = unary("sin", "float", array_api_name="sin")
cos = unary("cos", "float", array_api_name="cos")
tan = unary("tan", "float", array_api_name="tan")
tanh = unary("tanh", "float", array_api_name="tanh")
arctan = unary("arctan", "float", array_api_name="atan")
sqrt = unary("sqrt", "float", array_api_name="sqrt")
square = unary("square", "number", array_api_name="square", scalar="{0} * {0}")
reciprocal = unary("reciprocal", "float", scalar="{one} / {0}")
# of an integer, itself (NumPy's loop would give a float)
floor = unary("floor", "number", differentiable=False, array_api_name="floor",
              scalar=ScalarForm("np.floor({0})", ints="{0}"))


def _round_emit(e):
    return f"np.round({e.args[0]})"


round = define("round", _unary_type("round", "number"), np.round,  # noqa: A001
               emit=_round_emit, differentiable=False, namespace=("round", "around"),
               elementwise=True, fresh=True, aliases=False, array_api_name="round",
               # decimals=0 rounds halves to even, as rint does
               scalar=ScalarForm("np.rint({0})", ints="{0}"))


def _sigmoid(x):
    # stable for large |x|: exp of a non-positive number only
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


def _relu_emit(e):
    (x,) = e.args
    if e.reuse:
        return f"np.maximum({x}, 0, out={x})"
    return f"np.maximum({x}, 0)"


# ``sigmoid(x, one)`` and ``where(c, a, b)`` in scalar forms are the numba helpers of
# backend/numba/source.py (HELPERS): a branch numba compiles once per kernel file
sigmoid = define("sigmoid", _unary_type("sigmoid", "float"), _float_kernel(_sigmoid),
                 namespace=("sigmoid",), elementwise=True, fresh=True, aliases=False,
                 scalar="sigmoid({0}, {one})")
relu = define("relu", _unary_type("relu", "number"), _relu, emit=_relu_emit,
              namespace=("relu",), elementwise=True, fresh=True, aliases=False, inplace=True,
              scalar="np.maximum({0}, {zero})")


# -- selection and casts -----------------------------------------------------------------
def _where_type(types, attrs):
    c, x, y = tensor_types("where", types)
    if not c.dtype.is_bool:
        raise TypeInferenceError(
            f"where: the condition must be bool, got {c!r} (compare it, e.g. x > 0)"
        )
    return TensorType(broadcast_shapes("where", [c, x, y]), promote("where", [x, y]))


# cnp.where is the adapter of chainrule/numpy/_shapes.py (NumPy's full semantics)
where = define("where", _where_type, np.where, 3, emit=templates.call("where"),
               linear=(1, 2), elementwise=True, fresh=True, aliases=False,
               operands_in_result_dtype=(1, 2), array_api_name="where",
               scalar="where({0}, {1}, {2})")


def _astype_normalize(types, attrs):
    return {"dtype": DType(attrs["dtype"])}


def _astype_type(types, attrs):
    (t,) = tensor_types("astype", types)
    return TensorType(t.shape, attrs["dtype"])


def _astype_emit(e):
    dt = templates.dtype_text(e.attrs["dtype"])
    return None if dt is None else f"{e.args[0]}.astype({dt})"


astype = define("astype", _astype_type, lambda x, dtype: x.astype(dtype.numpy), 1,
                {"dtype": REQUIRED}, _astype_normalize, emit=_astype_emit, linear=(0,),
                namespace=("astype",), methods=("astype",), elementwise=True, fresh=True,
                aliases=False, scalar="{0}")  # the operand converted to the result dtype


def _identity_type(types, attrs):
    (t,) = tensor_types("stop_gradient", types)
    return t


stop_gradient = define("stop_gradient", _identity_type, lambda x: x, emit=templates.identity,
                       differentiable=False, namespace=("stop_gradient",))
