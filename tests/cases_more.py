"""Cases of chainrule/numpy/_more.py (NumPy 2 aliases, nan reductions and scans,
cov/corrcoef, interp, polynomials, trapezoid, vander, matvec/vecmat, windows, ...)
against NumPy (see namespace_cases)."""

import warnings

import numpy as np
from namespace_cases import I, P, U, case

import chainrule.numpy as cnp


def _nan(x, frac=0.25):
    x = np.array(x, dtype=float)
    x.flat[:: max(int(1 / frac), 1)] = np.nan
    return x


def _quiet(f):
    def run(*a, **k):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return f(*a, **k)

    return run


def _same(name, *sets, np_name=None, **kw):
    """cnp.<name> against np.<np_name or name>, called the same way."""
    return case(name, getattr(cnp, name), getattr(np, np_name or name), *sets, **kw)


_XP = np.array([-1.0, -0.2, 0.3, 0.9, 1.5])
_FP = np.array([0.5, -1.0, 2.0, 0.25, 1.0])

CASES = [
    _same("acos", U(3, 4) * 0.9, U()), _same("asin", U(3, 4) * 0.9, U()),
    _same("atan", U(3, 4), U()), _same("acosh", P(3, 4) + 1.0), _same("asinh", U(3, 4)),
    _same("atanh", U(3, 4) * 0.9), _same("atan2", (U(3, 4), P(4)), (U(), P())),
    _same("pow", (P(3, 4), U(4)), (P(), U())),
    case("concat", lambda a, b: cnp.concat([a, b], axis=1),
         lambda a, b: np.concat([a, b], axis=1), (U(2, 3), U(2, 1)), (U(0, 2), U(0, 3))),
    case("cumulative_sum", lambda x: cnp.cumulative_sum(x, axis=1),
         lambda x: np.cumulative_sum(x, axis=1), U(3, 4), U(0, 2)),
    case("cumulative_sum", lambda x: cnp.cumulative_sum(x, include_initial=True),
         lambda x: np.cumulative_sum(x, include_initial=True), U(5), note="initial"),
    case("cumulative_prod", lambda x: cnp.cumulative_prod(x, axis=0, include_initial=True),
         lambda x: np.cumulative_prod(x, axis=0, include_initial=True), U(3, 4), U(4)),
    _same("positive", U(3, 4), U(), I(3)),
    _same("rint", U(3, 4) * 5, np.array([0.5, 1.5, -2.5, 2.4]), grad=False),
    _same("fix", U(3, 4) * 5, I(3, lo=-4), grad=False),
    _same("float_power", (P(3, 4), U(4)), (P(), U()), (I(3, lo=1), I(3))),
    _same("isneginf", np.array([1.0, -np.inf, np.inf, np.nan]), grad=False),
    _same("isposinf", np.array([1.0, -np.inf, np.inf, np.nan]), grad=False),
    _same("divmod", (U(3, 4) * 5, P(4)), (I(3, lo=-5, hi=5), I(3, lo=1)), grad=False),
    _same("modf", U(3, 4) * 5, U()),
    _same("i0", U(3, 4) * 3, U()),
    _same("nanprod", _nan(U(3, 4)), U(0, 3)),
    case("nanprod", lambda x: cnp.nanprod(x, axis=(0, 2), keepdims=True),
         lambda x: np.nanprod(x, axis=(0, 2), keepdims=True), _nan(U(2, 3, 4))),
    _same("nancumsum", _nan(U(7)), U(0)),
    case("nancumsum", lambda x: cnp.nancumsum(x, axis=1), lambda x: np.nancumsum(x, axis=1),
         _nan(U(3, 4)), note="axis"),
    _same("nancumprod", _nan(U(7))),
    case("nancumprod", lambda x: cnp.nancumprod(x, axis=0), lambda x: np.nancumprod(x, axis=0),
         _nan(U(3, 4)), note="axis"),
    _same("nanvar", _nan(U(3, 4)), U(5)),
    case("nanvar", lambda x: cnp.nanvar(x, axis=1, ddof=1, keepdims=True),
         lambda x: np.nanvar(x, axis=1, ddof=1, keepdims=True), _nan(U(3, 5), 0.2), note="ddof"),
    case("nanvar", lambda x: cnp.nanvar(x, axis=0), _quiet(lambda x: np.nanvar(x, axis=0)),
         np.array([[np.nan, 1.0], [np.nan, 2.0]]), grad=False, note="all-nan"),
    _same("nanstd", _nan(U(3, 4)), U(5)),
    case("nanstd", lambda x: cnp.nanstd(x, axis=(0, 1), correction=1),
         lambda x: np.nanstd(x, axis=(0, 1), correction=1), _nan(U(3, 4, 2)), note="axes"),
    _same("cov", U(3, 5), U(6)),
    case("cov", lambda x, y: cnp.cov(x, y, rowvar=False, bias=True),
         lambda x, y: np.cov(x, y, rowvar=False, bias=True), (U(5, 2), U(5, 3)), note="y"),
    case("cov", lambda x: cnp.cov(x, ddof=0), lambda x: np.cov(x, ddof=0), U(2, 4),
         note="ddof"),
    _same("corrcoef", U(3, 5), U(2, 7)),
    case("corrcoef", lambda x, y: cnp.corrcoef(x, y), lambda x, y: np.corrcoef(x, y),
         (U(6), U(6)), note="y"),
    case("interp", lambda x, fp: cnp.interp(x, _XP, fp), lambda x, fp: np.interp(x, _XP, fp),
         (U(3, 4) * 1.2, _FP), (U(), _FP), (np.array([-2.0, -1.0, 0.3, 1.5, 2.0]), _FP)),
    case("interp", lambda x, xp, fp: cnp.interp(x, xp, fp, left=-5.0, right=7.0),
         lambda x, xp, fp: np.interp(x, xp, fp, left=-5.0, right=7.0),
         (U(6) * 2, _XP, _FP), note="left-right"),
    _same("trapezoid", U(3, 4), U(6)),
    case("trapezoid", lambda y, x: cnp.trapezoid(y, x, axis=0),
         lambda y, x: np.trapezoid(y, x, axis=0), (U(4, 3), np.sort(U(4))), note="x"),
    case("trapezoid", lambda y: cnp.trapezoid(y, dx=0.3), lambda y: np.trapezoid(y, dx=0.3),
         U(5), U(1), note="dx"),
    _same("polyval", (U(4), U(3, 2)), (U(1), U()), (U(3), np.float64(0.7))),
    _same("polyadd", (U(4), U(2)), (U(2), U(5)), (U(3), U(3))),
    _same("polysub", (U(4), U(2)), (U(2), U(5))),
    _same("polymul", (U(4), U(2)), (U(1), U(3))),
    _same("polyder", U(5), U(1)),
    case("polyder", lambda p: cnp.polyder(p, 2), lambda p: np.polyder(p, 2), U(5), note="m"),
    _same("polyint", U(4), U(1)),
    case("polyint", lambda p, k: cnp.polyint(p, 2, k), lambda p, k: np.polyint(p, 2, k),
         (U(3), U(2)), note="k"),
    _same("vander", U(4), U(1), I(3)),
    case("vander", lambda x: cnp.vander(x, 3, increasing=True),
         lambda x: np.vander(x, 3, increasing=True), U(5), note="N"),
    _same("diagflat", U(2, 2), U(3)),
    case("diagflat", lambda v: cnp.diagflat(v, -1), lambda v: np.diagflat(v, -1), U(3),
         note="k"),
    _same("ediff1d", U(3, 4), U(2)),
    case("ediff1d", lambda x, b, e: cnp.ediff1d(x, to_end=e, to_begin=b),
         lambda x, b, e: np.ediff1d(x, to_end=e, to_begin=b), (U(5), U(2), U()), note="ends"),
    _same("matvec", (U(3, 4), U(4)), (U(2, 3, 4), U(3, 1, 4))),
    _same("vecmat", (U(3), U(3, 4)), (U(2, 3), U(3, 4))),
    _same("unstack", U(3, 4), U(2)),
    case("unstack", lambda x: cnp.unstack(x, axis=-1), lambda x: np.unstack(x, axis=-1),
         U(2, 3), note="axis"),
    _same("copy", U(3, 4), U()),
    case("empty_like", lambda x: cnp.empty_like(x) * 0, lambda x: np.zeros_like(x), U(3, 4),
         grad=False),
    case("empty", lambda: cnp.empty((2, 3)) * 0, lambda: np.zeros((2, 3)), (), grad=False),
    *[case(w, lambda w=w: getattr(cnp, w)(7), lambda w=w: getattr(np, w)(7), (), grad=False)
      for w in ("hamming", "hanning", "bartlett", "blackman")],
    case("kaiser", lambda: cnp.kaiser(7, 5.0), lambda: np.kaiser(7, 5.0), (), grad=False),
    *[case(f"{w}_indices_from", lambda x, w=w: getattr(cnp, f"{w}_indices_from")(x, 1),
           lambda x, w=w: getattr(np, f"{w}_indices_from")(x, 1), U(3, 4), grad=False)
      for w in ("tril", "triu")],
    _same("diag_indices_from", U(3, 3), U(2, 2, 2), grad=False),
    _same("nanmedian", _nan(U(3, 4)), _nan(U(7)), U(0, 3)),
    case("nanmedian", lambda x: cnp.nanmedian(x, axis=1, keepdims=True),
         _quiet(lambda x: np.nanmedian(x, axis=1, keepdims=True)), _nan(U(4, 6), 0.3),
         np.array([[np.nan, np.nan], [1.0, 2.0]]), note="axis"),
    *[case("nanquantile", lambda x, q=q: cnp.nanquantile(x, q, axis=0),
           _quiet(lambda x, q=q: np.nanquantile(x, q, axis=0)), _nan(U(5, 3)),
           note=f"q={q}") for q in (0.0, 0.3, 0.5, 0.8, 1.0)],
    case("nanpercentile", lambda x: cnp.nanpercentile(x, 35.0, axis=(0, 2), keepdims=True),
         lambda x: np.nanpercentile(x, 35.0, axis=(0, 2), keepdims=True), _nan(U(3, 2, 4))),
    case("isin", lambda x: cnp.isin(x, [0.0, 2.0, 3.0]), lambda x: np.isin(x, [0.0, 2.0, 3.0]),
         np.array([[0.0, 1.0], [2.0, 5.0]]), grad=False),
    case("isin", lambda x: cnp.isin(x, np.array([[1, 4]]), invert=True),
         lambda x: np.isin(x, np.array([[1, 4]]), invert=True), I(3, 4), grad=False,
         note="invert"),
    case("array_equal", lambda a, b: cnp.array_equal(a, b), np.array_equal,
         (np.ones(3), np.ones(3)), (np.ones(3), np.arange(3.0)), (np.ones(3), np.ones(2)),
         grad=False),
    case("array_equal", lambda a: cnp.array_equal(a, a, equal_nan=True),
         lambda a: np.array_equal(a, a, equal_nan=True), _nan(U(4)), grad=False, note="nan"),
    case("array_equiv", lambda a, b: cnp.array_equiv(a, b), np.array_equiv,
         (np.ones((2, 3)), np.ones(3)), (np.ones(3), np.ones(2)), (U(2), U(2)), grad=False),
    case("block", lambda a, b, c: cnp.block([[a, b], [c]]),
         lambda a, b, c: np.block([[a, b], [c]]), (U(2, 2), U(2, 1), U(1, 3)),
         (U(2), U(3), U(5))),
    case("block", lambda a, b: cnp.block([a, b]), lambda a, b: np.block([a, b]),
         (U(3), U()), note="1-d"),
    case("resize", lambda x: cnp.resize(x, (4, 3)), lambda x: np.resize(x, (4, 3)), U(5),
         U(2, 2), U(0)),
    case("resize", lambda x: cnp.resize(x, 3), lambda x: np.resize(x, 3), U(2, 4), note="int"),
    case("compress", lambda x: cnp.compress([True, False, True], x, axis=1),
         lambda x: np.compress([True, False, True], x, axis=1), U(2, 3), U(0, 3)),
    case("compress", lambda x: cnp.compress([0, 1], x), lambda x: np.compress([0, 1], x),
         U(2, 3), note="flat"),
    case("unwrap", cnp.unwrap, np.unwrap, np.cumsum(U(12) * 4), U(3, 1),
         np.array([0.0, np.pi, 0.0, -np.pi, 0.0])),
    case("unwrap", lambda p: cnp.unwrap(p, 1.0, axis=0, period=3.0),
         lambda p: np.unwrap(p, 1.0, axis=0, period=3.0), np.cumsum(U(6, 3) * 3, axis=0),
         note="period"),
    case("choose", lambda a, b: cnp.choose(np.array([[0, 1, 1], [1, 0, 0]]), [a, b]),
         lambda a, b: np.choose(np.array([[0, 1, 1], [1, 0, 0]]), [a, b]), (U(3), U(2, 3)),
         (U(2, 3), U())),
    case("choose", lambda i, a: cnp.choose(i, [a, a * 2, -a], mode="wrap"),
         lambda i, a: np.choose(i, [a, a * 2, -a], mode="wrap"), (I(2, 3, lo=-4, hi=6), U(3)),
         grad=False, note="wrap"),
    case("choose", lambda i, a: cnp.choose(i, [a, a * 2], mode="clip"),
         lambda i, a: np.choose(i, [a, a * 2], mode="clip"), (I(4, lo=-2, hi=4), U(4)),
         grad=False, note="clip"),
    case("sort_complex", cnp.sort_complex, np.sort_complex, U(3, 4), I(5), grad=False),
    case("put_along_axis", lambda: _put(), lambda: np.array([[5.0, 0.0], [0.0, 5.0]]), (),
         grad=False),
]


def _put():
    a = np.zeros((2, 2))
    cnp.put_along_axis(a, np.array([[0], [1]]), 5.0, axis=1)
    return a
