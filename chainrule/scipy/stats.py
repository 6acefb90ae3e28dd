"""SciPy's ``scipy.stats``, differentiable: ops that declare ``"scipy.stats.<name>"`` in
their ``namespace`` appear here, next to the functions written below.

The distributions are objects with SciPy's methods and signatures
(``norm.logpdf(x, loc=0, scale=1)``), written as composites of ops, so they
differentiate in x, loc and scale and, where the math is closed-form, in the
shape parameters (through ``gammaln``/``betaln`` and their digamma rules).
The cdfs of ``t``, ``gamma``, ``beta`` and ``poisson`` are regularized incomplete
functions whose derivative in the shape parameter is not available: asking for it
raises ``NoRuleError`` (the op's rule returns ``NoDerivative``), never a silent zero.

Values outside a distribution's support are -inf (log densities) and 0 or 1
(cdfs), as SciPy gives; each formula reads a safe input there so derivatives stay
finite. Unlike SciPy, arguments are not validated (a negative scale gives NaN by
the formulas, with NumPy's warnings, and ``dirichlet`` does not check that x lies
in the simplex).

>>> import numpy as np
>>> round(float(norm.logpdf(np.array(1.0), loc=0.5, scale=2.0)), 6)
-1.643336
"""

from __future__ import annotations

import math as _math
import sys as _sys
import types as _types

import numpy as _np

from .. import ops as _ops
from ..errors import ChainruleError as _ChainruleError
from ..ir.op import is_dispatched as _is_dispatched
from ..numpy._assemble import assemble as _assemble
from ..numpy._core import EXPOSED as _EXPOSED

_LOG_SQRT_2PI = 0.5 * _math.log(2.0 * _math.pi)
_NEG_INF = -_np.inf


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def _standardize(x, loc, scale):
    """(x - loc) / scale, skipping the defaults' no-op arithmetic."""
    y = x if _is_zero(loc) else _ops.subtract(x, loc)
    return _ops.divide(y, scale) if not _is_one(scale) else _as_float(y)


def _log_scale(scale):
    return 0.0 if _is_one(scale) else _ops.log(scale)


def _is_zero(v) -> bool:
    return type(v) in (int, float) and v == 0


def _is_one(v) -> bool:
    return type(v) in (int, float) and v == 1


def _as_float(y):
    """y as a float array (or traced value): Python numbers and integer arrays become
    float64, as SciPy computes them."""
    if not _is_dispatched(y):
        y = _np.asarray(y)
    return y if y.dtype.kind == "f" else _ops.astype(y, _np.float64)


def _minus(a, b):
    return a if type(b) in (int, float) and b == 0 else _ops.subtract(a, b)


class _Distribution:
    """A distribution of ``chainrule.scipy.stats``: its methods take SciPy's arguments."""

    name = ""

    def __repr__(self) -> str:
        return f"<chainrule.scipy.stats.{self.name}>"


class _Norm(_Distribution):
    """The normal distribution: ``logpdf``, ``pdf``, ``cdf``, ``logcdf`` of x, with
    ``loc`` and ``scale``."""

    name = "norm"

    def logpdf(self, x, loc=0, scale=1):
        """-y^2 / 2 - log(scale) - log(sqrt(2 pi)), y = (x - loc) / scale"""
        y = _standardize(x, loc, scale)
        return _minus(-0.5 * (y * y) - _LOG_SQRT_2PI, _log_scale(scale))

    def pdf(self, x, loc=0, scale=1):
        return _ops.exp(self.logpdf(x, loc, scale))

    def cdf(self, x, loc=0, scale=1):
        """Phi((x - loc) / scale) (the op ``ndtr``)"""
        return _ops.ndtr(_standardize(x, loc, scale))

    def logcdf(self, x, loc=0, scale=1):
        """log Phi((x - loc) / scale) (the op ``log_ndtr``: accurate far in the left tail)"""
        return _ops.log_ndtr(_standardize(x, loc, scale))

    def sf(self, x, loc=0, scale=1):
        """1 - Phi(y) = Phi(-y), y = (x - loc) / scale (accurate in the right tail)"""
        return _ops.ndtr(_ops.negative(_standardize(x, loc, scale)))

    def logsf(self, x, loc=0, scale=1):
        """log Phi(-y), y = (x - loc) / scale"""
        return _ops.log_ndtr(_ops.negative(_standardize(x, loc, scale)))


class _T(_Distribution):
    """Student's t distribution: ``logpdf``, ``pdf``, ``cdf`` of x with ``df``, ``loc`` and
    ``scale`` (the cdf has no derivative in df)."""

    name = "t"

    def logpdf(self, x, df, loc=0, scale=1):
        """gammaln((df+1)/2) - gammaln(df/2) - log(df pi)/2 - (df+1)/2 log1p(y^2/df)
        - log(scale), y = (x - loc) / scale, with the first three terms as
        -betaln(df/2, 1/2) - log(df)/2 (the same; the gammaln difference cancels for large
        df: 1e-6 off at df = 1e10, every digit lost by 1e16)"""
        y = _standardize(x, loc, scale)
        half = _ops.multiply(_ops.add(df, 1), 0.5)
        out = (-_ops.betaln(_ops.multiply(df, 0.5), 0.5) - 0.5 * _ops.log(df)
               - half * _ops.log1p(y * y / df))
        return _minus(out, _log_scale(scale))

    def pdf(self, x, df, loc=0, scale=1):
        return _ops.exp(self.logpdf(x, df, loc, scale))

    def cdf(self, x, df, loc=0, scale=1):
        """stdtr(df, (x - loc) / scale)"""
        return _ops.stdtr(df, _standardize(x, loc, scale))

    def logcdf(self, x, df, loc=0, scale=1):
        """log stdtr(df, (x - loc) / scale) (the tails are polynomial: the cdf stays a
        normal number far beyond where the normal distribution's underflows)"""
        return _ops.log(self.cdf(x, df, loc, scale))


class _Gamma(_Distribution):
    """The gamma distribution: ``logpdf``, ``pdf``, ``cdf`` of x with shape ``a``, ``loc``
    and ``scale`` (the cdf has no derivative in a)."""

    name = "gamma"

    def logpdf(self, x, a, loc=0, scale=1):
        """xlogy(a - 1, y) - y - gammaln(a) - log(scale) for y = (x - loc) / scale >= 0,
        -inf below"""
        y = _standardize(x, loc, scale)
        inside = _ops.greater_equal(y, 0)
        ys = _ops.where(inside, y, 1.0)
        out = _ops.xlogy(_ops.subtract(a, 1), ys) - ys - _ops.gammaln(a)
        return _minus(_ops.where(inside, out, _NEG_INF), _log_scale(scale))

    def pdf(self, x, a, loc=0, scale=1):
        return _ops.exp(self.logpdf(x, a, loc, scale))

    def cdf(self, x, a, loc=0, scale=1):
        """gammainc(a, y) for y = (x - loc) / scale > 0, 0 below"""
        y = _standardize(x, loc, scale)
        inside = _ops.greater(y, 0)
        return _ops.where(inside, _ops.gammainc(a, _ops.where(inside, y, 1.0)), 0.0)


class _Chi2(_Distribution):
    """The chi-squared distribution with ``df`` degrees of freedom: the gamma distribution
    with shape df / 2 and scale 2 (``logpdf``, ``pdf``, ``cdf``; the cdf has no derivative
    in df)."""

    name = "chi2"

    def logpdf(self, x, df, loc=0, scale=1):
        return gamma.logpdf(x, _ops.multiply(df, 0.5), loc, _ops.multiply(scale, 2.0))

    def pdf(self, x, df, loc=0, scale=1):
        return _ops.exp(self.logpdf(x, df, loc, scale))

    def cdf(self, x, df, loc=0, scale=1):
        return gamma.cdf(x, _ops.multiply(df, 0.5), loc, _ops.multiply(scale, 2.0))


class _Beta(_Distribution):
    """The beta distribution: ``logpdf``, ``pdf``, ``cdf`` of x with shapes ``a``, ``b``,
    ``loc`` and ``scale`` (the cdf has no derivative in a and b)."""

    name = "beta"

    def logpdf(self, x, a, b, loc=0, scale=1):
        """xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - log(scale) for
        0 <= y <= 1, y = (x - loc) / scale; -inf outside"""
        y = _standardize(x, loc, scale)
        inside = _ops.logical_and(_ops.greater_equal(y, 0), _ops.less_equal(y, 1))
        ys = _ops.where(inside, y, 0.5)
        out = (_ops.xlogy(_ops.subtract(a, 1), ys) + _ops.xlog1py(_ops.subtract(b, 1), -ys)
               - _ops.betaln(a, b))
        return _minus(_ops.where(inside, out, _NEG_INF), _log_scale(scale))

    def pdf(self, x, a, b, loc=0, scale=1):
        return _ops.exp(self.logpdf(x, a, b, loc, scale))

    def cdf(self, x, a, b, loc=0, scale=1):
        """betainc(a, b, y) for 0 < y < 1, 0 below, 1 above"""
        y = _standardize(x, loc, scale)
        inside = _ops.logical_and(_ops.greater(y, 0), _ops.less(y, 1))
        inner = _ops.betainc(a, b, _ops.where(inside, y, 0.5))
        return _ops.where(inside, inner, _ops.where(_ops.greater_equal(y, 1), 1.0, 0.0))


class _Poisson(_Distribution):
    """The Poisson distribution: ``logpmf``, ``pmf``, ``cdf`` of k with mean ``mu`` and
    ``loc``. The derivative in k (when k is a float array) is that of the continuous
    extension xlogy(k, mu) - gammaln(k + 1) - mu of logpmf, as JAX's; the cdf is
    piecewise constant in k (zero derivative)."""

    name = "poisson"

    def logpmf(self, k, mu, loc=0):
        """xlogy(k, mu) - gammaln(k + 1) - mu for integers k - loc >= 0, -inf elsewhere"""
        k = _minus(k, loc)
        valid = _ops.logical_and(_ops.greater_equal(k, 0), _ops.equal(k, _ops.floor(k)))
        ks = _ops.where(valid, k, 0)
        out = _ops.xlogy(ks, mu) - _ops.gammaln(_ops.add(ks, 1)) - mu
        return _ops.where(valid, out, _NEG_INF)

    def pmf(self, k, mu, loc=0):
        return _ops.exp(self.logpmf(k, mu, loc))

    def cdf(self, k, mu, loc=0):
        """gammaincc(floor(k - loc) + 1, mu) for k - loc >= 0, 0 below. The count
        floor(k - loc) is made an int64 (clipped at 2^62): piecewise constant in k, so no
        gradient flows into gammaincc's shape parameter (which has no derivative)."""
        k = _ops.floor(_minus(k, loc))
        inside = _ops.greater_equal(k, 0)
        count = _ops.where(inside, k, 0)
        if _np.dtype(count.dtype).kind == "f":
            count = _ops.astype(_ops.minimum(count, 2.0 ** 62), _np.int64)
        inner = _ops.gammaincc(_ops.add(count, 1), mu)
        return _ops.where(inside, inner, 0.0)


class _Dirichlet(_Distribution):
    """The Dirichlet distribution: ``logpdf``, ``pdf`` of x with concentration ``alpha``
    (K entries). As SciPy, the components of x run along its first axis, which has K
    entries, or K - 1 (the last component is then 1 minus their sum)."""

    name = "dirichlet"

    def logpdf(self, x, alpha):
        """sum_i xlogy(alpha_i - 1, x_i) - (sum_i gammaln(alpha_i) - gammaln(sum_i alpha_i))"""
        alpha_shape, x_shape = _shape(alpha), _shape(x)
        if len(alpha_shape) != 1:
            raise _ChainruleError(f"dirichlet: alpha must be 1-D, got shape {alpha_shape}")
        k = alpha_shape[0]
        if not x_shape or x_shape[0] not in (k, k - 1):
            raise _ChainruleError(f"dirichlet: x must have {k} or {k - 1} entries along its "
                                  f"first axis (alpha has {k}), got shape {x_shape}")
        if x_shape[0] == k - 1:
            last = _ops.subtract(1.0, _ops.sum(x, 0, True))
            x = _ops.concatenate(x, last, axis=0)
        a = alpha if len(x_shape) <= 1 else _ops.reshape(
            alpha, (k,) + (1,) * (len(x_shape) - 1))
        log_b = _ops.sum(_ops.gammaln(alpha)) - _ops.gammaln(_ops.sum(alpha))
        out = _ops.sum(_ops.xlogy(_ops.subtract(a, 1), x), 0) - log_b
        return _squeeze(out)

    def pdf(self, x, alpha):
        return _ops.exp(self.logpdf(x, alpha))

    def rvs(self, alpha, size=1, random_state=None):
        """Draws (SciPy's ``dirichlet.rvs``, as autograd re-exports it): samples of
        concrete ``alpha``, shape ``(size, K)``; not differentiable."""
        if _is_dispatched(alpha):
            raise _ChainruleError("dirichlet.rvs: alpha must be a concrete array (draws are "
                                  "not differentiated); sample outside the differentiated "
                                  "function or use chainrule.random")
        import scipy.stats as _scipy_stats

        return _scipy_stats.dirichlet.rvs(alpha, size=size, random_state=random_state)


def _squeeze(out):
    """SciPy's ``_squeeze_output``: length-1 axes dropped."""
    shape = _shape(out)
    kept = tuple(d for d in shape if d != 1)
    return out if kept == shape else _ops.reshape(out, kept)


def _singular_logpdf(r, cov):
    """SciPy's ``allow_singular=True`` density on the support of a positive semi-definite
    ``cov``: -(rank log(2 pi) + log pdet cov + r^T pinv(cov) r) / 2, from ``eigh`` with
    the eigenvalues below SciPy's cutoff (1e6 eps max|s| in float64, 1e3 eps in float32)
    taken as zero; -inf where r leaves the support (the span of the kept eigenvectors),
    NaN for a cov that is not semi-definite (SciPy raises). The derivative in cov goes
    through eigh's rule (the rank held fixed)."""
    s, u = _ops.eigh(cov, True)
    dtype = _np.dtype(s.dtype.numpy if hasattr(s.dtype, "numpy") else s.dtype)
    cutoff = (1e3 if dtype == _np.float32 else 1e6) * _np.finfo(dtype).eps
    eps = cutoff * _ops.max(_ops.abs(s))
    kept = s > eps
    safe = _ops.where(kept, s, _np.ones((), dtype))
    whitened = _ops.matmul(r, u) * _ops.where(kept, safe ** -0.5, _np.zeros((), dtype))
    maha = _ops.sum(whitened ** 2, -1)
    rank = _ops.sum(_ops.astype(kept, dtype))
    log_pdet = _ops.sum(_ops.where(kept, _ops.log(safe), _np.zeros((), dtype)))
    out = -0.5 * (maha + rank * (2 * _LOG_SQRT_2PI) + log_pdet)
    off = _ops.sum(_ops.abs(_ops.matmul(r, u)) * _ops.astype(~kept, dtype), -1)
    out = _ops.where(off > 1e3 * eps, _np.array(-_np.inf, dtype), out)
    not_psd = _ops.min(s) < -eps
    return _ops.where(not_psd, _np.array(_np.nan, dtype), out)


class _MultivariateNormal(_Distribution):
    """The multivariate normal distribution: ``logpdf``, ``pdf`` of x with ``mean`` and
    ``cov`` (a matrix, a 1-D diagonal or a scalar times the identity). As SciPy, x's
    last axis holds the d components (a 1-D x is one point, or d = 1 points), and the
    result has length-1 axes dropped. The derivative in a full ``cov`` at a symmetric
    matrix is symmetric."""

    name = "multivariate_normal"

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        """-(d log(2 pi) + log det cov + r^T cov^-1 r) / 2, r = x - mean"""
        cov_shape = _shape(cov)
        singular = allow_singular and len(cov_shape) == 2
        if mean is not None:
            dim = int(_np.prod(_shape(mean), dtype=_np.int64))
        elif len(cov_shape) >= 1:
            dim = cov_shape[0]
        else:
            dim = 1
        if len(cov_shape) > 2 or any(n != dim for n in cov_shape):
            raise _ChainruleError(f"multivariate_normal: cov of shape {cov_shape} does not "
                                  f"fit dimension {dim}")
        x_shape = _shape(x)
        if not x_shape:
            x, x_shape = _ops.reshape(x, (1,)), (1,)
        if len(x_shape) == 1:
            x_shape = (x_shape[0], 1) if dim == 1 else (1, x_shape[0])
            x = _ops.reshape(x, x_shape)
        if x_shape[-1] != dim:
            raise _ChainruleError(f"multivariate_normal: x's last axis has "
                                  f"{x_shape[-1]} entries, the distribution {dim}")
        r = _as_float(x if mean is None else _ops.subtract(x, _ops.reshape(mean, (dim,))))
        if len(cov_shape) == 0:
            maha = _ops.sum(r * r, -1) / cov
            logdet = dim * _ops.log(cov)
        elif len(cov_shape) == 1:
            maha = _ops.sum(r * r / cov, -1)
            logdet = _ops.sum(_ops.log(cov))
        elif singular:
            return _squeeze(_singular_logpdf(r, _as_float(cov)))
        else:
            lead = _shape(r)[:-1]
            rows = _ops.reshape(r, (int(_np.prod(lead, dtype=_np.int64)), dim))
            maha = _ops.reshape(_ops.sum(rows * _ops.mvn_solve(cov, rows), -1), lead)
            logdet = _ops.mvn_logdet(cov)
        return _squeeze(-0.5 * (maha + logdet + dim * (2 * _LOG_SQRT_2PI)))

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        return _ops.exp(self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean=None, cov=1):
        """(d (1 + log(2 pi)) + log det cov) / 2 (``mean`` only gives the dimension)"""
        cov_shape = _shape(cov)
        if len(cov_shape) == 0:
            dim = 1 if mean is None else int(_np.prod(_shape(mean), dtype=_np.int64))
            logdet = dim * _ops.log(cov)
        elif len(cov_shape) == 1:
            dim, logdet = cov_shape[0], _ops.sum(_ops.log(cov))
        elif len(cov_shape) == 2 and cov_shape[0] == cov_shape[1]:
            dim, logdet = cov_shape[0], _ops.mvn_logdet(cov)
        else:
            raise _ChainruleError(f"multivariate_normal.entropy: cov of shape {cov_shape} is "
                                  f"not a square matrix, a diagonal or a scalar")
        return 0.5 * (logdet + dim * (1.0 + 2 * _LOG_SQRT_2PI))


norm = _Norm()
t = _T()
gamma = _Gamma()
chi2 = _Chi2()
beta = _Beta()
poisson = _Poisson()
dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()



def _register_submodule(dist: _Distribution) -> None:
    """``chainrule.scipy.stats.norm`` importable as a module, as autograd users write
    ``import autograd.scipy.stats.norm as norm`` (SciPy has no such modules; autograd
    does): a module holding the distribution's methods, in ``sys.modules``."""
    module = _types.ModuleType(f"{__name__}.{dist.name}", dist.__doc__)
    for attr in dir(dist):
        if not attr.startswith("_") and callable(getattr(dist, attr)):
            setattr(module, attr, getattr(dist, attr))
    _sys.modules[module.__name__] = module


for _dist in (norm, t, gamma, chi2, beta, poisson, dirichlet, multivariate_normal):
    _register_submodule(_dist)

for _op in (_ops.mvn_solve, _ops.mvn_logdet):
    _EXPOSED.setdefault(_op, []).append("scipy.stats.multivariate_normal.logpdf")

# the functions written here (besides the ops that declare "scipy.stats.<name>")
_OWN: list[str] = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm",
                   "poisson", "t"]

__all__ = _assemble(globals(), "scipy.stats.", _OWN)
