"""Cases of the reductions, scans and statistics: any/all, isclose/allclose,
count_nonzero, the nan* reductions, average, ptp, median, quantile/percentile,
diff, gradient, var/std (ddof, keepdims), cumprod (see namespace_cases)."""

import warnings

import numpy as np
from namespace_cases import I, P, U, case

import chainrule.numpy as cnp


def _nan(x, frac=0.3):
    """x with about ``frac`` of its entries NaN (at least one left finite per call)."""
    x = np.array(x, dtype=float)
    mask = np.random.default_rng(x.size).uniform(size=x.shape) < frac
    x[mask] = np.nan
    return x


def _quiet(fn):
    """A NumPy reference that warns on all-NaN or empty slices, silenced."""
    def ref(*args, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*args, **kw)

    return ref


def _axes(name, np_fn=None, cnp_fn=None, shapes=(), axes=(None, 0, -1, (0, 2)), **kw):
    """One case per axis of ``name(x, axis=...)`` on 3-D, 0-d and other shapes."""
    f = cnp_fn or getattr(cnp, name)
    ref = np_fn or getattr(np, name)
    out = []
    for axis in axes:
        sets = [U(3, 4, 5), *shapes] if axis is not None and axis not in (0, -1) else \
            [U(3, 4, 5), U(4, 5), *shapes]
        if axis is None:
            sets.append(U())
        out.append(case(name, (lambda a: lambda x: f(x, axis=a))(axis),
                        (lambda a: lambda x: ref(x, axis=a))(axis), *sets,
                        note=f"axis={axis}", **kw))
    return out


_close_a = np.array([1.0, 2.0, np.inf, np.nan, -np.inf, 1e-9, 3.0])
_close_b = np.array([1.0 + 1e-7, 2.1, np.inf, np.nan, np.inf, 0.0, 3.0 + 1e-4])

CASES = [
    # -- any / all ----------------------------------------------------------------------
    *[case(n, (lambda f: lambda x: f(x > 0, axis=1))(getattr(cnp, n)),
           (lambda f: lambda x: f(x > 0, axis=1))(getattr(np, n)), U(3, 4), U(2, 3, 2),
           U(0, 3), grad=False) for n in ("any", "all")],
    *[case(n, (lambda f: lambda x: f(x > -0.5, axis=(0, -1), keepdims=True))(getattr(cnp, n)),
           (lambda f: lambda x: f(x > -0.5, axis=(0, -1), keepdims=True))(getattr(np, n)),
           U(3, 4), U(2, 3, 2), grad=False, note="tuple") for n in ("any", "all")],
    *[case(n, (lambda f: lambda x: f(x > 0))(getattr(cnp, n)),
           (lambda f: lambda x: f(x > 0))(getattr(np, n)), U(3, 4), U(), U(0), grad=False,
           note="all axes") for n in ("any", "all")],
    case("any", lambda x: (x > 0.9).any(axis=-1), lambda x: (x > 0.9).any(axis=-1), U(3, 4),
         grad=False, note="method"),
    case("all", lambda x: (x > -0.9).all(0), lambda x: (x > -0.9).all(0), U(3, 4),
         grad=False, note="method"),
    # -- isclose / allclose ----------------------------------------------------------------
    case("isclose", lambda a, b: cnp.isclose(a, b), np.isclose, (_close_a, _close_b),
         (U(3, 4), U(4)), (np.float64(1.0), np.float64(1.0 + 1e-9)), grad=False),
    case("isclose", lambda a, b: cnp.isclose(a, b, rtol=0.1, atol=0.0, equal_nan=True),
         lambda a, b: np.isclose(a, b, rtol=0.1, atol=0.0, equal_nan=True),
         (_close_a, _close_b), (I(3, 4), I(4)), grad=False, note="options"),
    case("allclose", lambda a, b: cnp.allclose(a, b), np.allclose, (_close_a[:3], _close_b[:3]),
         (U(3, 4), U(4)), (U(2), U(2) * 0 + 5), grad=False),
    case("allclose", lambda a, b: cnp.allclose(a, b, rtol=0.1, equal_nan=True),
         lambda a, b: np.allclose(a, b, rtol=0.1, equal_nan=True),
         (_close_a[:4], _close_b[:4]), (np.float64(1.0), np.float64(1.05)), grad=False,
         note="options"),
    # -- count_nonzero -------------------------------------------------------------------------
    *[case("count_nonzero", (lambda a: lambda x: cnp.count_nonzero(x, axis=a))(axis),
           (lambda a: lambda x: np.count_nonzero(x, axis=a))(axis), I(3, 4, 2), I(2, 3, 4) > 1,
           U(3, 0, 2), grad=False, note=f"axis={axis}") for axis in (None, 1, -1, (0, 2))],
    case("count_nonzero", lambda x: cnp.count_nonzero(x, axis=0, keepdims=True),
         lambda x: np.count_nonzero(x, axis=0, keepdims=True), I(3, 4), grad=False,
         note="keepdims"),
    case("count_nonzero", lambda x: cnp.count_nonzero(x), np.count_nonzero, I(), I(5),
         grad=False, note="0-d"),
    # -- NaN-ignoring reductions ------------------------------------------------------------
    *_axes("nansum", shapes=(_nan(U(3, 4, 5)),)),
    case("nansum", lambda x: cnp.nansum(x, axis=(0, -1), keepdims=True),
         lambda x: np.nansum(x, axis=(0, -1), keepdims=True), _nan(U(2, 3, 4)), U(0, 3, 2),
         I(2, 3, 4), note="nan"),
    *_axes("nanmean", shapes=(_nan(U(3, 4, 5), 0.2),), np_fn=_quiet(np.nanmean)),
    case("nanmean", lambda x: cnp.nanmean(x, axis=-1, keepdims=True),
         _quiet(lambda x: np.nanmean(x, axis=-1, keepdims=True)), _nan(U(3, 4)),
         np.array([[np.nan, np.nan], [1.0, np.nan]]), I(3, 2), note="nan"),
    *[case(n, (lambda f: lambda x: f(x, axis=0))(getattr(cnp, n)),
           _quiet((lambda f: lambda x: f(x, axis=0))(getattr(np, n))),
           _nan(U(4, 5), 0.25), np.array([[np.nan, 1.0], [np.nan, np.nan]]), I(3, 2))
      for n in ("nanmax", "nanmin")],
    *[case(n, (lambda f: lambda x: f(x, axis=(0, -1), keepdims=True))(getattr(cnp, n)),
           _quiet((lambda f: lambda x: f(x, axis=(0, -1), keepdims=True))(getattr(np, n))),
           _nan(U(3, 2, 4), 0.25), U(2, 3), note="tuple") for n in ("nanmax", "nanmin")],
    *[case(n, (lambda f: lambda x: f(x))(getattr(cnp, n)),
           _quiet((lambda f: lambda x: f(x))(getattr(np, n))), _nan(U(3, 4)), U(),
           np.array([np.nan, np.nan]), note="all axes") for n in ("nanmax", "nanmin")],
    # -- ptp / average ---------------------------------------------------------------------
    *_axes("ptp"),
    case("ptp", lambda x: cnp.ptp(x, axis=1, keepdims=True),
         lambda x: np.ptp(x, axis=1, keepdims=True), U(3, 4), I(3, 4), note="keepdims"),
    *_axes("average", axes=(None, 1, -1, (0, 2))),
    case("average", lambda x, w: cnp.average(x, axis=1, weights=w), lambda x, w: np.average(
        x, axis=1, weights=w), (U(3, 4), P(4)), (U(2, 4, 3), P(2, 4, 3)), (I(3, 4), I(4) + 1),
         note="weights"),
    case("average", lambda x, w: cnp.average(x, axis=(0, -1), weights=w, returned=True,
                                             keepdims=True),
         lambda x, w: np.average(x, axis=(0, -1), weights=w, returned=True, keepdims=True),
         (U(3, 2, 4), P(3, 4)), note="returned"),
    case("average", lambda x, w: cnp.average(x, weights=w, returned=True),
         lambda x, w: np.average(x, weights=w, returned=True), (U(3, 4), P(3, 4)), (U(), P()),
         note="all axes"),
    case("average", lambda x: cnp.average(x, axis=0, returned=True),
         lambda x: np.average(x, axis=0, returned=True), U(3, 4), note="unweighted returned"),
    # -- order statistics (distinct values: no ties where derivatives are checked) --------------
    *_axes("median", shapes=(U(3, 1, 6),)),
    case("median", lambda x: cnp.median(x, axis=(0, -1), keepdims=True),
         lambda x: np.median(x, axis=(0, -1), keepdims=True), U(3, 2, 4), U(2, 3, 3),
         note="keepdims"),
    case("median", lambda x: cnp.median(x, axis=-1), _quiet(lambda x: np.median(x, axis=-1)),
         U(5), U(6), np.array([[1.0, np.nan, 3.0], [2.0, 1.0, 0.5]]), I(3, 4), U(2, 0),
         grad_sets=2, note="nan, ints, empty"),
    case("median", lambda x: x[0] * cnp.median(x), lambda x: x[0] * np.median(x), U(4), U(7),
         grad_sets=2, note="product"),
    *[case("quantile", (lambda a: lambda x: cnp.quantile(x, 0.3, axis=a))(axis),
           (lambda a: lambda x: np.quantile(x, 0.3, axis=a))(axis), U(3, 4, 5),
           *([U()] if axis is None else []), note=f"axis={axis}")
      for axis in (None, 1, -1, (0, 2))],
    case("quantile", lambda x: cnp.quantile(x, np.array([0.0, 0.25, 0.5, 0.9, 1.0]), axis=0),
         lambda x: np.quantile(x, np.array([0.0, 0.25, 0.5, 0.9, 1.0]), axis=0), U(6, 3),
         U(1, 2), note="array q"),
    case("quantile", lambda x: cnp.quantile(x, [[0.1, 0.6], [0.35, 0.8]], axis=(0, 1),
                                            keepdims=True),
         lambda x: np.quantile(x, [[0.1, 0.6], [0.35, 0.8]], axis=(0, 1), keepdims=True),
         U(3, 4, 2), note="2-D q keepdims"),
    case("quantile", lambda x, q: cnp.quantile(x, q, axis=-1), lambda x, q: np.quantile(
        x, q, axis=-1), (U(3, 7), np.array([0.13, 0.61, 0.94])), (U(5), np.float64(0.42)),
         (I(3, 5), np.array([0.5])), grad_sets=2, note="traced q"),
    case("quantile", lambda x: cnp.quantile(x, 0.4), _quiet(lambda x: np.quantile(x, 0.4)),
         np.array([1.0, np.nan, 2.0]), np.arange(5, dtype=np.float32), grad=False,
         note="nan, float32", rtol=1e-6),
    case("percentile", lambda x: cnp.percentile(x, [10.0, 50.0, 95.0], axis=1),
         lambda x: np.percentile(x, [10.0, 50.0, 95.0], axis=1), U(3, 6), U(2, 3, 4)),
    case("percentile", lambda x, q: cnp.percentile(x, q, axis=(0, -1), keepdims=True),
         lambda x, q: np.percentile(x, q, axis=(0, -1), keepdims=True),
         (U(3, 2, 5), np.array([23.0, 77.0])), (U(4, 1, 2), np.float64(61.0)), grad_sets=2,
         note="traced q"),
    # -- differences ---------------------------------------------------------------------------
    case("diff", lambda x: cnp.diff(x), np.diff, U(5), U(3, 4), U(1), U(0), I(4)),
    case("diff", lambda x: cnp.diff(x, 2, axis=0), lambda x: np.diff(x, 2, axis=0), U(4, 3),
         U(5, 2, 2), note="n=2"),
    case("diff", lambda x: cnp.diff(x, 3, axis=-2, prepend=0.5, append=x[:2]),
         lambda x: np.diff(x, 3, axis=-2, prepend=0.5, append=x[:2]), U(3, 4),
         note="prepend append"),
    case("diff", lambda x, p: cnp.diff(x, axis=1, prepend=p), lambda x, p: np.diff(
        x, axis=1, prepend=p), (U(2, 3), U(2, 1)), note="traced prepend"),
    case("diff", lambda x: cnp.diff(x > 0), lambda x: np.diff(x > 0), U(6), grad=False,
         note="bool"),
    case("diff", lambda x: cnp.diff(x, 0), lambda x: np.diff(x, 0), U(3), note="n=0"),
    case("gradient", lambda x: cnp.gradient(x), np.gradient, U(5), U(2), U(3, 4)),
    case("gradient", lambda x: cnp.gradient(x, 0.5, axis=-1, edge_order=2),
         lambda x: np.gradient(x, 0.5, axis=-1, edge_order=2), U(3, 4), U(3), I(2, 5),
         note="edge_order=2"),
    case("gradient", lambda x: cnp.gradient(x, 2.0, np.array([0.0, 0.5, 2.0, 2.5]), axis=(0, 1)),
         lambda x: np.gradient(x, 2.0, np.array([0.0, 0.5, 2.0, 2.5]), axis=(0, 1)),
         U(3, 4), note="coordinates"),
    case("gradient", lambda x: cnp.gradient(x, np.array([0.0, 1.0, 1.5, 3.0, 3.2]),
                                            edge_order=2, axis=0),
         lambda x: np.gradient(x, np.array([0.0, 1.0, 1.5, 3.0, 3.2]), edge_order=2, axis=0),
         U(5, 2), note="coordinates edge_order=2"),
    case("gradient", lambda x, h: cnp.gradient(x, h), np.gradient,
         (U(5), np.array([0.1, 0.5, 1.2, 1.4, 2.0])), (U(4), np.float64(0.3)),
         grad_sets=2, note="traced spacing"),
    case("gradient", lambda x, h: cnp.gradient(x, h, h, edge_order=2, axis=(1, -1)),
         lambda x, h: np.gradient(x, h, h, edge_order=2, axis=(1, -1)),
         (U(2, 4, 4), np.array([0.0, 0.4, 1.1, 1.3])), note="traced coordinates"),
    # -- var / std: ddof, keepdims, axes (NumPy divides by max(n - ddof, 0)) -------------------
    *[case(n, (lambda f: lambda x: f(x, axis=(0, -1), ddof=1, keepdims=True))(getattr(cnp, n)),
           (lambda f: lambda x: f(x, axis=(0, -1), ddof=1, keepdims=True))(getattr(np, n)),
           U(3, 2, 4), I(2, 3), note="tuple keepdims") for n in ("var", "std")],
    *[case(n, (lambda f: lambda x: f(x, axis=-1, ddof=3))(getattr(cnp, n)),
           _quiet((lambda f: lambda x: f(x, axis=-1, ddof=3))(getattr(np, n))),
           U(2, 5), U(2, 3), U(2, 2), grad_sets=1, note="ddof >= n") for n in ("var", "std")],
    *[case(n, (lambda f: lambda x: f(x))(getattr(cnp, n)),
           _quiet((lambda f: lambda x: f(x))(getattr(np, n))), U(3, 4), U(0),
           grad_sets=1, note="all") for n in ("var", "std")],
    case("var", lambda x: cnp.var(x, axis=0, correction=1), lambda x: np.var(x, axis=0, ddof=1),
         U(4, 3), note="correction"),
    case("std", lambda x: x.std(1, keepdims=True), lambda x: np.std(x, 1, keepdims=True),
         U(4, 3), note="method"),
    case("var", lambda x: cnp.var(x, axis=1, dtype=np.float32),
         lambda x: np.var(x, axis=1, dtype=np.float32), U(3, 4), grad=False, rtol=1e-5,
         note="dtype"),
    # -- cumprod along every axis -----------------------------------------------------------------
    *[case("cumprod", (lambda a: lambda x: cnp.cumprod(x, axis=a))(axis),
           (lambda a: lambda x: np.cumprod(x, axis=a))(axis), U(2, 3, 4),
           note=f"axis={axis}") for axis in (1, -1, 2)],
    case("cumprod", lambda x: cnp.cumprod(x), np.cumprod, U(3, 2), U(), U(0), I(4),
         note="flat"),
    case("cumprod", lambda x: cnp.cumprod(x, axis=0), lambda x: np.cumprod(x, axis=0),
         np.array([2.0, 0.0, 3.0, 0.5]), note="zero"),
    # -- NumPy's keywords of the reductions: dtype, initial, where; the scans' dtype ----------
    case("sum", lambda x: cnp.sum(x, axis=0, dtype=np.float32),
         lambda x: np.sum(x, axis=0, dtype=np.float32), P(3, 4), grad=False, rtol=1e-5,
         note="dtype"),
    case("prod", lambda x: cnp.prod(x, dtype=int), lambda x: np.prod(x, dtype=int),
         I(2, 3, lo=1), ((2, 3, 4),), grad=False, note="dtype"),
    case("sum", lambda x: cnp.sum(x, axis=1, initial=0.5), lambda x: np.sum(x, axis=1,
         initial=0.5), U(3, 4), U(2, 0), note="initial"),
    case("prod", lambda x: cnp.prod(x, axis=0, initial=2.0, keepdims=True),
         lambda x: np.prod(x, axis=0, initial=2.0, keepdims=True), U(3, 2), note="initial"),
    *[case(n, (lambda f: lambda x: f(x, axis=-1, initial=0.2))(getattr(cnp, n)),
           (lambda f: lambda x: f(x, axis=-1, initial=0.2))(getattr(np, n)), U(3, 4), U(2, 0),
           note="initial") for n in ("max", "min", "amax", "amin")],
    case("sum", lambda x: cnp.sum(x, axis=0, where=x > 0), lambda x: np.sum(x, axis=0,
         where=x > 0), U(4, 3), U(0, 2), note="where"),
    case("prod", lambda x: cnp.prod(x, where=np.array([True, False, True])),
         lambda x: np.prod(x, where=np.array([True, False, True])), U(2, 3), note="where"),
    case("max", lambda x: cnp.max(x, axis=1, where=x < 0.5, initial=-1.0),
         lambda x: np.max(x, axis=1, where=x < 0.5, initial=-1.0), U(3, 4), note="where"),
    case("min", lambda x: cnp.min(x, where=x > -0.5, initial=1.0),
         lambda x: np.min(x, where=x > -0.5, initial=1.0), U(3, 4), note="where"),
    case("mean", lambda x: cnp.mean(x, axis=1, where=x > -0.9),
         lambda x: np.mean(x, axis=1, where=x > -0.9), U(3, 4), note="where"),
    case("mean", lambda x: cnp.mean(x, dtype=np.float32), lambda x: np.mean(x, dtype=np.float32),
         P(3, 4), grad=False, rtol=1e-5, note="dtype"),  # float32: summation order differs
    case("any", lambda x: cnp.any(x > 0, axis=0, where=x < 0.5),
         lambda x: np.any(x > 0, axis=0, where=x < 0.5), U(3, 4), grad=False, note="where"),
    case("all", lambda x: cnp.all(x > -0.5, where=x < 0.5),
         lambda x: np.all(x > -0.5, where=x < 0.5), U(3, 4), grad=False, note="where"),
    case("cumsum", lambda x: cnp.cumsum(x, axis=0, dtype=float),
         lambda x: np.cumsum(x, axis=0, dtype=float), I(3, 2), grad=False, note="dtype"),
    case("cumprod", lambda x: cnp.cumprod(x, dtype=np.float64),
         lambda x: np.cumprod(x, dtype=np.float64), U(2, 3), note="dtype"),
    case("full", lambda s: cnp.full((2, 3), s), lambda s: np.full((2, 3), s), U(), U(3),
         note="traced fill"),
    case("full_like", lambda s: cnp.full_like(np.ones((2, 3)), s),
         lambda s: np.full_like(np.ones((2, 3)), s), U(), U(3), note="traced fill"),
    case("linspace", lambda a, b: cnp.linspace(a, b, 5), lambda a, b: np.linspace(a, b, 5),
         (U(), U()), (U(3), U(2, 1)), note="traced endpoints"),
    case("linspace", lambda a, b: cnp.linspace(a, b, 4, endpoint=False, axis=-1),
         lambda a, b: np.linspace(a, b, 4, endpoint=False, axis=-1), (U(3), U(3)),
         note="endpoint, axis"),
]
