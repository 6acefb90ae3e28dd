"""Checks of what users pass to the transforms and the control flow: callables,
argnums, tangents and cotangents.

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


def check_argnums_form(argnums, what: str) -> None:
    """argnums is an int or a non-empty tuple of ints (ranges are checked per call)."""
    ints = (int, np.integer)
    if isinstance(argnums, ints) and not isinstance(argnums, bool):
        return
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(a, ints) and not isinstance(a, bool) for a in argnums):
        return
    check_argnums(argnums, 0, what)  # raises, saying what argnums must be


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
    from .backend.array_api.namespaces import abstract_shape_dtype, foreign_namespace

    ns = foreign_namespace(x)
    if ns is not None:  # a PyTorch/CuPy/Dask array stays one
        return abstract_shape_dtype(x, ns)
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
    if is_dispatched(value) or type(value) is not np.ndarray and _foreign(value):
        return value
    return np.asarray(value)


def _foreign(value) -> bool:
    from .backend.array_api.namespaces import foreign_namespace

    return foreign_namespace(value) is not None
