"""Activation functions with ``torch.nn.functional``'s names and arguments, written with
chainrule's ops (each is as fast as a dedicated op would be: a few elementwise passes,
which the ``fuse`` pass may merge). ``inplace=True`` is accepted and computes the same
values (chainrule's arrays are never changed in place)."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..errors import InvalidValueError
from ._args import Array, DTypeLike, array, number

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def relu(input: Array, inplace: bool = False) -> Array:
    """max(x, 0); its derivative at 0 is 0, as PyTorch's.

    >>> import numpy as np
    >>> relu(np.array([-1.0, 0.0, 2.0]))
    array([0., 0., 2.])
    """
    return ops.relu(array(input, "relu"))


def leaky_relu(input: Array, negative_slope: float = 0.01, inplace: bool = False) -> Array:
    """x for x > 0, else ``negative_slope * x``.

    >>> import numpy as np
    >>> leaky_relu(np.array([-2.0, 3.0]), 0.1)
    array([-0.2,  3. ])
    """
    x = array(input, "leaky_relu")
    slope = number(negative_slope, "leaky_relu", "negative_slope")
    return ops.where(x > 0, x, x * slope)


def elu(input: Array, alpha: float = 1.0, inplace: bool = False) -> Array:
    """x for x > 0, else ``alpha * (exp(x) - 1)``.

    >>> import numpy as np
    >>> elu(np.array([-1.0, 2.0])).round(4)
    array([-0.6321,  2.    ])
    """
    x = array(input, "elu")
    alpha = number(alpha, "elu", "alpha")
    # the negative branch reads 0 where x > 0 (its derivative stays finite where it is not
    # taken); a where, not a minimum, so at 0 its slope is alpha, as in PyTorch
    positive = x > 0
    return ops.where(positive, x, alpha * ops.expm1(ops.where(positive, 0.0, x)))


def gelu(input: Array, approximate: str = "none") -> Array:
    """x Phi(x) (``approximate="none"``, through erf: needs SciPy's kernel on NumPy, ``pip
    install scipy``) or its tanh approximation (``approximate="tanh"``), as PyTorch.

    >>> import numpy as np
    >>> gelu(np.array([-1.0, 1.0]), approximate="tanh").round(4)
    array([-0.1588,  0.8412])
    """
    x = array(input, "gelu")
    if approximate == "none":
        return 0.5 * x * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        return 0.5 * x * (1.0 + ops.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    raise InvalidValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input: Array, inplace: bool = False) -> Array:
    """x sigmoid(x) (swish).

    >>> import numpy as np
    >>> silu(np.array([0.0, 1.0])).round(4)
    array([0.    , 0.7311])
    """
    x = array(input, "silu")
    return x * ops.sigmoid(x)


def softplus(input: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """log(1 + exp(beta x)) / beta, and x itself where ``beta x > threshold`` (PyTorch's
    switch to the linear function).

    >>> import numpy as np
    >>> softplus(np.array([0.0, 30.0])).round(4)
    array([ 0.6931, 30.    ])
    """
    x = array(input, "softplus")
    beta = number(beta, "softplus", "beta")
    threshold = number(threshold, "softplus", "threshold")
    if beta == 0:
        raise InvalidValueError("softplus: beta must not be 0")
    z = x * beta if beta != 1 else x
    # logaddexp(z, 0) is smooth (derivative sigmoid(z), 1/2 at 0); where the branch is not
    # taken it reads the threshold, so no overflow reaches the derivative (a where, not a
    # minimum: at z == threshold the derivative is the soft branch's, as in PyTorch)
    soft = ops.logaddexp(ops.where(z > threshold, threshold, z), 0.0)
    soft = soft / beta if beta != 1 else soft
    return ops.where(z > threshold, x, soft)


def sigmoid(input: Array) -> Array:
    """1 / (1 + exp(-x)).

    >>> import numpy as np
    >>> sigmoid(np.array([0.0]))
    array([0.5])
    """
    return ops.sigmoid(array(input, "sigmoid"))


def tanh(input: Array) -> Array:
    """tanh(x).

    >>> import numpy as np
    >>> tanh(np.array([0.0]))
    array([0.])
    """
    return ops.tanh(array(input, "tanh"))


def _softmax_dim(x, dim, who) -> int:
    ndim = len(x.shape)
    if dim is None:  # PyTorch's implicit choice (deprecated there)
        dim = 0 if ndim in (0, 1, 3) else 1
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise InvalidValueError(f"{who}: dim must be an int, got {dim!r}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise InvalidValueError(f"{who}: dim {dim} is out of range for an input of rank {ndim}")
    return int(dim)


def _cast(x, dtype):
    return x if dtype is None else ops.astype(x, dtype=np.dtype(dtype))


def softmax(input: Array, dim: int | None = None, _stacklevel: int = 3,
            dtype: DTypeLike | None = None) -> Array:
    """exp(x) / sum(exp(x)) along ``dim``.

    >>> import numpy as np
    >>> softmax(np.array([[0.0, 0.0]]), dim=1)
    array([[0.5, 0.5]])
    """
    x = _cast(array(input, "softmax"), dtype)
    if len(x.shape) == 0:
        return ops.softmax(ops.reshape(x, (1,)), axis=0)[0]
    return ops.softmax(x, axis=_softmax_dim(x, dim, "softmax"))


def log_softmax(input: Array, dim: int | None = None, _stacklevel: int = 3,
                dtype: DTypeLike | None = None) -> Array:
    """x - logsumexp(x) along ``dim``.

    >>> import numpy as np
    >>> log_softmax(np.array([0.0, 0.0]), dim=0).round(4)
    array([-0.6931, -0.6931])
    """
    x = _cast(array(input, "log_softmax"), dtype)
    if len(x.shape) == 0:
        return ops.log_softmax(ops.reshape(x, (1,)), axis=0)[0]
    return ops.log_softmax(x, axis=_softmax_dim(x, dim, "log_softmax"))


__all__ = ["relu", "leaky_relu", "elu", "gelu", "silu", "softplus", "sigmoid", "tanh",
           "softmax", "log_softmax"]
