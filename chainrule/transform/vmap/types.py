"""The batching of values and types in the ``vmap`` pass.

A value's *batching* follows its type: True or False for an array (its batch axis
in front, or one value shared by every lane), a tuple of batchings for a tuple.
Function values and stacks are always batched (a function value batched takes
and returns batched values in every position; a stack holds batched values).
"""

from __future__ import annotations

from ...errors import ChainruleError
from ...ir.nodes import Call, Function, GlobalVar, Module, Var, While
from ...ir.op import Op
from ...ir.types import FuncType, ListType, TensorType, TupleType
from ...ir.visitor import atoms_of, block_free_vars, nested_blocks


class BatchingError(ChainruleError):
    """A program ``vmap`` cannot batch (a function value it must return unbatched,
    axes that do not fit the arguments); the message says what and where."""


def has_function(t) -> bool:
    """Whether a value of type ``t`` holds function values or stacks (always batched)."""
    if isinstance(t, TupleType):
        return any(has_function(f) for f in t.fields)
    return isinstance(t, (FuncType, ListType))


def full_bd(t):
    """The batching of a value batched everywhere: True, a tuple for a tuple type."""
    if isinstance(t, TupleType):
        return tuple(full_bd(f) for f in t.fields)
    return True


def none_bd(t):
    """The batching of a value no lane depends on (functions and stacks are always
    batched, so a type holding them is never wholly unbatched)."""
    if isinstance(t, TupleType):
        return tuple(none_bd(f) for f in t.fields)
    return isinstance(t, (FuncType, ListType))


def any_batched(bd) -> bool:
    if isinstance(bd, tuple):
        return any(any_batched(b) for b in bd)
    return bool(bd)


def join(a, b):
    """The batching of a value that is ``a`` or ``b`` (a branch or a loop's carry)."""
    if isinstance(a, tuple):
        return tuple(join(x, y) for x, y in zip(a, b))
    return a or b


def batched_type(t, bd, size):
    """The type of a value of lane type ``t`` batched as ``bd`` (batch axis in front)."""
    if isinstance(t, TensorType):
        return TensorType((size, *t.shape), t.dtype) if bd else t
    if isinstance(t, TupleType):
        return TupleType(batched_type(f, b, size) for f, b in zip(t.fields, bd))
    if isinstance(t, FuncType):
        return FuncType([batched_type(p, full_bd(p), size) for p in t.params],
                        batched_type(t.ret, full_bd(t.ret), size))
    if isinstance(t, ListType):
        return ListType(batched_type(t.elem, full_bd(t.elem), size))
    raise BatchingError(f"vmap: cannot batch a value of type {t!r}")


def effects_in(blocks, module: Module, seen=None) -> bool:
    """Whether running ``blocks`` may have effects (a random draw, a check), through
    calls of module functions too."""
    seen = set() if seen is None else seen
    stack = list(blocks)
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            if isinstance(v, Call):
                if isinstance(v.callee, Op) and v.callee.effects:
                    return True
                if isinstance(v.callee, GlobalVar) and v.callee.name not in seen:
                    seen.add(v.callee.name)
                    if v.callee.name in module.functions:
                        stack.append(module[v.callee.name].body)
            stack.extend(nested_blocks(v))
    return False


def free_vars_of(value) -> list[Var]:
    """The variables a binding's value reads from outside itself, each once."""
    out = [a for a in atoms_of(value) if isinstance(a, Var)]
    blocks = nested_blocks(value)
    if blocks:
        bound = value.loop_vars if isinstance(value, While) else (
            value.params if isinstance(value, Function) else ())
        out += block_free_vars(blocks, bound)
    seen, unique = set(), []
    for v in out:
        if v not in seen:
            seen.add(v)
            unique.append(v)
    return unique
