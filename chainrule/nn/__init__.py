"""Neural-network functions with ``torch.nn.functional``'s names, arguments and
semantics (NCHW activations, OIHW weights), so PyTorch code ports line by line::

    import chainrule.nn as F       # where PyTorch has: import torch.nn.functional as F

Every function works on NumPy arrays, inside ``cr.grad`` / ``cr.jit`` / ``cr.vmap`` and
on the tape, at every order of differentiation. Convolution and pooling are ops of
their own (``chainrule/ops/convolution.py``, ``pooling.py``: im2col and BLAS on NumPy,
PyTorch's kernels on PyTorch tensors); the others are written with chainrule's ops.
See ``docs/nn.md``.

>>> import numpy as np, chainrule as cr, chainrule.nn as F
>>> x, w = np.ones((1, 1, 4, 4)), np.ones((2, 1, 3, 3))
>>> loss = lambda w: F.cross_entropy(F.max_pool2d(F.conv2d(x, w), 2).reshape(1, 2),
...                                  np.array([1]))
>>> cr.grad(loss)(w).shape
(2, 1, 3, 3)
"""

from __future__ import annotations

from .. import ops as _ops
from ..numpy._assemble import user_errors as _user_errors
from ..numpy._core import EXPOSED as _EXPOSED
from . import activations as _activations
from . import attention as _attention
from . import convolution as _convolution
from . import losses as _losses
from . import normalization as _normalization
from . import pooling as _pooling
from . import sparse as _sparse
from . import stochastic as _stochastic

_MODULES = (_convolution, _pooling, _activations, _normalization, _stochastic, _sparse,
            _attention, _losses)
__all__ = sorted(n for m in _MODULES for n in m.__all__ if not n[0].isupper())
for _m in _MODULES:
    for _name in _m.__all__:
        _f = getattr(_m, _name)
        globals()[_name] = _user_errors(_f, "nn." + _name) if callable(_f) and not isinstance(
            _f, type) else _f

BatchNormResult = _normalization.BatchNormResult

# the ops users meet through these functions (the registry test checks every op is
# reachable from a namespace)
for _op, _names in (
        (_ops.convolution, ["nn.conv1d", "nn.conv2d", "nn.conv3d"]),
        (_ops.convolution_transpose, ["nn.conv_transpose1d", "nn.conv_transpose2d",
                                      "nn.conv_transpose3d"]),
        (_ops.convolution_weight, ["the gradient of nn.conv2d in its weight"]),
        (_ops.max_pool, ["nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d"]),
        (_ops.max_pool_select, ["nn.max_pool2d(..., return_indices=True)"]),
        (_ops.max_pool_scatter, ["the gradient of nn.max_pool2d"]),
        (_ops.avg_pool, ["nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d"]),
        (_ops.avg_pool_transpose, ["the gradient of nn.avg_pool2d"])):
    _EXPOSED.setdefault(_op, []).extend(n for n in _names if n not in _EXPOSED.get(_op, ()))
