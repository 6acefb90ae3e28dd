"""Products and matrix structure with NumPy's signatures: ``einsum``, ``tensordot``,
``dot``, ``inner``, ``outer``, ``vdot``, ``vecdot``, ``kron``, ``cross``, ``trace``,
``diagonal``, ``make_diagonal``, ``diag``, ``tril``, ``triu``, ``matrix_transpose``.

All are composites of the basic ops (``matmul`` for every contraction,
``permute_dims`` / ``reshape``, integer-array gathers for diagonals, ``where``
for triangles), so they need no derivative rules and differentiate to every
order. On NumPy arrays (nothing traced, no tape tensor) they call NumPy itself.

``einsum`` contracts two operands at a time as one batched ``matmul`` each
(operands permuted and reshaped to (batch, free, summed) matrices, as
``np.einsum(..., optimize=True)`` and opt_einsum do), in the order
``np.einsum_path`` chooses for the operands' static shapes (greedy unless
``optimize`` names another strategy or gives a path); repeated indices within
an operand take its diagonal first, and indices only one operand carries are
summed before any product.

>>> import numpy as np
>>> import chainrule as cr
>>> f = lambda a, b: einsum("ij,jk->", a, b)
>>> cr.grad(f)(np.ones((2, 3)), np.arange(12.0).reshape(3, 4))
array([[ 6., 22., 38.],
       [ 6., 22., 38.]])
"""

from __future__ import annotations

import string
from collections import Counter
from math import prod

import numpy as _np

from .. import ops as _ops
from ..errors import ChainruleError
from ..ir.op import is_dispatched as _is_dispatched
from ._core import _method, _shape


class LinalgArgumentError(ChainruleError, ValueError):
    """An argument NumPy would refuse with a ValueError (bad subscripts, mismatched
    sizes, an axis out of range), met on traced values or tape tensors."""


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype) if hasattr(x, "dtype") else _np.asarray(x).dtype


def _ndim(x) -> int:
    return len(_shape(x))


def _axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        raise LinalgArgumentError(f"{what} {axis} is out of bounds for an array of dimension "
                                  f"{ndim}")
    return axis % ndim


def _permute(x, order):
    order = tuple(order)
    return x if order == tuple(range(len(order))) else _ops.permute_dims(x, order)


def _reshape(x, shape):
    shape = tuple(shape)
    return x if _shape(x) == shape else _ops.reshape(x, shape)


def _moveaxis(x, source: int, destination: int):
    n = _ndim(x)
    source, destination = _axis(source, n), _axis(destination, n)
    order = [i for i in range(n) if i != source]
    order.insert(destination, source)
    return _permute(x, order)


def _conj(x):
    return _ops.conj(x) if _dtype(x).kind == "c" else x


# -- einsum ----------------------------------------------------------------------------------
_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _einsum_subscripts(operands):
    """(subscripts string, arrays) from either calling form: ``einsum("ij,jk", a, b)`` or
    the interleaved ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    if isinstance(operands[0], str):
        return operands[0].replace(" ", ""), list(operands[1:])
    arrays, terms = list(operands[0::2]), list(operands[1::2])
    out = None
    if len(arrays) > len(terms):
        out = arrays.pop()

    def term(sub):
        text = ""
        for s in sub:
            if s is Ellipsis:
                text += "..."
            elif isinstance(s, (int, _np.integer)) and 0 <= s < len(_LETTERS):
                text += _LETTERS[int(s)]
            else:
                raise LinalgArgumentError(f"einsum: subscript {s!r} is not an int in "
                                          f"[0, {len(_LETTERS)}) or Ellipsis")
        return text

    text = ",".join(term(t) for t in terms)
    if out is not None:
        text += "->" + term(out)
    return text, arrays


def _einsum_labels(subscripts, shapes):
    """Each operand's labels (ellipses expanded to fresh letters, right-aligned as NumPy
    broadcasts them) and the output's labels (sorted single labels in implicit mode)."""
    inputs, arrow, out = subscripts.partition("->")
    terms = inputs.split(",")
    spare = iter(c for c in _LETTERS if c not in subscripts)
    parsed, ellipsis_ndim = [], 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            left, _, right = term.partition("...")
            n = len(shape) - len(left) - len(right)
            ellipsis_ndim = max(ellipsis_ndim, n)
            parsed.append((left, n, right))
        else:
            parsed.append((term, 0, ""))
    ellipsis = [next(spare) for _ in range(ellipsis_ndim)]
    labels = [list(left) + ellipsis[ellipsis_ndim - n:] + list(right)
              for left, n, right in parsed]
    if arrow:
        left, dots, right = out.partition("...")
        out_labels = list(left) + (ellipsis if dots else []) + list(right)
    else:
        counts = Counter(c for term in terms for c in term.replace("...", ""))
        out_labels = ellipsis + sorted(c for c, k in counts.items() if k == 1)
    return labels, out_labels


def _diagonal_of_labels(x, labels):
    """Take diagonals for labels repeated within one operand (the diagonal goes last)."""
    while len(set(labels)) < len(labels):
        label = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(label)
        j = labels.index(label, i + 1)
        x = diagonal(x, 0, i, j)
        labels = [c for k, c in enumerate(labels) if k not in (i, j)] + [label]
    return x, labels


def _sum_labels(x, labels, drop):
    axes = tuple(i for i, c in enumerate(labels) if c in drop)
    if not axes:
        return x, labels
    return _ops.sum(x, axis=axes), [c for c in labels if c not in drop]


def _contract(x, xl, y, yl, keep, sizes):
    """The product of two operands summed over their shared labels not in ``keep``:
    one batched matmul (a broadcast multiply when nothing is summed)."""
    x, xl = _sum_labels(x, xl, {c for c in xl if c not in yl and c not in keep})
    y, yl = _sum_labels(y, yl, {c for c in yl if c not in xl and c not in keep})
    batch = [c for c in xl if c in yl and c in keep]
    summed = [c for c in xl if c in yl and c not in keep]
    x_only = [c for c in xl if c not in yl]
    y_only = [c for c in yl if c not in xl]
    bs = tuple(sizes[c] for c in batch)
    xs, ys, ks = ([sizes[c] for c in g] for g in (x_only, y_only, summed))
    labels = batch + x_only + y_only
    for group, dims in ((x_only, xs), (y_only, ys), (summed, ks)):
        if len(dims) > 1 and any(isinstance(d, str) for d in dims):
            raise LinalgArgumentError(
                f"einsum: labels {''.join(group)} of sizes {tuple(dims)} would be merged into "
                f"one axis, whose size is a product of a symbolic dimension (not supported; "
                f"einsum handles a symbolic dimension that keeps an axis of its own)")
    if not summed:  # an outer product over the free labels
        xp = _reshape(_permute(x, [xl.index(c) for c in batch + x_only]),
                      bs + tuple(xs) + (1,) * len(ys))
        yp = _reshape(_permute(y, [yl.index(c) for c in batch + y_only]),
                      bs + (1,) * len(xs) + tuple(ys))
        return _ops.multiply(xp, yp), labels
    xp = _reshape(_permute(x, [xl.index(c) for c in batch + x_only + summed]),
                  bs + (prod(xs), prod(ks)))
    yp = _reshape(_permute(y, [yl.index(c) for c in batch + summed + y_only]),
                  bs + (prod(ks), prod(ys)))
    return _reshape(_ops.matmul(xp, yp), bs + tuple(xs) + tuple(ys)), labels


_SYMBOL_PLAN_SIZE = 64


def einsum(*operands, out=None, optimize=False, dtype=None, casting="safe", order="K"):
    """NumPy's einsum (both calling forms, ellipses, implicit and explicit outputs,
    diagonals, any number of operands), contracting pairs as batched matmuls."""
    if out is not None:
        raise LinalgArgumentError("einsum: out= is not supported (arrays are immutable "
                                  "here); use the result")
    if not operands:
        raise LinalgArgumentError("einsum: no operands given")
    if not any(_is_dispatched(x) for x in operands):
        return _np.einsum(*operands, optimize=optimize, dtype=dtype, casting=casting,
                          order=order)
    subscripts, arrays = _einsum_subscripts(operands)
    if dtype is not None:
        arrays = [_ops.astype(a, dtype) for a in arrays]
    shapes = [_shape(a) for a in arrays]
    # NumPy plans the contraction order on stand-in arrays: a symbolic dimension (polymorphic
    # shapes) plans as a size of _SYMBOL_PLAN_SIZE
    dummies = [_np.broadcast_to(_np.zeros((), _dtype(a)), tuple(
        _SYMBOL_PLAN_SIZE if isinstance(d, str) else d for d in s))
        for a, s in zip(arrays, shapes)]
    strategy = optimize if not isinstance(optimize, bool) and optimize is not None else "greedy"
    try:  # NumPy checks the subscripts against the shapes and picks the contraction order
        path = _np.einsum_path(subscripts, *dummies, optimize=strategy)[0]
    except (ValueError, TypeError, KeyError) as exc:
        raise LinalgArgumentError(f"einsum {subscripts!r} on shapes {shapes}: {exc}") from None
    labels, out_labels = _einsum_labels(subscripts, shapes)
    sizes: dict = {}
    for shape, ls in zip(shapes, labels):
        for d, c in zip(shape, ls):
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
    work = []
    for k, (a, ls) in enumerate(zip(arrays, labels)):
        a, ls = _diagonal_of_labels(a, ls)
        squeeze = tuple(i for i, c in enumerate(ls) if _shape(a)[i] == 1 and sizes[c] != 1)
        if squeeze:  # a size-1 axis broadcast against the others': drop it
            a = _ops.squeeze(a, squeeze)
            ls = [c for i, c in enumerate(ls) if i not in squeeze]
        elsewhere = set(out_labels).union(*(labels[j] for j in range(len(arrays)) if j != k))
        work.append(_sum_labels(a, ls, {c for c in ls if c not in elsewhere}))
    for step in path[1:]:
        picked = [work[i] for i in step]
        for i in sorted(step, reverse=True):
            del work[i]
        keep = set(out_labels).union(*(ls for _, ls in work))
        x, xl = picked[0]
        for k in range(1, len(picked)):
            y, yl = picked[k]
            rest = keep.union(*(ls for _, ls in picked[k + 1:]))
            x, xl = _contract(x, xl, y, yl, rest, sizes)
        if len(picked) == 1:
            x, xl = _sum_labels(x, xl, {c for c in xl if c not in keep})
        work.append((x, xl))
    (x, xl), = work
    x, xl = _sum_labels(x, xl, {c for c in xl if c not in out_labels})
    return _permute(x, [xl.index(c) for c in out_labels])


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """NumPy's einsum_path on the operands' shapes (traced values need only their shapes)."""
    if isinstance(operands[0], str):
        rest = [_np.broadcast_to(_np.zeros((), _dtype(a)), _shape(a)) for a in operands[1:]]
        return _np.einsum_path(operands[0], *rest, optimize=optimize, einsum_call=einsum_call)
    converted = [_np.broadcast_to(_np.zeros((), _dtype(a)), _shape(a)) if i % 2 == 0 and (
        i < len(operands) - 1) else a for i, a in enumerate(operands)]
    return _np.einsum_path(*converted, optimize=optimize, einsum_call=einsum_call)


# -- products ----------------------------------------------------------------------------
def tensordot(a, b, axes=2):
    """Sum of products over the given axes of a and b (NumPy's axes forms: an int N, the
    last N of a with the first N of b; or a pair of axis sequences)."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.tensordot(a, b, axes)
    try:
        axes_a, axes_b = axes
    except TypeError:
        n = int(axes)
        axes_a, axes_b = list(range(-n, 0)), list(range(n))
    axes_a = [axes_a] if isinstance(axes_a, (int, _np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, _np.integer)) else list(axes_b)
    sa, sb = _shape(a), _shape(b)
    if len(axes_a) != len(axes_b):
        raise LinalgArgumentError(f"tensordot: shape-mismatch for sum: axes {axes_a} of a "
                                  f"and {axes_b} of b")
    axes_a = [_axis(i, len(sa)) for i in axes_a]
    axes_b = [_axis(i, len(sb)) for i in axes_b]
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j]:
            raise LinalgArgumentError(f"tensordot: shape-mismatch for sum: a{sa} axis {i} "
                                      f"has {sa[i]}, b{sb} axis {j} has {sb[j]}")
    letters = iter(_LETTERS)
    la = [next(letters) for _ in sa]
    lb = [next(letters) for _ in sb]
    for i, j in zip(axes_a, axes_b):
        lb[j] = la[i]
    free = [c for c in la if c not in lb] + [c for c in lb if c not in la]
    sizes = dict(zip(la, sa)) | dict(zip(lb, sb))
    out, labels = _contract(a, la, b, lb, set(free), sizes)
    return _permute(out, [labels.index(c) for c in free])


@_method("dot")
def dot(a, b, out=None):
    """NumPy's dot: a product for 0-d operands, matmul for 1-D and 2-D ones, and for
    N-D ones the sum over a's last axis and b's second-to-last."""
    if out is not None:
        raise LinalgArgumentError("dot: out= is not supported; use the result")
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.dot(a, b)
    na, nb = _ndim(a), _ndim(b)
    if na == 0 or nb == 0:
        return _ops.multiply(a, b)
    if nb <= 2 or na == 1:
        return _ops.matmul(a, b)
    return tensordot(a, b, ([-1], [-2]))


def inner(a, b):
    """Sum of products over the last axes (shape a.shape[:-1] + b.shape[:-1])."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.inner(a, b)
    if _ndim(a) == 0 or _ndim(b) == 0:
        return _ops.multiply(a, b)
    return tensordot(a, b, ([-1], [-1]))


def outer(a, b, out=None):
    """The outer product of the flattened a and b."""
    if out is not None:
        raise LinalgArgumentError("outer: out= is not supported; use the result")
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.outer(a, b)
    return _ops.multiply(_ops.reshape(a, (-1, 1)), _ops.reshape(b, (1, -1)))


def vdot(a, b):
    """sum(conj(a) * b) over the flattened arrays (NumPy conjugates its first argument)."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.vdot(a, b)
    if prod(_shape(a)) != prod(_shape(b)):
        raise LinalgArgumentError(f"vdot: vectors have different lengths ({prod(_shape(a))} "
                                  f"and {prod(_shape(b))})")
    return _ops.matmul(_conj(_ops.reshape(a, (-1,))), _ops.reshape(b, (-1,)))


def vecdot(x1, x2, /, *, axis=-1):
    """sum(conj(x1) * x2) along axis, the other axes broadcast (NumPy 2's vecdot)."""
    if not (_is_dispatched(x1) or _is_dispatched(x2)):
        return _np.vecdot(x1, x2, axis=axis)
    x1, x2 = _moveaxis(x1, axis, -1), _moveaxis(x2, axis, -1)
    if _shape(x1)[-1] != _shape(x2)[-1]:
        raise LinalgArgumentError(f"vecdot: the vectors' lengths differ: {_shape(x1)[-1]} "
                                  f"and {_shape(x2)[-1]}")
    return _ops.sum(_ops.multiply(_conj(x1), x2), axis=-1)


def kron(a, b):
    """The Kronecker product: blocks a[i, j, ...] * b (shapes padded with leading 1s)."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.kron(a, b)
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    spread_a = _reshape(a, tuple(d for s in sa for d in (s, 1)))
    spread_b = _reshape(b, tuple(d for s in sb for d in (1, s)))
    return _reshape(_ops.multiply(spread_a, spread_b), tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (or 2-vectors, z taken as 0) along the given axes,
    the other axes broadcast; two 2-vectors give the z component alone."""
    if not (_is_dispatched(a) or _is_dispatched(b)):
        return _np.cross(a, b, axisa, axisb, axisc, axis)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _moveaxis(a, axisa, -1), _moveaxis(b, axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise LinalgArgumentError("incompatible dimensions for cross product\n(dimension "
                                  "must be 2 or 3)")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2] if na == 3 else None
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2] if nb == 3 else None
    z = a0 * b1 - a1 * b0
    if a2 is None and b2 is None:
        return z
    x = a1 * b2 if a2 is None else (-(a2 * b1) if b2 is None else a1 * b2 - a2 * b1)
    y = -(a0 * b2) if a2 is None else (a2 * b0 if b2 is None else a2 * b0 - a0 * b2)
    shape = _np.broadcast_shapes(_shape(x), _shape(y), _shape(z))
    parts = [_ops.expand_dims(_ops.broadcast_to(p, shape) if _shape(p) != shape else p, -1)
             for p in (x, y, z)]
    out = _ops.concatenate(*parts, axis=-1)
    return _moveaxis(out, -1, axisc)


# -- diagonals and triangles ---------------------------------------------------------------
@_method("diagonal")
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The offset diagonal of the axis1 x axis2 planes, as a new last axis."""
    if not _is_dispatched(a):
        return _np.diagonal(a, offset, axis1, axis2)
    n = _ndim(a)
    if n < 2:
        raise LinalgArgumentError("diag requires an array of at least two dimensions")
    i, j = _axis(axis1, n, "axis1"), _axis(axis2, n, "axis2")
    if i == j:
        raise LinalgArgumentError("axis1 and axis2 cannot be the same")
    x = _permute(a, [k for k in range(n) if k not in (i, j)] + [i, j])
    rows, cols = _shape(x)[-2:]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    r = _np.arange(length) + max(0, -offset)
    c = _np.arange(length) + max(0, offset)
    return x[..., r, c]


@_method("trace")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """The sum along the offset diagonal of the axis1 x axis2 planes."""
    if out is not None:
        raise LinalgArgumentError("trace: out= is not supported; use the result")
    if not _is_dispatched(a):
        return _np.trace(a, offset, axis1, axis2, dtype)
    d = diagonal(a, offset, axis1, axis2)
    if dtype is not None:
        d = _ops.astype(d, dtype)
    elif _dtype(d).kind == "b" or (_dtype(d).kind in "iu" and _dtype(d).itemsize < 8):
        d = _ops.astype(d, _np.int64 if _dtype(d).kind != "u" else _np.uint64)
    return _ops.sum(d, axis=-1)


def diag(v, k=0):
    """A 1-D v on the k-th diagonal of a square matrix, or a 2-D v's k-th diagonal."""
    if not _is_dispatched(v):
        return _np.diag(v, k)
    nd = _ndim(v)
    if nd == 2:
        return diagonal(v, k, 0, 1)
    if nd != 1:
        raise LinalgArgumentError("Input must be 1- or 2-d.")
    m = _shape(v)[0]
    n = m + abs(k)
    r = _np.arange(m) + max(0, -k)
    c = _np.arange(m) + max(0, k)
    return _ops.index_update(_ops.index_add, _np.zeros((n, n), _dtype(v)), (r, c), v)


def make_diagonal(D, offset=0, axis1=-1, axis2=-2):
    """The array whose ``offset`` diagonal in the ``axis1`` x ``axis2`` planes is ``D``'s
    last axis (zeros elsewhere): the inverse of ``diagonal(out, offset, axis1, axis2)``,
    batched over ``D``'s leading axes (autograd.numpy's ``make_diagonal``, which takes
    only ``offset=0, axis1=-1, axis2=-2``; any offset and pair of axes here).

    >>> make_diagonal(_np.array([1.0, 2.0]), offset=1, axis1=0, axis2=1)
    array([[0., 1., 0.],
           [0., 0., 2.],
           [0., 0., 0.]])
    """
    shape = _shape(D)
    if not shape:
        raise LinalgArgumentError("make_diagonal: D must have at least one dimension")
    n = _ndim(D) + 1
    i, j = _axis(axis1, n, "axis1"), _axis(axis2, n, "axis2")
    if i == j:
        raise LinalgArgumentError("axis1 and axis2 cannot be the same")
    m = shape[-1]
    size = m + abs(offset)
    # out[..., a, b] = sum_k D[..., k] [a == k + rows0] [b == k + cols0]: one product each
    rows = (_np.arange(size)[:, None] == _np.arange(m) + max(0, -offset)).astype(_dtype(D))
    cols = (_np.arange(size)[None, :] == _np.arange(m)[:, None] + max(0, offset))
    row = _ops.reshape(D, shape[:-1] + (1, m))  # a reshape, not D[..., None, :]: no gather
    out = _ops.matmul(_ops.multiply(row, rows), cols.astype(_dtype(D)))
    order = [k for k in range(n - 2)]
    for position, source in sorted(((i, n - 2), (j, n - 1))):
        order.insert(position, source)
    return _permute(out, order)


def _triangle(m, k, lower):
    shape = _shape(m)
    rows_cols = shape[-2:] if len(shape) >= 2 else shape * 2 if shape else None
    if rows_cols is None:
        raise LinalgArgumentError("tril/triu: the array must have at least one dimension")
    mask = _np.tri(*rows_cols, k=k, dtype=bool) if lower else ~_np.tri(*rows_cols, k=k - 1,
                                                                        dtype=bool)
    return _ops.where(mask, m, _np.zeros((), _dtype(m)))


def tril(m, k=0):
    """The lower triangle (entries above the k-th diagonal zeroed), batched over leading
    axes; a 1-D m is broadcast to a square matrix first, as NumPy does."""
    return _np.tril(m, k) if not _is_dispatched(m) else _triangle(m, k, True)


def triu(m, k=0):
    """The upper triangle (entries below the k-th diagonal zeroed)."""
    return _np.triu(m, k) if not _is_dispatched(m) else _triangle(m, k, False)


def matrix_transpose(x, /):
    """x with its last two axes swapped."""
    if _ndim(x) < 2:
        raise LinalgArgumentError(f"matrix_transpose: the input must be at least 2-D, got "
                                  f"shape {_shape(x)}")
    if not _is_dispatched(x):
        return _np.matrix_transpose(x)
    n = _ndim(x)
    return _ops.permute_dims(x, tuple(range(n - 2)) + (n - 1, n - 2))


__all__ = ["einsum", "einsum_path", "tensordot", "dot", "inner", "outer", "vdot", "vecdot",
           "kron", "cross", "diagonal", "trace", "diag", "tril", "triu", "matrix_transpose",
           "make_diagonal"]
