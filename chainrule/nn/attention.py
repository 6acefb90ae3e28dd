"""``scaled_dot_product_attention``, as ``torch.nn.functional``'s (its reference
definition): ``softmax(q k^T * scale + mask) v`` over the last two axes."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..errors import InvalidValueError
from ._args import Array, array, number, shape_of
from .stochastic import dropout


def scaled_dot_product_attention(query: Array, key: Array, value: Array,
                                 attn_mask: Array | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Array:
    """Attention of ``query`` ``(..., L, E)`` over ``key`` ``(..., S, E)`` and ``value``
    ``(..., S, Ev)``: ``softmax(query @ key^T * scale + bias) @ value`` with ``scale``
    ``1 / sqrt(E)`` by default. ``attn_mask`` is boolean (True: the position takes part)
    or a float bias added to the scores, broadcast to ``(..., L, S)``; ``is_causal``
    masks the positions after each query's own (top-left aligned, as PyTorch);
    ``dropout_p`` drops attention weights (fresh at each call); ``enable_gqa`` lets
    ``query`` have more heads (axis -3) than ``key`` / ``value``, each key head shared
    by a group of query heads.

    >>> import numpy as np
    >>> q = k = np.eye(2)[None]
    >>> v = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> scaled_dot_product_attention(q, k, v, is_causal=True)
    array([[[1.        , 0.        ],
            [0.33023845, 0.66976155]]])
    """
    who = "scaled_dot_product_attention"
    q, k, v = array(query, who, "query"), array(key, who, "key"), array(value, who, "value")
    for x, what in ((q, "query"), (k, "key"), (v, "value")):
        if len(x.shape) < 2:
            raise InvalidValueError(f"{who}: {what} must have rank >= 2 (..., sequence, "
                                    f"features), got shape {shape_of(x)}")
    big_l, e = q.shape[-2], q.shape[-1]
    s = k.shape[-2]
    if k.shape[-1] != e:
        raise InvalidValueError(f"{who}: query {shape_of(q)} and key {shape_of(k)} must have "
                                f"the same feature size")
    if v.shape[-2] != s:
        raise InvalidValueError(f"{who}: key {shape_of(k)} and value {shape_of(v)} must have "
                                f"the same sequence length")
    if enable_gqa and len(q.shape) >= 3 and len(k.shape) >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hq % hk or v.shape[-3] != hk:
            raise InvalidValueError(f"{who}: with enable_gqa the query's {hq} heads must be a "
                                    f"multiple of the key's and value's {hk}")
        k = _repeat_heads(k, hq // hk)
        v = _repeat_heads(v, hq // hk)
    scale = 1.0 / math.sqrt(e) if scale is None else number(scale, who, "scale")
    nd = len(k.shape)
    scores = ops.matmul(q, ops.permute_dims(k, axes=(*range(nd - 2), nd - 1, nd - 2))) * scale
    if is_causal:
        if attn_mask is not None:
            raise InvalidValueError(f"{who}: give attn_mask or is_causal=True, not both")
        attn_mask = np.tril(np.ones((big_l, s), dtype=bool))
    if attn_mask is not None:
        mask = array(attn_mask, who, "attn_mask")
        if np.dtype(mask.dtype) == np.bool_:
            scores = ops.where(mask, scores, -np.inf)
        else:
            scores = scores + mask
    weights = ops.softmax(scores, axis=-1)
    p = number(dropout_p, who, "dropout_p", low=0.0, high=1.0)
    if p > 0:
        weights = dropout(weights, p)
    return ops.matmul(weights, v)


def _repeat_heads(x, times):
    """(..., H, S, E) -> (..., H * times, S, E), each head repeated ``times`` times in a
    row (PyTorch's repeat_interleave along the heads)."""
    shape = shape_of(x)
    lead, (h, s, e) = shape[:-3], shape[-3:]
    x = ops.expand_dims(x, axis=(len(shape) - 2,))
    x = ops.broadcast_to(x, (*lead, h, times, s, e))
    return ops.reshape(x, (*lead, h * times, s, e))


__all__ = ["scaled_dot_product_attention"]
