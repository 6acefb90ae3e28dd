"""Operators: a name, a type rule and a NumPy kernel, declared once.

The registry ``OPS`` maps names to ``Op``s; ``chainrule/ops/`` fills it, one
file per family. Derivative rules live apart, in ``chainrule/rules/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ChainruleError, TypeInferenceError, UnknownOpError
from .types import Type

REQUIRED = object()  # marks an attribute without a default


def _no_normalize(arg_types, attrs):
    return attrs


@dataclass(eq=False)
class Op:
    """An operator.

    ``infer(arg_types, attrs) -> Type`` is its type rule; it raises
    ``TypeInferenceError`` naming the op, operands and shapes.
    ``kernel(*arrays, **attrs)`` computes it on NumPy arrays.
    ``attrs`` lists attribute names with defaults (``REQUIRED`` if none);
    ``normalize(arg_types, attrs)`` puts attributes in canonical form (so
    ``sum(x, axis=-1)`` and ``sum(x, axis=(1,))`` are the same call).
    ``nargs`` is the number of array operands, ``None`` for any number.
    """

    name: str
    infer: Callable
    kernel: Callable
    attrs: dict
    nargs: int | None = 1
    normalize: Callable = _no_normalize

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def check_attrs(self, given: dict) -> dict:
        """Fill defaults and refuse unknown or missing attributes."""
        unknown = set(given) - set(self.attrs)
        if unknown:
            raise TypeInferenceError(
                f"{self.name}: unknown attribute(s) {sorted(unknown)}; "
                f"it takes {list(self.attrs) or 'none'}"
            )
        out = {}
        for key, default in self.attrs.items():
            if key in given:
                out[key] = given[key]
            elif default is REQUIRED:
                raise TypeInferenceError(f"{self.name}: missing attribute {key!r}")
            else:
                out[key] = default
        return out

    def type_call(self, arg_types: list[Type], attrs: dict) -> tuple[dict, Type]:
        """Check arity, normalize attributes and infer the result type."""
        if self.nargs is not None and len(arg_types) != self.nargs:
            raise TypeInferenceError(
                f"{self.name} takes {self.nargs} operand(s), got {len(arg_types)}"
            )
        given = attrs
        try:
            attrs = self.normalize(arg_types, self.check_attrs(given))
            return attrs, self.infer(arg_types, attrs)
        except ChainruleError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError,
                OverflowError) as exc:
            # a malformed attribute that a type rule did not anticipate
            types = ", ".join(repr(t) for t in arg_types)
            raise TypeInferenceError(
                f"{self.name}: invalid operands or attributes ({types}; {given}): {exc}"
            ) from None


OPS: dict[str, Op] = {}


def register_op(op: Op) -> Op:
    if op.name in OPS:
        raise ChainruleError(f"an op named {op.name!r} is already registered")
    OPS[op.name] = op
    return op


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise UnknownOpError(f"unknown op {name!r}") from None
