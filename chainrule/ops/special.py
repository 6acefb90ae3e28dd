"""Special functions (``chainrule.scipy.special``): error functions, gamma family,
Bessel functions, logistic functions.

Kernels call SciPy (an optional extra: ``pip install chainrule[scipy]``; without
it they raise a ``ChainruleError`` saying so) except where NumPy computes the
function exactly (``xlogy``, ``xlog1py``). Integer operands give float64, as the
elementwise float functions do; float32 operands stay float32. The order-like
operands (``n`` of ``polygamma``, ``v`` of ``iv``) and the shape parameters of
the incomplete gamma and beta functions are operands, broadcast like the others;
their rules say which derivatives exist.

Two ops serve ``chainrule.scipy.stats.multivariate_normal``: ``mvn_solve`` (rows
solved against a matrix) and ``mvn_logdet`` (log det of a positive definite
matrix's symmetric part), closed under differentiation (their rules are written with them).

>>> import numpy as np
>>> float(xlogy(np.array(0.0), np.array(0.0)))
0.0
"""

from __future__ import annotations

import numpy as np

from ..errors import ChainruleError, TypeInferenceError
from ..ir.types import DType, TensorType
from .common import (
    NOT_YET_ON_ARRAY_API,
    NoLowering,
    broadcast_shapes,
    define,
    fmt,
    promote,
    tensor_types,
)

_SPECIAL = None


def scipy_special():
    """``scipy.special``, or a ``ChainruleError`` saying how to install it."""
    global _SPECIAL
    if _SPECIAL is None:
        try:
            import scipy.special as sp
        except ImportError:
            raise ChainruleError(
                "this function's kernel needs SciPy, an optional extra of chainrule: "
                "pip install chainrule[scipy]") from None
        _SPECIAL = sp
    return _SPECIAL


def _float_type(name, holomorphic=False):
    """Operands broadcast; the result is their promoted dtype, float64 if not a float (or,
    for the ``holomorphic`` functions SciPy computes on complex numbers, complex)."""

    def infer(types, attrs):
        types = tensor_types(name, types)
        dtype = promote(name, types)
        if holomorphic and dtype.numpy.kind == "c":
            return TensorType(broadcast_shapes(name, types), dtype)
        if dtype.numpy.kind == "c":
            raise TypeInferenceError(f"{name}: complex operands are not supported "
                                     f"({fmt(types)})")
        if not dtype.is_float:
            dtype = DType("f64")
        return TensorType(broadcast_shapes(name, types), dtype)

    return infer


def _result_dtype(xs, holomorphic=False) -> np.dtype:
    dtype = np.result_type(*xs)
    keep = "fc" if holomorphic else "f"
    return dtype if dtype.kind in keep else np.dtype(np.float64)


def _scipy_kernel(function: str, holomorphic=False):
    """scipy.special.<function> on the operands cast to the result dtype (so SciPy
    picks that loop: float32 stays float32, integers become float64; complex stays
    complex for the ``holomorphic`` functions)."""

    def kernel(*xs):
        dtype = _result_dtype(xs, holomorphic)
        fn = getattr(scipy_special(), function)
        out = fn(*[x.astype(dtype, copy=False) for x in xs])
        return np.asarray(out).astype(dtype, copy=False)

    kernel.__name__ = function
    return kernel


_NO_XP = NoLowering("the array API has no special functions (PyTorch has torch.special's "
                    "where declared; Dask runs SciPy's kernel chunk by chunk)")
_FACTS = dict(elementwise=True, fresh=True, aliases=False,
              scalar=NoLowering("a SciPy special function with no scalar form numba compiles"),
              kernels={"array_api": _NO_XP})


def _special(name: str, nargs: int = 1, function: str | None = None, kernel=None,
             namespace: str | None = None, doc="", holomorphic=False, torch: str = "",
             scalar=None):
    """An op ``name`` computing scipy.special.<function> (default: the name), public as
    chainrule.scipy.special.<namespace> (default: the name). Ops whose SciPy names are
    likely variable names (i0, gamma, beta: the text format refuses variables named like
    ops) take longer op names. On PyTorch tensors ``torch.special.<torch>`` computes it
    where PyTorch has it (the array API has no special functions); ``scalar`` is its form
    on one element where numba can compile one. A ``holomorphic`` function also takes
    complex operands (SciPy's complex loop)."""
    kernel = kernel or _scipy_kernel(function or name, holomorphic)
    facts = dict(_FACTS)
    if torch:
        facts["kernels"] = {**_FACTS["kernels"],
                            "torch": _torch_kernel(torch, kernel if holomorphic else None)}
    if scalar is not None:
        facts["scalar"] = scalar
    return define(name, _float_type(name, holomorphic), kernel, nargs,
                  namespace=(f"scipy.special.{namespace or name}",), doc=doc, **facts)


def _torch_kernel(function: str, complex_kernel=None):
    """torch.special.<function> on the operands cast to the result dtype, as SciPy's;
    complex operands (which torch.special refuses) go to ``complex_kernel`` (SciPy's,
    through NumPy arrays on the CPU)."""

    def kernel(ctx, *xs):
        import torch

        xp = ctx.xp
        dtype = torch.promote_types(xs[0].dtype, xs[-1].dtype) if len(xs) > 1 else xs[0].dtype
        if complex_kernel is not None and dtype.is_complex:
            out = complex_kernel(*[x.detach().cpu().numpy() for x in xs])
            return torch.as_tensor(out, device=xs[0].device)
        if not dtype.is_floating_point:
            dtype = torch.float64
        return getattr(torch.special, function)(*[xp.astype(x, dtype) for x in xs])

    kernel.__name__ = f"torch_{function}"
    return kernel


# -- error functions and the normal distribution --------------------------------------
erf = _special("erf", doc="The error function 2/sqrt(pi) int_0^x exp(-t^2) dt (also of "
                           "complex x: entire).", holomorphic=True, torch="erf",
               scalar="math.erf({0})")
erfc = _special("erfc", doc="1 - erf(x), accurate for large x (also of complex x).",
                holomorphic=True, torch="erfc", scalar="math.erfc({0})")
erfinv = _special("erfinv", doc="The inverse of erf on (-1, 1).", torch="erfinv")
erfcx = _special("erfcx", doc="The scaled complementary error function exp(x^2) erfc(x).",
                 torch="erfcx")
ndtr = _special("ndtr", doc="The standard normal cdf.", torch="ndtr",
                scalar="0.5 * math.erfc(-{0} * 0.7071067811865476)")  # erfc(-x / sqrt 2) / 2
log_ndtr = _special("log_ndtr", doc="log of the standard normal cdf, accurate for x << 0.",
                    torch="log_ndtr")

# -- gamma family --------------------------------------------------------------------
gammaln = _special("gammaln", doc="log |Gamma(x)|.", torch="gammaln", scalar="math.lgamma({0})")
digamma = _special("digamma", function="psi", doc="psi(x) = d/dx log Gamma(x).",
                   torch="digamma")
polygamma = _special("polygamma", 2,
                     doc="polygamma(n, x): the n-th derivative of digamma (n an integer).")
gamma_function = _special("gamma_function", function="gamma", namespace="gamma",
                          doc="The gamma function.", scalar="math.gamma({0})")
beta_function = _special("beta_function", 2, function="beta", namespace="beta",
                         doc="Gamma(a) Gamma(b) / Gamma(a + b).")
betaln = _special("betaln", 2, doc="log |beta(a, b)|.")
gammainc = _special("gammainc", 2, doc="The regularized lower incomplete gamma function "
                                       "P(a, x).")
gammaincc = _special("gammaincc", 2, doc="The regularized upper incomplete gamma function "
                                         "Q(a, x) = 1 - P(a, x).")
betainc = _special("betainc", 3, doc="The regularized incomplete beta function I_x(a, b).")
stdtr = _special("stdtr", 2, doc="stdtr(df, t): the cdf of Student's t distribution.")

# -- Bessel functions ----------------------------------------------------------------
bessel_i0 = _special("bessel_i0", function="i0", namespace="i0", torch="i0",
                     doc="The modified Bessel function of the first kind of order 0.")
bessel_i1 = _special("bessel_i1", function="i1", namespace="i1", torch="i1",
                     doc="The modified Bessel function of the first kind of order 1.")
bessel_i0e = _special("bessel_i0e", function="i0e", namespace="i0e", torch="i0e",
                      doc="exp(-|x|) i0(x).")
bessel_i1e = _special("bessel_i1e", function="i1e", namespace="i1e", torch="i1e",
                      doc="exp(-|x|) i1(x).")
bessel_iv = _special("bessel_iv", 2, function="iv", namespace="iv",
                     doc="iv(v, x): the modified Bessel function of the first kind of real "
                         "order v.")
bessel_ive = _special("bessel_ive", 2, function="ive", namespace="ive",
                      doc="ive(v, x) = exp(-|x|) iv(v, x).")


# -- x log(y) that is 0 where x is (NumPy computes these exactly) --------------------------
def _x_times(log_fn):
    def kernel(x, y):
        dtype = _result_dtype((x, y))
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = x * log_fn(y)
        return np.where((x == 0) & ~np.isnan(y), np.zeros((), dtype), out)

    return kernel


# scalar forms: numba helpers (backend/numba/source.py), a branch on x == 0
xlogy = _special("xlogy", 2, kernel=_x_times(np.log), torch="xlogy",
                 scalar="xlogy({0}, {1}, {zero})",
                 doc="x log(y), and 0 where x = 0 (unless y is NaN).")
xlog1py = _special("xlog1py", 2, kernel=_x_times(np.log1p), torch="xlog1py",
                   scalar="xlog1py({0}, {1}, {zero})",
                   doc="x log(1 + y), and 0 where x = 0 (unless y is NaN).")


# -- the multivariate normal's linear algebra -----------------------------------------------
def _mvn_solve_type(types, attrs):
    a, b = tensor_types("mvn_solve", types)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != a.shape[1] or b.shape[1] != a.shape[0]:
        raise TypeInferenceError(f"mvn_solve: needs a square (d, d) matrix and (n, d) rows, "
                                 f"got {fmt(types)}")
    dtype = promote("mvn_solve", types)
    return TensorType(b.shape, dtype if dtype.is_float else DType("f64"))


def _mvn_solve(a, b):
    dtype = _result_dtype((a, b))
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    if b.shape[0] == 0:
        return np.zeros(b.shape, dtype)
    return np.linalg.solve(a, b.T).T.astype(dtype, copy=False)


def _mvn_logdet_type(types, attrs):
    (a,) = tensor_types("mvn_logdet", types)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise TypeInferenceError(f"mvn_logdet: needs a square matrix, got {a!r}")
    return TensorType((), a.dtype if a.dtype.is_float else DType("f64"))


def _mvn_logdet(a):
    dtype = _result_dtype((a,))
    try:
        a = a.astype(dtype, copy=False)
        chol = np.linalg.cholesky((a + a.T) * 0.5)
    except np.linalg.LinAlgError:
        raise ChainruleError("multivariate_normal: the covariance matrix is not positive "
                             "definite") from None
    return np.asarray(2 * np.sum(np.log(np.diagonal(chol))), dtype)


mvn_solve = define("mvn_solve", _mvn_solve_type, _mvn_solve, 2, fresh=True, aliases=False,
                   raises_on_values=True,
                   doc="mvn_solve(a, b): each row of b solved against a, (a^-1 b^T)^T.",
                   kernels=NOT_YET_ON_ARRAY_API)
mvn_logdet = define("mvn_logdet", _mvn_logdet_type, _mvn_logdet, 1, fresh=True,
                    raises_on_values=True,
                    aliases=False, doc="log det (a + a^T) / 2, which must be positive "
                                       "definite (from its Cholesky factor).",
                    kernels=NOT_YET_ON_ARRAY_API)

__all__ = [
    "erf", "erfc", "erfinv", "erfcx", "ndtr", "log_ndtr", "gammaln", "digamma", "polygamma",
    "gamma_function", "beta_function", "betaln", "gammainc", "gammaincc", "betainc", "stdtr",
    "bessel_i0", "bessel_i1", "bessel_i0e", "bessel_i1e", "bessel_iv", "bessel_ive", "xlogy",
    "xlog1py", "mvn_solve", "mvn_logdet",
]
