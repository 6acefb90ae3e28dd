"""Adjoint bookkeeping for reverse mode: nested messages (the seed's NestedMsg).

A message is ``None`` (zero), an atom (a Var or Constant; a Var may hold a
tuple), or a Python tuple of messages mirroring a tuple type. Adding,
splitting and materializing messages emits IR only when needed, so zero
parts of tuples never become arrays unless a rule must see them.

``None`` is the one symbolic zero of every transform (JAX's ``Zero``): the
adjoints of ``gradient``, the tangents of ``jvp`` (and so of ``linearize``) and
the cotangents of ``transpose``. It needs no type of its own: a message is
always the derivative of a known value, whose type ``materialize`` is given
where an array must exist (a loop carry, a branch result, a returned value).
"""

from __future__ import annotations

from ... import ops
from ...emit.trace import Trace, Traced
from ...errors import CompiledHigherOrderError, GradientError
from ...ir.nodes import Call, Constant, Tuple, TupleGetItem, Var
from ...ir.types import FuncType, ListType, TensorType, TupleType, Type
from ...ir.visitor import vars_used
from ...ops.common import broadcast_shapes
from ...ops.stack import STACK_ADD, STACK_EMPTY


def has_function(t: Type) -> bool:
    """A function (closure) inside ``t``: a value with no zero and no sum."""
    if isinstance(t, TupleType):
        return any(has_function(f) for f in t.fields)
    if isinstance(t, ListType):
        return has_function(t.elem)
    return isinstance(t, FuncType)


class Adjoints:
    def __init__(self, trace: Trace):
        self.trace = trace
        self.b = trace.builder
        self.msgs: dict[Var, object] = {}
        # the type of a variable's adjoint (a function value's is its env's: the gradient
        # pass sets this, see reverse/closures.py)
        self.type_of = _own_type

    # -- emitting --------------------------------------------------------------------
    def call(self, op, *args, **attrs) -> Var:
        return self.b.call(op, list(args), attrs)

    def wrap(self, atom):
        """A rule's view of an atom: traced for variables, arrays for constants."""
        if isinstance(atom, Var):
            return Traced(self.trace, atom)
        if isinstance(atom, Constant):
            return atom.data
        if isinstance(atom, Tuple):
            return tuple(self.wrap(f) for f in atom.fields)
        raise GradientError(f"cannot pass {atom!r} to a derivative rule")

    def unwrap(self, value):
        if isinstance(value, Traced):
            return value.variable
        return self.trace.atom(value)

    # -- messages ----------------------------------------------------------------------
    def split(self, msg, t: TupleType) -> tuple:
        """A tuple message's parts; an atom holding a tuple is taken apart."""
        if msg is None:
            return (None,) * len(t.fields)
        if isinstance(msg, tuple):
            return msg
        if isinstance(msg, Tuple):
            return msg.fields
        return tuple(self.b.emit(TupleGetItem(msg, i)) for i in range(len(t.fields)))

    def add(self, a, b, t: Type):
        """Tuple-aware addition of two messages."""
        if a is None:
            return b
        if b is None:
            return a
        if isinstance(t, TupleType):
            return tuple(self.add(x, y, ft) for x, y, ft in
                         zip(self.split(a, t), self.split(b, t), t.fields))
        if isinstance(t, ListType):  # stacks of cotangents add element by element
            return self.call(STACK_ADD, a, b)
        if type(a) is Var and type(b) is Var and a.type == b.type:
            return self.add_arrays(a, b)
        return self.call(ops.add, a, b)

    def add_arrays(self, a: Var, b: Var) -> Var:
        return add_vars(self.b, a, b)

    def zeros(self, t: Type, name: str | None = None):
        if isinstance(t, TensorType):
            return self.b.call(ops.zeros, [], {"shape": t.shape, "dtype": t.dtype}, name)
        if isinstance(t, TupleType):
            return Tuple(self.zeros(f) for f in t.fields)
        if isinstance(t, ListType) and not has_function(t):
            # an empty stack of cotangents (or tangents) stands for a stack of zeros
            return self.b.call(STACK_EMPTY, [], {"elem": t.elem}, name)
        raise CompiledHigherOrderError(f"no zero tangent for a value of type {t!r} (a "
                                       f"function or stack whose derivative is unknown)")

    def materialize(self, msg, t: Type):
        """An atom (or tuple of atoms) for a message; zeros where it is None."""
        if msg is None:
            return self.zeros(t)
        if isinstance(msg, tuple):
            return Tuple(self.materialize(m, ft) for m, ft in zip(msg, t.fields))
        return msg

    def accumulate(self, atom, msg, wants) -> None:
        """Add ``msg`` to the adjoint of ``atom`` (a Var, Constant or Tuple of them)."""
        if msg is None:
            return
        if type(atom) is Var:  # the common case first
            if wants(atom):
                old = self.msgs.get(atom)
                self.msgs[atom] = msg if old is None else self.add(old, msg,
                                                                   self.type_of(atom))
            return
        if isinstance(atom, Constant):
            return
        if isinstance(atom, Tuple):
            t = TupleType(_type(f) for f in atom.fields)
            for f, m in zip(atom.fields, self.split(msg, t)):
                self.accumulate(f, m, wants)
            return
        if not wants(atom):
            return
        self.msgs[atom] = self.add(self.msgs.get(atom), msg, self.type_of(atom))

    def fit(self, partial, t: TensorType):
        """A rule's result summed/broadcast to shape ``t.shape`` and cast to ``t.dtype``."""
        atom = partial.variable if type(partial) is Traced else self.unwrap(partial)
        pt = _type(atom)
        if pt is t or pt == t:  # the common case: nothing to fit (a stack, a tuple too)
            return atom
        if not isinstance(pt, TensorType):
            raise GradientError(f"a VJP rule returned a {pt!r} for an operand of type {t!r}")
        if pt.shape != t.shape:
            joint = broadcast_shapes("gradient", [pt, t])
            if joint == pt.shape:
                atom = self.call(ops.collapse_sum_to, atom, shape=t.shape)
            elif joint == t.shape:
                atom = self.call(ops.broadcast_to, atom, shape=t.shape)
            else:
                raise GradientError(f"a VJP rule returned shape {pt.shape} for an operand of "
                                    f"shape {t.shape}")
        return self.cast(atom, t.dtype)

    def cast(self, atom, dtype):
        """``atom`` as ``dtype``; a complex atom for a real ``dtype`` keeps its real part
        (the cotangent of a real value, as JAX defines it), not a NumPy ComplexWarning."""
        if atom.type.dtype == dtype:
            return atom
        if atom.type.dtype.is_complex and not dtype.is_complex:
            atom = self.call(ops.real, atom)
        if atom.type.dtype != dtype:
            atom = self.call(ops.astype, atom, dtype=dtype)
        return atom


def _own_type(var: Var) -> Type:
    return var.type


def _type(atom) -> Type:
    if type(atom) is Tuple:
        return TupleType(_type(f) for f in atom.fields)
    return atom.type


def prune(bindings: list, start: int, roots) -> None:
    """Drop bindings emitted since ``start`` that no root depends on (a rule's
    results for operands that need no adjoint)."""
    if len(bindings) == start:
        return
    # a root may be a tuple literal (a rule's partial for a tuple operand, such as a
    # pushed snapshot): the variables it is made of are what stays live
    live = {r for r in vars_used(Tuple(list(roots))) if isinstance(r, Var)}
    if all(b.var in live for b in bindings[start:]):
        return  # the common case: every binding emitted is a root
    keep = []
    for b in reversed(bindings[start:]):
        if b.var in live:
            keep.append(b)
            live.update(vars_used(b.value))
    bindings[start:] = reversed(keep)


def add_vars(builder, a: Var, b: Var) -> Var:
    """``a + b`` for two contributions to one array's adjoint (or cotangent): of one
    type, which their sum has too, so no type rule runs (half the bindings a long
    chain's reverse sweep makes are these sums)."""
    if a.type is b.type or a.type == b.type:
        return builder.emit_typed(Call(ops.add, (a, b)), a.type)
    return builder.call(ops.add, [a, b])
