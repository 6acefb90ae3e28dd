"""Operators, one file per family. Importing this package registers them all.

Each op function computes on NumPy arrays, emits IR on traced values and
records on tape tensors.
"""

from . import elementwise, indexing, linalg, nn, reduction, shape, stack  # noqa: F401
from .common import apply, evaluate
from .elementwise import *  # noqa: F403
from .indexing import index, index_add
from .linalg import matmul
from .nn import log_softmax, logsumexp, softmax
from .reduction import argmax, argmin, cumsum, max, mean, min, prod, sum  # noqa: A004
from .shape import *  # noqa: F403

__all__ = ["apply", "evaluate", "elementwise", "indexing", "linalg", "nn", "reduction", "shape",
           "index", "index_add", "matmul", "softmax", "log_softmax", "logsumexp", "sum", "mean",
           "max", "min", "prod", "argmax", "argmin", "cumsum"]
