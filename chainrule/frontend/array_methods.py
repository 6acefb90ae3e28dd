"""Python operators and NumPy-style methods shared by traced values and tape tensors.

A subclass provides ``shape``, ``dtype`` and op dispatch (``_cr_apply``);
everything here goes through ``chainrule.numpy``, so it works the same on
every kind of value. NumPy's own functions (``np.exp(x)``, ``np.sum(x)``)
are routed to ``chainrule.numpy`` through ``__array_ufunc__`` and
``__array_function__``.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConcretizationError, TraceError

_UFUNC_NAMES = {"true_divide": "divide", "absolute": "abs", "rint": "round"}


_CNP = []


def _cnp():
    """chainrule.numpy, imported on first use (it imports this layer's users)."""
    if not _CNP:
        from .. import numpy as cnp

        _CNP.append(cnp)
    return _CNP[0]


class ArrayMethods:
    __slots__ = ()
    __array_priority__ = 1000

    # -- properties -------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def T(self):  # noqa: N802
        return _cnp().transpose(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TraceError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- refusing concretization -----------------------------------------------
    def _concrete(self, what: str):
        raise ConcretizationError(
            f"{what} needs a concrete value, but this is a traced array "
            f"{getattr(self, 'var', '')}: Python control flow cannot depend on traced values. "
            f"Use cnp.where(cond, a, b) for elementwise choices, cr.cond / cr.while_loop / "
            f"cr.fori_loop for control flow, or differentiate on the tape (chainrule.tape)."
        )

    def __bool__(self):
        return self._concrete("`if`/`while`/`and`/`or`/bool()")

    def __float__(self):
        return self._concrete("float()")

    def __int__(self):
        return self._concrete("int()")

    def __index__(self):
        return self._concrete("using it as a Python index")

    def __array__(self, dtype=None, copy=None):
        return self._concrete("converting it to a NumPy array")

    # -- arithmetic ----------------------------------------------------------------
    def __add__(self, o):
        return _cnp().add(self, o)

    def __radd__(self, o):
        return _cnp().add(o, self)

    def __sub__(self, o):
        return _cnp().subtract(self, o)

    def __rsub__(self, o):
        return _cnp().subtract(o, self)

    def __mul__(self, o):
        return _cnp().multiply(self, o)

    def __rmul__(self, o):
        return _cnp().multiply(o, self)

    def __truediv__(self, o):
        return _cnp().divide(self, o)

    def __rtruediv__(self, o):
        return _cnp().divide(o, self)

    def __pow__(self, o):
        return _cnp().power(self, o)

    def __rpow__(self, o):
        return _cnp().power(o, self)

    def __matmul__(self, o):
        return _cnp().matmul(self, o)

    def __rmatmul__(self, o):
        return _cnp().matmul(o, self)

    def __neg__(self):
        return _cnp().negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _cnp().abs(self)

    def __lt__(self, o):
        return _cnp().less(self, o)

    def __le__(self, o):
        return _cnp().less_equal(self, o)

    def __gt__(self, o):
        return _cnp().greater(self, o)

    def __ge__(self, o):
        return _cnp().greater_equal(self, o)

    def __eq__(self, o):  # noqa: D105
        return _cnp().equal(self, o)

    def __ne__(self, o):
        return _cnp().not_equal(self, o)

    __hash__ = object.__hash__

    def __and__(self, o):
        return _cnp().logical_and(self, o)

    def __rand__(self, o):
        return _cnp().logical_and(o, self)

    def __or__(self, o):
        return _cnp().logical_or(self, o)

    def __ror__(self, o):
        return _cnp().logical_or(o, self)

    def __invert__(self):
        return _cnp().logical_not(self)

    def __getitem__(self, key):
        return _cnp().getitem(self, key)

    # -- methods -------------------------------------------------------------------
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _cnp().reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _cnp().transpose(self, axes or None)

    def sum(self, axis=None, keepdims=False):
        return _cnp().sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return _cnp().mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return _cnp().max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return _cnp().min(self, axis=axis, keepdims=keepdims)

    def prod(self, axis=None, keepdims=False):
        return _cnp().prod(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None, keepdims=False):
        return _cnp().argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        return _cnp().argmin(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis=None):
        return _cnp().cumsum(self, axis=axis)

    def astype(self, dtype):
        return _cnp().astype(self, dtype)

    def dot(self, o):
        return _cnp().dot(self, o)

    def squeeze(self, axis=None):
        return _cnp().squeeze(self, axis)

    def ravel(self):
        return _cnp().reshape(self, (-1,))

    flatten = ravel

    def clip(self, a_min=None, a_max=None):
        return _cnp().clip(self, a_min, a_max)

    # -- NumPy interoperability -------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            raise TraceError(f"np.{ufunc.__name__}.{method} with {sorted(kwargs)} is not "
                             f"supported on chainrule values")
        name = _UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
        fn = getattr(_cnp(), name, None)
        if fn is None:
            raise TraceError(f"np.{ufunc.__name__} is not supported on chainrule values")
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        fn = getattr(_cnp(), func.__name__, None)
        if fn is None:
            raise TraceError(f"np.{func.__name__} is not supported on chainrule values; "
                             f"see chainrule.numpy for what is")
        return fn(*args, **kwargs)
