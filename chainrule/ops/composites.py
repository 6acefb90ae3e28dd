"""Functions of several ops that rules and the user namespace both need.

They are written with op calls only, so they compute on arrays, emit IR on
traced values and record on tape tensors, and differentiate to any order.

>>> import numpy as np
>>> prefix_product(np.array([1.0, 2.0, 3.0, 4.0]), 0)
array([ 1.,  2.,  6., 24.])
"""

from __future__ import annotations

from ..errors import TypeInferenceError
from ..ir.indexing import Slice
from .elementwise import multiply
from .indexing import index
from .reduction import sum as _sum
from .shape import concatenate, ones_like


def element_count(x, axes, dtype, keepdims: bool = False):
    """How many elements of ``x`` a reduction over ``axes`` (None: all) combines: an
    int when those dimensions are static, else (a symbolic dimension, ``f64[n, 3]``)
    the count computed when the program runs, of ``dtype``, shaped as the reduction's
    result (it broadcasts wherever that result does)."""
    shape = x.shape
    axes = tuple(range(len(shape))) if axes is None else tuple(axes)
    if not any(isinstance(shape[a], str) for a in axes):
        n = 1
        for a in axes:
            n *= int(shape[a])
        return n
    return _sum(ones_like(x, dtype=dtype), axis=axes, keepdims=keepdims)


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
        raise TypeInferenceError(
            f"prefix product (cumprod, and the derivative of prod) along the symbolic axis "
            f"{axis} of {x.type!r} is not supported: its scan is unrolled over the axis "
            f"length")
    d = 1
    while d < n:
        x = concatenate(_part(x, axis, 0, d),
                        multiply(_part(x, axis, d, None), _part(x, axis, 0, n - d)), axis=axis)
        d *= 2
    if exclusive:
        x = concatenate(ones_like(_part(x, axis, 0, 1)), _part(x, axis, 0, n - 1), axis=axis)
    return x
