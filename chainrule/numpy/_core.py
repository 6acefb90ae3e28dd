"""The user namespace's own functions: NumPy signatures over the ops (adapters)
and composites written with ops, so they differentiate for free.

Functions that apply one op as declared (``exp``, ``sum``, ...) are not
here: ``chainrule.numpy`` makes them from the op registry. The families with
modules of their own: ``_math`` (elementwise functions), ``_reductions``
(``var``, ``std``, ``median``, ...), ``_sorting`` (``sort``, ``take``, ...),
``_shapes`` / ``_rearrange`` / ``_select`` (assembly, ``pad``, ``where``),
``_complex``.
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..emit.methods import array_method
from ..ir.op import is_dispatched as _is_dispatched

# dtypes and constants, as in NumPy
float16, float32, float64 = _np.float16, _np.float32, _np.float64
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, bool_ = _np.uint8, _np.bool_
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
ndarray = _np.ndarray


# op -> the functions and methods of this namespace that apply it with a NumPy
# signature (besides the names an op declares itself); a registry test checks
# that every op users may meet is reachable from here
EXPOSED: dict = {_ops.index: ["x[key]", "getitem"], _ops.index_add: ["x.at[key].add"],
                 **{op: [f"x.at[key].{method}"] for method, op in _ops.SCATTER_METHODS.items()}}


def _kinked_root(s, p: float = 2.0):
    """s ** (1 / p) of a sum of |x|^p (the 2-norm, std: p = 2), with derivative 0 where
    s = 0: there the norm has a kink, like |x| at 0, and 0 is the subgradient chainrule
    picks for |x|, hypot and the 1- and inf-norms (the root's infinite slope times the
    zero slope of s would be nan, as JAX gives). The root reads 1 there, so every
    derivative of this stays finite."""
    zero = _ops.equal(s, 0)
    safe = _ops.where(zero, 1, s)
    return _ops.where(zero, 0, _ops.sqrt(safe) if p == 2 else safe ** (1.0 / p))


def exposes(op):
    def deco(fn):
        EXPOSED.setdefault(op, []).append(fn.__name__)
        return fn

    return deco


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def _method(name):
    """Also register the decorated function as the array method ``name``."""

    def deco(fn):
        array_method(name, fn)
        return fn

    return deco


# -- elementwise composites ---------------------------------------------------------------
@_method("clip")
def clip(x, a_min=None, a_max=None):
    if a_min is not None:
        x = _ops.maximum(x, a_min)
    if a_max is not None:
        x = _ops.minimum(x, a_max)
    return x


def log_sigmoid(x):
    """log(sigmoid(x)) without overflow: -softplus(-x)."""
    return _ops.negative(softplus(_ops.negative(x)))


def softplus(x):
    """log(1 + exp(x)) = logaddexp(x, 0): stable, and its derivative is sigmoid(x)
    everywhere (written as max(x, 0) + log1p(exp(-|x|)), the kinks of max and |x| at 0
    would give slope 0 there instead of 1/2).

    >>> import chainrule as cr
    >>> float(cr.grad(softplus)(0.0)), float(softplus(1000.0))
    (0.5, 1000.0)
    """
    return _ops.logaddexp(x, 0.0)


# -- reductions and scans -----------------------------------------------------------------
def _scan_input(x, axis, dtype, out, who):
    """x flattened when axis is None, converted to ``dtype`` (NumPy accumulates in it)."""
    if out is not None:
        raise TypeError(f"{who}: out= is not supported (chainrule values are immutable)")
    if not _is_dispatched(x):
        x = _np.asarray(x)
    if dtype is not None:
        x = _ops.astype(x, _np.dtype(dtype))
    if axis is None:
        return _ops.reshape(x, (-1,)), 0
    return x, axis


@_method("cumsum")
@exposes(_ops.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    x, axis = _scan_input(a, axis, dtype, out, "cumsum")
    return _ops.cumsum(x, axis=axis)


@_method("cumprod")
def cumprod(a, axis=None, dtype=None, out=None):
    """Inclusive product scan; on traced values a log-depth (Hillis-Steele) scan of
    multiplies, so every derivative order is exact even where x is zero."""
    x, axis = _scan_input(a, axis, dtype, out, "cumprod")
    if not _is_dispatched(x):
        return _np.cumprod(x, axis=axis)
    return _ops.prefix_product(x, axis)


def prefix_product(x, axis, exclusive=False):
    return _ops.prefix_product(x, axis, exclusive)


# -- shapes -----------------------------------------------------------------------------
@_method("reshape")
def _reshape_method(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _ops.reshape(self, shape=shape)


@_method("ravel")
def ravel(x):
    return _ops.reshape(x, (-1,))


array_method("flatten", ravel)


def transpose(x, axes=None):
    return _ops.permute_dims(x, axes=None if axes is None else tuple(axes))


@_method("transpose")
def _transpose_method(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return transpose(self, axes or None)


@_method("swapaxes")
def swapaxes(x, axis1, axis2):
    n = len(_shape(x))
    axes = list(range(n))
    a, b = axis1 % n, axis2 % n
    axes[a], axes[b] = axes[b], axes[a]
    return _ops.permute_dims(x, axes=tuple(axes))


def moveaxis(x, source, destination):
    n = len(_shape(x))
    order = [i for i in range(n) if i != source % n]
    order.insert(destination % n, source % n)
    return _ops.permute_dims(x, axes=tuple(order))


# -- creation ---------------------------------------------------------------------------
eye = _np.eye  # linspace: _creation (its endpoints may be traced)


# -- indexing ---------------------------------------------------------------------------
getitem = _ops.getitem




# -- static facts ------------------------------------------------------------------------
def shape(x) -> tuple:
    """The static shape (also of traced values and tape tensors)."""
    return _shape(x)


def ndim(x) -> int:
    return len(_shape(x))


def size(x) -> int:
    return int(_np.prod(_shape(x), dtype=_np.int64))


__all__ = [n for n in dir() if not n.startswith("_")
           and n not in ("annotations", "builtins", "array_method", "EXPOSED", "exposes")]
