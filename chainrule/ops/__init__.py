# ruff: noqa: F401, F403  (this package re-exports every family's ops)
"""Operators, one file per family. Importing this package registers them all.

Each op is declared once (``chainrule.ops.common.define``) with its type
rule, kernel and facts; ops are callable: they compute on NumPy arrays, emit
IR on traced values and record on tape tensors.
"""

from ..ir.op import OPS, Op, apply, evaluate
from . import (  # noqa: F401
    assembly,
    bessel,
    complex,
    convolution,
    decompositions,
    elementwise,
    fft,
    indexing,
    linalg,
    mathfuncs,
    matrix_equations,
    nn,
    pooling,
    random,
    reduction,
    scatter,
    shape,
    sorting,
    special,
    special_extra,
    stack,
    stack_schedule,
)
from .assembly import *  # noqa: F403
from .bessel import *  # noqa: F403
from .complex import *  # noqa: F403
from .composites import prefix_product
from .convolution import *  # noqa: F403
from .decompositions import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import getitem, index, index_add, index_update
from .linalg import *  # noqa: F403
from .mathfuncs import *  # noqa: F403
from .matrix_equations import *  # noqa: F403
from .nn import log_softmax, logsumexp, softmax
from .pooling import *  # noqa: F403
from .random import *
from .reduction import argmax, argmin, cumsum, max, mean, min, prod, sum  # noqa: A004
from .scatter import *  # noqa: F403
from .shape import *  # noqa: F403
from .sorting import *  # noqa: F403
from .special import *  # noqa: F403
from .special_extra import *  # noqa: F403

# the ops chainrule itself declares (user and custom ops register later)
BUILTIN_OPS = tuple(OPS.values())

__all__ = sorted({"BUILTIN_OPS", "OPS", "Op", "apply", "evaluate", "getitem", "index_update",
                  "prefix_product", *(n for n, v in globals().items() if isinstance(v, Op))})
