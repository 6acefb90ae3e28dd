"""Cases of chainrule.scipy.special against SciPy (see namespace_cases). Operands
without a derivative (incomplete gamma/beta shape parameters, Bessel orders, the
order n of polygamma) are held constant in the differentiated cases and varied in
value-only ones."""

import numpy as np
import scipy.special as sp
from namespace_cases import I, P, U, case

import chainrule.scipy.special as csp


def _in(lo, hi):
    return lambda *shape: U(*shape, lo=lo, hi=hi)


def _unary(name, domain=U, ref=None, extra=(), **kw):
    f = getattr(csp, name)
    return case(f"scipy.special.{name}", lambda x: f(x), ref or getattr(sp, name),
                domain(3, 4), domain(), domain(0), *extra, **kw)


def _binary(name, first=P, second=P, extra=(), **kw):
    f = getattr(csp, name)
    return case(f"scipy.special.{name}", lambda x, y: f(x, y), getattr(sp, name),
                (first(3, 4), second(4)), (first(), second()), (first(0, 3), second(3)),
                *extra, **kw)


# Shape parameters and orders held constant are arrays the functions read from outside
# (captured: constants to cr.vjp and to the tape, which is what lets their operands refuse
# a derivative)
NO_TAPE = dict()
_A_VALUES = (0.7, 1.0, 2.5, 4.0)
_ORDER_VALUES = (0.0, 1.0, 2.5, 3.0)
_A = np.array(_A_VALUES)
_ORDERS = np.array(_ORDER_VALUES)
_INT_ORDERS = np.array([0, 1, 2, 3])
_INTS = I(3, 4, lo=1, hi=5)

CASES = [
    # error functions and the normal distribution
    _unary("erf", _in(-2, 2), extra=(_INTS,)), _unary("erfc", _in(-2, 2)),
    _unary("erfinv", _in(-0.9, 0.9), extra=(np.array([-1.0, 1.0, 0.0, 1 - 1e-12]),)),
    _unary("erfcx", _in(-2, 5), extra=(np.array([-30.0, 1e5, 0.0]),)),
    _unary("ndtr", _in(-3, 3)),
    _unary("log_ndtr", _in(-5, 5), extra=(np.array([-40.0, -10.0, 0.0, 10.0, 40.0]),)),
    case("scipy.special.log_ndtr", lambda x: csp.log_ndtr(x), sp.log_ndtr,
         np.array([-40.0, -12.0, 8.0]), note="tails"),
    # gamma family
    _unary("gammaln", P, extra=(U(4, lo=-2.9, hi=-2.1), _INTS)),
    case("scipy.special.gammaln", lambda x: csp.gammaln(x), sp.gammaln,
         U(4, lo=-2.9, hi=-2.1), note="negative"),
    _unary("digamma", P, ref=sp.psi, extra=(_INTS,)),
    _unary("psi", P, extra=(_INTS,)),
    _unary("gamma", P, extra=(U(4, lo=-2.9, hi=-2.1),)),
    case("scipy.special.polygamma", lambda x: csp.polygamma(_INT_ORDERS, x),
         lambda x: sp.polygamma(_INT_ORDERS, x), P(3, 4), P(), P(0, 4)),
    case("scipy.special.polygamma", lambda n, x: csp.polygamma(n, x), sp.polygamma,
         (_INT_ORDERS, P(3, 4)), (np.array(2), P()), grad=False, note="n"),
    _binary("beta"), _binary("betaln"),
    case("scipy.special.multigammaln", lambda a: csp.multigammaln(a, 3),
         lambda a: sp.multigammaln(a, 3), U(3, 4, lo=1.5, hi=3), U(lo=1.5, hi=3)),
    case("scipy.special.multigammaln", lambda a: csp.multigammaln(a, 1),
         lambda a: sp.multigammaln(a, 1), P(4), note="d=1"),
    case("scipy.special.gammainc", lambda x: csp.gammainc(np.array(_A_VALUES), x),
         lambda x: sp.gammainc(_A, x), P(3, 4), P(), P(0, 4), **NO_TAPE),
    case("scipy.special.gammainc", lambda a, x: csp.gammainc(a, x), sp.gammainc,
         (P(3, 4), P(4)), (P(), np.array(0.0)), grad=False, note="a"),
    case("scipy.special.gammaincc", lambda x: csp.gammaincc(np.array(_A_VALUES), x),
         lambda x: sp.gammaincc(_A, x), P(3, 4), P(), P(0, 4), **NO_TAPE),
    case("scipy.special.gammaincc", lambda a, x: csp.gammaincc(a, x), sp.gammaincc,
         (P(3, 4), P(4)), grad=False, note="a"),
    case("scipy.special.betainc",
         lambda x: csp.betainc(np.array(_A_VALUES), np.array(_A_VALUES[::-1]), x),
         lambda x: sp.betainc(_A, _A[::-1], x), U(3, 4, lo=0.1, hi=0.9), U(lo=0.1, hi=0.9),
         U(0, 4, lo=0.1, hi=0.9), **NO_TAPE),
    case("scipy.special.betainc", lambda a, b, x: csp.betainc(a, b, x), sp.betainc,
         (P(3, 4), P(4), U(3, 1, lo=0.1, hi=0.9)), grad=False, note="a, b"),
    case("scipy.special.stdtr", lambda t: csp.stdtr(np.array(_A_VALUES) + 1, t),
         lambda t: sp.stdtr(_A + 1, t), U(3, 4, lo=-3, hi=3), U(), U(0, 4), **NO_TAPE),
    case("scipy.special.stdtr", lambda df, t: csp.stdtr(df, t), sp.stdtr,
         (P(3, 4) * 3, U(4)), grad=False, note="df"),
    # Bessel functions
    _unary("i0", _in(-3, 3), extra=(_INTS,)), _unary("i1", _in(-3, 3)),
    case("scipy.special.i1", lambda x: csp.i1(x), sp.i1, np.array([0.0, 1e-8, -2.0]),
         note="at 0"),
    _unary("i0e", _in(-3, 3)), _unary("i1e", _in(-3, 3)),
    case("scipy.special.iv", lambda x: csp.iv(np.array(_ORDER_VALUES), x),
         lambda x: sp.iv(_ORDERS, x), U(3, 4, lo=0.2, hi=3), U(lo=0.2, hi=3),
         U(0, 4, lo=0.2, hi=3), **NO_TAPE),
    case("scipy.special.iv", lambda x: csp.iv(_INT_ORDERS, x), lambda x: sp.iv(_INT_ORDERS, x),
         U(3, 4, lo=-3, hi=3), note="integer orders"),
    case("scipy.special.iv", lambda v, x: csp.iv(v, x), sp.iv, (_ORDERS, P(3, 4)), grad=False,
         note="v"),
    case("scipy.special.ive", lambda x: csp.ive(np.array(_ORDER_VALUES), x),
         lambda x: sp.ive(_ORDERS, x), U(3, 4, lo=0.2, hi=3), U(lo=0.2, hi=3),
         U(0, 4, lo=0.2, hi=3), **NO_TAPE),
    case("scipy.special.ive", lambda x: csp.ive(_INT_ORDERS, x),
         lambda x: sp.ive(_INT_ORDERS, x), U(3, 4, lo=-3, hi=3), note="integer orders"),
    case("scipy.special.ive", lambda v, x: csp.ive(v, x), sp.ive, (_ORDERS, P(3, 4)),
         grad=False, note="v"),
    # x log y
    _binary("xlogy", first=U, second=P,
            extra=((np.array([0.0, 0.0, 1.0, 0.0, 2.0]),
                    np.array([0.0, 3.0, 0.0, np.nan, -1.0])),)),
    _binary("xlog1py", first=U, second=_in(-0.5, 1),
            extra=((np.array([0.0, 0.0, 1.0]), np.array([-1.0, 3.0, -1.0])),)),
    # logistic
    _unary("expit", _in(-5, 5), extra=(np.array([-800.0, 800.0, 0.0]),)),
    _unary("logit", _in(0.05, 0.95), extra=(np.array([0.0, 1.0, 0.5, 0.3, 0.65, 1e-300]),)),
    # logsumexp, SciPy's signature
    case("scipy.special.logsumexp", lambda a: csp.logsumexp(a), sp.logsumexp, U(3, 4), U()),
    case("scipy.special.logsumexp", lambda a: csp.logsumexp(a, axis=1, keepdims=True),
         lambda a: sp.logsumexp(a, axis=1, keepdims=True), U(3, 4), note="keepdims"),
    case("scipy.special.logsumexp", lambda a, b: csp.logsumexp(a, axis=1, b=b),
         lambda a, b: sp.logsumexp(a, axis=1, b=b), (U(3, 4), P(4)), (U(2, 1), P(1, 3)),
         (np.array([[1000.0, 1000.0]]), np.array([0.5, 0.0])), note="b"),
    case("scipy.special.logsumexp",
         lambda a, b: csp.logsumexp(a, axis=(0, 1), b=b, return_sign=True),
         lambda a, b: sp.logsumexp(a, axis=(0, 1), b=b, return_sign=True),
         (U(3, 4), U(4) + 0.3), (U(2, 3), -P(2, 3)), note="b, return_sign"),
    case("scipy.special.logsumexp", lambda a: csp.logsumexp(a, axis=0, return_sign=True),
         lambda a: sp.logsumexp(a, axis=0, return_sign=True), U(3, 4), note="return_sign"),
]

# -- representative op calls for the type-rule-vs-kernel check of every op of
# ops/special.py (see cases_math.OP_INPUTS)
_NUMERIC = [np.float32, np.float64, np.int32, np.int64]


def _arr(shape, dtype, lo=0.2, hi=0.8):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.random.default_rng(2).integers(1, 4, shape).astype(dtype)
    return np.random.default_rng(2).uniform(lo, hi, shape).astype(dtype)


def _inputs(nargs):
    shapes = {1: [[()], [(3,)], [(2, 3)]], 2: [[(2, 1), (3,)], [(), (2, 3)]],
              3: [[(2, 1), (3,), ()], [(3,), (2, 3), (1, 3)]]}[nargs]
    return [([_arr(s, d if i == nargs - 1 else e) for i, s in enumerate(ss)], {})
            for ss in shapes for d in _NUMERIC for e in (np.float32, np.int64)]


OP_INPUTS = {
    **{n: _inputs(1) for n in [
        "erf", "erfc", "erfinv", "erfcx", "ndtr", "log_ndtr", "gammaln", "digamma",
        "gamma_function", "bessel_i0", "bessel_i1", "bessel_i0e", "bessel_i1e"]},
    **{n: _inputs(2) for n in [
        "polygamma", "beta_function", "betaln", "gammainc", "gammaincc", "stdtr", "bessel_iv",
        "bessel_ive", "xlogy", "xlog1py"]},
    "betainc": _inputs(3),
    "mvn_solve": [([np.array([[2.0, 0.5], [0.5, 1.0]], d), _arr((4, 2), e)], {})
                  for d in (np.float32, np.float64) for e in _NUMERIC],
    "mvn_logdet": [([np.array([[2.0, 0.5], [0.5, 1.0]], d)], {})
                   for d in (np.float32, np.float64, np.int64)],
}
