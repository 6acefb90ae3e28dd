"""Rules of ``ops/special.py``: each op's VJP and JVP side by side. ``g`` is the
output's cotangent, ``z`` the output, ``t`` an operand's tangent.

Where a derivative is not available in closed form (the shape parameters of the
regularized incomplete gamma and beta functions, the degrees of freedom of
Student's t cdf, the order of a Bessel function) the rule returns
``NoDerivative`` for that operand: asking for it is an error, never a silent zero.
Integer-valued orders (``n`` of ``polygamma``) have no derivative either.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..ir.types import DType
from .common import partials_rules
from .registry import NoDerivative, jvp_rule, vjp_rule

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


_rules = partials_rules


def _clip(x, c: float):
    return ops.minimum(ops.maximum(x, -c), c)


def _in_float64(slope, x, *more):
    """slope(x, *more) computed in float64 when x is float32 or float16, and cast back: for
    formulas that cancel a few digits (as many as float32 has to spare)."""
    dtype = DType(x.dtype)
    if dtype not in ("f32", "f16"):
        return slope(x, *more)
    up = [ops.astype(v, "f64") if hasattr(v, "dtype") else v for v in (x, *more)]
    return ops.astype(slope(*up), dtype)


def _horner(w, coefficients):
    """sum_k coefficients[k] w^k."""
    out = coefficients[-1]
    for c in coefficients[-2::-1]:
        out = out * w + c
    return out


def _gaussian(x, scale: float):
    """exp(-scale x^2), with real x clipped at +-40 where it underflows anyway: x * x
    overflows for |x| > 1.3e154 (float64, 1.8e19 in float32) and its tangent times the 0
    it feeds is NaN in forward mode at order 2. Complex x (erf is entire: exp(-z^2) grows
    along the imaginary axis) is not clipped."""
    if np.dtype(x.dtype).kind == "c":
        return ops.exp(-scale * (x * x))
    xc = _clip(x, 40.0)
    return ops.exp(-scale * (xc * xc))


_rules(ops.erf, lambda z, x: (_2_SQRT_PI * _gaussian(x, 1.0),),
       "z = erf(x);  f'(x) = 2 / sqrt(pi) exp(-x^2)  (real x clipped at +-40, where it "
       "underflows: no overflow of x^2 in its derivatives);  holomorphic for complex x: "
       "dx = g f'(x), JAX's convention (no conjugate)")
_rules(ops.erfc, lambda z, x: (-_2_SQRT_PI * _gaussian(x, 1.0),),
       "z = erfc(x);  f'(x) = -2 / sqrt(pi) exp(-x^2)  (as erf)")
_rules(ops.erfinv, lambda z, x: (_SQRT_PI_2 * ops.exp(z * z),),
       "z = erfinv(x);  f'(x) = sqrt(pi) / 2 exp(z^2)  (+inf at x = +-1, where z is)")
_rules(ops.ndtr, lambda z, x: (_gaussian(x, 0.5) / _SQRT_2PI,),
       "z = Phi(x);  f'(x) = phi(x) = exp(-x^2 / 2) / sqrt(2 pi)  (as erf)")

# erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi) cancels for large x (erfcx(x) ~ 1 / (x sqrt(pi)):
# all digits are lost by x = 1e8); past _ERFCX_SERIES it is the asymptotic series
# (2 / sqrt(pi)) sum_{n>=1} (-1)^n (2n - 1)!! w^n, w = 1 / (2 x^2), 16 terms (< 1e-18 there)
_ERFCX_SERIES = 10.0
_ERFCX_COEFFICIENTS = [0.0] + [(-1) ** n * math.prod(range(1, 2 * n, 2)) * _2_SQRT_PI
                              for n in range(1, 17)]


def _erfcx_slope(x):
    big = x > _ERFCX_SERIES
    r = ops.reciprocal(ops.where(big, x, _ERFCX_SERIES))
    series = _horner(0.5 * (r * r), _ERFCX_COEFFICIENTS)
    xd = ops.where(big, _ERFCX_SERIES, x)
    return ops.where(big, series, 2 * xd * ops.erfcx(xd) - _2_SQRT_PI)


_rules(ops.erfcx, lambda z, x: (_in_float64(_erfcx_slope, x),),
       "z = exp(x^2) erfc(x);  f'(x) = 2 x z - 2 / sqrt(pi), which cancels for large x: for "
       "x > 10 the asymptotic series (2 / sqrt(pi)) sum_{n>=1} (-1)^n (2n-1)!! / (2x^2)^n "
       "(16 terms) instead; float32 in float64. At most 2 digits are lost just below 10 "
       "(and at order 2, where the branch below differentiates to 2z + 2x f'(x))")

# lambda(x) = phi(x) / Phi(x) = d/dx log Phi(x), by branch: x > 0 the quotient itself
# (Phi >= 1/2; x clipped at 40, where phi underflows, so no overflow at any order);
# -1e4 <= x <= 0 sqrt(2 / pi) / erfcx(-x / sqrt(2)) (Phi = erfcx(-x / sqrt 2) phi sqrt(pi/2),
# no exponential of large numbers); x < -1e4 the Mills-ratio series |x| / S(1 / x^2),
# S(w) = 1 - w + 3 w^2 - 15 w^3 (exact to rounding there, and its derivatives never
# overflow: erfcx(-x / sqrt 2)^2 does for |x| > 1e154)
_MILLS_SERIES = -1e4
_MILLS_COEFFICIENTS = [1.0, -1.0, 3.0, -15.0, 105.0]


def _log_ndtr_slope(z, x):
    pos = x > 0
    xp = ops.minimum(ops.where(pos, x, 1.0), 40.0)
    right = _gaussian(xp, 0.5) / _SQRT_2PI / ops.ndtr(xp)
    far = x < _MILLS_SERIES
    xf = ops.where(far, x, _MILLS_SERIES)
    r = ops.reciprocal(xf)
    tail = -xf / _horner(r * r, _MILLS_COEFFICIENTS)
    xm = ops.where(ops.logical_or(pos, far), -1.0, x)
    middle = _SQRT_2_PI / ops.erfcx(xm * -_SQRT_HALF)
    return (ops.where(pos, right, ops.where(far, tail, middle)),)


_rules(ops.log_ndtr, _log_ndtr_slope,
       "z = log Phi(x);  f'(x) = phi(x) / Phi(x): for x > 0 that quotient (x clipped at 40, "
       "where it underflows); for -1e4 <= x <= 0 sqrt(2 / pi) / erfcx(-x / sqrt(2)) (no "
       "exponential of a difference of large numbers); for x < -1e4 the asymptotic series "
       "|x| / (1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8). Right to rounding at every x and, "
       "through erfcx's rule, at order 2 (-lambda (x + lambda), ~ -1 far left)")

# -- gamma family --------------------------------------------------------------------
_rules(ops.gammaln, lambda z, x: (ops.digamma(x),),
       "z = log |Gamma(x)|;  f'(x) = digamma(x)")
_rules(ops.digamma, lambda z, x: (ops.polygamma(1, x),),
       "z = digamma(x);  f'(x) = polygamma(1, x)")
_rules(ops.gamma_function, lambda z, x: (z * ops.digamma(x),),
       "z = Gamma(x);  f'(x) = Gamma(x) digamma(x)")
_rules(ops.polygamma,
       lambda z, n, x: (NoDerivative("polygamma(n, x): n is an integer order"),
                        ops.polygamma(n + 1, x)),
       "z = polygamma(n, x);  f_x = polygamma(n + 1, x);  no derivative in the integer n")


# digamma(x + h) - digamma(x) for x >= 12 from the asymptotic expansion of digamma, term
# by term without cancellation: log1p(h / x) + h / (2 x (x + h))
#   - sum_k B_2k / (2k) x^-2k expm1(-2k log1p(h / x))     (relative error < 1e-16)
_SHIFT = 12
_BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6]


def _digamma_difference(a, b):
    """digamma(a) - digamma(a + b) without the cancellation of the two digammas when
    |b| << a (all digits are lost by a / b ~ 1e16): the recurrence digamma(x) =
    digamma(x + 1) - 1 / x shifts a by 12, giving a sum of same-signed terms
    -b / ((a + j)(a + b + j)), then the expansion above. For a > 0 and a + b > 0; the
    two digammas elsewhere (a negative non-integer)."""
    ok = ops.logical_and(a > 0, a + b > 0)
    a_ok, b_ok = ops.where(ok, a, 1.0), ops.where(ok, b, 1.0)
    total = 0
    for j in range(_SHIFT):
        total = total - (b_ok / (a_ok + b_ok + j)) / (a_ok + j)
    x = a_ok + _SHIFT
    lg = ops.log1p(b_ok / x)
    tail = lg + (b_ok / (x + b_ok)) / (2 * x)
    inv2 = ops.reciprocal(x * x)
    power = inv2
    for k, bern in enumerate(_BERNOULLI, start=1):
        tail = tail - (bern / (2 * k)) * power * ops.expm1(-2 * k * lg)
        power = power * inv2
    a_bad, b_bad = ops.where(ok, 1.0, a), ops.where(ok, 1.0, b)
    return ops.where(ok, total - tail, ops.digamma(a_bad) - ops.digamma(a_bad + b_bad))


def _beta_slopes(scale):
    def slopes(z, a, b):
        da, db = _digamma_difference(a, b), _digamma_difference(b, a)
        return (da, db) if scale is None else (scale(z) * da, scale(z) * db)

    return slopes


_rules(ops.betaln, _beta_slopes(None),
       "z = log |B(a, b)|;  f_a = digamma(a) - digamma(a + b);  "
       "f_b = digamma(b) - digamma(a + b)  (each difference computed without cancellation "
       "for a, a + b > 0: a sum of same-signed terms and an asymptotic expansion, right "
       "to rounding at a = 1e20, b = 3, where the two digammas agree to every digit)")
_rules(ops.beta_function, _beta_slopes(lambda z: z),
       "z = B(a, b);  f_a = z (digamma(a) - digamma(a + b));  "
       "f_b = z (digamma(b) - digamma(a + b))  (the differences as betaln's)")


def _gamma_density(a, x):
    """x^(a-1) e^-x / Gamma(a): exp(xlogy(a - 1, x) - x - gammaln(a)) (no overflow of
    x^(a-1) against e^-x), and at x = 0 the power form x^(a-1) exp(-x - gammaln(a)),
    whose derivative there is exact (-1 for a = 1, 1 for a = 2, 0 for a > 2, +inf for
    1 < a < 2, -inf for a < 1; log x's gives 0 * inf = nan). Each branch reads a safe x
    where the other is taken."""
    edge = x == 0
    xs = ops.where(edge, 1.0, x)
    inside = ops.exp(ops.xlogy(a - 1, xs) - xs - ops.gammaln(a))
    xe = ops.where(edge, x, 1.0)
    at_edge = ops.power(xe, a - 1) * ops.exp(-xe - ops.gammaln(a))
    return ops.where(edge, at_edge, inside)


_NO_DA_GAMMA = ("the derivative of the regularized incomplete gamma function with respect "
                "to its shape parameter a is not available")
_rules(ops.gammainc,
       lambda z, a, x: (NoDerivative(_NO_DA_GAMMA), _gamma_density(a, x)),
       "z = P(a, x);  f_x = x^(a-1) e^-x / Gamma(a);  f_a: not available (NoDerivative)")
_rules(ops.gammaincc,
       lambda z, a, x: (NoDerivative(_NO_DA_GAMMA), -_gamma_density(a, x)),
       "z = Q(a, x) = 1 - P(a, x);  f_x = -x^(a-1) e^-x / Gamma(a);  f_a: not available")

_NO_DAB_BETA = ("the derivative of the regularized incomplete beta function with respect to "
                "its shape parameters a and b is not available")


def _beta_density(a, b, x):
    """x^(a-1) (1 - x)^(b-1) / B(a, b), in logs inside (0, 1) and as powers at x = 0 and
    x = 1, where its derivative is then exact (as _gamma_density)."""
    edge = ops.logical_or(x == 0, x == 1)
    xs = ops.where(edge, 0.5, x)
    inside = ops.exp(ops.xlogy(a - 1, xs) + ops.xlog1py(b - 1, -xs) - ops.betaln(a, b))
    xe = ops.where(edge, x, 0.5)
    at_edge = ops.power(xe, a - 1) * ops.power(1 - xe, b - 1) * ops.exp(-ops.betaln(a, b))
    return ops.where(edge, at_edge, inside)


_rules(ops.betainc,
       lambda z, a, b, x: (NoDerivative(_NO_DAB_BETA), NoDerivative(_NO_DAB_BETA),
                           _beta_density(a, b, x)),
       "z = I_x(a, b);  f_x = x^(a-1) (1 - x)^(b-1) / B(a, b)  (as powers at x = 0, 1: "
       "exact derivatives there);  f_a, f_b: not available")


def _t_density(df, t):
    """Student's t density: Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi))
    (1 + t^2/df)^(-(df+1)/2), in logs, the gamma ratio as sqrt(pi) / B(df/2, 1/2) (SciPy's
    poch(df/2, 1/2)): gammaln((df+1)/2) - gammaln(df/2) cancels for large df (5e-7 off at
    df = 1e10, all digits lost by 1e16)."""
    half = (df + 1) * 0.5
    return ops.exp(-ops.betaln(df * 0.5, 0.5) - 0.5 * ops.log(df)
                   - half * ops.log1p(t * t / df))


_rules(ops.stdtr,
       lambda z, df, t: (NoDerivative("the derivative of Student's t cdf with respect to "
                                      "the degrees of freedom is not available"),
                         _t_density(df, t)),
       "z = stdtr(df, t);  f_t = the t density at t;  f_df: not available")

# -- Bessel functions ----------------------------------------------------------------
_NO_DV = "the derivative of a Bessel function with respect to its order v is not available"
_rules(ops.bessel_i0, lambda z, x: (ops.bessel_i1(x),), "z = I0(x);  f'(x) = I1(x)")
# near 0, where I1(x) / x is 0 / 0 (and subnormal x have no digits to spare), the
# Maclaurin series of the derivatives, to 1e-18 for |x| < 1e-2
_NEAR_ZERO = 1e-2
_I1_SLOPE = [0.5, 0.0, 3 / 16, 0.0, 5 / 384, 0.0, 7 / 18432, 0.0, 1 / 163840]
_I1E_SLOPE = [0.5, -1.0, 15 / 16, -7 / 12, 35 / 128, -33 / 320, 1001 / 30720, -143 / 16128]


def _i1_slope(z, x):
    small = ops.abs(x) < _NEAR_ZERO
    xs = ops.where(small, 1.0, x)
    far = (ops.bessel_i0(xs) + ops.bessel_iv(2, xs)) * 0.5
    return (ops.where(small, _horner(ops.where(small, x, 0.0), _I1_SLOPE), far),)


_rules(ops.bessel_i1, _i1_slope,
       "z = I1(x);  f'(x) = (I0(x) + I2(x)) / 2  (= I0 - I1 / x without its cancellation "
       "near 0), and for |x| < 0.01 its series 1/2 + 3x^2/16 + 5x^4/384 + ... (SciPy's "
       "iv(2, x) is NaN at subnormal x)")
_rules(ops.bessel_iv,
       lambda z, v, x: (NoDerivative(_NO_DV),
                        (ops.bessel_iv(v - 1, x) + ops.bessel_iv(v + 1, x)) * 0.5),
       "z = I_v(x);  f_x = (I_{v-1}(x) + I_{v+1}(x)) / 2;  f_v: not available")
def _hankel(nu: int, k: int) -> float:
    """a_k(nu) of ive(nu, x) ~ (2 pi x)^(-1/2) sum_k (-1)^k a_k(nu) x^-k  (x -> +inf)."""
    return math.prod(4 * nu * nu - (2 * j - 1) ** 2 for j in range(1, k + 1)) / (
        math.factorial(k) * 8.0 ** k)


# Far out, i0e' = i1e - i0e and i1e' = i0e - i1e - i1e / x are differences of nearly equal
# numbers (both ~ (2 pi x)^(-1/2); relative error ~ 2 x eps: 4e-12 at x = 1e4, all digits
# lost by 1e16). Past _FAR their asymptotic series, term by term, 14 terms (the first left
# out is < 1e-17 of the sum at x = 100):
#   i0e'(x) = sign(x) c sum_k (-1)^k (a_k(1) - a_k(0)) |x|^-k,  c = (2 pi |x|)^(-1/2)
#   i1e'(x) = c sum_k (-1)^k (a_k(0) - a_k(1) + a_{k-1}(1)) |x|^-k   (even in x)
_FAR = 100.0
_I0E_FAR = [(-1) ** k * (_hankel(1, k) - _hankel(0, k)) for k in range(15)]
_I1E_FAR = [(-1) ** k * (_hankel(0, k) - _hankel(1, k) + (_hankel(1, k - 1) if k else 0.0))
            for k in range(15)]


def _far_series(x, coefficients):
    """(|x| > _FAR, the series at max(|x|, _FAR))."""
    big = ops.abs(x) > _FAR
    r = ops.reciprocal(ops.where(big, ops.abs(x), _FAR))
    return big, ops.sqrt(r * (0.5 / math.pi)) * _horner(r, coefficients)


def _i0e_slope(z, x):
    big, series = _far_series(x, _I0E_FAR)
    return (ops.where(big, ops.sign(x) * series, ops.bessel_i1e(x) - ops.sign(x) * z),)


_rules(ops.bessel_i0e, _i0e_slope,
       "z = exp(-|x|) I0(x);  f'(x) = i1e(x) - sign(x) z  (at the kink x = 0: 0, sign(0) "
       "being 0 as for |x|); for |x| > 100 its asymptotic series (the difference cancels "
       "there: all digits lost by |x| = 1e16)")


def _i1e_slope(z, x):
    small = ops.abs(x) < _NEAR_ZERO
    big, series = _far_series(x, _I1E_FAR)
    xs = ops.where(ops.logical_or(small, big), 1.0, x)
    i1e = ops.bessel_i1e(xs)
    middle = ops.bessel_i0e(xs) - i1e * (ops.sign(xs) + ops.reciprocal(xs))
    near = _horner(ops.abs(ops.where(small, x, 0.0)), _I1E_SLOPE)
    return (ops.where(small, near, ops.where(big, series, middle)),)


_rules(ops.bessel_i1e, _i1e_slope,
       "z = exp(-|x|) I1(x);  f'(x) = i0e(x) - i1e(x) (sign(x) + 1 / x)  (JAX's form; "
       "(i0e + ive(2, x)) / 2 - sign(x) z is the same, but SciPy's ive(2, x) is NaN for "
       "x > 1e10); for |x| < 0.01 its series in |x| (1/2 - |x| + 15x^2/16 - ...; the "
       "kink at 0 makes the second derivative 0 there, sign(0)); for |x| > 100 its "
       "asymptotic series (as i0e's)")
_rules(ops.bessel_ive,
       lambda z, v, x: (NoDerivative(_NO_DV),
                        (ops.bessel_ive(v - 1, x) + ops.bessel_ive(v + 1, x)) * 0.5
                        - ops.sign(x) * z),
       "z = exp(-|x|) I_v(x);  f_x = (ive(v-1, x) + ive(v+1, x)) / 2 - sign(x) z;  "
       "f_v: not available")

# -- x log(y) ------------------------------------------------------------------------------
def _over(x, d):
    """x / d, and 0 where x = d = 0: there x log(y) is 0 for every y (x = 0), so its
    y-derivative is 0, not 0 / 0 (JAX's nan). That branch is x / tiny (tiny the smallest
    subnormal): 0, with x-derivative 1 / tiny = +inf, the limit of 1 / y, and no
    y-derivative (0, as along x = 0), so the second derivatives are not nan either."""
    both = ops.logical_and(x == 0, d == 0)
    dtype = DType(d.dtype)
    tiny = float(np.finfo(dtype.numpy).smallest_subnormal) if dtype.is_float else 1.0
    # x is read as 0 off that branch: x / tiny would overflow (and warn) there
    return ops.where(both, ops.where(both, x, 0) / tiny, x / ops.where(both, 1, d))


_rules(ops.xlogy, lambda z, x, y: (ops.log(y), _over(x, y)),
       "z = x log(y) (0 where x = 0);  f_x = log(y);  f_y = x / y, 0 at x = y = 0 (JAX: "
       "0 / 0 = nan; x log y is constant in y at x = 0);  f_x = log(y) also at x = 0, "
       "-inf at y = 0, as JAX")
_rules(ops.xlog1py, lambda z, x, y: (ops.log1p(y), _over(x, 1 + y)),
       "z = x log(1 + y) (0 where x = 0);  f_x = log(1 + y);  f_y = x / (1 + y), 0 at x = 0, "
       "y = -1 (as xlogy)")


# -- the multivariate normal's linear algebra --------------------------------------------
def _t(m):
    return ops.permute_dims(m, (1, 0))


@vjp_rule(ops.mvn_solve)
def mvn_solve_vjp(z, g, a, b):
    """z = b a^-T (each row z_i = a^-1 b_i);  db = g a^-1 = mvn_solve(a^T, g);
    da = -db^T z"""
    gb = ops.mvn_solve(_t(a), g)
    return -ops.matmul(_t(gb), z), gb


@jvp_rule(ops.mvn_solve)
def mvn_solve_jvp(z, a, b):
    """z = b a^-T;  dz = (db - z da^T) a^-T = mvn_solve(a, db - z da^T)"""
    return (lambda t: -ops.mvn_solve(a, ops.matmul(z, _t(t)))), (lambda t: ops.mvn_solve(a, t))


def _sym_inverse(a):
    """s^-1 for s = (a + a^T) / 2: mvn_solve(s, I) (symmetric, so s^-T = s^-1)"""
    s = (a + _t(a)) * 0.5
    return ops.mvn_solve(s, np.eye(a.shape[0], dtype=s.dtype))


@vjp_rule(ops.mvn_logdet)
def mvn_logdet_vjp(z, g, a):
    """z = log det s, s = (a + a^T) / 2;  da = g (s^-1 + s^-T) / 2 = g s^-1"""
    return (g * _sym_inverse(a),)


@jvp_rule(ops.mvn_logdet)
def mvn_logdet_jvp(z, a):
    """z = log det s, s = (a + a^T) / 2;  dz = tr(s^-1 ds) = sum(s^-1 * da)  (s^-1 being
    symmetric)"""
    inv = _sym_inverse(a)
    return (lambda t: ops.sum(inv * t),)
