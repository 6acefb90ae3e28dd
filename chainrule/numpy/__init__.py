"""The NumPy-compatible namespace users import: ``import chainrule.numpy as cnp``.

On NumPy arrays these functions compute; on traced values they emit IR; on
tape tensors they record. The namespace is assembled, not kept by hand:
every op that declares ``namespace`` names appears under them (positional
values after its operands are its attributes, as in ``sum(x, 0)``), and the
adapters and composites of ``_core`` (NumPy signatures over the ops, and
functions such as ``var`` written with ops, so they differentiate for free)
complete it. ``np.<name>(x)`` on a traced value or tape tensor calls the
function of the same name here.

>>> import numpy as np
>>> float(sum(tanh(np.zeros(3)) + 1.0))
3.0
>>> sum.op
Op(sum)
"""

from __future__ import annotations

import inspect as _inspect

from .. import ops as _ops  # noqa: F401  (registers every op)
from ..emit.methods import NUMPY_FUNCTIONS as _NUMPY_FUNCTIONS
from ..ir.op import OPS as _OPS
from ..ir.op import REQUIRED as _REQUIRED
from . import _core
from ._core import *  # noqa: F403


def _signature(op) -> _inspect.Signature:
    kinds = _inspect.Parameter
    if op.nargs is None:
        params = [kinds("operands", kinds.VAR_POSITIONAL)]
    else:
        names = ["x"] if op.nargs == 1 else [f"x{i + 1}" for i in range(op.nargs)]
        params = [kinds(n, kinds.POSITIONAL_ONLY) for n in names]
    kind = kinds.KEYWORD_ONLY if op.nargs is None else kinds.POSITIONAL_OR_KEYWORD
    for key, default in op.attrs.items():
        params.append(kinds(key, kind, **({} if default is _REQUIRED else {"default": default})))
    return _inspect.Signature(params)


def _op_function(op, name: str):
    def function(*args, **attrs):
        return op(*args, **attrs)

    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    function.__doc__ = op.doc or f"The ``{op.name}`` op (see ``chainrule.ops``)."
    function.__signature__ = _signature(op)
    function.op = op
    return function


def namespace_functions() -> dict:
    """``name -> function`` for every registered op that declares namespace names."""
    out = {}
    for op in _OPS.values():
        for name in op.namespace:
            out[name] = _op_function(op, name)
    return out


_ASSEMBLED = namespace_functions()
_clash = sorted(set(_ASSEMBLED) & set(vars(_core)))
if _clash:  # an adapter and an op both claim a name: one of them is a mistake
    raise ImportError(f"chainrule.numpy: {_clash} both declared by ops and written in _core")
globals().update(_ASSEMBLED)

_HELPERS = ("annotations", "builtins", "array_method", "EXPOSED")
__all__ = sorted({*_ASSEMBLED, *(n for n in vars(_core)
                                  if not n.startswith("_") and n not in _HELPERS)})
_NUMPY_FUNCTIONS.update({n: globals()[n] for n in __all__ if callable(globals()[n])})
