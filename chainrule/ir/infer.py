"""Type inference for every value kind; shared by the Builder and the verifier."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import TypeInferenceError
from .nodes import (
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from .op import Op, attrs_key
from .types import FuncType, TensorType, TupleType, Type

GlobalTypes = Callable[[str], FuncType]

BOOL_SCALAR = TensorType((), "bool")

# -- memoized type rules ---------------------------------------------------------------
# An op's type rule is a pure function of its operand types and attributes, and a
# program (or a recorded tape) applies the same few rules over and over: memoize
# ``op.type_call`` on (op, operand types, attributes). Attribute values are keyed
# with their types (1, 1.0 and True must stay apart; -0.0 and 0.0 too); values
# without an exact key (arrays, callables, ...) skip the memo.
#
# A first memo is keyed on the operand types' identities (the same few type objects
# recur: every result of one signature gets the memo's type object), which hashes no
# type; each entry holds its type objects, so an id in a key cannot be reused by another
# object while the entry lives. The second is keyed on the types' values.
_TYPE_MEMO: dict = {}
_TYPE_MEMO_BY_ID: dict = {}
_TYPE_MEMO_LIMIT = 8192


def type_call(op: Op, types, attrs: dict) -> tuple[dict, Type]:
    """``op.type_call(types, attrs)``, memoized (callers must not mutate the dict)."""
    ak = attrs_key(attrs) if attrs else ()
    if ak is None:
        return op.type_call(list(types), attrs)
    id_key = (op, ak, *map(id, types))
    hit = _TYPE_MEMO_BY_ID.get(id_key)
    if hit is not None:
        return hit[1]
    key = (op, tuple(types), ak)
    try:
        hit = _TYPE_MEMO.get(key)
    except TypeError:  # an unhashable type
        return op.type_call(list(types), attrs)
    if hit is None:
        hit = op.type_call(list(types), attrs)
        if len(_TYPE_MEMO) >= _TYPE_MEMO_LIMIT:
            _TYPE_MEMO.clear()
        _TYPE_MEMO[key] = hit
    if len(_TYPE_MEMO_BY_ID) >= _TYPE_MEMO_LIMIT:
        _TYPE_MEMO_BY_ID.clear()
    _TYPE_MEMO_BY_ID[id_key] = (key, hit)  # the key holds the type objects: ids stay theirs
    return hit


def arg_type(x) -> Type:
    """Type of an atom or tuple of atoms."""
    if isinstance(x, (Var, Constant)):
        return x.type
    if isinstance(x, Tuple):
        return TupleType(arg_type(f) for f in x.fields)
    if isinstance(x, GlobalVar):
        raise TypeInferenceError(f"function {x.name} used as a value; call it instead")
    raise TypeInferenceError(f"not an atom or tuple of atoms: {type(x).__name__}")


def infer_call(call: Call, global_types: GlobalTypes) -> tuple[Call, Type]:
    callee = call.callee
    types = [a.type if type(a) is Var or type(a) is Constant else arg_type(a)
             for a in call.args]
    if isinstance(callee, Op):
        attrs, t = type_call(callee, types, call.attrs)
        return (call if attrs == call.attrs else Call(callee, call.args, attrs)), t
    if isinstance(callee, GlobalVar):
        ftype = global_types(callee.name)
        what = f"function {callee.name}"
    elif isinstance(callee, Var):
        ftype = callee.type
        what = f"function value {callee.name}"
        if not isinstance(ftype, FuncType):
            raise TypeInferenceError(f"{callee.name} has type {ftype!r}; it is not a function")
    else:
        raise TypeInferenceError(f"cannot call {callee!r}")
    if call.attrs:
        raise TypeInferenceError(f"{what} takes no keyword attributes")
    if len(types) != len(ftype.params):
        raise TypeInferenceError(
            f"{what} takes {len(ftype.params)} argument(s), got {len(types)}"
        )
    for i, (got, want) in enumerate(zip(types, ftype.params)):
        if got != want:
            raise TypeInferenceError(
                f"{what}: argument {i} has type {got!r}, expected {want!r}"
            )
    return call, ftype.ret


def infer_value(value, global_types: GlobalTypes, block_type=None) -> tuple[object, Type]:
    """Infer the type of a binding's value; returns the (normalized) value and its type.

    ``block_type(block)`` gives the type of a nested block's result (the
    verifier and the builder supply it, each with its own scoping).
    """
    if isinstance(value, Call):
        return infer_call(value, global_types)
    if isinstance(value, (Var, Constant, Tuple)):
        return value, arg_type(value)
    if isinstance(value, TupleGetItem):
        t = arg_type(value.tuple_value)
        if not isinstance(t, TupleType):
            raise TypeInferenceError(f"indexing [{value.index}] into a non-tuple of type {t!r}")
        if not 0 <= value.index < len(t.fields):
            raise TypeInferenceError(
                f"tuple index {value.index} out of range for {t!r}"
            )
        return value, t.fields[value.index]
    if isinstance(value, Function):
        return value, value.type
    if isinstance(value, If):
        ct = arg_type(value.cond)
        if ct != BOOL_SCALAR:
            raise TypeInferenceError(f"if condition must be a bool scalar, got {ct!r}")
        tt = block_type(value.then_block)
        et = block_type(value.else_block)
        if tt != et:
            raise TypeInferenceError(f"if branches differ in type: then {tt!r}, else {et!r}")
        return value, tt
    if isinstance(value, While):
        for v, init in zip(value.loop_vars, value.init):
            if arg_type(init) != v.type:
                raise TypeInferenceError(
                    f"while loop variable {v.name} has type {v.type!r} but its initial "
                    f"value has type {arg_type(init)!r}"
                )
        ct = block_type(value.cond)
        if ct != BOOL_SCALAR:
            raise TypeInferenceError(f"while condition must be a bool scalar, got {ct!r}")
        bt = block_type(value.body)
        want = TupleType(v.type for v in value.loop_vars)
        got = bt if len(value.loop_vars) != 1 else TupleType([bt])
        if got != want:
            raise TypeInferenceError(
                f"while body yields {bt!r} but the loop variables have types "
                f"{', '.join(repr(v.type) for v in value.loop_vars)}"
            )
        return value, value.result_type
    raise TypeInferenceError(f"not a binding value: {type(value).__name__}")


def simple_block_type(block: Block) -> Type:
    """Type of a block's result, trusting the types of the variables in it."""
    return arg_type(block.result)
