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
from .shape import concatenate, ones_like

# the scan along an axis of symbolic length is a loop, which the frontend emits (a layer
# above: chainrule/frontend/symbolic_scan.py registers it here)
SYMBOLIC_SCAN: list = []


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
        if not SYMBOLIC_SCAN:
            raise TypeInferenceError(
                f"prefix product along the symbolic axis {axis} of {x.type!r}: its loop is "
                f"emitted by chainrule.frontend (import chainrule)")
        return SYMBOLIC_SCAN[0](x, axis, exclusive)
    d = 1
    while d < n:
        x = concatenate(_part(x, axis, 0, d),
                        multiply(_part(x, axis, d, None), _part(x, axis, 0, n - d)), axis=axis)
        d *= 2
    if exclusive:
        x = concatenate(ones_like(_part(x, axis, 0, 1)), _part(x, axis, 0, n - 1), axis=axis)
    return x
