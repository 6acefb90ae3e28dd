"""Helpers shared by the rule families: reshaping reduced cotangents, products
of the other elements, swapping the last two axes."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import GradientError


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
    if any(type(shape[a]) is str for a in axes):
        return None
    return int(np.prod([shape[a] for a in (range(len(shape)) if axis is None else axis)]))


def prod_others(x, axis):
    """prod_{j != i} x_j over the reduced axes, for every i (exclusive scans from
    both ends, so exact where x has zeros); shaped like x."""
    axes = tuple(range(x.ndim)) if axis is None else axis
    rest = tuple(a for a in range(x.ndim) if a not in axes)
    order = rest + axes
    moved = ops.permute_dims(x, order)
    lead = tuple(x.shape[a] for a in rest)
    n = reduced_count(x.shape, axes)
    if n is None:  # the scans below are unrolled over the reduced length
        raise GradientError(f"prod: the derivative of a product over the symbolic axes "
                            f"{axes} of {x.type!r} is not supported (its exact form with "
                            f"zeros is a scan unrolled over the axis length)")
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
