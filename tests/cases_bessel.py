"""Cases of the Bessel functions J and Y, erfcinv, rgamma, gammasgn (chainrule.scipy.special)
and of the matrix equations sqrtm, solve_sylvester, solve_banded (chainrule.scipy.linalg)
against SciPy (see namespace_cases). Orders are held constant (captured) in the
differentiated cases and varied in value-only ones; sqrtm's complex result is checked
through its real and imaginary parts. erf / erfc of complex numbers are checked for values
here and for derivatives in tests/numpy/test_special_bessel.py (the table differentiates
real arguments only)."""

import numpy as np
import scipy.linalg as sl
import scipy.special as sp
from cases_linalg import _parts, _ref_parts
from namespace_cases import I, U, case

import chainrule.scipy.linalg as csl
import chainrule.scipy.special as csp


def _in(lo, hi):
    return lambda *shape: U(*shape, lo=lo, hi=hi)


def _unary(name, domain, extra=(), **kw):
    f = getattr(csp, name)
    return case(f"scipy.special.{name}", lambda x: f(x), getattr(sp, name),
                domain(3, 4), domain(), domain(0), *extra, **kw)


def _with_orders(name, orders, domain, **kw):
    """name(orders, x) with the orders held constant (they have no derivative)."""
    f, ref = getattr(csp, name), getattr(sp, name)
    return case(f"scipy.special.{name}", lambda x: f(np.array(orders), x),
                lambda x: ref(np.array(orders), x), domain(3, 4), domain(4), domain(0, 4), **kw)


def _Z(*shape):
    return U(*shape, lo=-2, hi=2) + 1j * U(*shape, lo=-2, hi=2)


def _stacked(fn):
    """SciPy's function on each matrix of stacks (SciPy < 1.15 takes one at a time)."""
    def f(*args):
        batch = np.broadcast_shapes(*[np.shape(a)[:-2] for a in args])
        args = [np.broadcast_to(a, batch + np.shape(a)[-2:]) for a in args]
        out = [fn(*[a[i] for a in args]) for i in np.ndindex(*batch)]
        return np.reshape(np.array(out), batch + np.shape(out[0]))

    return f


def SPD(*shape):
    """Symmetric positive definite (a real principal square root)."""
    m = U(*shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def W(*shape):
    """Well-conditioned square matrices with eigenvalues near n (a X + X b = q is far from
    singular for two of them)."""
    return U(*shape) + shape[-1] * np.eye(shape[-1])


def _band(n, lower, upper):
    """Banded storage (lower + upper + 1, n) of a diagonally dominant matrix."""
    ab = U(lower + upper + 1, n)
    ab[upper] += lower + upper + 2
    return ab


_INT_ORDERS = [0, 1, 2, 5]
_ORDERS = np.array([[0], [1], [-2]])

CASES = [
    # Bessel functions of the first and second kind
    _unary("j0", _in(-20, 20), extra=(np.array([0.0, 1e-300, 1e3]), I(4))),
    _unary("j1", _in(-20, 20), extra=(np.array([0.0, 1e-300, -1e3]),)),
    _unary("y0", _in(0.2, 20), extra=(np.array([0.0, 1e3]), I(4, lo=1, hi=5))),
    _unary("y1", _in(0.2, 20), extra=(np.array([0.0, 1e3]),)),
    _with_orders("jn", _INT_ORDERS, _in(-10, 10)),
    case("scipy.special.jn", lambda x: csp.jn(np.array([-3, 0, 1.5, 2.5]), x),
         lambda x: sp.jn(np.array([-3, 0, 1.5, 2.5]), x), _in(0.2, 10)(3, 4),
         note="negative and real orders (SciPy's jn is jv)"),
    case("scipy.special.jn", lambda n, x: csp.jn(n, x), sp.jn, (_ORDERS, _in(-10, 10)(4)),
         (np.array(3), np.array(2.5)), grad=False, note="n"),
    _with_orders("yn", _INT_ORDERS, _in(0.2, 10)),
    case("scipy.special.yn", lambda n, x: csp.yn(n, x), sp.yn, (_ORDERS, _in(0.2, 10)(4)),
         (np.array(3), np.array(2.5)), grad=False, note="n"),
    # inverse, reciprocal and sign of the erfc and gamma functions
    _unary("erfcinv", _in(0.05, 1.95), extra=(np.array([0.0, 2.0, 1.0, 1e-300]),)),
    _unary("rgamma", _in(-4, 4), extra=(np.array([0.0, -1.0, -2.0, 171.7, -180.5]), I(4))),
    case("scipy.special.rgamma", lambda x: csp.rgamma(x), sp.rgamma,
         np.array([0.0, -1.0, -2.0, -5.0, 1.0]), note="poles of Gamma"),
    _unary("gammasgn", _in(-4, 4), extra=(np.array([0.0, -0.0, -1.0, -2.5, np.inf]),)),
    # complex erf, erfc (values; derivatives in tests/numpy/test_special_bessel.py)
    case("scipy.special.erf", lambda z: csp.erf(z), sp.erf, _Z(3, 4), _Z(), _Z(0),
         grad=False, note="complex"),
    case("scipy.special.erfc", lambda z: csp.erfc(z), sp.erfc, _Z(3, 4), _Z(), _Z(0),
         grad=False, note="complex"),
    # matrix square root (complex, as JAX's)
    case("scipy.linalg.sqrtm", _parts(lambda a: csl.sqrtm(a)), _ref_parts(_stacked(sl.sqrtm)),
         SPD(3, 3), SPD(2, 3, 3), U(0, 0)),
    case("scipy.linalg.sqrtm", _parts(lambda a: csl.sqrtm((a + a.T) * 0.5 - 0.5 * np.eye(3))),
         _ref_parts(lambda a: sl.sqrtm((a + a.T) * 0.5 - 0.5 * np.eye(3))),
         np.array([[0.2, 0.1, 0.0], [0.1, 1.5, 0.3], [0.0, 0.3, 2.5]]),
         note="negative eigenvalue: a complex root"),
    case("scipy.linalg.sqrtm", _parts(lambda a: csl.sqrtm(a)), _ref_parts(sl.sqrtm),
         W(3, 3) + 1j * U(3, 3), grad=False, note="complex"),
    # Sylvester equation a X + X b = q
    case("scipy.linalg.solve_sylvester", lambda a, b, q: csl.solve_sylvester(a, b, q),
         _stacked(sl.solve_sylvester), (W(3, 3), W(2, 2), U(3, 2)),
         (W(2, 3, 3), W(2, 2), U(1, 3, 2)), (W(2, 2), W(0, 0), U(2, 0))),
    case("scipy.linalg.solve_sylvester", lambda a, b, q: csl.solve_sylvester(a, b, q),
         # SciPy's solve_sylvester with a complex a and a real b (1.17) returns X that does
         # not solve the equation for about a third of random draws: the reference casts
         # b to complex first, as chainrule does
         lambda a, b, q: sl.solve_sylvester(a, b.astype(complex), q),
         (W(2, 2) + 1j * U(2, 2), W(2, 2), U(2, 2) + 1j * U(2, 2)),
         grad=False, note="complex"),
    # banded solve
    *[case("scipy.linalg.solve_banded",
           (lambda lu_: lambda ab, b: csl.solve_banded(lu_, ab, b))(lu),
           (lambda lu_: lambda ab, b: sl.solve_banded(lu_, ab, b))(lu),
           (_band(5, *lu), U(5)), (_band(4, *lu), U(4, 2)), grad_sets=2, note=f"(l, u)={lu}")
      for lu in [(1, 1), (2, 1), (0, 2), (0, 0), (3, 3)]],
    case("scipy.linalg.solve_banded", lambda ab, b: csl.solve_banded((1, 0), ab, b),
         lambda ab, b: sl.solve_banded((1, 0), ab, b), (_band(1, 1, 0), U(1)),
         (_band(3, 1, 0), U(3, 0)), note="one row, no columns"),
]
