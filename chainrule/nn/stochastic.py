"""``dropout``, as ``torch.nn.functional.dropout``: each element is zeroed with
probability ``p`` and the others scaled by ``1 / (1 - p)``, freshly at every call.

The mask is drawn from NumPy's global generator (``np.random``: ``np.random.seed``
makes runs repeatable), or from a ``generator`` (a ``np.random.Generator`` /
``RandomState``) or a chainrule key (``key=cr.random.PRNGKey(0)``: the same key, the
same mask, as in JAX). Inside ``cr.jit`` / ``cr.grad`` / ``cr.vmap`` the draw is an op of
the compiled program (``random_draw``, ``chainrule/frontend/randomness.py``), so each
call of the compiled function draws a new mask; the forward pass and the backward pass
of one call read the same mask (one value of the program).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import ArgumentError
from ._args import Array, array, number, shape_of


def _uniform(shape, generator, key):
    if key is not None:
        if generator is not None:
            raise ArgumentError("dropout: give a generator or a key, not both")
        return ops.random_uniform(key, shape=shape, dtype=np.float64)
    if generator is None:
        # looked up at each call: while chainrule traces a function, np.random's functions
        # are stand-ins that make the draw an op of the program
        return np.random.random_sample(shape)
    if isinstance(generator, np.random.RandomState):
        return generator.random_sample(shape)
    if isinstance(generator, np.random.Generator) or hasattr(generator, "random"):
        return generator.random(shape)
    raise ArgumentError(f"dropout: generator must be a NumPy Generator or RandomState, got "
                        f"{type(generator).__name__}")


def dropout(input: Array, p: float = 0.5, training: bool = True, inplace: bool = False, *,
            generator: np.random.Generator | np.random.RandomState | None = None,
            key: Array | None = None) -> Array:
    """Zero each element with probability ``p`` (a fresh mask at every call), scaling the
    others by ``1 / (1 - p)``; the input itself when ``training`` is False or ``p == 0``.
    ``generator`` (a NumPy generator) or ``key`` (a ``cr.random`` key) choose where the
    mask comes from (default: ``np.random``'s global generator).

    >>> import numpy as np
    >>> dropout(np.ones(4), 0.5, training=False)
    array([1., 1., 1., 1.])
    >>> y = dropout(np.ones(1000), 0.25)
    >>> sorted(set(y.round(4).tolist())), 0.65 < float(np.mean(y > 0)) < 0.85
    ([0.0, 1.3333], True)
    """
    x = array(input, "dropout")
    p = number(p, "dropout", "dropout probability p", low=0.0, high=1.0)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    u = _uniform(shape_of(x), generator, key)
    keep = ops.astype(u >= p, dtype=np.dtype(x.dtype) if np.dtype(x.dtype).kind == "f"
                      else np.dtype(np.float64))
    return x * (keep * (1.0 / (1.0 - p)))


__all__ = ["dropout"]
