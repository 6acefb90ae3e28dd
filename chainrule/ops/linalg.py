"""Linear algebra: ``matmul`` with NumPy semantics (1-D operands promoted and
their axis removed again; batch dimensions broadcast).

>>> import numpy as np
>>> matmul(np.ones((2, 3)), np.ones(3))
array([3., 3.])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from .common import TensorType, broadcast_shapes, define, promote, tensor_types

__all__ = ["matmul"]


def _matmul_type(types, attrs):
    a, b = tensor_types("matmul", types)
    if a.ndim == 0 or b.ndim == 0:
        raise TypeInferenceError(f"matmul: operands must have rank >= 1, got {a!r} and {b!r} "
                                 f"(use multiply for scalars)")
    a_shape = (1,) + a.shape if a.ndim == 1 else a.shape
    b_shape = b.shape + (1,) if b.ndim == 1 else b.shape
    if a_shape[-1] != b_shape[-2]:
        raise TypeInferenceError(
            f"matmul: inner dimensions differ: {a!r} @ {b!r} ({a_shape[-1]} vs {b_shape[-2]})")
    batch = broadcast_shapes("matmul", [TensorType(a_shape[:-2], a.dtype),
                                        TensorType(b_shape[:-2], b.dtype)])
    shape = batch + ((a_shape[-2],) if a.ndim > 1 else ()) + ((b_shape[-1],) if b.ndim > 1 else ())
    if a.dtype.is_bool and b.dtype.is_bool:
        raise TypeInferenceError("matmul: not defined on bool operands")
    return TensorType(shape, promote("matmul", [a, b]))


def _matmul_emit(e):
    return f"{e.args[0]} @ {e.args[1]}"


matmul = define("matmul", _matmul_type, np.matmul, 2, emit=_matmul_emit, linear="one",
                fresh=True, aliases=False, namespace=("matmul",))
