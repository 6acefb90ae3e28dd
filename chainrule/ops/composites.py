"""Functions of several ops that rules and the user namespace both need.

They are written with op calls only, so they compute on arrays, emit IR on
traced values and record on tape tensors, and differentiate to any order.

>>> import numpy as np
>>> prefix_product(np.array([1.0, 2.0, 3.0, 4.0]), 0)
array([ 1.,  2.,  6., 24.])
"""

from __future__ import annotations

from ..ir.indexing import ArrayIndex, Slice
from .elementwise import multiply
from .indexing import index
from .shape import concatenate, ones_like


def _part(x, axis: int, lo, hi):
    full = Slice(None, None, None)
    return index(x, key=(full,) * axis + (Slice(lo, hi, None),))


def prefix_product(x, axis: int, exclusive: bool = False):
    """The inclusive (or exclusive) product scan along ``axis``: a log-depth
    (Hillis-Steele) scan of multiplies, so every derivative order is exact
    even where ``x`` has zeros."""
    shape = x.shape
    axis = axis % len(shape)
    n = shape[axis]
    if isinstance(n, str):
        return _symbolic_prefix_product(x, axis, exclusive)
    d = 1
    while d < n:
        x = concatenate(_part(x, axis, 0, d),
                        multiply(_part(x, axis, d, None), _part(x, axis, 0, n - d)), axis=axis)
        d *= 2
    if exclusive:
        x = concatenate(ones_like(_part(x, axis, 0, 1)), _part(x, axis, 0, n - 1), axis=axis)
    return x


def _symbolic_prefix_product(x, axis: int, exclusive: bool):
    """The same scan along an axis of symbolic length n (``polymorphic_shapes``): the
    log-depth steps in a loop that runs while the shift is less than n (known when the
    program runs), each a multiply by the array shifted along the axis (ones shifted in),
    so it stays exact where ``x`` has zeros and differentiates as a loop."""
    from ..frontend.control import while_loop
    from .elementwise import greater_equal, less, maximum, subtract, where
    from .reduction import cumsum, sum
    from .shape import ones, reshape

    n = x.shape[axis]
    count = ones(shape=(n,), dtype="i64")
    positions = subtract(cumsum(count, axis=0), 1)  # 0, 1, ..., n-1
    length = sum(count)
    bcast = tuple(n if a == axis else 1 for a in range(len(x.shape)))
    full = Slice(None, None, None)

    def shifted(v, d):
        source = subtract(positions, d)
        taken = index(v, maximum(source, 0), key=(full,) * axis + (ArrayIndex(0),))
        return where(reshape(greater_equal(source, 0), bcast), taken, ones_like(v))

    def step(carry):
        v, d = carry
        return multiply(v, shifted(v, d)), multiply(d, 2)

    one = sum(ones(shape=(1,), dtype="i64"))  # the shift, a value of the program
    out, _ = while_loop(lambda carry: less(carry[1], length), step, (x, one))
    return shifted(out, one) if exclusive else out
