"""Cases of chainrule.scipy.stats against SciPy (see namespace_cases): each
distribution object ("scipy.stats.norm") and each of its methods
("scipy.stats.norm.logpdf"), differentiated in x, loc, scale and the shape
parameters whose derivative exists; the shape parameters of the cdfs (regularized
incomplete functions, no derivative) are held constant."""

import numpy as np
import scipy.stats as st
from namespace_cases import P, U, case

import chainrule.scipy.stats as cst


def _in(lo, hi):
    return lambda *shape: U(*shape, lo=lo, hi=hi)


def _method(dist, method, fn, ref, *args, **kw):
    """A case of scipy.stats.<dist>.<method> (of the object itself with method "")."""
    name = f"scipy.stats.{dist}" + (f".{method}" if method else "")
    return case(name, fn, ref, *args, **kw)


def _loc_scale(dist, method, x=U, shapes=(), scale=P, **kw):
    """dist.method(x, *shapes, loc, scale) with every argument varied (``scale`` draws
    the scales: a bounded support needs (x - loc) / scale inside it)."""
    f, ref = getattr(getattr(cst, dist), method), getattr(getattr(st, dist), method)
    n = len(shapes)

    def fn(x, *rest):
        return f(x, *rest[:n], loc=rest[n], scale=rest[n + 1])

    def want(x, *rest):
        return ref(x, *rest[:n], loc=rest[n], scale=rest[n + 1])

    sets = [(x(3, 4), *(s(4) for s in shapes), U(4) * 0.1, scale(3, 1)),
            (x(), *(s() for s in shapes), U() * 0.1, scale()),
            (x(0, 4), *(s(4) for s in shapes), U() * 0.1, scale())]
    return _method(dist, method, fn, want, *sets, **kw)


def _cdf(dist, x, shapes, **kw):
    """dist.cdf(x, *shapes, loc, scale) with the shape parameters (tuples of values)
    held constant (arrays captured from outside: constants, which the cdfs need since
    they have no derivative in their shapes)."""
    f, ref = getattr(cst, dist).cdf, getattr(st, dist).cdf
    held = [np.array(s) for s in shapes]

    def fn(x, loc, scale):
        return f(x, *held, loc=loc, scale=scale)

    return _method(dist, "cdf", fn,
                   lambda x, loc, scale: ref(x, *shapes, loc=loc, scale=scale),
                   (x(3, 4), U(4) * 0.1, P(3, 1)), (x(), U() * 0.1, P()),
                   (x(0, 4), U() * 0.1, P()), **kw)


_A_VALUES = (0.8, 1.5, 2.5, 4.0)
_B_VALUES = (3.0, 1.2, 2.0, 0.9)
_A, _B = np.array(_A_VALUES), np.array(_B_VALUES)
_K = np.array([[0, 1, 2, 5], [3, 0, 1, 7], [2, 2, 4, 1]])
_COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
_MEAN = np.array([0.1, -0.2, 0.3])


def _simplex(k, *rest):
    w = P(k, *rest)
    return w / w.sum(0)


_OUTSIDE = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])

CASES = [
    # norm
    _method("norm", "", lambda x: cst.norm.logpdf(x), st.norm.logpdf, U(3, 4), U()),
    _loc_scale("norm", "logpdf"), _loc_scale("norm", "pdf"), _loc_scale("norm", "cdf"),
    _loc_scale("norm", "logcdf"),
    _method("norm", "logcdf", lambda x: cst.norm.logcdf(x), st.norm.logcdf,
            np.array([-40.0, -5.0, 0.0, 9.0]), note="tails"),
    _method("norm", "pdf", lambda x: cst.norm.pdf(x), st.norm.pdf, np.arange(4), U(0),
            note="defaults"),
    # t
    _method("t", "", lambda x, df: cst.t.logpdf(x, df), st.t.logpdf, (U(3, 4), P(4) * 3)),
    _loc_scale("t", "logpdf", shapes=(lambda *s: P(*s) * 3,)),
    _loc_scale("t", "pdf", shapes=(lambda *s: P(*s) * 3,)),
    _cdf("t", U, (tuple(2 * a for a in _A_VALUES),)),
    _method("t", "cdf", lambda x, df: cst.t.cdf(x, df), st.t.cdf, (U(3, 4), P(4) * 3),
            grad=False, note="df"),
    # gamma
    _method("gamma", "", lambda x, a: cst.gamma.logpdf(x, a), st.gamma.logpdf,
            (P(3, 4), P(4) + 1)),
    _loc_scale("gamma", "logpdf", x=_in(0.5, 3), shapes=(lambda *s: P(*s) + 0.5,)),
    _loc_scale("gamma", "pdf", x=_in(0.5, 3), shapes=(lambda *s: P(*s) + 0.5,)),
    _method("gamma", "logpdf", lambda x, a: cst.gamma.logpdf(x, a), st.gamma.logpdf,
            (_OUTSIDE[:, None], _A), grad=False, note="support"),
    _cdf("gamma", _in(0.5, 3), (_A_VALUES,)),
    _method("gamma", "cdf", lambda x, a: cst.gamma.cdf(x, a), st.gamma.cdf,
            (_OUTSIDE[:, None], P(4)), grad=False, note="support, a"),
    # beta
    _method("beta", "", lambda x, a, b: cst.beta.logpdf(x, a, b), st.beta.logpdf,
            (U(3, 4, lo=0.1, hi=0.9), P(4) + 1, P(4) + 1)),
    _loc_scale("beta", "logpdf", x=_in(0.2, 0.7), shapes=(lambda *s: P(*s) + 0.5,) * 2,
               scale=lambda *s: P(*s) + 0.5),
    _loc_scale("beta", "pdf", x=_in(0.2, 0.7), shapes=(lambda *s: P(*s) + 0.5,) * 2,
               scale=lambda *s: P(*s) + 0.5),
    _method("beta", "logpdf", lambda x, a, b: cst.beta.logpdf(x, a, b), st.beta.logpdf,
            (_OUTSIDE[:, None], _A, _B), grad=False, note="support"),
    _cdf("beta", _in(0.2, 0.7), (_A_VALUES, _B_VALUES)),
    _method("beta", "cdf", lambda x: cst.beta.cdf(x, _A, _B), lambda x: st.beta.cdf(x, _A, _B),
            _OUTSIDE[:, None], grad=False, note="support"),
    # poisson
    _method("poisson", "", lambda mu: cst.poisson.logpmf(_K, mu),
            lambda mu: st.poisson.logpmf(_K, mu), P(4) * 3, P()),
    _method("poisson", "logpmf", lambda mu: cst.poisson.logpmf(_K + 1, mu, loc=1),
            lambda mu: st.poisson.logpmf(_K + 1, mu, loc=1), P(4) * 3, P(3, 1)),
    _method("poisson", "logpmf", lambda k, mu: cst.poisson.logpmf(k, mu),
            lambda k, mu: st.poisson.logpmf(k, mu), (_K.astype(float), P(4) * 3),
            (np.array([-1.0, 1.5, 2.0, 0.0]), P(4)), (np.zeros(0, int), P()), grad=False,
            note="k"),
    _method("poisson", "pmf", lambda mu: cst.poisson.pmf(_K, mu),
            lambda mu: st.poisson.pmf(_K, mu), P(4) * 3, P()),
    _method("poisson", "cdf", lambda mu: cst.poisson.cdf(_K, mu),
            lambda mu: st.poisson.cdf(_K, mu), P(4) * 3, P()),
    _method("poisson", "cdf", lambda k, mu: cst.poisson.cdf(k, mu, loc=0.5),
            lambda k, mu: st.poisson.cdf(k, mu, loc=0.5),
            (np.array([0.2, 1.7, 3.0, -2.0]), P(4) * 3), note="k, loc"),
    # dirichlet: components along the first axis (K or K - 1 of them)
    _method("dirichlet", "", lambda x, alpha: cst.dirichlet.logpdf(x, alpha),
            st.dirichlet.logpdf, (_simplex(3, 5), P(3) + 0.5)),
    _method("dirichlet", "logpdf", lambda x, alpha: cst.dirichlet.logpdf(x, alpha),
            st.dirichlet.logpdf, (_simplex(3, 5)[:2], P(3) + 0.5), (_simplex(4), P(4) + 0.5),
            (_simplex(3, 1), P(3))),
    _method("dirichlet", "pdf", lambda x, alpha: cst.dirichlet.pdf(x, alpha),
            st.dirichlet.pdf, (_simplex(3, 5)[:2], P(3) + 0.5), (_simplex(3, 4), P(3))),
    # multivariate_normal: x's last axis holds the components
    _method("multivariate_normal", "",
            lambda x, mean, cov: cst.multivariate_normal.logpdf(x, mean, cov),
            st.multivariate_normal.logpdf, (U(4, 3), _MEAN, _COV)),
    _method("multivariate_normal", "logpdf",
            lambda x, mean, cov: cst.multivariate_normal.logpdf(x, mean, cov),
            st.multivariate_normal.logpdf, (U(2, 5, 3), _MEAN, _COV), (U(3), _MEAN, _COV),
            (U(1, 3), _MEAN, _COV), (U(4, 3), _MEAN, np.diag(_COV)), (U(4, 3), _MEAN, P()),
            grad_sets=5),
    _method("multivariate_normal", "logpdf",
            lambda x, cov: cst.multivariate_normal.logpdf(x, cov=cov),
            lambda x, cov: st.multivariate_normal.logpdf(x, cov=cov), (U(4), P()), (U(), P()),
            (U(4, 1), np.array([[1.5]])), grad_sets=3, note="d=1"),
    _method("multivariate_normal", "pdf",
            lambda x, mean, cov: cst.multivariate_normal.pdf(x, mean, cov),
            st.multivariate_normal.pdf, (U(4, 3), _MEAN, _COV), (U(3), _MEAN, np.diag(_COV))),
    # the methods and distribution autograd also has: norm.sf/logsf, t.logcdf, chi2,
    # multivariate_normal.entropy
    _loc_scale("norm", "sf"), _loc_scale("norm", "logsf"),
    _method("norm", "logsf", lambda x: cst.norm.logsf(x), st.norm.logsf,
            np.array([-9.0, 0.0, 5.0, 40.0]), note="tails"),
    _loc_scale("t", "logcdf", shapes=(lambda *s: P(*s) * 3,), grad=False),
    _method("t", "logcdf", lambda x: cst.t.logcdf(x, 2.5), lambda x: st.t.logcdf(x, 2.5),
            U(3, 4), U(), note="x"),
    _method("chi2", "", lambda x, df: cst.chi2.logpdf(x, df), st.chi2.logpdf,
            (P(3, 4) * 2, P(4) + 1)),
    _loc_scale("chi2", "logpdf", x=_in(0.5, 3), shapes=(lambda *s: P(*s) + 1.5,)),
    _loc_scale("chi2", "pdf", x=_in(0.5, 3), shapes=(lambda *s: P(*s) + 1.5,)),
    _cdf("chi2", _in(0.5, 3), (tuple(2 * a for a in _A_VALUES),)),
    _method("multivariate_normal", "entropy", lambda c: cst.multivariate_normal.entropy(
        None, c @ c.T + np.eye(3)), lambda c: st.multivariate_normal.entropy(
        None, c @ c.T + np.eye(3)), U(3, 3)),
    _method("multivariate_normal", "entropy", lambda c: cst.multivariate_normal.entropy(
        _MEAN, c), lambda c: st.multivariate_normal.entropy(_MEAN, c), P(), note="scalar"),
]
