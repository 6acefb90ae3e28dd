"""Eager mode: tensors that record their operations as IR (a Wengert list),
differentiated by the same ``gradient`` pass and VJP rules as the compiler.

>>> import numpy as np
>>> from chainrule import tape as ct
>>> x = ct.tensor(np.ones((2, 2)), requires_grad=True)
>>> y = ct.tensor(np.ones((2, 2)) * 4, requires_grad=True)
>>> z = x ** 2 + x * 2 + x * y + y
>>> z.backward(np.ones((2, 2)))
>>> x.grad  # 2x + 2 + y
array([[8., 8.],
       [8., 8.]])
"""

from .graph import record_module
from .pullback import STATS
from .tensor import Tensor, lazy, no_grad, tensor

__all__ = ["STATS", "Tensor", "lazy", "no_grad", "record_module", "tensor"]
