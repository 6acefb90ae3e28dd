"""Rules of the stack ops (``ops/stack.py``): what lets reverse mode differentiate
the reverse mode of a loop again.

A stack of arrays is differentiable: its cotangent (and its tangent) is a stack of
the cotangents of its elements, and an empty stack of cotangents stands for a stack
of zeros of any depth (so a zero needs no depth). Pushing and popping are linear
and transpose into each other; ``stack_pop_or_zero`` pops a stack that may be that
empty zero. Forward mode mirrors each op on the tangent stacks
(``transform/forward/closures.py``).
"""

from __future__ import annotations

from ..ops.stack import (
    STACK_ADD,
    STACK_ALLOC,
    STACK_EMPTY,
    STACK_NONEMPTY,
    STACK_POP,
    STACK_POP_OR_ZERO,
    STACK_PUSH,
)
from ..ops.stack_schedule import LOOP_CHECKPOINT
from .registry import vjp_rule


@vjp_rule(STACK_EMPTY)
def stack_empty_vjp(out, dout, elem):
    """s = [];  no operands"""
    return ()


@vjp_rule(STACK_ALLOC)
def stack_alloc_vjp(out, dout, trips, elem, slot):
    """s = [] with room for trips rows;  the trip count is an integer: no derivative"""
    return (None,)


@vjp_rule(STACK_PUSH)
def stack_push_vjp(out, dout, s, x):
    """out = push(s, x);  (dx, ds) = pop(dout), zeros when dout is the empty zero"""
    dx, ds = STACK_POP_OR_ZERO(dout, elem=dout.type.elem)
    return (ds, dx)


@vjp_rule(STACK_POP)
def stack_pop_vjp(out, dout, s):
    """(top, rest) = pop(s);  ds = push(drest, dtop)"""
    dtop, drest = dout
    return (STACK_PUSH(drest, dtop),)


@vjp_rule(STACK_POP_OR_ZERO)
def stack_pop_or_zero_vjp(out, dout, s, elem):
    """(top, rest) = pop(s) (zeros when s is the empty zero);  ds = push(drest, dtop)"""
    dtop, drest = dout
    return (STACK_PUSH(drest, dtop),)


@vjp_rule(STACK_ADD)
def stack_add_vjp(out, dout, a, b):
    """out = a + b element by element;  da = dout, db = dout"""
    return (dout, dout)


@vjp_rule(STACK_NONEMPTY)
def stack_nonempty_vjp(out, dout, s):
    """a bool: no derivative flows back"""
    return (None,)


@vjp_rule(LOOP_CHECKPOINT)
def loop_checkpoint_vjp(out, dout, x, trips, snapshots):
    """out = x (a mark on a loop's first initial value);  dx = dout"""
    return (dout, None)
