"""Rules of ``ops/decompositions.py``: each op's VJP and JVP side by side, written with
ops (so every order works), transposes not adjoints for complex operands (JAX's
convention, see ``rules/linalg.py``).

Repeated eigenvalues / singular values. The derivatives of eigenvectors and
singular vectors involve F_ij = 1 / (w_j - w_i) (1 / (s_j^2 - s_i^2) for the SVD).
Where two values are exactly equal the vectors are not determined and their
derivative exists only for cotangents that do not rotate within the repeated
eigenspace. Reverse mode computes F_ij x_ij as 0 where x_ij is exactly 0 (say a
loss of the eigenvalues only, or a zero cotangent), and as NaN otherwise; forward
mode gives NaN entries for the vectors' tangents at such pairs (as JAX gives inf
or NaN). The value-only ops (``eigvalsh``, ``eigvals``, ``svdvals``) are always
differentiable where the values are. Nearly equal values give large but finite
derivatives, as they should. Zero singular values of non-square matrices make the
extra-column terms of the singular vectors' derivative NaN the same way.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from .linalg import (
    as_complex,
    band,
    conj,
    diag_embed,
    diagonal,
    eye_like,
    hermitian_from,
    hermitian_from_vjp,
    inverse,
    is_complex,
    mH,
    mT,
    parts,
)
from .registry import NoDerivative, jvp_rule, vjp_rule


def _dtype(x):
    return np.dtype(x.dtype)


def offdiag(x):
    return ops.where(~np.eye(x.shape[-1], dtype=bool), x, np.zeros((), _dtype(x)))


def gaps(w):
    """gaps[..., i, j] = w_j - w_i."""
    return ops.expand_dims(w, -2) - ops.expand_dims(w, -1)


def safe_divide(y, d):
    """y / d where d != 0; where d == 0: 0 if y == 0 there, else NaN (no value exists)."""
    zero = ops.equal(d, 0)
    q = y / ops.where(zero, np.ones((), _dtype(d)), d)
    fill = ops.where(ops.equal(y, 0), np.zeros((), _dtype(q)), np.array(np.nan, _dtype(q)))
    return ops.where(zero, fill, q)


def reciprocal_gaps(gap):
    """F_ij = 1 / gap_ij off the diagonal (0 on it; NaN where gap_ij = 0, i != j): the
    coefficients of forward mode's linear maps."""
    n = gap.shape[-1]
    zero = ops.equal(gap, 0)
    f = 1.0 / ops.where(zero, np.ones((), _dtype(gap)), gap)
    f = ops.where(zero, np.array(np.nan, _dtype(f)), f)
    return ops.where(~np.eye(n, dtype=bool), f, np.zeros((), _dtype(f)))


def _i_times(x_real, like):
    """i x for real x, as like's complex dtype."""
    return ops.complex_from_parts(ops.zeros_like(x_real), x_real) if is_complex(like) else None


# -- eigh / eigvalsh ---------------------------------------------------------------------
@vjp_rule(ops.eigh)
def eigh_vjp(z, g, a, lower, driver):
    """(w, V) = eigh(S), S Hermitian from one triangle of a;  dw = Re diag(V^H dS V),
    dV = V (F o (V^H dS V)), F_ij = 1/(w_j - w_i) (0 on the diagonal);  the transpose:
    dS = conj(V) (diag(gw) + F o (X - X^H)/2) V^T, X = V^T gV (only the Hermitian part of
    F o X reaches a), then da = the triangle of dS + dS^H (real diagonal)"""
    w, v = parts(z)
    gw, gv = g
    x = mT(v) @ gv
    inner = diag_embed(as_complex(gw, v)) + safe_divide(offdiag(x - mH(x)) * 0.5, gaps(w))
    return (hermitian_from_vjp(conj(v) @ inner @ mT(v), lower),)


@jvp_rule(ops.eigh)
def eigh_jvp(z, a, lower, driver):
    """(w, V) = eigh(S);  X = V^H dS V;  dw = Re diag(X);  dV = V (F o X)"""
    w, v = parts(z)
    f = reciprocal_gaps(gaps(w))

    def d(t):
        x = mH(v) @ hermitian_from(t, lower) @ v
        dw = diagonal(x)
        return (ops.real(dw) if is_complex(x) else dw), v @ (f * x)

    return (d,)


@vjp_rule(ops.eigvalsh)
def eigvalsh_vjp(z, g, a, lower, driver):
    """w = eigvalsh(S);  dw = Re diag(V^H dS V);  dS = conj(V) diag(g) V^T, then the
    triangle of dS + dS^H"""
    _, v = ops.eigh(a, lower, driver)
    ds = (conj(v) * ops.expand_dims(as_complex(g, v), -2)) @ mT(v)
    return (hermitian_from_vjp(ds, lower),)


@jvp_rule(ops.eigvalsh)
def eigvalsh_jvp(z, a, lower, driver):
    """w = eigvalsh(S);  dw = Re diag(V^H dS V)"""
    _, v = ops.eigh(a, lower, driver)

    def d(t):
        dw = ops.sum(conj(v) * (hermitian_from(t, lower) @ v), axis=-2)
        return ops.real(dw) if is_complex(dw) else dw

    return (d,)


# -- svd / svdvals -----------------------------------------------------------------------
_FULL = ("svd with full_matrices=True of a non-square matrix: the extra columns of u (or "
         "rows of vh) are not determined by a, so they have no derivative; use "
         "full_matrices=False (JAX refuses this too)")


@vjp_rule(ops.svd)
def svd_vjp(z, g, a, full_matrices):
    """a = U S V^H (k = min(m, n));  with Yu = U^T gU, Yv = V^T gV, F_ij = 1/(s_j^2 - s_i^2):
    dS = diag(gs) + F o ((Yu - Yu^H) S + S (Yv - Yv^H)) + i Im(diag Yu) S^-1 (complex);
    da = conj(U) dS V^T + (I - conj(U) U^T) gU S^-1 V^T (m > n)
    + conj(U) S^-1 gV^H (I - conj(V) V^T) (n > m)"""
    m, n = a.shape[-2:]
    if full_matrices and m != n:
        return (NoDerivative(_FULL),)
    u, s, vh = parts(z)
    gu, gs, gvh = g
    v = mH(vh)
    yu = mT(u) @ gu
    yv = mT(v) @ mH(gvh)
    s_row, s_col = ops.expand_dims(s, -2), ops.expand_dims(s, -1)
    y = (yu - mH(yu)) * s_row + s_col * (yv - mH(yv))
    s2 = s * s
    core = safe_divide(offdiag(y), gaps(s2)) + diag_embed(as_complex(gs, a))
    if is_complex(a):
        core = core + diag_embed(safe_divide(_i_times(ops.imag(diagonal(yu)), a), s))
    out = conj(u) @ core @ mT(v)
    if m > n:
        proj = gu - conj(u) @ (mT(u) @ gu)
        out = out + safe_divide(proj, s_row) @ mT(v)
    if n > m:
        proj = gvh - (gvh @ conj(v)) @ mT(v)
        out = out + conj(u) @ safe_divide(proj, s_col)
    return (out,)


@jvp_rule(ops.svd)
def svd_jvp(z, a, full_matrices):
    """a = U S V^H;  dP = U^H da V;  ds = Re diag(dP);
    dU = U (F o (dP S + S dP^H) + i Im(diag dP) S^-1) + (I - U U^H) da V S^-1 (m > n);
    dV = V (F o (S dP + dP^H S)) + (I - V V^H) da^H U S^-1 (n > m)"""
    m, n = a.shape[-2:]
    if full_matrices and m != n:
        return (NoDerivative(_FULL),)
    u, s, vh = parts(z)
    v = mH(vh)
    f = reciprocal_gaps(gaps(s * s))
    s_row, s_col = ops.expand_dims(s, -2), ops.expand_dims(s, -1)

    def d(t):
        dp = mH(u) @ t @ v
        ds = diagonal(dp)
        dps, sdp = dp * s_row, s_col * dp
        inner_u = f * (dps + mH(dps))
        if is_complex(dp):
            ds = ops.real(ds)
            inner_u = inner_u + diag_embed(_i_times(ops.imag(diagonal(dp)), dp) / s)
        du = u @ inner_u
        dv = v @ (f * (sdp + mH(sdp)))
        if m > n:
            tv = t @ v
            du = du + (tv - u @ (mH(u) @ tv)) / s_row
        if n > m:
            tu = mH(t) @ u
            dv = dv + (tu - v @ (vh @ tu)) / s_row
        return du, ds, mH(dv)

    return (d,)


@vjp_rule(ops.svdvals)
def svdvals_vjp(z, g, a):
    """s = svdvals(a) (a = U S V^H);  ds = Re diag(U^H da V);  da = conj(U) diag(g) V^T"""
    u, _, vh = ops.svd(a, False)
    return ((conj(u) * ops.expand_dims(as_complex(g, a), -2)) @ conj(vh),)


@jvp_rule(ops.svdvals)
def svdvals_jvp(z, a):
    """s = svdvals(a);  ds = Re diag(U^H da V)"""
    u, _, vh = ops.svd(a, False)

    def d(t):
        ds = ops.sum(conj(u) * (t @ mH(vh)), axis=-2)
        return ops.real(ds) if is_complex(ds) else ds

    return (d,)


# -- qr ----------------------------------------------------------------------------------
def _qr_refused(a, mode):
    m, n = a.shape[-2:]
    if m < n:
        return NoDerivative("qr of a wide matrix (m < n): the derivative is implemented for "
                            "square and tall matrices only")
    if mode == "complete" and m > n:
        return NoDerivative("qr with mode='complete' of a tall matrix: the extra columns of "
                            "q are not determined by a; use mode='reduced'")
    return None


@vjp_rule(ops.qr)
def qr_vjp(z, g, a, mode):
    """a = Q R (m >= n);  Y = da R^-1, Z = Q^H Y, O = L - L^H + i Im(diag Z) (L: strict
    lower triangle of Z);  dQ = Q (O - Z) + Y, dR = (Z - O) R;  the transpose: with
    W = gR R^T, T = Q^T gQ: O' = T - W, Z' = W - T + tril(O' - O'^H, -1) + i Im(diag O'),
    Y' = gQ + conj(Q) Z', da = Y' R^-T"""
    refused = _qr_refused(a, mode)
    if refused is not None:
        return (refused,)
    q, r = parts(z)
    gq, gr = g
    w = gr @ mT(r)
    t = mT(q) @ gq
    o_bar = t - w
    z_bar = w - t + band(o_bar - mH(o_bar), -1, True)
    if is_complex(a):
        z_bar = z_bar + eye_like(a, n=r.shape[-1]) * _i_times(ops.imag(o_bar), a)
    y_bar = gq + conj(q) @ z_bar
    return (mT(ops.triangular_solve(r, mT(y_bar), False, 0)),)


@jvp_rule(ops.qr)
def qr_jvp(z, a, mode):
    """a = Q R;  Y = da R^-1, Z = Q^H Y, O = tril(Z, -1) - tril(Z, -1)^H + i Im(diag Z);
    dQ = Q (O - Z) + Y;  dR = (Z - O) R"""
    refused = _qr_refused(a, mode)
    if refused is not None:
        return (refused,)
    q, r = parts(z)

    def d(t):
        y = mT(ops.triangular_solve(r, mT(t), False, 1))
        zz = mH(q) @ y
        low = band(zz, -1, True)
        o = low - mH(low)
        if is_complex(zz):
            o = o + eye_like(zz) * _i_times(ops.imag(zz), zz)
        return q @ (o - zz) + y, (zz - o) @ r

    return (d,)


# -- eig / eigvals -----------------------------------------------------------------------
def _largest_component(v):
    """A boolean mask of each column's entry of largest modulus (where geev makes the
    column real), and that entry's (real) value."""
    n = v.shape[-2]
    k = ops.argmax(ops.abs(v), axis=-2)
    onehot = ops.equal(np.arange(n)[:, None], ops.expand_dims(k, -2))
    value = ops.real(ops.sum(ops.where(onehot, v, np.zeros((), _dtype(v))), axis=-2))
    return onehot, value


@vjp_rule(ops.eig)
def eig_vjp(z, g, a):
    """a V = V diag(w);  X = V^-1 da V;  dw = diag(X);  R = V (F o X), F_ij = 1/(w_j - w_i);
    dV = R + V diag(c), c_j = -Re(v_j^H r_j) - i Im(r_kj) / v_kj (unit columns whose largest
    component v_kj stays real, geev's normalization);  the transpose: c' = diag(V^T gV),
    R' = gV - conj(V) diag(Re c') - i E diag(Im c' / v_k) (E: the largest components),
    da = V^-T (diag(gw) + F o (V^T R')) V^T"""
    w, v = parts(z)
    gw, gv = g
    onehot, vk = _largest_component(v)
    c_bar = ops.sum(v * gv, axis=-2)
    r_bar = (gv - conj(v) * ops.expand_dims(as_complex(ops.real(c_bar), v), -2)
             + ops.where(onehot, ops.expand_dims(_i_times(-ops.imag(c_bar) / vk, v), -2),
                         np.zeros((), _dtype(v))))
    inner = diag_embed(gw) + safe_divide(offdiag(mT(v) @ r_bar), gaps(w))
    return (mT(inverse(v)) @ inner @ mT(v),)


@jvp_rule(ops.eig)
def eig_jvp(z, a):
    """a V = V diag(w);  X = V^-1 da V;  dw = diag(X);  dV = V (F o X) + V diag(c), c fixing
    the unit norm and the real largest component (see the VJP)"""
    w, v = parts(z)
    vi = inverse(v)
    f = reciprocal_gaps(gaps(w))
    onehot, vk = _largest_component(v)

    def d(t):
        x = vi @ t @ v
        r = v @ (f * x)
        q = ops.sum(conj(v) * r, axis=-2)
        p = ops.sum(ops.where(onehot, r, np.zeros((), _dtype(r))), axis=-2)
        c = ops.complex_from_parts(-ops.real(q), -ops.imag(p) / vk)
        return diagonal(x), r + v * ops.expand_dims(c, -2)

    return (d,)


@vjp_rule(ops.eigvals)
def eigvals_vjp(z, g, a):
    """w = eigvals(a) (a V = V diag(w));  dw = diag(V^-1 da V);  da = V^-T diag(g) V^T"""
    _, v = ops.eig(a)
    return ((mT(inverse(v)) * ops.expand_dims(g, -2)) @ mT(v),)


@jvp_rule(ops.eigvals)
def eigvals_jvp(z, a):
    """w = eigvals(a);  dw = diag(V^-1 da V)"""
    _, v = ops.eig(a)
    vi_t = mT(inverse(v))
    return (lambda t: ops.sum(vi_t * (t @ v), axis=-2),)


# -- pinv --------------------------------------------------------------------------------
def _untruncated(a, p):
    """1 where pinv kept every singular value of a above 1e-8 of the largest (a P a = a to
    that accuracy), NaN where rcond cut off larger ones: there the pseudo-inverse is that
    of a truncated matrix, whose derivative is not the constant-rank formula's."""
    real = np.empty(0, _dtype(a)).real.dtype
    size = ops.sum(ops.abs(a) ** 2, axis=(-2, -1))
    rest = a - a @ p @ a
    lost = ops.sum(ops.abs(rest) ** 2, axis=(-2, -1))
    ok = ops.less_equal(lost, size * 1e-16)
    return ops.expand_dims(ops.where(ok, np.ones((), real), np.array(np.nan, real)), (-2, -1))


@vjp_rule(ops.pinv)
def pinv_vjp(z, g, a, rcond, hermitian):
    """P = pinv(a) (rank constant near a);  dP = -P da P + P P^H da^H (I - a P)
    + (I - P a) da^H P^H P;  da = -P^T g P^T + conj(I - a P) g^H conj(P P^H)
    + conj(P^H P) g^H conj(I - P a)  (NaN where rcond cut off singular values above 1e-8
    of the largest)"""
    p = z
    m, n = a.shape[-2:]
    left = np.eye(m, dtype=_dtype(z)) - a @ p
    right = np.eye(n, dtype=_dtype(z)) - p @ a
    gh = mH(g)
    return ((-(mT(p) @ g @ mT(p)) + conj(left) @ gh @ conj(p @ mH(p))
             + conj(mH(p) @ p) @ gh @ conj(right)) * _untruncated(a, p),)


@jvp_rule(ops.pinv)
def pinv_jvp(z, a, rcond, hermitian):
    """P = pinv(a);  dP = -P da P + P P^H da^H (I - a P) + (I - P a) da^H P^H P  (NaN where
    rcond cut off singular values above 1e-8 of the largest)"""
    p = z
    m, n = a.shape[-2:]
    left = np.eye(m, dtype=_dtype(z)) - a @ p
    right = np.eye(n, dtype=_dtype(z)) - p @ a
    pph, php = p @ mH(p), mH(p) @ p
    scale = _untruncated(a, p)
    return (lambda t: (-(p @ t @ p) + pph @ mH(t) @ left + right @ mH(t) @ php) * scale,)


# -- expm --------------------------------------------------------------------------------
def frechet_expm(a, e):
    """The Frechet derivative L(a, e) of expm at a along e: the upper right block of
    expm([[a, e], [0, a]]) (Najfeld and Havel; an expm of twice the size)."""
    n = a.shape[-1]
    zeros = ops.zeros_like(a)
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(e.shape)))
    if tuple(a.shape) != shape:
        a, zeros = ops.broadcast_to(a, shape), ops.broadcast_to(zeros, shape)
    if tuple(e.shape) != shape:
        e = ops.broadcast_to(e, shape)
    top = ops.concatenate(a, e, axis=-1)
    bottom = ops.concatenate(zeros, a, axis=-1)
    big = ops.expm(ops.concatenate(top, bottom, axis=-2))
    return big[..., :n, n:]


@vjp_rule(ops.expm)
def expm_vjp(z, g, a):
    """z = expm(a);  dz = L(a, da) (the Frechet derivative);  da = L(a^T, g) (its
    transpose; the block-matrix identity again)"""
    return (frechet_expm(mT(a), g),)


@jvp_rule(ops.expm)
def expm_jvp(z, a):
    """z = expm(a);  dz = L(a, da) = the upper right block of expm([[a, da], [0, a]])"""
    return (lambda t: frechet_expm(a, t),)
