"""Rules of ``ops/linalg.py`` beyond matmul (whose rules are in ``shape.py``): each op's
VJP and JVP side by side, written with ops so they differentiate again.

Conventions: matrices are the last two axes (leading axes are batches: a rule's
cotangents may have the broadcast batch shape, the passes sum them down). For
complex operands a VJP is the transpose of the derivative, never its adjoint
(JAX's convention): for holomorphic maps the formulas are the real ones with
transposes, ``x^T`` not ``x^H``. Solves are used instead of inverses. The helpers
here (triangles, Hermitian matrices read from one triangle) are shared with
``decompositions.py``.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..emit.trace import Traced
from ..ir.types import TupleType
from .common import swap_last
from .registry import jvp_rule, vjp_rule

mT = swap_last


def parts(z) -> tuple:
    """The fields of a tuple-valued op's result as the rule receives it (a traced value
    of tuple type in the passes)."""
    if isinstance(z, tuple):
        return z
    if isinstance(z, Traced) and isinstance(z.variable.type, TupleType):
        return z.tracer.wrap(z.variable)
    raise TypeError(f"expected the result of a tuple-valued op, got {z!r}")


def is_complex(x) -> bool:
    return np.dtype(x.dtype).kind == "c"


def conj(x):
    return ops.conj(x) if is_complex(x) else x


def mH(x):
    """The conjugate transpose of the last two axes (the transpose for real x)."""
    return conj(swap_last(x))


def eye_like(x, n: int | None = None):
    n = x.shape[-1] if n is None else n
    return np.eye(n, dtype=np.dtype(x.dtype))


def band(x, k: int, lower: bool):
    """tril(x, k) (lower) or triu(x, k) over the last two axes; 0 elsewhere (exactly,
    also where x is inf or nan)."""
    rows, cols = x.shape[-2], x.shape[-1]
    mask = np.tri(rows, cols, k, dtype=bool) if lower else ~np.tri(rows, cols, k - 1, dtype=bool)
    return ops.where(mask, x, np.zeros((), np.dtype(x.dtype)))


def diagonal(x):
    """The diagonals of the last two axes of square x: (..., n)."""
    n = x.shape[-1]
    return ops.sum(x * eye_like(x), axis=-1) if n else ops.sum(x, axis=-1)


def diag_embed(d, like=None):
    """(..., n) -> (..., n, n) diagonal matrices."""
    n = d.shape[-1]
    return ops.expand_dims(d, -2) * np.eye(n, dtype=np.dtype(d.dtype))


def trace_of_product(m, t):
    """tr(m^T t) = sum(m * t) over the last two axes (no conjugation)."""
    return ops.sum(m * t, axis=(-2, -1))


def as_complex(x, like):
    """x (real) as a complex array when like is complex (imaginary part 0)."""
    return ops.complex_from_parts(x, ops.zeros_like(x)) if is_complex(like) else x


def expand_batch(s):
    """(...) -> (..., 1, 1), to scale matrices by one number per batch element."""
    return ops.expand_dims(s, (-2, -1))


def hermitian_from(a, lower: bool):
    """The symmetric (Hermitian) matrix LAPACK reads from one triangle of a: the
    strict triangle, its (conjugate) transpose, and the real part of the diagonal."""
    strict = band(a, -1, True) if lower else band(a, 1, False)
    if not is_complex(a):
        return strict + mT(strict) + a * eye_like(a)
    diag = as_complex(ops.real(a), a) * eye_like(a)
    return strict + mH(strict) + diag


def hermitian_from_vjp(g, lower: bool):
    """The transpose of ``hermitian_from``: the strict triangle of g + g^H and the real
    part of g's diagonal."""
    both = g + mH(g)
    strict = band(both, -1, True) if lower else band(both, 1, False)
    if not is_complex(g):
        return strict + g * eye_like(g)
    return strict + as_complex(ops.real(g), g) * eye_like(g)


def inverse(a):
    """a^-1 as solve(a, I)."""
    return ops.solve(a, eye_like(a))


# -- solve -------------------------------------------------------------------------------
@vjp_rule(ops.solve)
def solve_vjp(z, g, a, b):
    """z = a^-1 b;  db = a^-T g = solve(a^T, g);  da = -db z^T"""
    gb = ops.solve(mT(a), g)
    return -(gb @ mT(z)), gb


@jvp_rule(ops.solve)
def solve_jvp(z, a, b):
    """z = a^-1 b;  dz = solve(a, db - da z)"""
    return (lambda t: -ops.solve(a, t @ z)), (lambda t: ops.solve(a, t))


# -- triangular solve --------------------------------------------------------------------
def _triangle(x, lower, unit_diagonal):
    """The triangle of x a triangular solve reads (strict with a unit diagonal)."""
    k = (-1 if lower else 1) if unit_diagonal else 0
    return band(x, k, lower)


def _op_of(t, trans):
    return t if trans == 0 else mT(t) if trans == 1 else mH(t)


@vjp_rule(ops.triangular_solve)
def triangular_solve_vjp(z, g, a, b, lower, trans, unit_diagonal):
    """z = M^-1 b, M = op(T) (T: a's triangle, op: identity, ^T or ^H per trans);
    db = M^-T g (a triangular solve with the transposed op; conj(T) for trans 2);
    dM = -db z^T;  da = the triangle of op^T(dM) (conj(dM^T) for trans 2)"""
    if trans == 2 and is_complex(a):
        gb = ops.triangular_solve(ops.conj(a), g, lower, 0, unit_diagonal)
    else:
        gb = ops.triangular_solve(a, g, lower, 0 if trans else 1, unit_diagonal)
    gm = -(gb @ mT(z))
    gt = gm if trans == 0 else mT(gm) if trans == 1 else conj(mT(gm))
    return _triangle(gt, lower, unit_diagonal), gb


@jvp_rule(ops.triangular_solve)
def triangular_solve_jvp(z, a, b, lower, trans, unit_diagonal):
    """z = M^-1 b, M = op(T);  dz = M^-1 (db - op(dT) z), dT the triangle of da"""

    def da(t):
        dm = _op_of(_triangle(t, lower, unit_diagonal), trans)
        return -ops.triangular_solve(a, dm @ z, lower, trans, unit_diagonal)

    return da, (lambda t: ops.triangular_solve(a, t, lower, trans, unit_diagonal))


# -- cholesky ----------------------------------------------------------------------------
def _phi(x):
    """The lower triangle with its diagonal halved."""
    return band(x, -1, True) + 0.5 * (x * eye_like(x))


@vjp_rule(ops.cholesky)
def cholesky_vjp(z, g, a):
    """L = chol(S), S Hermitian from a's lower triangle;  dL = L phi(L^-1 dS L^-H), phi:
    lower triangle, half diagonal;  its transpose: dS = L^-T phi(L^T g) conj(L)^-1 (two
    triangular solves), then da = the strict lower triangle of dS + dS^H and the real part
    of dS's diagonal"""
    w = ops.triangular_solve(z, _phi(mT(z) @ g), True, 1)
    ds = mT(ops.triangular_solve(z, mT(w), True, 2))
    return (hermitian_from_vjp(ds, True),)


@jvp_rule(ops.cholesky)
def cholesky_jvp(z, a):
    """L = chol(S);  dL = L phi(L^-1 dS L^-H), dS Hermitian from da's lower triangle
    (L^-1 dS L^-H by two triangular solves)"""

    def d(t):
        y = ops.triangular_solve(z, hermitian_from(t, True), True, 0)
        x = mH(ops.triangular_solve(z, mH(y), True, 0))
        return z @ _phi(x)

    return (d,)


# -- determinants ------------------------------------------------------------------------
@vjp_rule(ops.slogdet)
def slogdet_vjp(z, g, a):
    """(s, l) = slogdet(a), l = log|det a|;  dl = Re tr(a^-1 da), ds = s i Im tr(a^-1 da)
    (0 for real a, where s is piecewise constant);  da = (gl + i Im(gs s)) a^-T"""
    gs, gl = g
    inv_t = mT(inverse(a))
    if not is_complex(a):
        return (expand_batch(gl) * inv_t,)
    sign = parts(z)[0]
    coeff = ops.complex_from_parts(gl, ops.imag(gs * sign))
    return (expand_batch(coeff) * inv_t,)


@jvp_rule(ops.slogdet)
def slogdet_jvp(z, a):
    """(s, l) = slogdet(a);  dl = Re tr(a^-1 da);  ds = s i Im tr(a^-1 da) (0 for real a)"""
    inv_t = mT(inverse(a))
    sign = ops.slogdet(a)[0] if is_complex(a) else None

    def d(t):
        tr = trace_of_product(inv_t, t)
        if sign is None:
            return ops.zeros_like(tr), tr
        return sign * ops.complex_from_parts(ops.zeros_like(ops.real(tr)), ops.imag(tr)), \
            ops.real(tr)

    return (d,)


@vjp_rule(ops.det)
def det_vjp(z, g, a):
    """z = det a;  dz = tr(adj(a) da);  da = g adj(a)^T (the cofactor matrix: exact also for
    singular a)"""
    return (expand_batch(g) * mT(ops.adjugate(a)),)


@jvp_rule(ops.det)
def det_jvp(z, a):
    """z = det a;  dz = tr(adj(a) da)"""
    cof = mT(ops.adjugate(a))
    return (lambda t: trace_of_product(cof, t),)


@vjp_rule(ops.adjugate)
def adjugate_vjp(z, g, a):
    """z = adj(a) = det(a) a^-1;  dz = tr(z da) a^-1 - a^-1 da z (a invertible);
    da = sum(g * a^-1) z^T - a^-T g z^T"""
    inv = inverse(a)
    return (expand_batch(trace_of_product(g, inv)) * mT(z) - mT(inv) @ g @ mT(z),)


@jvp_rule(ops.adjugate)
def adjugate_jvp(z, a):
    """z = adj(a);  dz = tr(z da) a^-1 - a^-1 da z  (a invertible)"""
    inv = inverse(a)
    zt = mT(z)
    return (lambda t: expand_batch(trace_of_product(zt, t)) * inv - inv @ t @ z,)
