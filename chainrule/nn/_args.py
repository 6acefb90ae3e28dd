"""Checks and conversions of the arguments ``chainrule.nn`` shares with PyTorch:
tuples of ints per spatial axis, ranks, reductions. Every refusal is a chainrule error
naming the function and the argument."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ArgumentError, InvalidValueError
from ..ir.op import is_dispatched

# what the functions take and return: a NumPy array, a value being traced (inside
# cr.grad / cr.jit / cr.vmap) or a tape tensor (numbers and lists are converted)
Array = Any
# an int for every spatial axis, or one int per axis
Ints = int | tuple[int, ...]
# PyTorch's convolution padding: ints, or "same" / "valid"
Padding = int | tuple[int, ...] | str
DTypeLike = np.dtype | type | str


def array(x, who: str, what: str = "input"):
    """``x`` as an array chainrule's ops take (traced values and tape tensors as they
    are; numbers and lists through NumPy)."""
    if is_dispatched(x) or isinstance(x, np.ndarray):
        return x
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise ArgumentError(f"{who}: {what} must be an array, got {type(x).__name__}")
    out = np.asarray(x)
    if out.dtype == object or out.dtype.kind in "USV":
        raise ArgumentError(f"{who}: {what} must be an array of numbers, got {x!r}")
    return out


def shape_of(x) -> tuple:
    return tuple(x.shape)


def ntuple(value, n: int, who: str, what: str, low: int = 1) -> tuple:
    """An int or ``n`` ints (each >= ``low``) as a tuple of ``n`` ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        value = (int(value),) * n
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple) and len(value) == 1 and n > 1:
        value = value * n
    if (not isinstance(value, tuple) or len(value) != n or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            and v >= low for v in value)):
        raise InvalidValueError(f"{who}: {what} must be an int or {n} ints >= {low}, "
                                f"got {value!r}")
    return tuple(int(v) for v in value)


def check_rank(x, ranks, who: str, what: str, layout: str) -> None:
    if len(x.shape) not in ranks:
        names = " or ".join(f"{r}-D" for r in ranks)
        raise InvalidValueError(f"{who}: expected {what} to be {names} ({layout}), "
                                f"got shape {shape_of(x)}")


def check_float(x, who: str, what: str = "input") -> None:
    if np.dtype(x.dtype).kind not in "f":
        raise ArgumentError(f"{who}: {what} must be a float array, got dtype {x.dtype}")


def check_int(x, who: str, what: str) -> None:
    if np.dtype(x.dtype).kind not in "iu":
        raise ArgumentError(f"{who}: {what} must be an integer array, got dtype {x.dtype}")


def number(value, who: str, what: str, low=None, high=None) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                     np.floating)):
        raise ArgumentError(f"{who}: {what} must be a number, got {value!r}")
    v = float(value)
    if (low is not None and v < low) or (high is not None and v > high):
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise InvalidValueError(f"{who}: {what} must be {bounds}, got {value!r}")
    return v


def reduction_of(reduction, size_average, reduce, who: str) -> str:
    """The reduction, PyTorch's legacy ``size_average`` / ``reduce`` flags taking over
    when given (as PyTorch does)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in ("mean", "sum", "none"):
        raise InvalidValueError(f"{who}: reduction must be 'mean', 'sum' or 'none', "
                                f"got {reduction!r}")
    return reduction
