"""The array chainrule's namespace returns when it computes on NumPy arrays.

``Array`` is a NumPy ``ndarray`` in every respect (a subclass: NumPy functions
take it, ``isinstance(x, np.ndarray)`` holds, it prints as NumPy's arrays do)
with one addition: JAX's functional updates, ``x.at[idx].set(v)`` (``add``,
``multiply``, ``divide``, ``min``, ``max``, ``get``), the same on a plain
array, a traced value and a tape tensor. So JAX's idiom for building an
array works eagerly and inside transforms alike:

>>> import chainrule.numpy as cnp
>>> cnp.zeros((2, 2)).at[0, 1].set(5.0)
array([[0., 5.],
       [0., 0.]])

Inside chainrule (the interpreter, generated code, the tape) arrays stay plain
ndarrays; ``Array`` is what a user is handed.
"""

from __future__ import annotations

import numpy as np

# x.at's indexer (chainrule.emit.methods.AtIndexer): it applies ops, a layer above this
AT_INDEXER: list = []


class Array(np.ndarray):
    """An ndarray with ``.at[...]`` functional updates (module docstring)."""

    __slots__ = ()

    @property
    def at(self):
        """Functional updates, as JAX's: ``x.at[idx].add(v)`` is a new array."""
        return AT_INDEXER[0](self)

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


def as_user_array(x):
    """``x`` as ``Array`` when it is a plain ndarray, and the plain ndarrays in a tuple
    (a named tuple too: ``SVDResult``) or list of them; other values as they are."""
    t = type(x)
    if t is np.ndarray:
        return x.view(Array)
    if (t is list or isinstance(x, tuple)) and any(type(e) is np.ndarray for e in x):
        items = [e.view(Array) if type(e) is np.ndarray else e for e in x]
        return t(*items) if hasattr(t, "_fields") else t(items)
    return x
