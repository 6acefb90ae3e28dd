"""Python operators and NumPy-style methods shared by traced values and tape tensors.

A subclass provides ``shape``, ``dtype`` and op dispatch (``_cr_apply``).
Operators apply the ops directly (``a + b`` is ``ops.add(a, b)``), so rules
written with operators emit IR. Named methods come from one table,
``METHODS``: ops declare theirs (``methods=("sum",)``) and the user
namespace adds the methods written as composites (``x.var()``).

NumPy's own functions (``np.exp(x)``, ``np.sum(x)``) reach the user
namespace through ``__array_ufunc__`` and ``__array_function__``, looked up
in ``NUMPY_FUNCTIONS``, which ``chainrule.numpy`` fills when it is imported.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import numpy as np

from .. import ops
from ..errors import ConcretizationError, ImmutableValueError, MissingMethodError, TraceError
from ..ir.array import AT_INDEXER
from ..ir.op import HANDLERS

# NumPy ufunc -> chainrule.numpy function (the bitwise ufuncs on bools are the logical
# ones: what `np.bool_(True) | x` calls; on integers the logical ops refuse them)
_UFUNC_NAMES = {"true_divide": "divide", "absolute": "abs", "rint": "round",
                "bitwise_and": "logical_and", "bitwise_or": "logical_or",
                "bitwise_xor": "logical_xor", "invert": "logical_not"}

# method name -> function(self, *args, **kwargs)
METHODS: dict[str, Callable] = {}
# NumPy function name -> the chainrule.numpy function that implements it
NUMPY_FUNCTIONS: dict[str, Callable] = {}
# a PyTorch function or torch.Tensor method -> what it does on chainrule values (PyTorch
# hands them over through __torch_function__: torch_tensor @ traced, torch.sin(traced));
# filled when first needed by the function chainrule.numpy puts in TORCH_TABLE
TORCH_FUNCTIONS: dict = {}
TORCH_TABLE: list[Callable] = []


class ArrayMethods:
    __slots__ = ()
    __array_priority__ = 1000

    # -- properties -------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        shape = self.shape
        if all(type(d) is int for d in shape):
            return int(np.prod(shape, dtype=np.int64))
        return functools.reduce(operator.mul, shape, 1)  # symbolic: a Dim (ir.dims)

    @property
    def T(self):  # noqa: N802
        return ops.permute_dims(self)

    @property
    def real(self):  # an attribute in NumPy (x.real), not a method
        return ops.real(self)

    @property
    def imag(self):
        return ops.imag(self)

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

    def __complex__(self):
        return self._concrete("complex()")

    def item(self, *args):
        return self._concrete(".item()")

    def tolist(self):
        return self._concrete(".tolist()")

    def __index__(self):
        return self._concrete("using it as a Python index")

    def __array__(self, dtype=None, copy=None):
        return self._concrete("converting it to a NumPy array")

    # -- arithmetic ----------------------------------------------------------------
    def __add__(self, o):
        return ops.add(self, o)

    def __radd__(self, o):
        return ops.add(o, self)

    def __sub__(self, o):
        return ops.subtract(self, o)

    def __rsub__(self, o):
        return ops.subtract(o, self)

    def __mul__(self, o):
        return ops.multiply(self, o)

    def __rmul__(self, o):
        return ops.multiply(o, self)

    def __truediv__(self, o):
        return ops.divide(self, o)

    def __rtruediv__(self, o):
        return ops.divide(o, self)

    def __pow__(self, o):
        return ops.power(self, o)

    def __rpow__(self, o):
        return ops.power(o, self)

    def __mod__(self, o):
        return ops.remainder(self, o)

    def __rmod__(self, o):
        return ops.remainder(o, self)

    def __floordiv__(self, o):
        return ops.floor_divide(self, o)

    def __rfloordiv__(self, o):
        return ops.floor_divide(o, self)

    def __divmod__(self, o):
        return ops.floor_divide(self, o), ops.remainder(self, o)

    def __rdivmod__(self, o):
        return ops.floor_divide(o, self), ops.remainder(o, self)

    def __matmul__(self, o):
        return ops.matmul(self, o)

    def __rmatmul__(self, o):
        return ops.matmul(o, self)

    def __neg__(self):
        return ops.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ops.abs(self)

    def __lt__(self, o):
        return ops.less(self, o)

    def __le__(self, o):
        return ops.less_equal(self, o)

    def __gt__(self, o):
        return ops.greater(self, o)

    def __ge__(self, o):
        return ops.greater_equal(self, o)

    def __eq__(self, o):  # noqa: D105
        return ops.equal(self, o)

    def __ne__(self, o):
        return ops.not_equal(self, o)

    __hash__ = object.__hash__

    def __and__(self, o):
        return ops.logical_and(self, o)

    def __rand__(self, o):
        return ops.logical_and(o, self)

    def __or__(self, o):
        return ops.logical_or(self, o)

    def __ror__(self, o):
        return ops.logical_or(o, self)

    def __xor__(self, o):
        return ops.logical_xor(self, o)

    def __rxor__(self, o):
        return ops.logical_xor(o, self)

    def __invert__(self):
        return ops.logical_not(self)

    def __getitem__(self, key):
        return ops.getitem(self, key)

    def __setitem__(self, key, value):
        raise ImmutableValueError("chainrule values are immutable: instead of x[idx] = y, write "
                         "x = x.at[idx].set(y) (JAX's functional update)")

    @property
    def at(self):
        """Functional updates, as JAX's: ``x.at[idx].add(v)`` is a new array."""
        return AtIndexer(self)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        install_op_methods()  # methods of ops registered since (user ops)
        method = METHODS.get(name)
        if method is None:
            raise MissingMethodError(f"{type(self).__name__} has no attribute {name!r}; "
                                     f"array methods are: {', '.join(sorted(METHODS))}")
        return method.__get__(self, type(self))

    # -- NumPy interoperability -------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            raise TraceError(f"np.{ufunc.__name__}.{method} with {sorted(kwargs)} is not "
                             f"supported on chainrule values")
        name = _UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
        fn = NUMPY_FUNCTIONS.get(name)
        if fn is None:
            raise TraceError(f"np.{ufunc.__name__} is not supported on chainrule values")
        return fn(*inputs)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if not TORCH_FUNCTIONS:
            TORCH_TABLE[0](TORCH_FUNCTIONS)
        fn = TORCH_FUNCTIONS.get(func)
        if fn is None:
            name = getattr(func, "__qualname__", None) or getattr(func, "__name__", func)
            raise TraceError(f"torch {name} is not supported on chainrule values; use the "
                             f"chainrule.numpy function that computes it")
        return fn(*args, **(kwargs or {}))

    def __array_function__(self, func, types, args, kwargs):
        # np.linalg.diagonal is not np.diagonal: look functions up by their module too
        module = getattr(func, "__module__", "numpy") or "numpy"
        name = (func.__name__ if module == "numpy" else
                f"{module.removeprefix('numpy.')}.{func.__name__}")
        fn = NUMPY_FUNCTIONS.get(name)
        if fn is None:
            raise TraceError(f"np.{name} is not supported on chainrule values; "
                             f"see chainrule.numpy for what is")
        return fn(*args, **kwargs)


class AtIndexer:
    """``x.at``: ``x.at[idx]`` names the positions a functional update touches."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, key):
        return AtPositions(self.array, key)


class AtPositions:
    """``x.at[idx]``: ``.get()`` reads them; ``.set(v)``, ``.add(v)``, ``.multiply(v)``,
    ``.divide(v)``, ``.min(v)``, ``.max(v)`` return a new ``x`` with them updated (JAX's
    semantics: repeated index-array positions accumulate, as ``np.add.at``; for ``set``
    the last write wins)."""

    __slots__ = ("array", "key")

    def __init__(self, array, key):
        self.array = array
        self.key = key

    def _update(self, op, value, options):
        unknown = set(options) - {"indices_are_sorted", "unique_indices", "mode"}
        if unknown:
            raise TraceError(f"x.at[...]: unknown option(s) {sorted(unknown)}")
        if options.get("mode") not in (None, "promise_in_bounds"):
            raise TraceError(f"x.at[...]: mode={options['mode']!r} is not supported "
                             f"(indices are checked against the shape, as NumPy does)")
        return ops.index_update(op, self.array, self.key, value)

    def get(self, **options):
        return ops.getitem(self.array, self.key)

    def add(self, value, **options):
        return self._update(ops.index_add, value, options)

    def set(self, value, **options):
        return self._update(ops.index_set, value, options)

    def multiply(self, value, **options):
        return self._update(ops.index_multiply, value, options)

    def divide(self, value, **options):
        return self._update(ops.index_multiply, ops.reciprocal(value), options)

    def min(self, value, **options):
        return self._update(ops.index_min, value, options)

    def max(self, value, **options):
        return self._update(ops.index_max, value, options)


def install_direct_operators(cls: type, direct: frozenset) -> None:
    """Give ``cls`` (a traced value, a tape tensor) the arithmetic operators (``+ - * /
    @ **`` and their reflections) as methods that hand the op to ``cls._cr_apply`` at
    once when the other operand's type is in ``direct`` (types ``cls`` wins the
    dispatch against), skipping ``Op.__call__``'s attribute handling and dispatch loop
    (rules are mostly written with these operators); through the op otherwise."""
    for name, op in (("add", ops.add), ("sub", ops.subtract), ("mul", ops.multiply),
                     ("truediv", ops.divide), ("matmul", ops.matmul), ("pow", ops.power)):
        setattr(cls, f"__{name}__", _direct_operator(op, f"__{name}__", False, direct))
        setattr(cls, f"__r{name}__", _direct_operator(op, f"__r{name}__", True, direct))


def _direct_operator(op, name: str, reflected: bool, direct: frozenset):
    if reflected:
        def method(self, o):
            if type(o) in direct:
                return self._cr_apply(op, (o, self), {})
            return op(o, self)
    else:
        def method(self, o):
            if type(o) in direct:
                return self._cr_apply(op, (self, o), {})
            return op(self, o)
    method.__name__ = method.__qualname__ = name
    return method


def array_method(name: str, fn: Callable | None = None):
    """Register ``fn(self, ...)`` as the array method ``name`` of traced values and tape
    tensors (usable as a decorator)."""

    def register(f):
        if not name.isidentifier() or name.startswith("__"):
            raise TraceError(f"array_method: {name!r} is not a method name")
        METHODS[name] = f
        setattr(ArrayMethods, name, f)
        return f

    return register if fn is None else register(fn)


def op_caller(op) -> Callable:
    """``f(*args, **attrs)`` equal to ``op(*args, **attrs)``, for namespace functions and
    array methods. For a one-operand op called on a traced value or tape tensor alone,
    that value takes over as ``op()`` would decide, without its argument handling and
    dispatch loop: one Python frame less on the tape's record path (``x.sum()``,
    ``cnp.sin(x)``)."""
    if op.nargs != 1:
        def call(*args, **attrs):
            return op(*args, **attrs)
    else:
        def call(*args, **attrs):
            if len(args) == 1 and type(args[0]) in HANDLERS:
                return args[0]._cr_apply(op, args, attrs)
            return op(*args, **attrs)

    return call


def _op_method(op):
    method = op_caller(op)  # a function: as a class attribute, self is its first operand

    method.__name__ = op.name
    method.__doc__ = op.doc or f"The ``{op.name}`` op applied to this array."
    return method


def install_op_methods() -> None:
    """Methods of every registered op that declares some (idempotent)."""
    for op in ops.OPS.values():
        for name in op.methods:
            if name not in METHODS:
                array_method(name, _op_method(op))


install_op_methods()


AT_INDEXER.append(AtIndexer)
