"""Vector and matrix norms of ``chainrule.numpy.linalg`` (``norm``, ``vector_norm``,
``matrix_norm``), with NumPy's orders, axes and keepdims; composites of sums,
maxima and singular values (``svdvals``), so they differentiate to every order.
The derivative of the 2-norm (and of any p-norm with p > 0, and the Frobenius norm)
at a zero vector is 0, the subgradient the 1- and inf-norms and |x| give there (JAX:
nan); see docs/numerics.md.

>>> import numpy as np
>>> import chainrule as cr
>>> cr.grad(lambda x: norm(x))(np.array([3.0, 4.0]))
array([0.6, 0.8])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..ir.op import is_dispatched as _is_dispatched
from ._core import _kinked_root, _shape
from ._linalg import LinalgArgumentError
from ._shapes import _as_value


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype) if hasattr(x, "dtype") else _np.asarray(x).dtype


def _abs2(x):
    """|x|^2 elementwise (real)."""
    return _ops.real(x * _ops.conj(x)) if _dtype(x).kind == "c" else x * x


def _axis(axis, ndim):
    if not isinstance(axis, (int, _np.integer)) or isinstance(axis, bool):
        raise TypeError("'axis' must be None, an integer or a tuple of integers")
    if not -ndim <= axis < ndim:
        raise LinalgArgumentError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim


def _vector_norm(x, ord, axis: int, keepdims: bool):
    if isinstance(ord, str):
        raise LinalgArgumentError(f"Invalid norm order '{ord}' for vectors")
    if ord == _np.inf:
        return _ops.max(_ops.abs(x), axis=axis, keepdims=keepdims)
    if ord == -_np.inf:
        return _ops.min(_ops.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        real = _np.empty(0, _dtype(x)).real.dtype
        return _ops.sum(_ops.astype(_ops.not_equal(x, 0), real), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _ops.sum(_ops.abs(x), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return _kinked_root(_ops.sum(_abs2(x), axis=axis, keepdims=keepdims))
    total = _ops.sum(_ops.abs(x) ** float(ord), axis=axis, keepdims=keepdims)
    return _kinked_root(total, float(ord)) if ord > 0 else total ** (1.0 / float(ord))


def _singular_values(x, row: int, col: int):
    n = len(_shape(x))
    order = [k for k in range(n) if k not in (row, col)] + [row, col]
    return _ops.svdvals(_ops.permute_dims(x, tuple(order)))


def _matrix_norm(x, ord, row: int, col: int):
    if row == col:
        raise LinalgArgumentError("Duplicate axes given.")
    if ord == 2:
        return _ops.max(_singular_values(x, row, col), axis=-1)
    if ord == -2:
        return _ops.min(_singular_values(x, row, col), axis=-1)
    if ord in (1, -1):
        reduce = _ops.max if ord == 1 else _ops.min
        return reduce(_ops.sum(_ops.abs(x), axis=row), axis=col - 1 if col > row else col)
    if ord in (_np.inf, -_np.inf):
        reduce = _ops.max if ord == _np.inf else _ops.min
        return reduce(_ops.sum(_ops.abs(x), axis=col), axis=row - 1 if row > col else row)
    if ord in (None, "fro", "f"):
        return _kinked_root(_ops.sum(_abs2(x), axis=(row, col)))
    if ord == "nuc":
        return _ops.sum(_singular_values(x, row, col), axis=-1)
    raise LinalgArgumentError("Invalid norm order for matrices.")


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's norm: vector norms (ord inf, -inf, 0, 1, 2, any p) along one axis, matrix
    norms (ord 'fro', 'nuc', inf, -inf, 1, -1, 2, -2) over two, the 2-norm / Frobenius
    norm of all entries by default."""
    x = _as_value(x)  # a list holding traced values or tape tensors is assembled
    if not _is_dispatched(x):
        return _np.linalg.norm(x, ord, axis, keepdims)
    if _dtype(x).kind not in "fc":
        x = _ops.astype(x, _np.float64)
    nd = len(_shape(x))
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            out = _kinked_root(_ops.sum(_abs2(x)))
            return _ops.reshape(out, (1,) * nd) if keepdims else out
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        axis = (axis,)
    axes = tuple(_axis(a, nd) for a in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) != 2:
        raise LinalgArgumentError("Improper number of dimensions to norm.")
    out = _matrix_norm(x, ord, *axes)
    if keepdims:
        shape = list(_shape(x))
        shape[axes[0]] = shape[axes[1]] = 1
        out = _ops.reshape(out, tuple(shape))
    return out


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The array API's vector norm: over all entries (axis None) or over several axes
    taken together."""
    if not _is_dispatched(x):
        return _np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    shape = _shape(x)
    nd = len(shape)
    if axis is None:
        flat, along = _ops.reshape(x, (-1,)), 0
        axes = tuple(range(nd))
    elif isinstance(axis, tuple):
        axes = tuple(_axis(a, nd) for a in axis)
        rest = [k for k in range(nd) if k not in axes]
        moved = _ops.permute_dims(x, axes + tuple(rest))
        flat = _ops.reshape(moved, (-1,) + tuple(shape[k] for k in rest))
        along = 0
    else:
        axes = (_axis(axis, nd),)
        flat, along = x, axes[0]
    out = norm(flat, ord=ord, axis=along)
    if keepdims:
        out = _ops.reshape(out, tuple(1 if k in axes else d for k, d in enumerate(shape)))
    return out


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The array API's matrix norm over the last two axes."""
    if not _is_dispatched(x):
        return _np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


__all__ = ["norm", "vector_norm", "matrix_norm"]
