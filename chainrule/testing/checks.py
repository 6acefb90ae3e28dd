"""Gradient checking against central finite differences (float64).

``check_grads(f, args, order=2, modes=("fwd", "rev"))`` checks every
composition of the requested modes up to ``order``, as JAX's check_grads
does: reverse mode by the inner-product identity <u, J v> = <J^T u, v>
with random u and v, forward mode by J v against the difference quotient.
Complex values count as pairs of reals: the inner product is Re(conj(u) . v),
and since a VJP applies the transpose (JAX's convention), the adjoint that the
identity needs is conj(pullback(conj(u))).
"""

from __future__ import annotations

import numpy as np

from ..errors import ChainruleError
from ..tree import flatten, unflatten


class GradientCheckError(ChainruleError, AssertionError):
    """A derivative disagrees with finite differences."""


def _random_like(tree, rng):
    leaves, td = flatten(tree)
    out = []
    for x in leaves:
        x = np.asarray(x)
        if np.issubdtype(x.dtype, np.complexfloating):
            out.append((rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape))
                       .astype(x.dtype))
        elif np.issubdtype(x.dtype, np.inexact):
            out.append(rng.standard_normal(x.shape).astype(x.dtype))
        else:
            out.append(np.zeros(x.shape, x.dtype))
    return unflatten(td, out)


def _axpy(a, x, y):
    lx, td = flatten(x)
    ly, _ = flatten(y)
    out = []
    for u, v in zip(lx, ly):
        u, v = np.asarray(u), np.asarray(v)
        out.append(u + a * v if np.issubdtype(u.dtype, np.inexact) else u)
    return unflatten(td, out)


def _vdot(x, y) -> float:
    """Re(conj(x) . y) summed over the leaves: the real inner product."""
    total = 0.0
    for u, v in zip(flatten(x)[0], flatten(y)[0]):
        if u is None or v is None:
            continue
        u, v = np.asarray(u), np.asarray(v)
        if np.issubdtype(u.dtype, np.inexact) and np.issubdtype(v.dtype, np.inexact):
            total += float(np.real(np.vdot(u.astype(np.complex128), v.astype(np.complex128))))
    return total


def _conj(tree):
    leaves, td = flatten(tree)
    return unflatten(td, [None if x is None else np.conj(x) if np.iscomplexobj(x) else x
                          for x in leaves])


def _wide(x) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _check_close(what: str, ad: float, fd: float, atol: float, rtol: float) -> None:
    if not abs(ad - fd) <= atol + rtol * max(abs(ad), abs(fd)):
        raise GradientCheckError(f"{what}: automatic {ad!r} vs finite differences {fd!r} "
                                 f"(difference {abs(ad - fd):.3g})")


def _numerical_jvp(f, args, tangents, eps):
    plus = f(*_axpy(eps, args, tangents))
    minus = f(*_axpy(-eps, args, tangents))
    lp, td = flatten(plus)
    lm, _ = flatten(minus)
    return unflatten(td, [(_wide(p) - _wide(m)) / (2 * eps) for p, m in zip(lp, lm)])


def check_vjp(f, args, rng, eps=1e-6, atol=1e-5, rtol=1e-5) -> None:
    """Reverse mode of ``f`` at ``args`` against central differences: for random u, v,
    <u, J v> (differences along v) equals <pullback(u), v>; raises GradientCheckError."""
    from ..api.reverse import vjp

    out, pullback = vjp(f, *args)
    u = _random_like(out, rng)
    v = _random_like(tuple(args), rng)
    fd = _vdot(u, _numerical_jvp(f, args, v, eps))
    # an argument with no cotangent (None: an integer argument) counts as zeros, so the
    # leaves of the cotangents and of v stay aligned
    cts = tuple(np.zeros_like(np.asarray(a)) if c is None else c
                for c, a in zip(pullback(_conj(u)), args))
    ad = _vdot(_conj(cts), v)
    _check_close(f"reverse mode (VJP) check of {getattr(f, '__name__', f)} failed", ad, fd,
                 atol, rtol)


def check_jvp(f, args, rng, eps=1e-6, atol=1e-5, rtol=1e-5) -> None:
    """Forward mode of ``f`` at ``args`` against central differences along a random
    tangent v (compared through a random projection u); raises GradientCheckError."""
    from ..api import forward as api

    v = _random_like(tuple(args), rng)
    _, tangent_out = api.jvp(f, tuple(args), v)
    num = _numerical_jvp(f, args, v, eps)
    u = _random_like(num, rng)
    _check_close(f"forward mode (JVP) check of {getattr(f, '__name__', f)} failed",
                 _vdot(u, tangent_out), _vdot(u, num), atol, rtol)


def check_grads(f, args, order: int = 1, modes=("rev",), eps: float = 1e-6,
                atol: float = 1e-5, rtol: float = 1e-5, seed: int = 0) -> None:
    """Check derivatives of ``f`` at ``args`` up to ``order`` in every mode
    composition; raises ``GradientCheckError`` on a mismatch.

    >>> import numpy as np, chainrule.numpy as cnp
    >>> check_grads(lambda x: cnp.sum(cnp.sin(x) * x), (np.linspace(0.1, 1, 4),), order=2)
    """
    rng = np.random.default_rng(seed)
    args = tuple(args)
    if isinstance(modes, str):
        modes = (modes,)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ChainruleError(f"check_grads: unknown mode {mode!r}; use 'fwd' or 'rev'")

    def check(fn, fargs, order):
        for mode in modes:
            if mode == "rev":
                check_vjp(fn, fargs, rng, eps, atol, rtol)
            else:
                check_jvp(fn, fargs, rng, eps, atol, rtol)
        if order > 1:
            for mode in modes:
                check(*_derivative(fn, fargs, mode), order - 1)

    check(f, args, order)


def _derivative(f, args, mode):
    """``(df, df_args)``: the VJP (or JVP) of ``f`` as a function of ``f``'s arguments and
    of the cotangent (tangent) too, with the arguments to check it at, as autograd's
    ``check_grads`` does, so that a wrong derivative of a VJP with respect to its
    cotangent (a rule calling a primitive with a wrong rule) is caught. A cotangent with
    integer leaves stays fixed instead."""
    from ..api import forward as api_forward
    from ..api import reverse as api

    name = getattr(f, "__name__", "f")
    if mode == "rev":
        direction = _random_like(_shape_tree(f(*args)), np.random.default_rng(1))

        def df(*all_args):
            *primal, u = all_args
            return api.vjp(f, *primal)[1](u)
    else:
        direction = _random_like(_shape_tree(tuple(args)), np.random.default_rng(2))

        def df(*all_args):
            *primal, v = all_args
            return api_forward.jvp(f, tuple(primal), v)[1]

    if not all(np.issubdtype(np.asarray(x).dtype, np.inexact)
               for x in flatten(direction)[0]):
        def fixed(*primal):
            return df(*primal, direction)

        fixed.__name__ = f"{'vjp' if mode == 'rev' else 'jvp'}_{name}"
        return fixed, args
    df.__name__ = f"{'vjp' if mode == 'rev' else 'jvp'}_{name}"
    return df, (*args, direction)


def _shape_tree(tree):
    """Zeros with the shapes/dtypes of a tree of (possibly traced) values."""
    leaves, td = flatten(tree)
    return unflatten(td, [np.zeros(tuple(np.shape(x)), np.dtype(x.dtype) if hasattr(x, "dtype")
                                   else np.asarray(x).dtype) for x in leaves])
