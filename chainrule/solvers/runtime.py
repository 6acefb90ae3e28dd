"""What the solvers share: their error, a run-time check that compiled code keeps,
closure conversion of the user's function, and the choice of array namespace.

A solver written once runs three ways: on NumPy arrays it computes with NumPy
(``xp`` is ``numpy``: no op dispatch in the inner loop); on traced values it
emits IR (``xp`` is ``chainrule.numpy``, loops become ``While`` nodes, so the
solve compiles); on tape tensors it computes on their values without recording
(the derivative comes from the solver's own rule, never from its steps).

A check that only the values can decide (a step count exhausted, a residual too
large) is the op ``solver_check``: it raises ``SolverError`` when the program
runs, with the numbers it was given, and is declared ``effects`` so that no
pass drops it, merges it or folds it away.

A function handed to a solver may read values that are being differentiated
from outside its arguments (a closure over a parameter). Their derivatives
must reach them, but a custom rule only sees its own operands, so
``convert_closure`` traces the function once and turns every such value
(a traced value of an enclosing trace, an array a compiled function captures,
a tape tensor that requires grad) into an extra argument, as JAX's
``closure_convert`` does.

>>> import numpy as np
>>> bool(solver_check(np.bool_(True), 3, message="failed after {} steps"))
True
>>> solver_check(np.bool_(False), 3, message="failed after {} steps")
Traceback (most recent call last):
...
chainrule.solvers.runtime.SolverError: failed after 3 steps
"""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from ..api.custom import custom_vjp
from ..backend.codegen.generate import compile_module
from ..backend.interpret import Interpreter
from ..emit.trace import Trace, Traced, current_trace
from ..errors import ChainruleError, TraceError, TypeInferenceError
from ..frontend.tracer import abstract_type, recording_trace
from ..ir.nodes import Module, Tuple, Var
from ..ir.op import REQUIRED, is_dispatched
from ..ir.types import DType, TensorType, TupleType
from ..ops.common import define
from ..rules.batching import CannotBatch, batching_rule
from ..tape.tensor import Tensor, no_grad
from ..tree import flatten, unflatten


class SolverError(ChainruleError, RuntimeError):
    """A solver that did not reach its answer (no convergence within its iteration
    budget, a step size that vanished, a non-finite value); the message gives the
    numbers (iterations, residual, time reached)."""


class SolverArgumentError(ChainruleError, ValueError):
    """A solver called with arguments it cannot take (shapes, dtypes, tolerances)."""


# -- a check that runs when the program runs ------------------------------------------
def _check_type(types, attrs):
    if not types or types[0] != TensorType((), "bool"):
        raise TypeInferenceError(f"solver_check: the first operand must be a bool scalar, got "
                                 f"{types[0] if types else 'nothing'!r}")
    if not isinstance(attrs["message"], str):
        raise TypeInferenceError("solver_check: message must be a string")
    return TensorType((), "bool")


def _check_kernel(ok, *values, message):
    if not bool(ok):
        raise SolverError(message.format(*[np.asarray(v).item() for v in values]))
    return np.bool_(True)


solver_check = define(
    "solver_check", _check_type, _check_kernel, None, {"message": REQUIRED},
    differentiable=False, effects=True, fresh=True, aliases=False,
    doc="raises SolverError(message.format(*values)) when ok is false, at run time")


@batching_rule(solver_check)
def solver_check_batch(ctx, args, batched, message):
    """A run-time check (an effect, so vmap asks even when nothing is batched): no
    batched operand, one check for every lane; else each lane checks its own values."""
    if any(batched):
        raise CannotBatch("solver_check: values per lane")
    return ctx.emit(ctx.op, *args, message=message), False


def check(ok, *values, message: str) -> None:
    """Raise ``SolverError`` now (arrays) or when the program runs (traced values)."""
    if isinstance(ok, Traced) or any(isinstance(v, Traced) for v in values):
        solver_check(ok, *values, message=message)
    else:
        _check_kernel(plain(ok), *[plain(v) for v in values], message=message)


# -- values ---------------------------------------------------------------------------
def plain(x):
    """The NumPy value of a tape tensor (anything else unchanged)."""
    return x.value() if isinstance(x, Tensor) else x


def plain_tree(tree):
    leaves, td = flatten(tree)
    return unflatten(td, [plain(x) for x in leaves])


def is_traced(*trees) -> bool:
    return any(isinstance(x, Traced) for tree in trees for x in flatten(tree)[0])


def is_recorded(*trees) -> bool:
    return any(isinstance(x, Tensor) for tree in trees for x in flatten(tree)[0])


def namespace(*trees):
    """``chainrule.numpy`` when any leaf is traced, else ``numpy``."""
    return cnp if is_traced(*trees) else np


def differentiating(*trees) -> bool:
    """Whether the call is traced or recorded (so derivatives may be asked for)."""
    return current_trace() is not None or any(
        is_dispatched(x) for tree in trees for x in flatten(tree)[0])


def reads_recorded(f, args) -> bool:
    """Whether ``f(*args)`` (on arrays) computes from tape tensors that require grad,
    read from outside its arguments: then its solve must be recorded as one op, with
    those tensors as operands (one evaluation of ``f`` tells)."""
    if current_trace() is not None:
        return False
    return any(isinstance(x, Tensor) and x.requires_grad for x in flatten(f(*args))[0])


def untaped():
    """A context in which tape tensors do not record (a solve on their values)."""
    return no_grad()


# -- a custom function whose rules read its result -----------------------------------
class SolverFunction(custom_vjp):
    """A ``custom_vjp`` function whose rules read the solver's result (the op's output)
    instead of residuals, so the result carries derivatives through this op's own
    rules at every order, never through the solver's iterations.

    ``fun(*args)`` solves (on arrays, traced values, or tape tensors);
    ``vjp(nondiff, args, out, g)`` returns one cotangent per differentiable argument
    (pytrees, None for none); ``jvp(nondiff, args, out)`` returns one linear map per
    leaf of the differentiable arguments (None where there is no derivative).
    """

    def __init__(self, fun, nondiff_argnums, vjp, jvp):
        super().__init__(fun, nondiff_argnums)
        self.vjp_impl, self.jvp_impl = vjp, jvp
        self.defvjp(lambda *args: (fun(*args), ()), self._unused_bwd)

    def _unused_bwd(self, *args):  # the rules below replace custom_vjp's use of bwd
        raise TraceError(f"{self.name}: internal: bwd is not used")

    def _vjp_rule(self, z, g, *operands, structure):
        """z = solve(args);  dargs from the solver's own derivative equations"""
        s = self.structures[structure]
        args = unflatten(s.in_tree, list(operands[:s.n_args]))
        out = unflatten(s.out_tree, _fields(z, s))
        gs = unflatten(s.out_tree, _fields(g, s))
        cts = self.vjp_impl(s.nondiff, args, out, gs)
        leaves = self._check_cotangents(s, cts, "the solver's reverse-mode rule")
        # what the solve reads from outside its arguments reaches the rules as converted
        # closure arguments (convert_closure): no derivative is missing for it here
        return tuple(leaves) + (None,) * (len(s.dyn) + s.n_closed + s.n_out)

    def _jvp_rule(self, z, *operands, structure):
        """z = solve(args);  dz from the solver's own tangent equations"""
        s = self.structures[structure]
        args = unflatten(s.in_tree, list(operands[:s.n_args]))
        out = unflatten(s.out_tree, _fields(z, s))
        maps = list(self.jvp_impl(s.nondiff, args, out))
        if len(maps) != s.n_args:
            raise TraceError(f"{self.name}: {len(maps)} tangent maps for {s.n_args} operands")
        single = s.n_out == 1 and s.out_tree.kind is None

        def op_form(m):  # the map's pytree result as the op's output (a leaf or a tuple)
            def apply(t):
                leaves = flatten(m(t))[0]
                return leaves[0] if single else tuple(leaves)
            return apply

        return tuple(m if m is None else op_form(m) for m in maps) + (None,) * (
            len(s.dyn) + s.n_closed + s.n_out)


def _fields(value, s) -> list:
    """The output leaves of a call structure from the op's result (a leaf, a Python
    tuple, or a traced tuple)."""
    if s.n_out == 1 and s.out_tree.kind is None:
        return [value]
    if isinstance(value, Traced) and isinstance(value.type, TupleType):
        value = value.tracer.wrap(value.variable)
    return list(value)


def constant(tree):
    """``tree`` with its traced floating leaves behind ``stop_gradient``: a solve that
    computes from them is invisible to the AD passes (its rules give the derivative)."""
    leaves, td = flatten(tree)
    return unflatten(td, [cnp.stop_gradient(x) if isinstance(x, Traced) and np.dtype(
        x.dtype).kind in "fc" else x for x in leaves])


# -- closure conversion ----------------------------------------------------------------
class _Probe(Trace):
    """A trace that also lifts the tape tensors requiring grad that the function reads
    (a plain trace would take their current values as constants)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.tensors: dict[int, tuple] = {}

    def atom(self, x, strong_dtypes=()):
        if isinstance(x, Tensor) and x.requires_grad:
            hit = self.tensors.get(id(x))
            if hit is None:
                value = x.value()
                hit = self.tensors[id(x)] = (x, Var("closed", TensorType(
                    value.shape, DType(value.dtype))))
            return hit[1]
        return super().atom(x, strong_dtypes)


class ConvertedFunction:
    """``f`` with the values it closed over as trailing arguments: calling it runs the
    traced program (inlined into a trace, recorded on the tape, or compiled)."""

    def __init__(self, module: Module, in_tree, out_tree, n_closed: int, name: str):
        self.module = module
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.n_closed = n_closed
        self.__name__ = name

    def __call__(self, *args):
        closed = args[len(args) - self.n_closed:] if self.n_closed else ()
        leaves, tree = flatten(tuple(args[:len(args) - len(closed)]))
        if tree != self.in_tree:
            raise TraceError(f"{self.__name__}: called with arguments of structure {tree!r}, "
                             f"traced with {self.in_tree!r}")
        values = list(leaves) + list(closed)
        # traced values: inlined into the innermost function being traced, not the values'
        # trace (they may all be an enclosing trace's captured inputs)
        outer = recording_trace(values) if any(isinstance(x, Traced) for x in values) else None
        if outer is not None:
            from ..api.specialization import inline_into

            atoms = [outer.atom(x) for x in values]
            result = _unpack(outer, inline_into(outer, self.module, "main", atoms))
        elif any(isinstance(x, Tensor) for x in values):
            interp = Interpreter(self.module, dispatch=True)  # records each op on the tape
            result = interp.call_function(self.module["main"], values, {})
        else:
            result = compile_module(self.module, "main")(*[np.asarray(x) for x in values])
        if self.out_tree.kind is None:
            return result
        return unflatten(self.out_tree, list(result))


def _unpack(trace: Trace, atom):
    if isinstance(atom, Tuple):
        return tuple(_unpack(trace, f) for f in atom.fields)
    if isinstance(atom, Var):
        return trace.wrap(atom)
    return atom.data


def convert_closure(f, example_args, what: str):
    """``(g, closed)``: ``g(*args, *closed)`` computes ``f(*args)``, and ``closed`` are
    the values being differentiated that ``f`` reads from outside its arguments
    (empty, and ``g`` is ``f``, when there are none). ``example_args`` fix the
    argument types (pytrees of arrays, traced values or tensors)."""
    leaves, in_tree = flatten(tuple(example_args))
    with _Probe(f"{what}_func") as tr:
        b = tr.builder
        params = []
        for i, leaf in enumerate(leaves):
            t = abstract_type(plain(leaf))
            params.append(tr.wrap(b.param(f"a{i}", t)))
        out = f(*unflatten(in_tree, params))
        out_leaves, out_tree = flatten(out)
        if not tr.lifted_values and not tr.tensors:
            return f, ()
        atoms = [tr.atom(x) for x in out_leaves]
        result = atoms[0] if len(atoms) == 1 and out_tree.kind is None else Tuple(atoms)
        b.params.extend(tr.lifted.values())
        b.params.extend(v for _, v in tr.tensors.values())
        fn = b.finish_function(result)
    module = Module({"main": fn, **tr.functions})
    closed = list(tr.lifted_values) + [x for x, _ in tr.tensors.values()]
    name = getattr(f, "__name__", "func")
    return ConvertedFunction(module, in_tree, out_tree, len(closed), name), tuple(closed)


__all__ = ["SolverFunction", "constant", "SolverError", "SolverArgumentError", "solver_check",
           "check", "convert_closure", "namespace", "plain", "plain_tree", "is_traced",
           "is_recorded", "differentiating", "reads_recorded", "untaped"]
