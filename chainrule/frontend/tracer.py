"""Tracing: run a Python function on traced values that emit IR
(``chainrule.emit``), with pytree arguments and results.
"""

from __future__ import annotations

import inspect
import re

import numpy as np

from ..emit.trace import Trace, Traced, current_trace
from ..errors import ArgumentError, ChainruleError, TraceError
from ..ir.nodes import Block, Function, Module, Tuple
from ..ir.op import PYTHON_SCALARS
from ..ir.types import DType, TensorType, TupleType, Type, dtype_refusal
from ..ir.visitor import vars_used
from ..tree import flatten, leaf_paths, unflatten
from .capture import Capture, Guards, sources
from .randomness import Stand_ins


def recording_trace(*trees) -> Trace | None:
    """The trace a combinator records into: the innermost function being traced
    (None when nothing is traced and the leaves are not traced values).

    Not the trace of the operands: these may all come from an enclosing trace (an
    array the function reads from outside, swapped for the outer trace's hidden
    input by ``capture``, under ``hvp`` = jvp of grad) while the body closes over
    the inner function's values; recorded in the outer trace, those would escape.
    Outer operands are lifted into the innermost trace like any other outer value.
    """
    tr = current_trace()
    if tr is None:  # nothing is being traced: a traced leaf outlived its function
        for tree in trees:
            for leaf in flatten(tree)[0]:
                if isinstance(leaf, Traced):
                    raise TraceError(f"a traced value ({leaf.variable.name}) escaped the "
                                     f"function that traced it and is used after that "
                                     f"function returned; return it instead of storing it")
    return tr


def abstract_type(x) -> Type:
    if isinstance(x, Traced):
        return x.variable.type
    if type(x) in PYTHON_SCALARS:
        return TensorType((), DType(np.result_type(x)))
    value = getattr(x, "_cr_value", None)
    from ..backend.array_api.namespaces import abstract_shape_dtype, foreign_namespace

    ns = foreign_namespace(x) if value is None else None
    if ns is not None:  # a PyTorch/CuPy/Dask array: its type, without reading its data
        shape, dtype = abstract_shape_dtype(x, ns)
        return TensorType(shape, DType(dtype))
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

    def __init__(self, module, in_tree, out_tree, lifted_values, n_leaves, guards=None):
        self.module = module
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.lifted_values = lifted_values  # outer traced values passed as trailing params
        self.n_leaves = n_leaves
        # hidden inputs (arrays read from outside the arguments, passed after the
        # lifted values) and the numbers baked in, checked at every call
        self.guards = guards if guards is not None else Guards()


def _check_call(f, args, kwargs) -> None:
    """A call ``f`` cannot take (wrong number of arguments, unknown keyword) is the
    caller's mistake: say so before tracing, rather than fail inside ``f``."""
    if not callable(f):
        raise ArgumentError(f"expected a function to trace, got {type(f).__name__} {f!r:.60}")
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):  # builtins and the like: nothing to check
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise ArgumentError(f"{getattr(f, '__name__', 'the function')}: {exc} (called with "
                            f"{len(args)} positional argument(s)"
                            f"{' and ' + ', '.join(kwargs) if kwargs else ''})") from None


def trace_function(f, args, name: str = "main", kwargs=None,
                   capture: bool = False, leaf_types=None) -> TracedFunction:
    """Trace ``f(*args)``; one parameter per leaf of the argument pytree. With
    ``capture``, arrays ``f`` reads from outside its arguments become hidden
    parameters after the lifted ones (see ``frontend.capture``). ``leaf_types``
    gives some leaves a type of their own (symbolic shapes: ``frontend.polymorphic``).

    A function that changes what it reads while it runs (``calls.append(1)``,
    ``self.n += 1``) is traced a second time, from the state the first left (as a
    second call would start): when both programs are the same, what it computes does
    not depend on that state, and the program stands for it (the state changed once,
    as by one call; compiled code does not change it again, as in JAX); otherwise
    ``Unrepeatable`` is raised (the API then runs it uncompiled at every call, as
    autograd would), as it is for a function that rebinds a place it read an array
    from."""
    first = _trace_function(f, args, name, kwargs, capture, leaf_types)
    effects = first.effects
    if effects is None:
        return first
    if not effects.rebound:
        second = _trace_function(f, args, name, kwargs, capture, leaf_types)
        if second.effects is not None:
            second.effects.put_back()  # as after one call
        if not (second.effects is not None and second.effects.rebound) and _same_program(
                first, second):
            return first
    effects.put_back()
    raise effects.error


def _same_program(a: TracedFunction, b: TracedFunction) -> bool:
    """Whether two traces of one function made the same program: the same text (the
    constants' values included), up to the numbering of custom functions' structures
    (each trace registers its own, ``api/custom.py``)."""
    def text(t):
        return _STRUCTURE_INDEX.sub("structure=_", str(t.module))

    return a.out_tree == b.out_tree and text(a) == text(b)


_STRUCTURE_INDEX = re.compile(r"structure=\d+")


def _trace_function(f, args, name, kwargs, capture, leaf_types) -> TracedFunction:
    kwargs = kwargs or {}
    _check_call(f, args, kwargs)
    found = sources(f) if capture else None
    leaves, in_tree = flatten(tuple(args))
    names = []
    for argname, arg in zip(param_names(f, len(args)), args):
        names.extend(leaf_paths(arg, argname))
    with Trace(name) as tr:
        tr.sources = found
        b = tr.builder
        traced_leaves = []
        for k, (leaf, pname) in enumerate(zip(leaves, names)):
            try:
                t = leaf_types[k] if leaf_types and leaf_types[k] is not None else \
                    abstract_type(leaf)
            except ChainruleError:
                refusal = dtype_refusal(leaf.dtype) if isinstance(
                    leaf, (np.ndarray, np.generic)) else None
                if refusal is not None:
                    raise ArgumentError(f"{getattr(f, '__name__', 'the function')}: argument "
                                        f"{pname}: {refusal}") from None
                raise ArgumentError(
                    f"{getattr(f, '__name__', 'the function')}: argument {pname} is a "
                    f"{type(leaf).__name__} ({leaf!r:.40}), not an array or a number; pass "
                    f"other values through a closure (or functools.partial)") from None
            var = b.param(_identifier(pname), t)
            traced_leaves.append(tr.wrap(var) if not isinstance(var.type, TupleType)
                                 else Traced(tr, var))
        traced_args = unflatten(in_tree, traced_leaves)
        # the arrays f reads from outside its arguments are traced values while it
        # runs (put back afterwards), so whatever it computes from them is traced too
        undo = found.swap(lambda x, path: tr.wrap(tr.capture(x, path))) if found else []
        rebound = []
        try:
            if found is not None:  # and its random generators emit draws (randomness.py)
                with Stand_ins(tr, found):
                    out = f(*traced_args, **kwargs)
            else:
                out = f(*traced_args, **kwargs)
        except RecursionError:
            raise TraceError(f"tracing {getattr(f, '__name__', f)} recursed too deeply; "
                             f"recursion on traced values needs an explicit base case "
                             f"that does not depend on them") from None
        finally:
            if undo:
                rebound = found.restore(undo)
        out_leaves, out_tree = flatten(out)
        atoms = [tr.atom(x) for x in out_leaves]
        result = atoms[0] if len(atoms) == 1 and out_tree.kind is None else Tuple(atoms)
        b.params.extend(tr.lifted.values())
        captures = []
        if found is not None:
            used = set(vars_used(Function([], Block(b.bindings, result), None)))
            for x, p in tr.captured.values():
                if p not in tr.lifted and p in used:  # lifted: an enclosing trace's
                    b.params.append(p)
                    captures.append(Capture(found.arrays[id(x)], x, found.foreign.get(id(x))))
        fn = b.finish_function(result)
    module = Module({name: fn, **{k: v for k, v in tr.functions.items() if k != name}})
    guards = (Guards(captures, found.numbers_now(), tr.pinned.values(), found.layouts_now())
              if found is not None else None)
    traced = TracedFunction(module, in_tree, out_tree, tr.lifted_values, len(leaves), guards)
    traced.effects = found.effects(getattr(f, "__name__", "the function"), rebound) if (
        found is not None) else None
    return traced


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


__all__ = ["Trace", "Traced", "current_trace", "recording_trace", "trace", "trace_function",
           "abstract_type", "param_names", "TracedFunction"]
