"""Rules of the functional updates ``x.at[key].set / multiply / min / max(v)``
(``ops/scatter.py``), each op's VJP and JVP side by side, written with ops so
they differentiate again.

Repeated index-array positions are handled exactly: for ``set`` only the write
that wins (the last) receives a cotangent; ``min`` / ``max`` share the
derivative evenly among the tied candidates (as ``maximum`` does);
``multiply`` with index arrays has no derivative in ``v`` unless the positions
are distinct, which an index array cannot promise (as JAX requires
``unique_indices``), so asking for it is an error, never a wrong number.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..ir.indexing import ArrayIndex
from .common import zeros_as
from .registry import NoDerivative, jvp_rule, vjp_rule


def _has_arrays(key) -> bool:
    return any(type(k) is ArrayIndex for k in key)


def _winners(base, gathered, arrays, key):
    """Where each of ``v``'s positions (in the indexed shape) is the write ``set`` kept:
    the positions' ids scattered the same way, read back and compared."""
    shape, base_shape = tuple(gathered.shape), tuple(base.shape)
    if not all(isinstance(d, int) for d in shape + base_shape):
        return None
    ids = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    written = ops.index_set(np.full(base_shape, -1, np.int64), ids, *arrays, key=key)
    return ops.index(written, *arrays, key=key) == ids


# -- set ------------------------------------------------------------------------------------
@vjp_rule(ops.index_set)
def index_set_vjp(z, g, base, value, *arrays, key):
    """z = base.at[key].set(v);  dbase = g.at[key].set(0);  dv = g[key] where v's write won"""
    dbase = ops.index_set(g, ops.zeros(shape=(), dtype=g.dtype), *arrays, key=key)
    dv = ops.index(g, *arrays, key=key)
    if _has_arrays(key):
        won = _winners(base, dv, arrays, key)
        if won is None:
            dv = NoDerivative("x.at[idx].set(v) with index arrays on symbolic shapes")
        else:
            dv = ops.where(won, dv, 0)
    return (dbase, dv) + (None,) * len(arrays)


@jvp_rule(ops.index_set)
def index_set_jvp(z, base, value, *arrays, key):
    """z = base.at[key].set(v);  dz = dbase.at[key].set(0) + zeros.at[key].set(dv)"""
    return ((lambda t: ops.index_set(t, ops.zeros(shape=(), dtype=t.dtype), *arrays, key=key)),
            (lambda t: ops.index_set(zeros_as(base), t, *arrays, key=key))
            ) + (None,) * len(arrays)


# -- multiply -------------------------------------------------------------------------------
def _factor(base, value, arrays, key):
    """The product each position of ``base`` was multiplied by."""
    return ops.index_multiply(ops.ones_like(base), value, *arrays, key=key)


def _dv_multiply(base, value, arrays, key, t):
    """d/dv of base.at[key].multiply(v) applied to ``t`` (distinct positions: base[key])."""
    if _has_arrays(key):
        return NoDerivative("x.at[idx].multiply(v) with index arrays: positions may repeat, "
                            "so the derivative in v is not defined (as in JAX without "
                            "unique_indices); use basic indices or x * factor")
    return ops.index(base, *arrays, key=key) * t


@vjp_rule(ops.index_multiply)
def index_multiply_vjp(z, g, base, value, *arrays, key):
    """z = base.at[key].multiply(v);  dbase = g * ones.at[key].multiply(v);
    dv = g[key] * base[key]  (basic keys: each position written once)"""
    dv = _dv_multiply(base, value, arrays, key, ops.index(g, *arrays, key=key))
    return (g * _factor(base, value, arrays, key), dv) + (None,) * len(arrays)


@jvp_rule(ops.index_multiply)
def index_multiply_jvp(z, base, value, *arrays, key):
    """z = base.at[key].multiply(v);  dz = dbase * ones.at[key].multiply(v)
    + zeros.at[key].set(base[key] * dv)"""
    factor = _factor(base, value, arrays, key)
    if _has_arrays(key):
        dv = _dv_multiply(base, value, arrays, key, None)
    else:
        def dv(t):
            return ops.index_set(zeros_as(base), _dv_multiply(base, value, arrays, key, t),
                                 *arrays, key=key)
    return ((lambda t: t * factor), dv) + (None,) * len(arrays)


# -- min / max -----------------------------------------------------------------------------
def _extremum_masks(z, base, value, arrays, key):
    """Which candidates reached the result (base's positions, and v's in the indexed
    shape), and how many did at each position of z: the derivative is shared by them."""
    from_base = ops.astype(base == z, z.dtype)
    from_value = ops.astype(value == ops.index(z, *arrays, key=key), z.dtype)
    count = from_base + ops.index_add(ops.zeros_like(z), from_value, *arrays, key=key)
    return from_base, from_value, count


def _extremum_vjp(z, g, base, value, *arrays, key):
    """z = base.at[key].max(v) (or min);  the cotangent goes to the candidates equal to
    z, split evenly among ties:  dbase = g * [base == z] / n;  dv = (g / n)[key] * [v == z[key]]"""
    from_base, from_value, count = _extremum_masks(z, base, value, arrays, key)
    share = g / count
    return ((share * from_base, ops.index(share, *arrays, key=key) * from_value)
            + (None,) * len(arrays))


def _extremum_jvp(z, base, value, *arrays, key):
    """dz = (dbase * [base == z] + zeros.at[key].add(dv * [v == z[key]])) / n"""
    from_base, from_value, count = _extremum_masks(z, base, value, arrays, key)
    return ((lambda t: t * from_base / count),
            (lambda t: ops.index_add(zeros_as(z), t * from_value, *arrays, key=key)
             / count)) + (None,) * len(arrays)


for _op in (ops.index_min, ops.index_max):
    vjp_rule(_op)(_extremum_vjp)
    jvp_rule(_op)(_extremum_jvp)
