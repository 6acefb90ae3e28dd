"""Complex-number functions of NumPy's namespace beyond the ops of
``ops/complex.py`` (``real``, ``imag``, ``conj``, ``angle``): dtype predicates,
which are static (a traced value's dtype is known), and the elementwise tests.

>>> import numpy as np
>>> iscomplexobj(np.ones(2, complex)), isrealobj(np.ones(2))
(True, True)
>>> iscomplex(np.array([1 + 0j, 2j]))
array([False,  True])
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ._core import EXPOSED as _EXPOSED

# NumPy has no function for it (x + 1j * y is two ops); the real/imag rules emit it
_EXPOSED[_ops.complex_from_parts] = ["chainrule.ops.complex_from_parts"]

complex64, complex128 = _np.complex64, _np.complex128


def _dtype(x) -> _np.dtype:
    dtype = getattr(x, "dtype", None)
    return _np.dtype(dtype.numpy if hasattr(dtype, "numpy") else dtype) if dtype is not None \
        else _np.asarray(x).dtype


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (static: decided without its values)."""
    return _dtype(x).kind == "c"


def isrealobj(x) -> bool:
    """Whether ``x`` does not have a complex dtype."""
    return not iscomplexobj(x)


def iscomplex(x):
    """Elementwise: the imaginary part is not zero (all False for a real ``x``)."""
    return _ops.imag(x) != 0


def isreal(x):
    """Elementwise: the imaginary part is zero (all True for a real ``x``)."""
    return _ops.imag(x) == 0


__all__ = ["complex64", "complex128", "iscomplexobj", "isrealobj", "iscomplex", "isreal"]
