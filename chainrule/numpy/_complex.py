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
from ..errors import ConcretizationError
from ..ir.op import is_dispatched as _is_dispatched
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


def real_if_close(a, tol=100):
    """``np.real_if_close``: the real part when every imaginary part is within ``tol``
    machine epsilons of zero (``tol`` below 1 is an absolute bound), else ``a``. A real
    ``a`` is returned as it is. Which one depends on the values, so a traced complex
    ``a`` (whose values are not known) is an error; a tape tensor is decided by its
    value, and the real part differentiates as ``real``."""
    if not _is_dispatched(a):
        return _np.real_if_close(a, tol)
    dtype = _dtype(a)
    if dtype.kind != "c":
        return a
    value = getattr(a, "_cr_value", None)
    if value is None:
        raise ConcretizationError(
            "real_if_close: whether the result is real depends on the values, which a "
            "traced array does not have; use cnp.real(a) if the imaginary part is known to "
            "be negligible")
    bound = tol * _np.finfo(dtype).eps if tol > 1 else tol
    return _ops.real(a) if _np.all(_np.abs(_np.imag(value())) < bound) else a


__all__ = ["complex64", "complex128", "iscomplexobj", "isrealobj", "iscomplex", "isreal",
           "real_if_close"]
