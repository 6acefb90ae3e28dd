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
from .registry import NoDerivative, jvp_rule, vjp_rule

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


def _rules(op, slopes, doc: str):
    """Rules of z = f(operands) with partial derivatives slopes(z, *operands) (None
    for an identically zero one, a NoDerivative where there is none):
    d_i = g f_i;  dz = sum_i t_i f_i."""

    def vjp(z, g, *xs):
        return tuple(s if s is None or isinstance(s, NoDerivative) else g * s
                     for s in slopes(z, *xs))

    def jvp(z, *xs):
        return tuple(s if s is None or isinstance(s, NoDerivative) else
                     (lambda t, s=s: t * s) for s in slopes(z, *xs))

    vjp.__doc__ = jvp.__doc__ = doc
    vjp_rule(op)(vjp)
    jvp_rule(op)(jvp)


# -- error functions and the normal distribution --------------------------------------
_rules(ops.erf, lambda z, x: (_2_SQRT_PI * ops.exp(-(x * x)),),
       "z = erf(x);  f'(x) = 2 / sqrt(pi) exp(-x^2)")
_rules(ops.erfc, lambda z, x: (-_2_SQRT_PI * ops.exp(-(x * x)),),
       "z = erfc(x);  f'(x) = -2 / sqrt(pi) exp(-x^2)")
_rules(ops.erfinv, lambda z, x: (_SQRT_PI_2 * ops.exp(z * z),),
       "z = erfinv(x);  f'(x) = sqrt(pi) / 2 exp(z^2)  (+inf at x = +-1, where z is)")
_rules(ops.ndtr, lambda z, x: (ops.exp(-0.5 * (x * x)) / _SQRT_2PI,),
       "z = Phi(x);  f'(x) = phi(x) = exp(-x^2 / 2) / sqrt(2 pi)")
_rules(ops.erfcx, lambda z, x: (2 * x * z - _2_SQRT_PI,),
       "z = exp(x^2) erfc(x);  f'(x) = 2 x z - 2 / sqrt(pi)")
_rules(ops.log_ndtr, lambda z, x: (_SQRT_2_PI / ops.erfcx(x * -_SQRT_HALF),),
       "z = log Phi(x);  f'(x) = phi(x) / Phi(x) = sqrt(2 / pi) / erfcx(-x / sqrt(2))  (as "
       "Phi(x) = erfcx(-x / sqrt(2)) exp(-x^2 / 2) / 2: no exponential of a difference of "
       "large numbers, so right to rounding far in the left tail, ~ -x at x = -1e4; 0 "
       "where erfcx overflows, x > 37.7, where phi / Phi underflows too)")

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


def _beta_slopes(scale):
    def slopes(z, a, b):
        common = ops.digamma(a + b)
        da, db = ops.digamma(a) - common, ops.digamma(b) - common
        return (da, db) if scale is None else (scale(z) * da, scale(z) * db)

    return slopes


_rules(ops.betaln, _beta_slopes(None),
       "z = log |B(a, b)|;  f_a = digamma(a) - digamma(a + b);  "
       "f_b = digamma(b) - digamma(a + b)")
_rules(ops.beta_function, _beta_slopes(lambda z: z),
       "z = B(a, b);  f_a = z (digamma(a) - digamma(a + b));  "
       "f_b = z (digamma(b) - digamma(a + b))")


def _gamma_density(a, x):
    """x^(a-1) e^-x / Gamma(a), as exp(xlogy(a - 1, x) - x - gammaln(a)) (so 1 at
    x = 0 when a = 1)."""
    return ops.exp(ops.xlogy(a - 1, x) - x - ops.gammaln(a))


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
_rules(ops.betainc,
       lambda z, a, b, x: (NoDerivative(_NO_DAB_BETA), NoDerivative(_NO_DAB_BETA),
                           ops.exp(ops.xlogy(a - 1, x) + ops.xlog1py(b - 1, -x)
                                   - ops.betaln(a, b))),
       "z = I_x(a, b);  f_x = x^(a-1) (1 - x)^(b-1) / B(a, b);  f_a, f_b: not available")


def _t_density(df, t):
    """Student's t density: Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi))
    (1 + t^2/df)^(-(df+1)/2), computed in logs."""
    half = (df + 1) * 0.5
    return ops.exp(ops.gammaln(half) - ops.gammaln(df * 0.5) - 0.5 * ops.log(df * math.pi)
                   - half * ops.log1p(t * t / df))


_rules(ops.stdtr,
       lambda z, df, t: (NoDerivative("the derivative of Student's t cdf with respect to "
                                      "the degrees of freedom is not available"),
                         _t_density(df, t)),
       "z = stdtr(df, t);  f_t = the t density at t;  f_df: not available")

# -- Bessel functions ----------------------------------------------------------------
_NO_DV = "the derivative of a Bessel function with respect to its order v is not available"
_rules(ops.bessel_i0, lambda z, x: (ops.bessel_i1(x),), "z = I0(x);  f'(x) = I1(x)")
_rules(ops.bessel_i1, lambda z, x: ((ops.bessel_i0(x) + ops.bessel_iv(2, x)) * 0.5,),
       "z = I1(x);  f'(x) = (I0(x) + I2(x)) / 2  (= I0 - I1 / x, without its cancellation "
       "near 0: 1/2 at 0)")
_rules(ops.bessel_iv,
       lambda z, v, x: (NoDerivative(_NO_DV),
                        (ops.bessel_iv(v - 1, x) + ops.bessel_iv(v + 1, x)) * 0.5),
       "z = I_v(x);  f_x = (I_{v-1}(x) + I_{v+1}(x)) / 2;  f_v: not available")
_rules(ops.bessel_i0e, lambda z, x: (ops.bessel_i1e(x) - ops.sign(x) * z,),
       "z = exp(-|x|) I0(x);  f'(x) = i1e(x) - sign(x) z  (at the kink x = 0: 0, sign(0) "
       "being 0 as for |x|)")
_rules(ops.bessel_i1e,
       lambda z, x: ((ops.bessel_i0e(x) + ops.bessel_ive(2, x)) * 0.5 - ops.sign(x) * z,),
       "z = exp(-|x|) I1(x);  f'(x) = (i0e(x) + ive(2, x)) / 2 - sign(x) z")
_rules(ops.bessel_ive,
       lambda z, v, x: (NoDerivative(_NO_DV),
                        (ops.bessel_ive(v - 1, x) + ops.bessel_ive(v + 1, x)) * 0.5
                        - ops.sign(x) * z),
       "z = exp(-|x|) I_v(x);  f_x = (ive(v-1, x) + ive(v+1, x)) / 2 - sign(x) z;  "
       "f_v: not available")

# -- x log(y) ------------------------------------------------------------------------------
_rules(ops.xlogy, lambda z, x, y: (ops.log(y), x / y),
       "z = x log(y) (0 where x = 0);  f_x = log(y);  f_y = x / y  (as JAX: f_x = log(y) "
       "also at x = 0, -inf at y = 0; f_y is nan at x = y = 0)")
_rules(ops.xlog1py, lambda z, x, y: (ops.log1p(y), x / (1 + y)),
       "z = x log(1 + y) (0 where x = 0);  f_x = log(1 + y);  f_y = x / (1 + y)")


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
