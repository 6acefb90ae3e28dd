"""Operators, one file per family. Importing this package registers them all.

Each op is declared once (``chainrule.ops.common.define``) with its type
rule, kernel and facts; ops are callable: they compute on NumPy arrays, emit
IR on traced values and record on tape tensors.
"""

from ..ir.op import OPS, Op, apply, evaluate
from . import elementwise, indexing, linalg, nn, reduction, shape, stack  # noqa: F401
from .composites import prefix_product
from .elementwise import *  # noqa: F403
from .indexing import getitem, index, index_add, index_update
from .linalg import matmul
from .nn import log_softmax, logsumexp, softmax
from .reduction import argmax, argmin, cumsum, max, mean, min, prod, sum  # noqa: A004
from .shape import *  # noqa: F403

# the ops chainrule itself declares (user and custom ops register later)
BUILTIN_OPS = tuple(OPS.values())

__all__ = ["BUILTIN_OPS", "OPS", "Op", "apply", "evaluate", "elementwise", "indexing",
           "linalg", "nn", "reduction", "shape", "index", "index_add", "index_update", "getitem",
           "matmul", "softmax", "log_softmax", "logsumexp", "sum", "mean", "max", "min", "prod",
           "argmax", "argmin", "cumsum", "prefix_product"]
