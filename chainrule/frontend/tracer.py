"""Tracing: run a Python function on traced values that emit IR.

A ``Trace`` owns a Builder. Traces nest (a ``grad`` inside a traced function
traces its own function); a value of an outer trace met by an inner one is
lifted into an extra parameter of the inner function (closure conversion),
so every traced function is closed.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..errors import ChainruleError, TraceError, TypeInferenceError
from ..ir.builder import Builder
from ..ir.nodes import Constant, Module, Tuple, TupleGetItem, Var
from ..ir.op import Op
from ..ir.types import DType, TensorType, TupleType, Type
from ..ops.common import HANDLERS, PYTHON_SCALARS, weak_scalar_dtype
from ..tree import flatten, leaf_paths, unflatten
from .array_methods import ArrayMethods

_TRACE_STACK: list[Trace] = []
_ARRAY_TYPES = (np.ndarray, np.generic)


class Traced(ArrayMethods):
    """A value being traced: a variable of the IR under construction."""

    __slots__ = ("trace", "var")

    def __init__(self, trace: Trace, var):
        self.trace = trace
        self.var = var

    @property
    def type(self) -> Type:
        return self.var.type

    @property
    def shape(self) -> tuple:
        t = self.var.type
        if not isinstance(t, TensorType):
            raise TraceError(f"{self.var.name} is a {t!r}, which has no shape")
        return t.shape

    @property
    def dtype(self) -> np.dtype:
        return self.var.type.dtype.numpy

    def _cr_apply(self, op: Op, args, attrs):
        inner = self.trace
        for a in args:
            if isinstance(a, Traced) and a.trace.level > inner.level:
                inner = a.trace
        return inner.apply(op, args, attrs)

    def __repr__(self) -> str:
        return f"Traced({self.var.name}: {self.var.type!r})"


HANDLERS[Traced] = 100


class Trace:
    """One function being traced into IR."""

    def __init__(self, name: str = "main"):
        self.name = name
        self.builder = Builder()
        self.level = len(_TRACE_STACK)
        self.lifted: dict[Var, Var] = {}  # outer var -> parameter of this function
        self.lifted_values: list[Traced] = []
        # module functions called from this trace (e.g. @script callees); trace_function
        # puts them into the traced module next to the traced function
        self.functions: dict = {}

    def __enter__(self) -> Trace:
        self.level = len(_TRACE_STACK)
        _TRACE_STACK.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _TRACE_STACK.remove(self)

    # -- converting Python values to atoms ----------------------------------------
    def atom(self, x, strong_dtypes=()):
        if isinstance(x, Traced):
            if x.trace is self:
                return x.var
            if x.trace.level < self.level and x.trace in _TRACE_STACK:
                return self._lift(x)
            raise TraceError(
                f"a traced value ({x.var.name}) escaped the function that traced it; "
                f"return it instead of storing it")
        if type(x) in PYTHON_SCALARS:
            return Constant(np.asarray(x, dtype=weak_scalar_dtype(x, strong_dtypes)))
        if isinstance(x, (tuple, list)) and x and any(isinstance(e, Traced) for e in x):
            return Tuple(self.atom(e) for e in x)
        value = getattr(x, "_cr_value", None)
        if value is not None:  # a tape tensor seen while tracing: its current value
            x = value()
        try:
            arr = np.asarray(x)
        except Exception as exc:  # noqa: BLE001 - any conversion failure is a user error
            raise TraceError(f"cannot use {type(x).__name__} as an array: {exc}") from None
        if arr.dtype == object:
            raise TraceError(f"cannot use {x!r} (of type {type(x).__name__}) as an array")
        DType(arr.dtype)  # refuse unsupported dtypes early
        return Constant(arr)

    def _lift(self, x: Traced) -> Var:
        if x.var not in self.lifted:
            p = Var(f"{x.var.name}", x.var.type)
            self.lifted[x.var] = p
            self.lifted_values.append(x)
        return self.lifted[x.var]

    def wrap(self, var: Var):
        """A traced value for a variable; tuples become Python tuples of traced fields."""
        if isinstance(var.type, TupleType):
            return tuple(
                self.wrap(self.builder.emit(TupleGetItem(var, i)))
                for i in range(len(var.type.fields))
            )
        return Traced(self, var)

    def apply(self, op: Op, args, attrs):
        strong = [a.var.type.dtype.numpy for a in args
                  if isinstance(a, Traced) and isinstance(a.var.type, TensorType)]
        strong += [np.asarray(a).dtype for a in args
                   if isinstance(a, _ARRAY_TYPES)]
        atoms = [self.atom(a, strong) for a in args]
        try:
            var = self.builder.call(op, atoms, attrs)
        except TypeInferenceError as exc:
            raise TypeInferenceError(f"{exc}{_user_location()}") from None
        return self.wrap(var)

    def call(self, callee, args, name=None):
        """Emit a call to a function (GlobalVar or function-valued Var)."""
        return self.wrap(self.builder.call(callee, [self.atom(a) for a in args], name=name))


def _user_location() -> str:
    """' (at file:line)' of the innermost frame outside chainrule, for error messages."""
    frame = inspect.currentframe()
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith("chainrule") or mod.startswith("chainrule.tests"):
            return f" (at {frame.f_code.co_filename}:{frame.f_lineno})"
        frame = frame.f_back
    return ""


def abstract_type(x) -> Type:
    if isinstance(x, Traced):
        return x.var.type
    if type(x) in PYTHON_SCALARS:
        return TensorType((), DType(np.result_type(x)))
    value = getattr(x, "_cr_value", None)
    arr = np.asarray(value() if value is not None else x)
    if arr.dtype == object:
        raise TraceError(f"cannot trace an argument of type {type(x).__name__}")
    return TensorType(arr.shape, DType(arr.dtype))


def param_names(f, n_args: int) -> list[str]:
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(n_args):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                    params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL:
            names.append(f"{params[-1].name}_{i}")
        else:
            names.append(f"arg{i}")
    return names


class TracedFunction:
    """The result of tracing: the module, and how its flat parameters and
    results map to the Python function's pytrees."""

    def __init__(self, module, in_tree, out_tree, lifted_values, n_leaves):
        self.module = module
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.lifted_values = lifted_values  # outer traced values passed as trailing params
        self.n_leaves = n_leaves


def trace_function(f, args, name: str = "main", kwargs=None) -> TracedFunction:
    """Trace ``f(*args)``; one parameter per leaf of the argument pytree."""
    kwargs = kwargs or {}
    leaves, in_tree = flatten(tuple(args))
    names = []
    for argname, arg in zip(param_names(f, len(args)), args):
        names.extend(leaf_paths(arg, argname))
    with Trace(name) as tr:
        b = tr.builder
        traced_leaves = []
        for leaf, pname in zip(leaves, names):
            var = b.param(_identifier(pname), abstract_type(leaf))
            traced_leaves.append(tr.wrap(var) if not isinstance(var.type, TupleType)
                                 else Traced(tr, var))
        traced_args = unflatten(in_tree, traced_leaves)
        try:
            out = f(*traced_args, **kwargs)
        except RecursionError:
            raise TraceError(f"tracing {getattr(f, '__name__', f)} recursed too deeply; "
                             f"recursion on traced values needs an explicit base case "
                             f"that does not depend on them") from None
        out_leaves, out_tree = flatten(out)
        atoms = [tr.atom(x) for x in out_leaves]
        result = atoms[0] if len(atoms) == 1 and out_tree.kind is None else Tuple(atoms)
        b.params.extend(tr.lifted.values())
        fn = b.finish_function(result)
    module = Module({name: fn, **{k: v for k, v in tr.functions.items() if k != name}})
    return TracedFunction(module, in_tree, out_tree, tr.lifted_values, len(leaves))


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not out or out[0].isdigit():
        out = "v_" + out
    return out


def trace(f, *args, **kwargs) -> Module:
    """Trace ``f(*args)`` into a Module whose function ``main`` takes one
    parameter per array leaf of the arguments.

    >>> import numpy as np
    >>> import chainrule.numpy as cnp
    >>> print(trace(lambda x: cnp.sum(cnp.tanh(x) * 2.0), np.ones(3, np.float32)))
    def main(x: f32[3]) -> f32:
        lv0 = tanh(x)
        lv1 = multiply(lv0, f32(2.0))
        lv2 = sum(lv1)
        return lv2
    <BLANKLINE>
    """
    tf = trace_function(f, args, kwargs=kwargs)
    if tf.lifted_values:
        raise ChainruleError("trace: the function uses values of an enclosing trace")
    tf.module.meta.update(in_tree=tf.in_tree, out_tree=tf.out_tree, func="main")
    return tf.module


def current_trace() -> Trace | None:
    return _TRACE_STACK[-1] if _TRACE_STACK else None
