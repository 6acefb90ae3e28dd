"""What a transformed function hands back: results the caller owns.

``own(results, inputs)`` makes every array a distinct, writeable array of the
caller's (a copy where a result is read-only, returned twice, or shares memory with
an input) and turns 0-d arrays into NumPy scalars, whichever tier computed them.
"""

from __future__ import annotations

import numpy as np

from ..tree import NODE_TYPES, flatten, unflatten


def own(tree, inputs=()):
    """``tree`` with every array the caller may not safely keep (read-only, returned
    twice, or sharing memory with one of ``inputs``) replaced by a copy, so each
    result is a distinct, writeable array of its own; 0-d arrays become NumPy scalars.

    It runs after every call of a transformed function, so its common case is cheap:
    the results of generated code are tuples of fresh arrays, and an array that owns
    its memory shares it with an input only if it is that input or the owner of an
    input's memory (``_InputMemory``), a set lookup instead of ``np.may_share_memory``
    against every input.

    >>> x = np.ones(3)
    >>> out = own((x, x[1:], x * 2), (x,))
    >>> [o is x for o in out], np.shares_memory(out[1], x), out[2].base is None
    ([False, False, False], False, True)
    """
    if type(tree) is Allocated:  # nothing to copy: only 0-d arrays become scalars
        return _scalars(tree)
    memory = _InputMemory(inputs)
    seen: set[int] = set()
    if type(tree) is tuple:  # the generated code's results: tuples of arrays, nested
        return _own_tuple(tree, memory, seen)
    leaves, td = flatten(tree)
    return unflatten(td, [_own_leaf(x, memory, seen) for x in leaves])


class Allocated(tuple):
    """The results of a call of generated code that returns only arrays the call
    allocated, each once (``backend.execution.results_allocated``): ``own`` hands them
    to the caller as they are, turning only 0-d arrays into NumPy scalars.

    >>> out = own(Allocated((np.ones(2), np.array(3.0))), ())
    >>> type(out) is tuple, out[1]
    (True, np.float64(3.0))
    """

    __slots__ = ()


def _scalars(tree: tuple) -> tuple:
    return tuple([_scalars(x) if type(x) is tuple
                  else x[()] if type(x) is np.ndarray and not x.ndim else x for x in tree])


def _own_tuple(tree: tuple, memory, seen: set) -> tuple:
    return tuple([_own_tuple(x, memory, seen) if type(x) is tuple
                  else _own_leaf(x, memory, seen) for x in tree])


def _own_leaf(x, memory, seen: set):
    if type(x) is not np.ndarray:
        if isinstance(x, tuple) or type(x) in NODE_TYPES:  # a container: the general way
            leaves, td = flatten(x)
            return unflatten(td, [_own_leaf(y, memory, seen) for y in leaves])
        return x
    if x.ndim == 0:
        # a 0-d result is a NumPy scalar whichever tier ran (the interpreter's kernels
        # give scalars where generated code may fill a 0-d buffer)
        return x[()]
    flags = x.flags
    if id(x) in seen or not flags.writeable or memory.shared(x, flags.owndata):
        x = np.array(x, copy=True)
    seen.add(id(x))
    return x


class _InputMemory:
    """The memory of the arrays a call was given, to tell whether a result shares it.

    An array whose ``base`` is None owns its memory; an input shares that memory only
    if it is that array or a view of it, whose ``base`` NumPy sets to the owner. So
    such a result is checked by identity against the inputs and their owners. Inputs
    whose owner is not an array that owns its memory (``np.frombuffer``,
    ``as_strided``, foreign memory) and results that are views are checked with
    ``np.may_share_memory``, as before."""

    __slots__ = ("owners", "odd", "arrays")

    def __init__(self, inputs):
        self.arrays = arrays = []
        _array_leaves(inputs, arrays)
        self.owners = owners = set()
        self.odd = odd = []  # inputs whose memory has no owning array we can name
        for x in arrays:
            base = x.base
            if base is None:
                if x.flags.owndata:
                    owners.add(id(x))
                    continue
            elif type(base) is np.ndarray and base.base is None and base.flags.owndata:
                owners.add(id(x))
                owners.add(id(base))
                continue
            odd.append(x)

    def shared(self, x: np.ndarray, owndata: bool) -> bool:
        if owndata and x.base is None:
            if id(x) in self.owners:
                return True
            return bool(self.odd) and any(np.may_share_memory(x, g) for g in self.odd)
        return any(np.may_share_memory(x, g) for g in self.arrays)


def _array_leaves(tree, out: list) -> None:
    """Append to ``out`` the non-empty NumPy arrays among the leaves of ``tree`` (plain
    tuples and lists walked directly: the arguments of a call)."""
    t = type(tree)
    if t is tuple or t is list:
        for x in tree:
            if type(x) is np.ndarray:
                if x.size:
                    out.append(x)
            else:
                _array_leaves(x, out)
    elif isinstance(tree, np.ndarray):
        if tree.size:
            out.append(tree)
    else:
        out.extend(x for x in flatten(tree)[0] if isinstance(x, np.ndarray) and x.size)


# -- static arguments ---------------------------------------------------------------------
# Static values are part of the cache key and baked into the program (as autograd runs the
# function on them): the arguments declared static, and every Python int/bool/str leaf of
# an argument that is not differentiated. NumPy scalars and arrays are traced.
