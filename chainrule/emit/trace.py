"""The core that lets rules and passes call ops on IR values.

A ``Trace`` owns a ``Builder``; a ``Traced`` is a variable of the IR under
construction. Applying an op (or an operator: ``a * b``) to a traced value
emits a binding whose type the builder infers, so a derivative rule written
with ops computes on arrays and emits IR on traced values alike.

Traces nest (a ``grad`` inside a traced function traces its own function);
a value of an outer trace met by an inner one is lifted into an extra
parameter of the inner function (closure conversion), so every traced
function is closed.

>>> import numpy as np
>>> from chainrule import ops
>>> from chainrule.ir import TensorType
>>> with Trace() as tr:
...     x = tr.wrap(tr.builder.param("x", TensorType((3,), "f64")))
...     y = ops.sum(ops.tanh(x) * 2.0)
...     print(tr.builder.finish_function(y.variable).body.bindings[-1].value.callee)
Op(sum)
"""

from __future__ import annotations

import inspect

import numpy as np

from ..errors import RecordedValueError, TraceError, TypeInferenceError
from ..ir.builder import Builder
from ..ir.dims import Dim
from ..ir.nodes import Constant, Tuple, TupleGetItem, Var
from ..ir.op import HANDLERS, PYTHON_SCALARS, SYMBOLIC_APPLY, Op, weak_scalar_dtype
from ..ir.types import DType, TensorType, TupleType, Type
from .methods import ArrayMethods, install_direct_operators

TRACE_STACK: list[Trace] = []
_ARRAY_TYPES = (np.ndarray, np.generic)


class Traced(ArrayMethods):
    """A value being traced: a variable of the IR under construction."""

    __slots__ = ("tracer", "variable")

    def __init__(self, trace: Trace, var):
        self.tracer = trace
        self.variable = var

    @property
    def type(self) -> Type:
        return self.variable.type

    @property
    def shape(self) -> tuple:
        t = self.variable.type
        if not isinstance(t, TensorType):
            raise TraceError(f"{self.variable.name} is a {t!r}, which has no shape")
        shape = t.shape
        for d in shape:  # a symbol as a Dim: arithmetic with ints, usable in shapes
            if type(d) is str:
                return tuple(Dim.symbol(d) if type(d) is str else d for d in shape)
        return shape

    @property
    def dtype(self) -> np.dtype:
        return self.variable.type.dtype.numpy

    def _cr_apply(self, op: Op, args, attrs):
        tracer = self.tracer
        numbers = False  # the common cases first: values of this trace (and Python numbers)
        for a in args:
            if type(a) is Traced:
                if a.tracer is not tracer:
                    break
            elif type(a) in PYTHON_SCALARS:
                numbers = True
            else:
                break
        else:
            if not REBOUND and not tracer.finished:
                if numbers:  # the 1 of 1 - z*z: typed by the arrays it meets (NEP 50)
                    strong = [a.variable.type.dtype.numpy for a in args
                              if type(a) is Traced and isinstance(a.variable.type, TensorType)]
                    return tracer.emit_op(op, [a.variable if type(a) is Traced
                                               else _scalar_constant(a, strong) for a in args],
                                          attrs)
                return tracer.emit_op(op, [a.variable for a in args], attrs)
        if REBOUND:  # a custom rule reading a value its function closed over
            args = tuple(_rebound(a) for a in args)
        traced = [a for a in args if isinstance(a, Traced)]
        inner = traced[0].tracer if traced else self.tracer
        for a in args:
            if isinstance(a, Traced) and a.tracer.level > inner.level:
                inner = a.tracer
        if inner.finished:  # its function has returned: nothing records it any more
            raise TraceError(
                f"a traced value ({inner_var(args)}) escaped the function that traced it "
                f"and is used after that function returned ({op.name}); return it instead "
                f"of storing it")
        return inner.apply(op, args, attrs)

    def __repr__(self) -> str:
        return f"Traced({self.variable.name}: {self.variable.type!r})"


HANDLERS[Traced] = 100
# the other operands a traced value wins the dispatch against (not a linear value of
# ``transpose``, which outranks it): its operators go straight to ``_cr_apply``
install_direct_operators(Traced, frozenset({Traced, np.ndarray, float, int, bool}))

# closure conversion of custom rules (chainrule.api.custom_closure.rebound): while a rule
# runs, the values its function closed over stand for the op's operands that carry
# them into the rule's trace
REBOUND: list[dict] = []


def _rebound(a):
    # also a running outer trace's value: a rule runs in its own trace, and a value of
    # the trace that called the custom function (or of one it was lifted from) must
    # reach it as the op's operand, not be recorded in the caller's trace
    if isinstance(a, Traced):
        for mapping in reversed(REBOUND):
            if a.variable in mapping:
                return mapping[a.variable]
    return a


def _apply_symbolic(op: Op, args, attrs):
    """An op whose shape attributes name symbols, called on plain values: emitted into
    the running trace (None without one)."""
    trace = current_trace()
    return None if trace is None else trace.apply(op, args, attrs)


SYMBOLIC_APPLY.append(_apply_symbolic)


def inner_var(args) -> str:
    return next((a.variable.name for a in args if isinstance(a, Traced)), "?")


def _located(exc: TypeInferenceError) -> TypeInferenceError:
    """The same error (its own class: a LinAlgError stays one) with the user's line."""
    message = f"{exc}{_user_location()}"
    try:
        return type(exc)(message)
    except TypeError:  # a subclass built differently
        return TypeInferenceError(message)


class Trace:
    """One function being traced into IR."""

    def __init__(self, name: str = "main", builder: Builder | None = None):
        self.name = name
        self.finished = False
        self.builder = builder if builder is not None else Builder()
        self.level = len(TRACE_STACK)
        self.lifted: dict[Var, Var] = {}  # outer var -> parameter of this function
        self.lifted_values: list[Traced] = []
        # module functions called from this trace (e.g. @script callees); trace_function
        # puts them into the traced module next to the traced function
        self.functions: dict = {}
        # arrays the function reads from outside its arguments become hidden inputs:
        # ``sources`` maps id(array) -> where it was found (frontend.capture)
        self.sources = None
        self.captured: dict[int, tuple] = {}  # id(array) -> (array, its parameter)
        # captured arrays whose value the program bakes in (boolean masks used as an
        # index): id(array) -> (path, the value seen); a guard compares it at every call
        self.pinned: dict[int, tuple] = {}

    def __enter__(self) -> Trace:
        self.level = len(TRACE_STACK)
        self.finished = False
        TRACE_STACK.append(self)
        return self

    def __exit__(self, *exc) -> None:
        TRACE_STACK.remove(self)
        self.finished = True

    # -- converting Python values to atoms ----------------------------------------
    def atom(self, x, strong_dtypes=()):
        if isinstance(x, Traced):
            if x.tracer is self:
                return x.variable
            if x.tracer.level < self.level and x.tracer in TRACE_STACK:
                return self._lift(x)
            raise TraceError(
                f"a traced value ({x.variable.name}) escaped the function that traced it; "
                f"return it instead of storing it")
        if type(x) in PYTHON_SCALARS:
            return _scalar_constant(x, strong_dtypes)
        if isinstance(x, Dim):  # x.shape[0] of a symbolic array: its size, at run time
            return self._dim_value(x, weak_scalar_dtype(1, strong_dtypes))
        value = getattr(x, "_cr_value", None)
        if value is not None:  # a tape tensor seen while tracing: its current value,
            if x._cr_recording:  # unless a derivative must flow through it
                raise RecordedValueError(
                    f"a tape tensor that requires grad (shape {x.shape}) is used by a "
                    f"function being traced; as a constant of the program its derivative "
                    f"would be lost: pass it as an argument, or .detach() it")
            x = value()
        hidden = self._captured(x)  # an array (of any library) read from outside
        if hidden is not None:
            return hidden
        if isinstance(x, (tuple, list)) and x and any(isinstance(e, Traced) for e in x):
            return Tuple(self.atom(e) for e in x)
        try:
            arr = np.asarray(x)
        except Exception as exc:  # noqa: BLE001 - any conversion failure is a user error
            raise TraceError(f"cannot use {type(x).__name__} as an array: {exc}") from None
        if arr.dtype == object or arr.dtype.kind in "USVMm":
            raise TraceError(f"cannot use {x!r:.40} (of type {type(x).__name__}) as an array")
        DType(arr.dtype)  # refuse unsupported dtypes early
        return Constant(arr)

    def _dim_value(self, d, dtype) -> Var:
        """The size ``d`` (a symbolic dimension, ``ir.dims``) as a 0-d value of ``dtype``
        (a Python int's, NEP 50: that of the arrays it meets), counted when the program
        runs: the sum of ``d`` ones."""
        from .. import ops

        ones = self.builder.call(ops.ones, [], {"shape": (d,), "dtype": DType(dtype)})
        return self.builder.call(ops.sum, [ones], {})

    def _captured(self, x: np.ndarray) -> Var | None:
        """The hidden input for an array the function reads from outside its arguments
        (its own parameter, or for a trace nested in the capturing one, a lifted
        parameter the outer trace captures in turn); None for other arrays."""
        hit = self.captured.get(id(x))
        if hit is not None:
            return hit[1]
        path = None if self.sources is None else self.sources.arrays.get(id(x))
        if path is not None:
            return self.capture(x, path)
        if any(t.sources is not None and id(x) in t.sources.arrays
                 for t in TRACE_STACK if t.level < self.level):
            p = Var("captured", self._array_type(x))
            self.lifted_values.append(x)  # the caller passes the array: its trace captures it
            self.lifted[p] = p
            self.captured[id(x)] = (x, p)
            return p
        return None

    def capture(self, x: np.ndarray, path) -> Var:
        """The hidden parameter for array ``x`` found at ``path`` (one per array)."""
        hit = self.captured.get(id(x))
        if hit is None:
            hit = self.captured[id(x)] = (x, Var(path.name_hint(), self._array_type(x)))
        return hit[1]

    @staticmethod
    def _array_type(x) -> TensorType:
        """The type of a captured array: of the NumPy array it converts to, for an array
        of another library (PyTorch, CuPy, Dask: its capture walk noted shape and dtype)."""
        for t in reversed(TRACE_STACK):
            foreign = None if t.sources is None else t.sources.foreign.get(id(x))
            if foreign is not None:
                return TensorType(foreign[1], DType(foreign[2]))
        return TensorType(x.shape, DType(x.dtype))

    def captured_mask(self, var) -> np.ndarray | None:
        """The value of the boolean array whose hidden input is ``var``, or None when
        ``var`` is not one. Indexing with a mask gives a shape that depends on its
        values, so the program bakes in its True positions (as for a mask written
        inline) and every trace that found the array guards its value: when it
        changes, the function is traced again."""
        for x, p in self.captured.values():
            if p is var and x.dtype == np.bool_:
                holders = [t for t in TRACE_STACK
                           if t.sources is not None and id(x) in t.sources.arrays]
                for t in holders:
                    t.pinned[id(x)] = (t.sources.arrays[id(x)], x.copy())
                return x if holders else None
        return None

    def _lift(self, x: Traced) -> Var:
        if x.variable not in self.lifted:
            p = Var(f"{x.variable.name}", x.variable.type)
            self.lifted[x.variable] = p
            self.lifted_values.append(x)
        return self.lifted[x.variable]

    def wrap(self, var: Var):
        """A traced value for a variable; tuples become Python tuples of traced fields."""
        if isinstance(var.type, TupleType):
            return tuple(
                self.wrap(self.builder.emit(TupleGetItem(var, i)))
                for i in range(len(var.type.fields))
            )
        return Traced(self, var)

    def apply(self, op: Op, args, attrs):
        """Emit ``op`` applied to ``args`` (values of this trace or of an outer one,
        Python numbers, arrays); returns the traced result."""
        if all(type(a) is Traced and a.tracer is self for a in args):
            return self.emit_op(op, [a.variable for a in args], attrs)
        strong = [a.variable.type.dtype.numpy for a in args
                  if isinstance(a, Traced) and isinstance(a.variable.type, TensorType)]
        strong += [np.asarray(a).dtype for a in args if isinstance(a, _ARRAY_TYPES)]
        return self.emit_op(op, [self.atom(a, strong) for a in args], attrs)

    def emit_op(self, op: Op, atoms: list, attrs: dict):
        """Emit ``op`` on atoms of this trace; returns the traced result."""
        try:
            var = self.builder.call(op, atoms, attrs)
        except TypeInferenceError as exc:
            raise _located(exc) from None
        if type(var.type) is TensorType:  # wrap(), inlined: the result of nearly every op
            return Traced(self, var)
        return self.wrap(var)

    def call(self, callee, args, name=None):
        """Emit a call to a function (GlobalVar or function-valued Var)."""
        return self.wrap(self.builder.call(callee, [self.atom(a) for a in args], name=name))


# Python numbers in rules (the 1 of ``1 - z*z``) become the same few constants over and
# over: one Constant node per (number, its type, the dtypes it meets), shared by the
# bindings that read it as the tape's recorded blocks share theirs (nodes are immutable)
_SCALAR_CONSTANTS: dict = {}
_SCALAR_CONSTANTS_LIMIT = 4096


def _scalar_constant(x, strong_dtypes) -> Constant:
    """The constant a Python number becomes next to arrays of ``strong_dtypes``
    (NumPy 2's weak scalar typing)."""
    if x != x:  # a NaN: no exact key (its payload), made anew
        return Constant(np.asarray(x, dtype=weak_scalar_dtype(x, strong_dtypes)))
    key = (type(x), x.hex() if type(x) is float else x, tuple(strong_dtypes))
    c = _SCALAR_CONSTANTS.get(key)
    if c is None:
        if len(_SCALAR_CONSTANTS) >= _SCALAR_CONSTANTS_LIMIT:
            _SCALAR_CONSTANTS.clear()
        c = _SCALAR_CONSTANTS[key] = Constant(
            np.asarray(x, dtype=weak_scalar_dtype(x, strong_dtypes)))
    return c


def _user_location() -> str:
    """' (at file:line)' of the innermost frame outside chainrule, for error messages."""
    frame = inspect.currentframe()
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith("chainrule") or mod.startswith("chainrule.tests"):
            return f" (at {frame.f_code.co_filename}:{frame.f_lineno})"
        frame = frame.f_back
    return ""


def current_trace() -> Trace | None:
    return TRACE_STACK[-1] if TRACE_STACK else None
