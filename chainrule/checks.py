"""Checks of what users pass to the API, and of what it hands back.

Every function here turns a mistake into a chainrule error that names the
function and the argument, and never casts silently: a cotangent or tangent
must have the shape and dtype of its primal (a Python number is converted,
as JAX treats it as weakly typed).

>>> import numpy as np
>>> like(1.0, (), np.dtype("float64"), "pullback", "the cotangent")
array(1.)
"""

from __future__ import annotations

import numpy as np

from .errors import ArgumentError, GradientError
from .ir.op import PYTHON_SCALARS, is_dispatched
from .tree import flatten, unflatten


def check_callable(f, what: str) -> None:
    if not callable(f):
        raise ArgumentError(f"{what}: expected a function to transform, got "
                            f"{type(f).__name__} {f!r:.60}")


def check_argnums(argnums, n_args: int, what: str) -> tuple[int, ...]:
    """``argnums`` (an int or a tuple of ints) as non-negative positions."""
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else argnums
    if isinstance(nums, (tuple, list)) and nums and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in nums):
        out = []
        for a in nums:
            if not -n_args <= a < n_args:
                raise ArgumentError(f"{what}: argnums {argnums!r} is out of range for "
                                    f"{n_args} positional argument(s)")
            out.append(int(a) % n_args)
        if len(set(out)) != len(out):
            raise ArgumentError(f"{what}: argnums {argnums!r} names an argument twice")
        return tuple(out)
    raise ArgumentError(f"{what}: argnums must be an int or a tuple of ints, got {argnums!r}")


def check_tuple(value, what: str, name: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise ArgumentError(f"{what}: {name} must be a tuple (or list) with one entry per "
                            f"argument of the function, got {type(value).__name__}; write "
                            f"{what}(f, (x,), (t,)) for one argument")
    return tuple(value)


def aval(x) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of an array, number, traced value or tape tensor."""
    if is_dispatched(x):
        return tuple(x.shape), np.dtype(x.dtype)
    a = np.asarray(x)
    return a.shape, a.dtype


def like(value, shape, dtype, what: str, name: str):
    """``value`` as an array of ``shape`` and ``dtype``: a Python number is
    converted; an array (or traced value, or tensor) must have them already."""
    if type(value) in PYTHON_SCALARS:
        if tuple(shape) != ():
            raise GradientError(f"{what}: {name} is the number {value!r}, but the value it "
                                f"goes with has shape {tuple(shape)}")
        return np.asarray(value, dtype)
    got_shape, got_dtype = aval(value)
    if tuple(got_shape) != tuple(shape):
        raise GradientError(f"{what}: {name} has shape {tuple(got_shape)}, but the value it "
                            f"goes with has shape {tuple(shape)}")
    if got_dtype != dtype:
        raise GradientError(f"{what}: {name} has dtype {got_dtype}, but the value it goes "
                            f"with has dtype {dtype} (chainrule does not cast it; convert it "
                            f"with .astype({dtype}) if that is what you mean)")
    return value if is_dispatched(value) else np.asarray(value)


def own(tree, inputs=()):
    """``tree`` with every array the caller may not safely keep (read-only, returned
    twice, or sharing memory with one of ``inputs``) replaced by a copy, so each
    result is a distinct, writeable array of its own."""
    leaves, td = flatten(tree)
    given = [x for x in flatten(tuple(inputs))[0] if isinstance(x, np.ndarray) and x.size]
    seen: set[int] = set()
    out = []
    for x in leaves:
        if type(x) is np.ndarray:
            if (id(x) in seen or not x.flags.writeable
                    or any(np.may_share_memory(x, g) for g in given)):
                x = np.array(x, copy=True)
            seen.add(id(x))
        out.append(x)
    return unflatten(td, out)
