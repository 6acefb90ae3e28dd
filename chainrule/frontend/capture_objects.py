"""What an object holds, for ``capture.py``'s walk: its own attributes (``__dict__`` and
slots, private slot names mangled), the plain values its class holds, and whether a
function is one of chainrule's own (read only for chainrule's state, not walked)."""

from __future__ import annotations

import array
import collections
import sys
import types

import numpy as np

from ..ir.array import Array
from ..ir.op import Op


class ArrayValues:
    """What a guard keeps of an array it does not take as an input (an ndarray subclass
    other than ``np.memmap``: ``np.matrix``, a masked array; a ``memoryview``): its
    class, shape, dtype, bytes and mask, compared exactly (a sign of zero, a NaN's
    bits), so a change in place retraces."""

    __slots__ = ("kind", "data", "mask")

    def __init__(self, value):
        self.kind = type(value)
        self.data = np.array(np.ma.getdata(value), copy=True)
        self.mask = (np.ma.getmaskarray(value).copy()
                     if isinstance(value, np.ma.MaskedArray) else None)

    def __eq__(self, other) -> bool:
        return (type(other) is ArrayValues and self.kind is other.kind
                and self.data.shape == other.data.shape
                and self.data.dtype == other.data.dtype
                and self.data.tobytes() == other.data.tobytes()
                and (self.mask is None) == (other.mask is None)
                and (self.mask is None or bool(np.array_equal(self.mask, other.mask))))

    __hash__ = None  # compared, never a key

    def put_back(self, value) -> None:
        """Write these values back into ``value`` (what tracing changed in place)."""
        np.asarray(np.ma.getdata(value))[...] = self.data
        if self.mask is not None:
            value.mask = self.mask

    def __repr__(self) -> str:
        return f"<{self.kind.__name__} {self.data.dtype}{list(self.data.shape)}>"


def _inherited_attribute(holder, key: str) -> bool:
    """Whether ``holder.key`` is a plain value of its class (or, for a class, of a base)
    rather than its own: not an entry of its ``__dict__``, nor a descriptor (a
    function's ``__defaults__``, a slot, a property) that setting goes through."""
    own = getattr(holder, "__dict__", None)
    if own is None or key in own:
        return False
    bases = holder.__mro__[1:] if isinstance(holder, type) else type(holder).__mro__
    for klass in bases:
        if key in vars(klass):
            return not hasattr(type(vars(klass)[key]), "__get__")
    return False


def _slots(cls: type) -> tuple:
    """The ``__slots__`` names of a user class and its bases (library classes: none)."""
    if cls.__module__ == "builtins" or cls.__module__.startswith(("numpy", "chainrule.")):
        return ()
    names = []
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        slots = [slots] if isinstance(slots, str) else slots
        names += [_mangled(klass, n) for n in slots if n not in ("__dict__", "__weakref__")]
    return tuple(names)


def _mangled(klass: type, name: str) -> str:
    """The attribute a slot ``name`` of ``klass`` is stored as: a private ``__x`` is
    ``_Klass__x`` (Python's name mangling), else the name itself."""
    owner = klass.__name__.lstrip("_")
    if name.startswith("__") and not name.endswith("__") and owner:
        return f"_{owner}{name}"
    return name


def _attributes(obj) -> dict:
    """An object's own attributes: its ``__dict__`` and the slots that are set."""
    attrs = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for name in _slots(type(obj)):
        try:
            attrs[name] = object.__getattribute__(obj, name)
        except AttributeError:  # a slot not set
            pass
    return attrs


def _class_attribute(cls: type, name: str):
    """The plain value (not a function or another descriptor) ``name`` finds in
    ``cls`` or its bases; None when there is none."""
    for klass in cls.__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            return None if hasattr(type(value), "__get__") else value
    return None


def _own_function(fn, depth: int = 0) -> bool:
    """A function of chainrule's own (``cnp.tanh``, ``cnp.sum``) holding nothing but
    ops, names and other such functions: all it reads is chainrule's state, never a
    user's array (a function chainrule made around a user's, ``grad(f)``'s, holds that
    function in a cell, and is followed)."""
    namespace = fn.__globals__  # the module it was defined in (not the one it names)
    module = namespace.get("__name__")
    if depth > 2 or not (type(module) is str and module.startswith("chainrule.")):
        return False
    own = sys.modules.get(module)
    if own is None or vars(own) is not namespace:
        return False  # not chainrule's module itself (a doctest's copy of its namespace)
    try:
        cells = [cell.cell_contents for cell in fn.__closure__ or ()]
    except ValueError:  # an empty cell: followed as any function is
        return False
    return all(type(c) in _OWN_CELLS or (type(c) is types.FunctionType
                                         and _own_function(c, depth + 1)) for c in cells)


_OWN_CELLS = (Op, str, int, bool, type(None))

# array libraries whose functions hold caches, never a user's values: their memo
# dictionaries (scipy's LAPACK lookup) change as they are used and would fail a guard
_LIBRARIES = frozenset({"numpy", "scipy", "torch", "jax", "jaxlib", "dask", "cupy",
                        "numba", "autograd", "sklearn"})


def _library_function(fn) -> bool:
    """A function of an array library (``scipy.linalg.eigvalsh``): what it reads is
    the library's own state, not a user's array or setting."""
    module = fn.__globals__.get("__name__")
    return type(module) is str and module.partition(".")[0] in _LIBRARIES


_SCALARS = (bool, int, float, complex, np.generic)


def _is_number(v) -> bool:
    """A number, or a tuple of numbers: what a guard compares by value."""
    return isinstance(v, _SCALARS) or (type(v) is tuple and all(isinstance(x, _SCALARS)
                                                                for x in v))


def _number_value(value):
    """What a number guard compares: the value, or the entries of a container guarded
    whole (a long one of numbers, an ``array.array``) as a tuple (a dict's items)."""
    if isinstance(value, (list, collections.deque, array.array)):
        return tuple(value)
    if isinstance(value, np.ndarray) and type(value) not in (np.ndarray, Array) or (
            type(value) is memoryview):
        return ArrayValues(value)
    return tuple(value.items()) if isinstance(value, dict) else value
