"""The product scan (``cumprod``, and the derivative of ``prod``) along an axis of
symbolic length n (``polymorphic_shapes``): ``ops.composites.prefix_product``
unrolls its log-depth steps over a static length; here they run in a loop while
the shift is less than n, which the program counts when it runs.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> f = cr.jit(lambda x: cnp.cumprod(x, axis=0), polymorphic_shapes="(n,)")
>>> f(np.array([1.0, 2.0, 0.0, 4.0])), f(np.arange(1.0, 7.0))[-1]
(array([1., 2., 0., 0.]), np.float64(720.0))
"""

from __future__ import annotations

from ..ir.indexing import ArrayIndex, Slice
from ..ops import composites
from ..ops.elementwise import greater_equal, less, maximum, multiply, subtract, where
from ..ops.indexing import index
from ..ops.reduction import cumsum, sum
from ..ops.shape import ones, ones_like, reshape
from .control import while_loop


def symbolic_prefix_product(x, axis: int, exclusive: bool):
    """The same scan along an axis of symbolic length n (``polymorphic_shapes``): the
    log-depth steps in a loop that runs while the shift is less than n (known when the
    program runs), each a multiply by the array shifted along the axis (ones shifted in),
    so it stays exact where ``x`` has zeros and differentiates as a loop."""
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


composites.SYMBOLIC_SCAN.append(symbolic_prefix_product)

__all__ = ["symbolic_prefix_product"]
