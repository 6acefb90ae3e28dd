"""Rules of ``ops/complex.py``, JAX's convention: for real-valued f of z = x + iy,
grad f = df/dx - i df/dy; a VJP is the transpose of the derivative, never
conjugated (for holomorphic f it is ct * f'(z))."""

from __future__ import annotations

from .. import ops
from .registry import jvp_rule, vjp_rule


def _complex(real_part, like):
    """real_part as a complex array of like's dtype (0 imaginary part)."""
    return ops.complex_from_parts(real_part, ops.zeros_like(real_part)) if (
        like.dtype.kind == "c") else real_part


@vjp_rule(ops.real)
def real_vjp(z, g, x):
    """z = Re(x);  dx = g (as a complex number when x is complex)"""
    return (_complex(g, x),)


@jvp_rule(ops.real)
def real_jvp(z, x):
    """z = Re(x);  dz = Re(dx)"""
    return (lambda t: ops.real(t),)


@vjp_rule(ops.imag)
def imag_vjp(z, g, x):
    """z = Im(x);  dx = -i g  (df/dx - i df/dy with f = y)"""
    if x.dtype.kind != "c":
        return (None,)
    return (ops.complex_from_parts(ops.zeros_like(g), -g),)


@jvp_rule(ops.imag)
def imag_jvp(z, x):
    """z = Im(x);  dz = Im(dx)"""
    return (lambda t: ops.imag(t),)


@vjp_rule(ops.conj)
def conj_vjp(z, g, x):
    """z = conj(x);  dx = conj(g)"""
    return (ops.conj(g),)


@jvp_rule(ops.conj)
def conj_jvp(z, x):
    """z = conj(x);  dz = conj(dx)"""
    return (lambda t: ops.conj(t),)


@vjp_rule(ops.angle)
def angle_vjp(z, g, x):
    """z = arg(x);  dx = -i g conj(x) / |x|^2  (0 for real x, whose angle is constant)"""
    if x.dtype.kind != "c":
        return (None,)
    return (g * ops.complex_from_parts(ops.zeros_like(g), -ops.ones_like(g))
            * ops.conj(x) / (x * ops.conj(x)),)


@jvp_rule(ops.angle)
def angle_jvp(z, x):
    """z = arg(x);  dz = Im(conj(x) dx) / |x|^2"""
    if x.dtype.kind != "c":
        return (None,)
    r2 = ops.real(x * ops.conj(x))
    return (lambda t: ops.imag(ops.conj(x) * t) / r2,)


@vjp_rule(ops.complex_from_parts)
def complex_vjp(z, g, x, y):
    """z = x + i y;  dx = Re(g);  dy = -Im(g)  (the transpose of (x, y) -> x + iy)"""
    return ops.real(g), -ops.imag(g)


@jvp_rule(ops.complex_from_parts)
def complex_jvp(z, x, y):
    """z = x + i y;  dz = dx + i dy"""
    return ((lambda t: ops.complex_from_parts(t, ops.zeros_like(t))),
            (lambda t: ops.complex_from_parts(ops.zeros_like(t), t)))
