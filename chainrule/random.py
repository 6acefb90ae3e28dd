"""Explicit, reproducible randomness in JAX's style: a key (``u32[2]``) names a
stream of random numbers; the same key always gives the same numbers, and
``split`` makes new keys. The functions are pure, so they compile, cache and
differentiate (with respect to their other inputs) like any op.

>>> import numpy as np, chainrule as cr
>>> key = cr.random.PRNGKey(0)
>>> k1, k2 = cr.random.split(key)
>>> a = cr.random.normal(k1, (2,))
>>> bool(np.array_equal(a, cr.random.normal(k1, (2,))))
True
>>> f = cr.jit(lambda key, mu: mu + cr.random.normal(key, (2,)))
>>> bool(np.allclose(f(k1, np.zeros(2)), a))
True
"""

from __future__ import annotations

import numpy as np

from . import ops
from .errors import ArgumentError
from .numpy._core import EXPOSED

__all__ = ["PRNGKey", "key", "split", "fold_in", "bits", "normal", "uniform", "bernoulli",
           "randint", "categorical", "gumbel", "exponential"]


def PRNGKey(seed) -> np.ndarray:  # noqa: N802 - JAX's name
    """The key of a seed: ``u32[2]``."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"PRNGKey: the seed must be an int, got {seed!r}")
    seed = int(seed) % 2**64
    return np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)


key = PRNGKey


def split(key, num: int = 2):
    """``num`` new keys (a ``u32[num, 2]`` array: iterate it or index it)."""
    return ops.random_split(key, num=num)


def fold_in(key, data: int):
    """A new key from ``key`` and a non-negative int (a step number, a worker index)."""
    return ops.random_fold_in(key, data=data)


def bits(key, shape=(), dtype=np.uint32):
    """Uniformly random unsigned integers (all bits random)."""
    return ops.random_bits(key, shape=_shape(shape), dtype=dtype)


def _shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape):
        raise ArgumentError(f"random: shape must be an int or a tuple of ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def normal(key, shape=(), dtype=np.float64):
    """Standard normal samples."""
    return ops.random_normal(key, shape=_shape(shape), dtype=dtype)


def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Uniform samples in ``[minval, maxval)``."""
    u = ops.random_uniform(key, shape=_shape(shape), dtype=dtype)
    if type(minval) in (int, float) and type(maxval) in (int, float) and (
            minval, maxval) == (0.0, 1.0):
        return u
    return minval + (maxval - minval) * u


def bernoulli(key, p=0.5, shape=None):
    """Booleans, True with probability ``p``."""
    shape = (tuple(p.shape) if hasattr(p, "shape") else np.shape(p)) if shape is None else shape
    return uniform(key, shape) < p


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Integers in ``[minval, maxval)`` (static bounds)."""
    span = int(maxval) - int(minval)
    if span <= 0:
        raise ArgumentError(f"randint: maxval {maxval} must exceed minval {minval}")
    u = uniform(key, shape)
    return ops.astype(ops.floor(u * span), dtype=np.dtype(dtype)) + np.dtype(dtype).type(minval)


def gumbel(key, shape=(), dtype=np.float64):
    """Standard Gumbel samples: -log(-log(u))."""
    u = uniform(key, shape, dtype)
    return -ops.log(-ops.log(u))


def categorical(key, logits, axis: int = -1):
    """Category indices drawn with probabilities ``softmax(logits)`` (the Gumbel-max
    trick)."""
    shape = tuple(logits.shape) if hasattr(logits, "shape") else np.shape(logits)
    return ops.argmax(logits + gumbel(key, shape), axis=axis)


def exponential(key, shape=(), dtype=np.float64):
    """Standard exponential samples: -log(1 - u)."""
    return -ops.log1p(-uniform(key, shape, dtype))


for _op, _name in ((ops.random_split, "split"), (ops.random_fold_in, "fold_in"),
                   (ops.random_normal, "normal"), (ops.random_uniform, "uniform"),
                   (ops.random_bits, "bits")):
    EXPOSED.setdefault(_op, []).append(f"chainrule.random.{_name}")
EXPOSED.setdefault(ops.random_draw, []).append(
    "draws of NumPy generators inside compiled functions (frontend/randomness.py)")
