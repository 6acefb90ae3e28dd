"""How a user namespace is assembled from the op registry: every op whose
``namespace`` holds ``<prefix><name>`` appears as ``name`` in the namespace
with that prefix (``""``: ``chainrule.numpy``; ``"linalg."``:
``chainrule.numpy.linalg``; ``"scipy.special."``: ``chainrule.scipy.special``),
next to the functions the namespace's own modules define."""

from __future__ import annotations

import functools
import inspect

from numpy.exceptions import AxisError

from ..emit.methods import NUMPY_FUNCTIONS, op_caller
from ..errors import (
    ArgumentError,
    ChainruleError,
    InvalidAxisError,
    InvalidIndexError,
    InvalidValueError,
)
from ..ir.array import as_user_array
from ..ir.op import OPS, REQUIRED


def _signature(op) -> inspect.Signature:
    kinds = inspect.Parameter
    if op.nargs is None:
        params = [kinds("operands", kinds.VAR_POSITIONAL)]
    else:
        names = ["x"] if op.nargs == 1 else [f"x{i + 1}" for i in range(op.nargs)]
        params = [kinds(n, kinds.POSITIONAL_ONLY) for n in names]
    kind = kinds.KEYWORD_ONLY if op.nargs is None else kinds.POSITIONAL_OR_KEYWORD
    for key, default in op.attrs.items():
        params.append(kinds(key, kind, **({} if default is REQUIRED else {"default": default})))
    return inspect.Signature(params)


def op_function(op, name: str, module: str):
    """The namespace function of ``op`` under ``name``: positional values after the
    operands are the op's attributes, in order."""

    function = op_caller(op)
    function.__name__ = function.__qualname__ = name
    function.__module__ = module
    function.__doc__ = op.doc or f"The ``{op.name}`` op (see ``chainrule.ops``)."
    function.__signature__ = _signature(op)
    function.op = op
    return function


def op_functions(prefix: str, module: str) -> dict:
    """``name -> function`` for the registered ops that declare ``<prefix><name>``."""
    out = {}
    for op in OPS.values():
        for qualified in op.namespace:
            head, _, name = qualified.rpartition(".")
            if (head + "." if head else "") == prefix:
                out[name] = op_function(op, name, module)
    return out


# NumPy's argument errors (raised by NumPy itself or by the functions written after it)
# -> the chainrule error of the same kind; the most specific first
_AS_CHAINRULE = ((AxisError, InvalidAxisError), (IndexError, InvalidIndexError),
                 (ValueError, InvalidValueError), (TypeError, ArgumentError))


def user_errors(fn, qualified: str):
    """``fn`` raising chainrule errors (still the ValueError / IndexError / TypeError
    that NumPy raises) named after ``qualified``, for a bad argument, and returning
    ``Array`` where it computed a NumPy array."""

    @functools.wraps(fn)
    def function(*args, **kwargs):
        try:
            out = fn(*args, **kwargs)
            if kwargs.get("out") is out is not None:  # NumPy's out=: that array itself
                return out
            return as_user_array(out)
        except ChainruleError:
            raise
        except (AxisError, IndexError, ValueError, TypeError) as exc:
            kind = next(ours for theirs, ours in _AS_CHAINRULE if isinstance(exc, theirs))
            raise kind(f"{qualified}: {exc}") from exc

    return function


def assemble(namespace: dict, prefix: str, own=()) -> list[str]:
    """Put the op functions of ``prefix`` into ``namespace`` (a module's globals) next
    to its own public functions ``own`` (names already there), refusing a name both
    define; returns the namespace's ``__all__``. NumPy's functions called on traced
    values and tape tensors find the top-level ones."""
    made = op_functions(prefix, namespace["__name__"])
    own = set(own)
    clash = sorted(set(made) & own)
    if clash:  # an adapter and an op both claim a name: one of them is a mistake
        raise ImportError(f"{namespace['__name__']}: {clash} both declared by ops and "
                          f"written as functions")
    namespace.update(made)
    for name in own:
        if inspect.isfunction(namespace[name]) and not name.startswith("_"):
            namespace[name] = user_errors(namespace[name], prefix + name)
    names = sorted({*made, *own})
    if not prefix.startswith("scipy."):  # "linalg.norm": what np.linalg.norm(traced) finds
        NUMPY_FUNCTIONS.update({prefix + n: namespace[n] for n in names
                                if callable(namespace[n])})
    return names
