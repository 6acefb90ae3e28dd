"""Losses with ``torch.nn.functional``'s arguments: ``cross_entropy`` (class indices or
class probabilities, ``weight``, ``ignore_index``, ``label_smoothing``), ``nll_loss``,
``mse_loss``, ``binary_cross_entropy_with_logits``; ``reduction`` is ``"mean"``,
``"sum"`` or ``"none"`` (PyTorch's legacy ``size_average`` / ``reduce`` are honoured).
Written with chainrule's ops: the class picked by an index is a comparison with the
class numbers (no gather), so ignored targets simply select nothing."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import InvalidValueError
from ._args import Array, array, check_float, number, reduction_of, shape_of


def _reduce(loss, reduction, denominator=None):
    if reduction == "none":
        return loss
    total = ops.sum(loss)
    if reduction == "sum":
        return total
    return total / denominator if denominator is not None else ops.mean(loss)


def _class_axis(x, who) -> int:
    if len(x.shape) == 0:
        raise InvalidValueError(f"{who}: the input must have a class axis: (C,), (N, C) or "
                                f"(N, C, d1, ...), got a 0-d array")
    return 0 if len(x.shape) == 1 else 1


def _along(v, axis, ndim):
    """A (C,) vector shaped to broadcast along ``axis`` of a rank-``ndim`` array."""
    return ops.reshape(v, tuple(-1 if i == axis else 1 for i in range(ndim)))


def _weight(weight, classes, who):
    if weight is None:
        return None
    weight = array(weight, who, "weight")
    if shape_of(weight) != (classes,):
        raise InvalidValueError(f"{who}: weight must have shape ({classes},) (one per class), "
                                f"got {shape_of(weight)}")
    return weight


def _picked(target, classes, axis, ndim, ignore_index, who):
    """(the one-hot booleans of the targets along ``axis``, the mask of the targets that
    count): an ignored or out-of-range target picks no class."""
    t = array(target, who, "target")
    if np.dtype(t.dtype).kind not in "iu":
        raise InvalidValueError(f"{who}: class-index targets must be integers, got dtype "
                                f"{t.dtype}")
    if isinstance(t, np.ndarray):  # concrete targets are checked, as PyTorch does
        bad = (t != ignore_index) & ((t < 0) | (t >= classes))
        if np.any(bad):
            raise InvalidValueError(f"{who}: target {int(t[bad].flat[0])} is out of bounds for "
                                    f"{classes} classes")
    hot = ops.expand_dims(t, axis=(axis,)) == _along(np.arange(classes), axis, ndim)
    valid = t != ignore_index
    if 0 <= ignore_index < classes:
        hot = ops.logical_and(hot, ops.expand_dims(valid, axis=(axis,)))
    return hot, valid


def _indices_target_shape(x, t, axis, who):
    want = tuple(d for i, d in enumerate(x.shape) if i != axis)
    if shape_of(t) != want:
        raise InvalidValueError(f"{who}: a class-index target for input {shape_of(x)} must have "
                                f"shape {want}, got {shape_of(t)}")


def _nll(logp, target, weight, ignore_index, reduction, who):
    axis = _class_axis(logp, who)
    ndim, classes = len(logp.shape), logp.shape[axis]
    t = array(target, who, "target")
    _indices_target_shape(logp, t, axis, who)
    weight = _weight(weight, classes, who)
    hot, valid = _picked(t, classes, axis, ndim, ignore_index, who)
    # where, not a product: a -inf log-probability of a class not picked stays out
    picked = ops.sum(ops.where(hot, logp, 0), axis=axis)
    if weight is None:
        w_t = ops.astype(valid, dtype=np.dtype(logp.dtype))
    else:
        w_t = ops.sum(ops.where(hot, _along(weight, axis, ndim), 0), axis=axis)
    loss = -(picked * w_t) if weight is not None else -picked
    return loss, w_t, hot, valid, weight


def nll_loss(input: Array, target: Array, weight: Array | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Array:
    """The negative log-likelihood of class indices ``target`` under log-probabilities
    ``input`` (``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``): ``-weight[t] * input[t]``,
    averaged over the targets' weights with ``reduction="mean"``, targets equal to
    ``ignore_index`` left out, as ``torch.nn.functional.nll_loss``.

    >>> import numpy as np
    >>> float(nll_loss(np.log(np.array([[0.5, 0.5], [0.25, 0.75]])), np.array([0, 1])))
    0.4904146265058631
    """
    who = "nll_loss"
    reduction = reduction_of(reduction, size_average, reduce, who)
    x = array(input, who)
    check_float(x, who)
    loss, w_t, _, _, _ = _nll(x, target, weight, ignore_index, reduction, who)
    return _reduce(loss, reduction, ops.sum(w_t))


def cross_entropy(input: Array, target: Array, weight: Array | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Array:
    """The cross entropy of logits ``input`` (``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``)
    against class indices (an integer ``target`` without the class axis) or class
    probabilities (a float ``target`` shaped like the input), as
    ``torch.nn.functional.cross_entropy``: ``log_softmax`` then the negative
    log-likelihood, with ``weight`` per class, ``ignore_index`` (indices only) and
    ``label_smoothing`` (mixing the target with the uniform distribution).

    >>> import numpy as np
    >>> logits = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    >>> round(float(cross_entropy(logits, np.array([0, 1]))), 6)
    0.360645
    >>> round(float(cross_entropy(logits, np.array([0, 1]), label_smoothing=0.1)), 6)
    0.477312
    """
    who = "cross_entropy"
    reduction = reduction_of(reduction, size_average, reduce, who)
    x = array(input, who)
    check_float(x, who)
    axis = _class_axis(x, who)
    classes, ndim = x.shape[axis], len(x.shape)
    eps = number(label_smoothing, who, "label_smoothing", low=0.0, high=1.0)
    logp = ops.log_softmax(x, axis=axis)
    t = array(target, who, "target")
    if np.dtype(t.dtype).kind == "f":  # class probabilities
        if shape_of(t) != shape_of(x):
            raise InvalidValueError(f"{who}: probability targets must have the input's shape "
                                    f"{shape_of(x)}, got {shape_of(t)}")
        w = _weight(weight, classes, who)
        if eps > 0:
            t = t * (1 - eps) + eps / classes
        terms = logp * t if w is None else logp * t * _along(w, axis, ndim)
        loss = -ops.sum(terms, axis=axis)
        return _reduce(loss, reduction)
    loss, w_t, _, valid, w = _nll(logp, t, weight, ignore_index, reduction, who)
    denominator = ops.sum(w_t) if reduction == "mean" else None
    out = _reduce(loss, reduction, denominator)
    if eps == 0:
        return out
    # PyTorch's smoothing term: -sum_c weight_c logp_c, zero for ignored targets, reduced
    # over the same denominator as the likelihood
    terms = logp if w is None else logp * _along(w, axis, ndim)
    smooth = ops.where(valid, -ops.sum(terms, axis=axis), 0)
    smooth = _reduce(smooth, reduction, denominator)
    return (1 - eps) * out + smooth * (eps / classes)


def mse_loss(input: Array, target: Array, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Array | None = None) -> Array:
    """The squared error ``(input - target)^2`` (broadcast), reduced; ``weight`` (if given)
    multiplies each term, as ``torch.nn.functional.mse_loss``.

    >>> import numpy as np
    >>> float(mse_loss(np.array([1.0, 2.0]), np.array([0.0, 0.0])))
    2.5
    """
    who = "mse_loss"
    reduction = reduction_of(reduction, size_average, reduce, who)
    x, t = array(input, who), array(target, who, "target")
    d = x - t
    loss = d * d
    if weight is not None:
        loss = loss * array(weight, who, "weight")
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Array, target: Array,
                                     weight: Array | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Array | None = None) -> Array:
    """The binary cross entropy of logits: ``-pos_weight t log sigmoid(x) - (1 - t) log(1 -
    sigmoid(x))``, computed without overflow as ``(1 - t) x + (1 + (pos_weight - 1) t)
    softplus(-x)``, times ``weight``, as ``torch.nn.functional.binary_cross_entropy_with_logits``.

    >>> import numpy as np
    >>> round(float(binary_cross_entropy_with_logits(np.array([0.0, 2.0]),
    ...                                              np.array([1.0, 0.0]))), 6)
    1.410038
    """
    who = "binary_cross_entropy_with_logits"
    reduction = reduction_of(reduction, size_average, reduce, who)
    x, t = array(input, who), array(target, who, "target")
    check_float(x, who)
    if shape_of(x) != shape_of(t):
        raise InvalidValueError(f"{who}: target shape {shape_of(t)} must equal the input's "
                                f"shape {shape_of(x)}")
    soft = ops.logaddexp(-x, 0.0)  # softplus(-x) = -log sigmoid(x), smooth everywhere
    if pos_weight is None:
        loss = (1 - t) * x + soft
    else:
        pw = array(pos_weight, who, "pos_weight")
        loss = (1 - t) * x + (1 + (pw - 1) * t) * soft
    if weight is not None:
        loss = loss * array(weight, who, "weight")
    return _reduce(loss, reduction)


__all__ = ["cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits"]
