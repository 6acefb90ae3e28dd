"""Index-based functions: ``embedding`` (rows of a weight matrix) and ``one_hot``, as in
``torch.nn.functional``."""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from .. import ops
from ..errors import InvalidValueError
from ..ir.op import is_dispatched
from ._args import Array, array, check_int, check_rank, shape_of


def embedding(input: Array, weight: Array, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Array:
    """The rows ``weight[input]`` (``weight`` is ``(num_embeddings, embedding_dim)``, the
    result ``(*input.shape, embedding_dim)``), as ``torch.nn.functional.embedding``. The
    row ``padding_idx`` gets no gradient. ``max_norm`` (which PyTorch applies by changing
    the weight in place) is refused: renormalize the weight in your own code;
    ``sparse`` is accepted (gradients are dense arrays).

    >>> import numpy as np
    >>> embedding(np.array([2, 0]), np.arange(6.0).reshape(3, 2))
    array([[4., 5.],
           [0., 1.]])
    """
    who = "embedding"
    idx = array(input, who)
    check_int(idx, who, "input")
    w = array(weight, who, "weight")
    check_rank(w, (2,), who, "weight", "(num_embeddings, embedding_dim)")
    num = w.shape[0]
    if max_norm is not None:
        raise InvalidValueError(f"{who}: max_norm renormalizes the weight in place in PyTorch; "
                                f"chainrule never changes an array: renormalize the rows in "
                                f"your code instead")
    if scale_grad_by_freq:
        raise InvalidValueError(f"{who}: scale_grad_by_freq is not supported")
    if isinstance(idx, np.ndarray) and idx.size and (idx.min() < 0 or idx.max() >= num):
        raise InvalidValueError(f"{who}: index out of range: the weight has {num} rows, got "
                                f"indices in [{int(idx.min())}, {int(idx.max())}]")
    rows = cnp.take(w, idx, axis=0)
    if padding_idx is None:
        return rows
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)) or not (
            -num <= padding_idx < num):
        raise InvalidValueError(f"{who}: padding_idx must be an int in [-{num}, {num}), got "
                                f"{padding_idx!r}")
    pad = ops.expand_dims(idx == int(padding_idx) % num, axis=(-1,))
    return ops.where(pad, ops.stop_gradient(rows), rows)


def one_hot(tensor: Array, num_classes: int = -1) -> Array:
    """Integer class indices as one-hot int64 vectors along a new last axis, as
    ``torch.nn.functional.one_hot``; ``num_classes=-1`` takes the largest index + 1
    (which needs concrete values: inside a compiled function give ``num_classes``).

    >>> import numpy as np
    >>> one_hot(np.array([0, 2]), 3)
    array([[1, 0, 0],
           [0, 0, 1]])
    """
    who = "one_hot"
    t = array(tensor, who, "tensor")
    check_int(t, who, "tensor")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise InvalidValueError(f"{who}: num_classes must be an int, got {num_classes!r}")
    concrete = not is_dispatched(t)
    if num_classes == -1:
        if not concrete:
            raise InvalidValueError(f"{who}: num_classes=-1 reads the values of the indices; "
                                    f"inside a transformed function pass num_classes")
        num_classes = int(np.max(t)) + 1 if np.size(t) else 0
    if num_classes < 0:
        raise InvalidValueError(f"{who}: num_classes must be -1 or >= 0, got {num_classes}")
    if concrete and np.size(t) and (np.min(t) < 0 or np.max(t) >= num_classes):
        raise InvalidValueError(f"{who}: class values must be in [0, {num_classes}), got "
                                f"values in [{int(np.min(t))}, {int(np.max(t))}]")
    classes = np.arange(num_classes, dtype=np.int64)
    return ops.astype(ops.expand_dims(t, axis=(len(shape_of(t)),)) == classes,
                      dtype=np.dtype(np.int64))


__all__ = ["embedding", "one_hot"]
