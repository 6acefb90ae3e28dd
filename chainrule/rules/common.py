"""Helpers shared by the rule families: reshaping reduced cotangents, products
of the other elements, swapping the last two axes."""

from __future__ import annotations

import functools

import numpy as np

from .. import ops
from ..emit.trace import Traced, current_trace
from ..errors import GradientError
from ..ir import dims
from ..ir.types import DType
from .registry import NoDerivative, jvp_rule, vjp_rule


def zeros_as(x):
    """Zeros of ``x``'s shape and dtype, made from its type alone when the shape is
    static: a JVP map that needs a zero base (a scatter's) then does not keep the
    value ``x`` alive, or computed, only for its shape."""
    shape = tuple(x.shape)
    if all(type(d) is int for d in shape):
        return ops.zeros(shape=shape, dtype=x.dtype)
    return ops.zeros_like(x)


def keepdims_shape(shape, axis) -> tuple:
    axes = range(len(shape)) if axis is None else axis
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def expand_reduced(g, x_shape, axis, keepdims):
    """The cotangent of a reduction, reshaped so it broadcasts against x (no
    reshape when the reduced axes lead: trailing axes already line up)."""
    if keepdims or axis is None or tuple(axis) == tuple(range(len(axis))):
        return g
    return ops.reshape(g, keepdims_shape(x_shape, axis))


def reduced_count(shape, axis) -> int | None:
    """How many elements a reduction over ``axis`` combines; None when one of those
    dimensions is a symbol (its size is only known at run time)."""
    axes = range(len(shape)) if axis is None else axis
    if any(isinstance(shape[a], str) for a in axes):
        return None
    return int(np.prod([shape[a] for a in (range(len(shape)) if axis is None else axis)]))


def element_count(x, axes, dtype, keepdims: bool = False):
    """How many elements of ``x`` a reduction over ``axes`` (None: all) combines: an
    int when those dimensions are static, else (a symbolic dimension, ``f64[n, 3]``)
    the count computed when the program runs, of ``dtype``, shaped as the reduction's
    result with 1s elsewhere (it broadcasts wherever that result does).

    The count sums ones over the reduced axes only (``ones(shape=(n, 1))``, sized at
    run time); x itself is not read, so it is a constant of linear programs."""
    shape = x.shape
    axes = tuple(range(len(shape))) if axes is None else tuple(axes)
    if not any(isinstance(shape[a], str) for a in axes):
        return int(np.prod([shape[a] for a in axes], dtype=np.int64))
    attrs = {"shape": tuple(d if a in axes else 1 for a, d in enumerate(shape)),
             "dtype": DType(dtype)}
    # a nullary op: emitted into the trace of x (or the pass's, when x is a linear
    # operand being transposed); a symbolic shape is never computed eagerly
    trace = x.tracer if isinstance(x, Traced) else current_trace()
    if trace is None:
        raise GradientError(f"the size of the symbolic axes {axes} of {x!r} is only known "
                            f"in a traced program")
    ones = trace.wrap(trace.builder.call(ops.ones, [], attrs))
    return ops.sum(ones, axis=axes, keepdims=keepdims)


def prod_others(x, axis):
    """prod_{j != i} x_j over the reduced axes, for every i (exclusive scans from
    both ends, so exact where x has zeros); shaped like x."""
    axes = tuple(range(x.ndim)) if axis is None else axis
    rest = tuple(a for a in range(x.ndim) if a not in axes)
    order = rest + axes
    moved = ops.permute_dims(x, order)
    lead = tuple(x.shape[a] for a in rest)
    # the reduced length: an int, or an expression of symbols (a scan in a loop then)
    n = functools.reduce(dims.mul, (x.shape[a] for a in axes), 1)
    flat = ops.reshape(moved, lead + (n,))
    left = ops.prefix_product(flat, -1, exclusive=True)
    right = ops.flip(ops.prefix_product(ops.flip(flat, -1), -1, exclusive=True), -1)
    others = ops.reshape(left * right, tuple(moved.shape))
    return ops.permute_dims(others, tuple(int(i) for i in np.argsort(order)))


def swap_last(x):
    """x with its last two axes exchanged."""
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return ops.permute_dims(x, tuple(axes))


def linear_self(op):
    """The JVP rule of an op linear in its single operand: dz = op(dx)."""

    def rule(z, x, **attrs):
        return (lambda t: op(t, **attrs),)

    rule.__doc__ = f"z = {op.name}(x);  dz = {op.name}(dx)  (linear)"
    return rule


# -- rules from partial derivatives -----------------------------------------------------


def partials_rules(op, slopes, doc: str) -> None:
    """The VJP and JVP rules of z = f(operands) with partial derivatives
    slopes(z, *operands) (None for an identically zero one, a NoDerivative where there is
    none): d_i = g f_i;  dz = sum_i t_i f_i. ``doc`` (the math) is both rules' docstring."""

    def vjp(z, g, *xs):
        return tuple(s if s is None or isinstance(s, NoDerivative) else g * s
                     for s in slopes(z, *xs))

    def jvp(z, *xs):
        return tuple(s if s is None or isinstance(s, NoDerivative) else
                     (lambda t, s=s: t * s) for s in slopes(z, *xs))

    vjp.__doc__ = jvp.__doc__ = doc
    vjp_rule(op)(vjp)
    jvp_rule(op)(jvp)


def unary_rules(op, slope, doc: str) -> None:
    """Rules of z = f(x) with f'(x) = slope(z, x): dx = g f'(x);  dz = dx f'(x)."""
    partials_rules(op, lambda z, x: (slope(z, x),), doc)


def unary_divide_rules(op, divisor, doc: str) -> None:
    """Rules of z = f(x) with f'(x) = 1 / divisor(z, x) (a division, not a reciprocal
    times: one op fewer and no rounding of 1 / d)."""

    def vjp(z, g, x):
        return (g / divisor(z, x),)

    def jvp(z, x):
        return (lambda t: t / divisor(z, x),)

    vjp.__doc__ = jvp.__doc__ = doc
    vjp_rule(op)(vjp)
    jvp_rule(op)(jvp)
