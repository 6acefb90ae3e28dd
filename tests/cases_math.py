"""Cases of the elementwise math of chainrule.numpy (ops/mathfuncs.py, numpy/_math.py):
hyperbolic and inverse trigonometric functions, other bases, remainders, rounding,
classification (see namespace_cases)."""

import numpy as np
from namespace_cases import I, P, U, case

import chainrule.numpy as cnp


def _away(*shape):
    """Values of either sign away from 0 (|x| in [0.5, 1.5)): off the kinks at 0."""
    return np.where(U(*shape) < 0, -1.0, 1.0) * P(*shape)


def _unary(name, np_fn=None, domain=U, grad=True, extra=(), **kw):
    f = getattr(cnp, name)
    ref = np_fn or getattr(np, name)
    return case(name, lambda x: f(x), ref, domain(3, 4), domain(), domain(0), *extra,
                grad=grad, **kw)


def _binary(name, np_fn=None, first=U, second=U, grad=True, extra=(), **kw):
    f = getattr(cnp, name)
    ref = np_fn or getattr(np, name)
    return case(name, lambda x, y: f(x, y), ref, (first(3, 4), second(4)), (first(), second()),
                (first(2, 1), second(1, 3)), (first(0, 3), second(3)), *extra, grad=grad,
                **kw)


def _in(lo, hi):
    return lambda *shape: U(*shape, lo=lo, hi=hi)


_SPECIAL_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0])
_INTS = (I(3, 4, lo=-5, hi=6),)

CASES = [
    # hyperbolic and inverse trigonometric
    _unary("sinh", extra=_INTS), _unary("cosh"),
    _unary("arcsin", domain=_in(-0.9, 0.9)), _unary("arccos", domain=_in(-0.9, 0.9)),
    _unary("arcsinh", domain=_in(-3, 3),
           extra=(np.array([1e200, -1e200, 0.0]),)),
    _unary("arccosh", domain=_in(1.2, 3)), _unary("arctanh", domain=_in(-0.9, 0.9)),
    _binary("arctan2", first=_away, second=_away),
    _binary("hypot", first=_away, second=_away,
            extra=((np.array([1e200, 0.0, 3.0]), np.array([1e200, 0.0, -4.0])),)),
    # other bases
    _unary("log2", domain=P), _unary("log10", domain=P), _unary("exp2", extra=_INTS),
    _unary("cbrt", domain=_away, extra=(np.array([0.0, -8.0, 27.0]),)),
    _binary("logaddexp",
            extra=((np.array([1e308, -1e308, 1000.0, -np.inf, np.inf]),
                    np.array([1e308, 5.0, -1000.0, -np.inf, 1.0])),)),
    _binary("logaddexp2",
            extra=((np.array([1e308, 1000.0, -np.inf]), np.array([1e308, 999.0, 2.0])),)),
    case("deg2rad", lambda x: cnp.deg2rad(x), np.deg2rad, U(3, 4, lo=-360, hi=360), U(), U(0),
         _INTS[0], U(3).astype(np.float32)),
    case("radians", lambda x: cnp.radians(x), np.radians, U(3, 4, lo=-360, hi=360), U()),
    case("rad2deg", lambda x: cnp.rad2deg(x), np.rad2deg, U(3, 4), U(), U(0), _INTS[0]),
    case("degrees", lambda x: cnp.degrees(x), np.degrees, U(3, 4), U()),
    case("sinc", lambda x: cnp.sinc(x), np.sinc, U(3, 4, lo=-2, hi=2),
         np.array([0.0, 1e-9, 0.5, -1.0, 2.5]), U(), U(0), _INTS[0], grad_sets=2),
    # signs, extrema, remainders
    _unary("fabs", domain=_away, extra=_INTS),
    _binary("copysign", first=_away, second=_away,
            extra=((np.array([1.0, -2.0, 0.0, 3.0]), np.array([-0.0, 0.0, -1.0, np.nan])),)),
    _binary("heaviside", first=_away,
            extra=((np.array([0.0, -1.0, 2.0, np.nan]), np.array(0.5)),)),
    _binary("fmax", extra=((np.array([np.nan, 1.0, np.nan]), np.array([2.0, np.nan, np.nan])),
                           (_INTS[0], I(4)))),
    _binary("fmin", extra=((np.array([np.nan, 1.0, np.nan]), np.array([2.0, np.nan, np.nan])),)),
    _binary("mod", first=_in(-5, 5), second=_away, extra=((_INTS[0], I(4, lo=1, hi=4)),)),
    _binary("remainder", first=_in(-5, 5), second=_away,
            extra=((np.array([-3.0, 3.0, -0.5]), np.array([2.0, -2.0, 0.25])),)),
    _binary("fmod", first=_in(-5, 5), second=_away,
            extra=((_INTS[0], I(4, lo=1, hi=4)), (np.array([-3.0, 3.0]), np.array(-2.0)))),
    case("mod", lambda x, y: x % y, np.remainder, (U(3, 4, lo=-5, hi=5), _away(4)),
         (U(3, lo=-5, hi=5), np.float64(0.7)), note="operator"),
    case("mod", lambda x: 7.5 % x, lambda x: 7.5 % x, _away(3, 4), note="rmod"),
    case("floor_divide", lambda x, y: cnp.floor_divide(x, y), np.floor_divide,
         (U(3, 4, lo=-5, hi=5), _away(4)), (U(), _away()), (U(0, 3), _away(3)),
         (_INTS[0], I(4, lo=1, hi=4)), grad=False),
    case("floor_divide", lambda x, y: (x // y, 3.0 // y, divmod(x, y)),
         lambda x, y: (x // y, 3.0 // y, divmod(x, y)), (U(3, 4, lo=-5, hi=5), _away(4)),
         grad=False, note="operator"),
    _unary("ceil", grad=False, extra=_INTS), _unary("trunc", grad=False, extra=_INTS),
    # classification (bool results)
    _unary("isnan", grad=False, extra=(_SPECIAL_VALUES,)),
    _unary("isinf", grad=False, extra=(_SPECIAL_VALUES,)),
    _unary("isfinite", grad=False, extra=(_SPECIAL_VALUES, _INTS[0])),
    _unary("signbit", grad=False, extra=(_SPECIAL_VALUES,)),
    case("nan_to_num", lambda x: cnp.nan_to_num(x), np.nan_to_num, U(3, 4), _SPECIAL_VALUES,
         _SPECIAL_VALUES.astype(np.float32), U(0), _INTS[0]),
    case("nan_to_num", lambda x: cnp.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0) * x,
         lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0) * x, U(3, 4),
         _SPECIAL_VALUES, note="replacements"),
]

# -- representative op calls: (arrays, attributes) for the type-rule-vs-kernel check of
# every op of ops/mathfuncs.py (tests/ops/test_math_numerics.py; the shape of
# tests/ops/test_ops.py's REPRESENTATIVE, which can take them with REPRESENTATIVE.update)
_NUMERIC = [np.float32, np.float64, np.int32, np.int64]
_PAIRS = [(np.float32, np.float32), (np.float64, np.int64), (np.float32, np.int32),
          (np.int32, np.int64), (np.float32, np.float64), (np.int64, np.int64)]


def _arr(shape, dtype, lo=0.5, hi=2.0):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.random.default_rng(1).integers(1, 4, shape).astype(dtype)
    return np.random.default_rng(1).uniform(lo, hi, shape).astype(dtype)


def _unary_inputs(attrs=None):
    return [([_arr(s, d)], dict(attrs or {})) for s in [(), (3,), (2, 3)] for d in _NUMERIC]


def _binary_inputs():
    return [([_arr(a, d1), _arr(b, d2)], {}) for a, b in [((2, 1), (3,)), ((), (2, 3))]
            for d1, d2 in _PAIRS]


OP_INPUTS = {
    **{n: _unary_inputs() for n in [
        "sinh", "cosh", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "log2", "log10",
        "exp2", "cbrt", "fabs", "ceil", "trunc", "isnan", "isinf", "isfinite", "signbit"]},
    **{n: _binary_inputs() for n in [
        "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "heaviside", "fmax", "fmin",
        "remainder", "fmod", "floor_divide"]},
    "sinc": _unary_inputs() + _unary_inputs({"n": 1}) + _unary_inputs({"n": 3}),
}
