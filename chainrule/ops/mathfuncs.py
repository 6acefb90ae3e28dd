"""More elementwise math: hyperbolic and inverse trigonometric functions, exponents
and logarithms in other bases, rounding, remainders, classification (isnan, ...).

Each is a NumPy ufunc (``sinc`` excepted) declared like the ops of
``elementwise.py``: integer operands of the float functions give float64 (the
kernel casts them; NumPy would give small ints small floats), and the generated
code calls the ufunc itself, so its results are bit for bit the kernel's.

>>> import numpy as np
>>> float(logaddexp(np.array(1000.0), np.array(1000.0)))  # no overflow
1000.6931471805599
>>> remainder(np.array([-3.0, 3.0]), np.array(2.0))        # the sign of the divisor
array([1., 1.])
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.types import TensorType
from . import templates
from .common import NoLowering, ScalarForm, define, tensor_types
from .elementwise import _unary_type, binary, unary

# -- hyperbolic and inverse trigonometric ----------------------------------------------
sinh = unary("sinh", "float", array_api_name="sinh")
cosh = unary("cosh", "float", array_api_name="cosh")
arcsin = unary("arcsin", "float", array_api_name="asin")
arccos = unary("arccos", "float", array_api_name="acos")
arcsinh = unary("arcsinh", "float", array_api_name="asinh")
arccosh = unary("arccosh", "float", array_api_name="acosh")
arctanh = unary("arctanh", "float", array_api_name="atanh")
arctan2 = binary("arctan2", float_result=True, array_api_name="atan2")
hypot = binary("hypot", float_result=True, commutative=True, array_api_name="hypot")

# -- exponents and logarithms in other bases --------------------------------------------
log2 = unary("log2", "float", array_api_name="log2")
log10 = unary("log10", "float", array_api_name="log10")
exp2 = unary("exp2", "float")
cbrt = unary("cbrt", "float")
logaddexp = binary("logaddexp", float_result=True, commutative=True, array_api_name="logaddexp")
logaddexp2 = binary("logaddexp2", float_result=True, commutative=True)

# -- signs, extrema, remainders -----------------------------------------------------------
# the scalar forms of remainders are for floats: on integers NumPy's loops differ (a zero
# divisor gives 0, not an error)
fabs = unary("fabs", "float")
copysign = binary("copysign", float_result=True, array_api_name="copysign")
heaviside = binary("heaviside", float_result=True,  # a numba helper (numba/source.py)
                   scalar="heaviside({0}, {1}, {zero}, {one})")
fmax = binary("fmax")
fmin = binary("fmin")
remainder = binary("remainder", "number", "%", namespace=("mod", "remainder"),
                   array_api_name="remainder",
                   scalar=ScalarForm("np.remainder({0}, {1})", floats_only=True))
fmod = binary("fmod", "number", scalar=ScalarForm("np.fmod({0}, {1})", floats_only=True))

# -- piecewise constant: no derivative ----------------------------------------------------
floor_divide = binary("floor_divide", "number", "//", differentiable=False,
                      array_api_name="floor_divide",
                      scalar=ScalarForm("np.floor_divide({0}, {1})", floats_only=True))
# of an integer, itself
ceil = unary("ceil", "number", differentiable=False, array_api_name="ceil",
             scalar=ScalarForm("np.ceil({0})", ints="{0}"))
trunc = unary("trunc", "number", differentiable=False, array_api_name="trunc",
              scalar=ScalarForm("np.trunc({0})", ints="{0}"))


def _classify_type(name):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        return TensorType(t.shape, "bool")

    return infer


def _classify(name):
    """A predicate ufunc: a bool array of the operand's shape (never written into a
    dead operand: the dtypes differ)."""
    return define(name, _classify_type(name), getattr(np, name), 1,
                  emit=templates.ufunc_unary(name), namespace=(name,), differentiable=False,
                  elementwise=True, fresh=True, aliases=False, operands_in_result_dtype=(),
                  array_api_name=name, scalar=f"np.{name}({{0}})")


isnan = _classify("isnan")
isinf = _classify("isinf")
isfinite = _classify("isfinite")
signbit = _classify("signbit")


# -- sinc and its derivatives ---------------------------------------------------------------
def _sinc_series(y, n: int, terms: int = 14):
    """d^n/dy^n sin(y)/y from its Maclaurin series sum_m (-1)^m y^2m / (2m+1)!:
    sum over 2m >= n of (-1)^m (2m)! / ((2m-n)! (2m+1)!) y^(2m-n); for |y| <= 1,
    14 terms past the first are exact to rounding."""
    first = (n + 1) // 2
    out = np.zeros_like(y)
    for m in reversed(range(first, first + terms)):  # smallest terms first
        coef = (-1) ** m * math.factorial(2 * m) / (math.factorial(2 * m - n)
                                                     * math.factorial(2 * m + 1))
        out += coef * y ** (2 * m - n)
    return out


def _sinc_closed(y, n: int):
    """d^n/dy^n sin(y) * y^-1 by Leibniz's rule: sum_j C(n, j) sin^(j)(y)
    (-1)^(n-j) (n-j)! y^-(n-j+1), with sin^(j) = sin, cos, -sin, -cos by j mod 4."""
    s, c = np.sin(y), np.cos(y)
    derivs = (s, c, -s, -c)
    out = np.zeros_like(y)
    for j in range(n + 1):
        k = n - j
        out += (math.comb(n, j) * (-1) ** k * math.factorial(k)) * derivs[j % 4] / y ** (k + 1)
    return out


def _sinc(x, n):
    """np.sinc(x) for n = 0; its n-th derivative d^n/dx^n sin(pi x)/(pi x) =
    pi^n f^(n)(pi x) otherwise, from the Maclaurin series where |pi x| <= 1 (so at
    and near 0 every order is exact: 0, -pi^2/3, 0, pi^4/5, ...) and the closed
    form elsewhere."""
    if x.dtype.kind not in "f":
        x = x.astype(np.float64)
    if n == 0:
        return np.sinc(x)
    y = np.pi * x.astype(np.float64)
    small = np.abs(y) <= 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(small, _sinc_series(np.where(small, y, 0.0), n),
                       _sinc_closed(np.where(small, 1.0, y), n))
    return (out * np.pi ** n).astype(x.dtype, copy=False)


def _sinc_normalize(types, attrs):
    n = attrs["n"]
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"sinc: the derivative order n must be an int >= 0, got {n!r}")
    return {"n": int(n)}


_NO_XP_SINC = "the array API has no sinc (Dask runs NumPy's kernel chunk by chunk)"


def _sinc_emit(e):
    if e.attrs["n"] != 0 or not e.any_float():
        return None
    return f"np.sinc({e.args[0]})"


sinc = define("sinc", _unary_type("sinc", "float"), _sinc, 1, {"n": 0}, _sinc_normalize,
              emit=_sinc_emit, elementwise=True, fresh=True, aliases=False,
              scalar=ScalarForm("np.sinc({0})", when={"n": 0},
                                reason="the derivatives of sinc (n > 0) are series"),
              kernels={"array_api": NoLowering(_NO_XP_SINC)},
              doc="sin(pi x) / (pi x), 1 at 0; with n > 0 its n-th derivative (what its "
                  "rules apply)")

__all__ = [
    "sinh", "cosh", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "arctan2", "hypot",
    "log2", "log10", "exp2", "cbrt", "logaddexp", "logaddexp2", "fabs", "copysign",
    "heaviside", "fmax", "fmin", "remainder", "fmod", "floor_divide", "ceil", "trunc", "isnan",
    "isinf", "isfinite", "signbit", "sinc",
]
