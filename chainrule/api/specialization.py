"""One specialization of a transformed function: its program, and how to run it.

``chainrule.api.reverse`` (``grad``, ``jit``, ...) and the forward-mode and Jacobian APIs
make one per function and argument signature: the module of the traced function
after its AD pass, run on the argument leaves, the values lifted from enclosing
traces and the hidden inputs (``frontend.capture``). Called on arrays it runs
tiered (``backend.tiered``: interpreted at first, optimized and compiled when
called often enough); called on traced values it emits its optimized program into
the enclosing trace instead, so transformations compose to any order.
"""

from __future__ import annotations

import numpy as np

from ..backend.array_api.namespaces import call_compiled, namespace_of_leaves
from ..backend.tiered import Tiered
from ..emit.trace import Trace, Traced
from ..frontend.capture import Guards
from ..frontend.tracer import recording_trace
from ..ir.nodes import Module, Tuple, Var
from ..ir.types import TensorType
from ..ir.visitor import Mutator


def inline_into(trace: Trace, module: Module, func: str, args):
    """Emit ``func`` of ``module`` into ``trace`` with ``args`` (atoms) for its parameters."""
    fn = module[func]
    m = Mutator(module)
    m.builder = trace.builder
    for p, a in zip(fn.params, args):
        m.subst[p] = a
    for name in module.functions:
        if name != func:
            trace.builder.extra_globals.setdefault(name, module.functions[name].type)
            getattr(trace, "functions", {}).setdefault(name, module.functions[name])
    m.emit_bindings(fn.body.bindings)
    return m.atom(fn.body.result)


def _unpack_atom(trace: Trace, atom):
    """Python values (Traced / tuples of them) for a result atom of an inlined function."""
    if isinstance(atom, Tuple):
        return tuple(_unpack_atom(trace, f) for f in atom.fields)
    if isinstance(atom, Var):
        return trace.wrap(atom)
    return atom.data


def _atom_of(trace: Trace, x):
    if isinstance(x, tuple):
        return Tuple(_atom_of(trace, e) for e in x)
    return trace.atom(x)


def _outer_trace(leaves) -> Trace | None:
    best = None
    for x in leaves:
        if isinstance(x, Traced) and (best is None or x.tracer.level > best.level):
            best = x.tracer
    return best


class _Compiled:
    """One specialization: the module, its entry function and how to call it.

    Its parameters are the leaves of the arguments, the values lifted from
    enclosing traces, the hidden inputs (arrays the function reads from outside
    its arguments, fetched afresh at every call: ``frontend.capture``), then a
    ``tail`` (cotangents, tangents). ``hidden=False`` for a function of other
    parameters (a tangent program of residuals).

    ``module`` is run as given by the interpreter for the first calls, and
    ``prepare(module)`` (``optimize``) is compiled when that pays off
    (``backend.tiered``; ``eager=True``: compiled before the first call)."""

    def __init__(self, module, func, traced, extra, hidden: bool = True, prepare=None,
                 eager: bool | None = None):
        self.tiers = Tiered(module, func, prepare, eager)
        self.func = func
        self.traced = traced
        self.extra = extra  # per-kind data (tree structures, positions)
        self.guards = traced.guards if hidden else Guards()
        self._callable = None

    @property
    def module(self):
        """The module compiled (optimized)."""
        return self.tiers.module

    def run_fast(self, leaves):
        """``run`` for arrays known to match the compiled signature exactly (see
        ``Transformed.__call__``): no coercion, no trace lookup. Raises ``Stale`` when
        the function's surroundings changed (it must be traced again)."""
        if self.guards:
            return self._fast(*leaves, *self.guards.inputs())
        return self._fast(*leaves)

    def exact_for(self, leaves) -> bool:
        """Whether these NumPy leaves are exactly the compiled parameters' types (then
        later calls with the same shapes and dtypes may skip the coercion)."""
        if self.traced.lifted_values or self._callable is None:
            return False
        fast = getattr(self._callable, "call_unchecked", None)
        params = self.tiers.params
        if fast is None or len(params) != len(leaves) + len(self.guards.captures):
            return False
        for p, x in zip(params, leaves):
            t = p.type
            # a symbolic dimension matches any size: the call that just ran with these
            # exact shapes checked that each symbol has one size (polymorphic_shapes)
            if not (isinstance(t, TensorType) and x.dtype == t.dtype.numpy
                    and len(x.shape) == len(t.shape) and all(
                        d == s or type(d) is str for d, s in zip(t.shape, x.shape))):
                return False
        self._fast = fast
        return True

    def run(self, leaves, tail=()):
        return self.run_all(list(leaves) + list(self.traced.lifted_values)
                            + self.guards.inputs() + list(tail))

    def run_all(self, args):
        """Run on every parameter's value (leaves, lifted, hidden, tail)."""
        # traced arguments: inlined into the innermost function being traced, not the
        # arguments' trace (they may all be an enclosing trace's captured inputs)
        outer = recording_trace(args) if _outer_trace(args) is not None else None
        if outer is not None:
            atoms = [_atom_of(outer, a) for a in args]
            return _unpack_atom(outer, inline_into(outer, self.module, self.func, atoms))
        if namespace_of_leaves(args) is not None:  # PyTorch, CuPy or Dask arrays
            return call_compiled(self.module, self.func, args)
        args = [a if a is None or isinstance(a, tuple) else np.asarray(a) for a in args]
        if self._callable is not None:
            return self._callable(*args)
        result = self.tiers(*args)
        self._callable = self.tiers.compiled  # None until compiled
        return result
