"""What a traced function reads from outside its arguments, and where from.

A function compiled once per input signature must not freeze the arrays it
closes over: after ``W[:] = 0.1`` (in place) or ``W = W * 10`` (rebinding) the
next call must see the new values. Before tracing, ``sources(f)`` walks what
``f`` can reach (closure cells, the globals its code names, defaults,
``self`` of a bound method, ``functools.partial`` arguments, the attributes
and items of the objects found, and the functions they hold, to a bounded
depth) and records a *path* to every array and every Python number found.

While tracing, an array met by the function that has a path becomes a hidden
input of the compiled program (``Capture``): at every call its path is
followed again and the current array passed in, so in-place updates and
rebindings are both seen; a path that fails, or leads to an array of another
shape or dtype, means the function is traced again. Python numbers stay
compile-time constants, guarded by value (``Guards``): if one changes, the
function is traced again; so are the sizes (and a dict's keys) of the lists,
tuples and dicts the code reads, which decide how many times a loop over them
ran while tracing. Arrays with no path (made during the call) are constants of
the program.

>>> import numpy as np
>>> def model():
...     W = np.ones(2)
...     return W, lambda x: x * W
>>> W, f = model()
>>> sources(f).arrays[id(W)].describe()
'W (closure of model.<locals>.<lambda>)'
"""

from __future__ import annotations

import array
import collections
import functools
import itertools
import operator
import random
import types

import numpy as np

from ..backend.array_api.namespaces import abstract_shape_dtype, as_numpy, foreign_namespace
from ..errors import ConcretizationError
from ..ir.array import Array
from .capture_objects import (
    _SCALARS,
    ArrayValues,
    _attributes,
    _class_attribute,
    _inherited_attribute,
    _is_number,
    _library_function,
    _number_value,
    _own_function,
    _slots,
)

MAX_DEPTH = 4  # object hops from a root, any attribute or entry
# hops from a root along what the code may read (attributes it names, entries of
# containers): model.layers[0].weights.W is six deep
MAX_NAMED_DEPTH = 12
MAX_ITEMS = 1024  # entries of a container or attributes of an object visited
WHOLE_AFTER = 16  # entries from which a sequence of numbers is guarded whole (one check)
_SEQUENCES = (list, tuple, collections.deque, array.array)


class _Missing(Exception):
    """A path that no longer leads anywhere."""


# what undoes a stand-in set on an object for an attribute it read from its class (or
# a class from its base): deleting it, so the class's attribute shows through again
_INHERITED = object()


class Root:
    """Where a path starts: a closure cell, a global, or an object held directly."""

    __slots__ = ("get", "set")

    def __init__(self, get, set=None):
        self.get = get
        self.set = set


class Path:
    """How to reach a value again: a root and a chain of attribute/item steps."""

    __slots__ = ("root", "steps", "label")

    def __init__(self, root: Root, steps: tuple, label: str):
        self.root = root
        self.steps = steps  # (("attr", name) | ("item", key)), ...
        self.label = label

    def child(self, kind: str, key) -> Path:
        text = f".{key}" if kind == "attr" else f"[{key!r}]"
        return Path(self.root, self.steps + ((kind, key),), self.label + text)

    def parent(self) -> Path:
        return Path(self.root, self.steps[:-1], self.label)

    def fetch(self):
        try:
            value = self.root.get()
            for kind, key in self.steps:
                value = getattr(value, key) if kind == "attr" else value[key]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError, NameError):
            raise _Missing(self.label) from None
        return value

    def assign(self, value) -> list:
        """Put ``value`` where the path leads (a tuple on the way is rebuilt and put
        in its parent's place); returns what undoes it, as (path, old value, value
        put) triples to assign in order. Raises ``_Missing`` where that cannot be done."""
        try:
            if not self.steps:
                if self.root.set is None:
                    raise _Missing(self.label)
                old = self.root.get()
                self.root.set(value)
                return [(self, old, value)]
            holder = self.parent().fetch()
            kind, key = self.steps[-1]
            if kind == "attr":
                old = getattr(holder, key)
                if value is _INHERITED:  # the stand-in shadowed a class's attribute
                    delattr(holder, key)
                    return [(self, old, value)]
                inherited = _inherited_attribute(holder, key)
                setattr(holder, key, value)
                if getattr(holder, key) is not value:
                    raise _Missing(self.label)
                return [(self, _INHERITED if inherited else old, value)]
            if type(holder) is tuple:
                rebuilt = holder[:key] + (value,) + holder[key + 1:]
                return self.parent().assign(rebuilt)
            old = holder[key]
            holder[key] = value
            return [(self, old, value)]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise _Missing(self.label) from exc

    def describe(self) -> str:
        return self.label

    def name_hint(self) -> str:
        """An identifier for the parameter that receives the value (``self.W`` -> W)."""
        head = self.label.split(" ")[0]
        for _kind, key in reversed(self.steps):
            if isinstance(key, str) and key.isidentifier() and not key.startswith("__"):
                return key
        return head if head.isidentifier() else "captured"


def _cell_root(cell) -> Root:
    def put(value):
        cell.cell_contents = value

    return Root(lambda: cell.cell_contents, put)


def _global_root(namespace: dict, name: str) -> Root:
    def put(value):
        namespace[name] = value

    return Root(lambda: namespace[name], put)


def _const_root(obj) -> Root:
    return Root(lambda: obj)


class Found:
    """Paths to the arrays (by identity) and numbers a function can reach."""

    def __init__(self):
        self.arrays: dict[int, Path] = {}  # id(array) -> the first path found to it
        self.aliases: dict[int, list[Path]] = {}  # id(array) -> every path found to it
        self.values: dict[int, np.ndarray] = {}
        # id(array of another library: PyTorch, CuPy, Dask) -> (its namespace, shape,
        # NumPy dtype): the program takes it as the NumPy array it converts to
        self.foreign: dict[int, tuple] = {}
        self.numbers: list[tuple[Path, object]] = []
        self.layouts: list[tuple[Path, object]] = []  # lists, tuples, dicts: their layout
        self.contents: dict[int, tuple] = {}  # id(path of a list or dict) -> (it, a copy)
        self.stand_ins: dict[int, np.ndarray] = {}  # id(stand-in put by swap) -> the array
        self.guarded_rules: set[int] = set()  # custom rules whose reads are guarded (api/custom.py)
        self.generators: list[tuple[Path, object]] = []  # NumPy random generators
        self._seen: set[int] = set()

    def swap(self, placeholder) -> list:
        """Put ``placeholder(array, path)`` in place of every array found, wherever it
        was found, so that whatever the function computes from them is traced;
        returns the undo list for ``restore`` (arrays that cannot be put back in
        place are left alone, and are captured when the trace meets them)."""
        undo = []
        for key, paths in self.aliases.items():
            value = placeholder(self.values[key], self.arrays[key])
            self.stand_ins[id(value)] = self.values[key]
            for path in paths:
                try:
                    undo.extend(path.assign(value))
                except _Missing:
                    pass
        return undo

    @staticmethod
    def restore(undo: list) -> list[str]:
        """Put back what ``swap`` replaced; returns the places the function itself
        rebound meanwhile (``self.W = self.W * 2``): put back too, so that running it
        again starts from the state before the call."""
        # by place (a tuple rebuilt for each array in it is put in its parent's place
        # once per array: the last one put is what should be there)
        placed = {(id(path.root), path.steps): (path, value) for path, _, value in undo}
        rebound = []
        for path, value in placed.values():
            try:
                if value is not _INHERITED and path.fetch() is not value:
                    rebound.append(path.describe())
            except _Missing:
                rebound.append(path.describe())
        for path, old, _ in reversed(undo):
            try:
                path.assign(old)
            except _Missing:
                pass
        return rebound

    def numbers_now(self) -> list[tuple[Path, object]]:
        """The numbers as they are now (after tracing: what the program baked in)."""
        return _now(self.numbers, _number_value)

    def layouts_now(self) -> list[tuple[Path, object]]:
        """The containers' layouts as they are now (after tracing)."""
        return _now(self.layouts, _layout)

    def effects(self, name: str, rebound=()) -> Effects | None:
        """What tracing changed of the numbers and containers the function reads
        (``calls[0] += 1``, ``history.append(...)``) or rebound where it found arrays
        (``self.W = self.W * 2``); None when nothing."""
        changed = []
        for found_before, now, same in ((self.numbers, self.numbers_now(), _same_number),
                                        (self.layouts, self.layouts_now(), operator.eq)):
            before = {id(path): value for path, value in found_before}
            changed += [(path, before[id(path)], value) for path, value in now
                        if id(path) in before and not same(value, before[id(path)])]
        if not changed and not rebound:
            return None
        what = (f"{changed[0][0].describe()} (from {changed[0][1]!r:.40} to "
                f"{changed[0][2]!r:.40})" if changed else f"{rebound[0]} (rebinds it)")
        error = Unrepeatable(
            f"{name} changes {what}, which it reads, while it runs, and what it computes "
            f"depends on it: compiled code would not repeat that; keep such state out of "
            f"what the function reads, or pass it as an argument")
        return Effects(error, bool(rebound),
                       lambda: [self._put_back(path, old) for path, old, _ in reversed(changed)])

    def _put_back(self, path: Path, old) -> None:
        if id(path) in self.contents:  # a container: itself, with its entries as they were
            old, copy = self.contents[id(path)]
            if isinstance(old, array.array):
                old[:] = array.array(old.typecode, copy)
            elif not isinstance(old, tuple):
                old.clear()
                (old.update if isinstance(old, dict) else old.extend)(copy)
        try:
            if type(old) is ArrayValues:  # an array guarded by value: its values back
                old.put_back(path.fetch())
            elif path.fetch() is not old:
                path.assign(old)
        except _Missing:
            pass


def _now(entries: list, read) -> list[tuple[Path, object]]:
    out = []
    for path, _ in entries:
        try:
            out.append((path, read(path.fetch())))
        except _Missing:
            pass
    return out


def _layout(container):
    """What a loop over a container depends on: a list's or tuple's length, a dict's
    keys in order (None for anything else: the guard then fails)."""
    if isinstance(container, dict):
        return tuple(container)
    return len(container) if isinstance(container, _SEQUENCES) else None


# attribute steps the walk takes itself (a bound method's self, a partial's arguments,
# a function's defaults...): the code does not name them
_WALK_STEPS = frozenset({"__self__", "__func__", "func", "args", "keywords", "__defaults__",
                         "__kwdefaults__", "__wrapped__", "f", "_cr_recording", "data"})


def _read_by_code(path: Path, names: set) -> bool:
    """Whether the code may read the value at ``path``: its last attribute step is one the
    code names (``self.lr``; ``self.sizes[0]``) or the walk's own, or it has none (an item
    of a closure's or a global's container: ``flags[0]``, ``params[key]``). A number in an
    object attribute the code never names (a step counter) is not guarded."""
    for kind, key in reversed(path.steps):
        if kind == "attr":
            return key in names or key in _WALK_STEPS
        if isinstance(key, str) and key in names:  # params["lr"]
            return True
    return True


def _code_names(code) -> set[str]:
    """The names a code object (and the code nested in it) reads: globals,
    attributes, and string constants (dictionary keys such as ``params["lr"]``)."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
        elif isinstance(c, str) and c.isidentifier():
            names.add(c)
    return names


def sources(f, originals=None) -> Found:
    """Every array ``f`` can reach from outside its arguments, and every number its
    code reads (by a name, an attribute or a key the code mentions), with a path.
    ``originals`` maps the id of a traced stand-in (put in place of an array while a
    function is traced) to that array, so a walk made during tracing sees the arrays."""
    found = Found()
    found.names = set()
    found.originals = originals or {}
    found.via_stand_in = set()  # ids of the arrays reached through a stand-in
    _visit(f, Path(_const_root(f), (), getattr(f, "__name__", "f")), found, 0, None)
    found.numbers = [(path, v) for path, v in found.numbers
                     if _read_by_code(path, found.names)]
    found.layouts = [(path, v) for path, v in found.layouts
                     if _read_by_code(path, found.names)]
    return found


def _visit(value, path: Path, found: Found, depth: int, names) -> None:
    if id(value) in found.originals:  # a stand-in: the array it stands for
        value = found.originals[id(value)]
        found.via_stand_in.add(id(value))
    t = type(value)
    if t is np.ndarray or t is np.memmap or t is Array:  # Array: chainrule.numpy's
        found.arrays.setdefault(id(value), path)
        found.aliases.setdefault(id(value), []).append(path)
        found.values[id(value)] = value
        return
    if isinstance(value, _SCALARS) or (t is tuple and value and len(value) <= MAX_ITEMS
                                       and all(isinstance(v, _SCALARS) for v in value)):
        found.numbers.append((path, value))
        return
    if isinstance(value, np.ndarray) or t is memoryview:  # np.matrix, a masked array...
        found.numbers.append((path, ArrayValues(value)))  # guarded by value, exactly
        return
    if isinstance(value, (np.random.RandomState, np.random.Generator, random.Random)):
        if all(g is not value for _, g in found.generators):
            found.generators.append((path, value))
        return
    if isinstance(value, type) and depth <= MAX_DEPTH and names:
        _visit_class_attributes(value, value, path, found, depth, names)  # Model.bias
        return
    if value is None or isinstance(value, (str, bytes, type)) or (
            depth > MAX_DEPTH and (depth > MAX_NAMED_DEPTH or not _named_step(path, names))):
        return
    if id(value) in found._seen:
        return
    found._seen.add(id(value))
    if isinstance(value, types.FunctionType):
        if _own_function(value) or _library_function(value):
            return
        _visit_function(value, path, found, depth)
    elif isinstance(value, types.MethodType):
        code = getattr(value.__func__, "__code__", None)  # what it reads of self
        own_names = (names or set()) | (_code_names(code) if code is not None else set())
        _visit(value.__self__, path.child("attr", "__self__"), found, depth + 1, own_names)
        _visit(value.__func__, path.child("attr", "__func__"), found, depth + 1, names)
    elif isinstance(value, functools.partial):
        _visit(value.func, path.child("attr", "func"), found, depth + 1, names)
        for i, a in enumerate(value.args[:MAX_ITEMS]):
            _visit(a, path.child("attr", "args").child("item", i), found, depth + 1, names)
        for k, a in list(value.keywords.items())[:MAX_ITEMS]:
            _visit(a, path.child("attr", "keywords").child("item", k), found, depth + 1, names)
    elif isinstance(value, types.ModuleType):
        # a module is reached for the attributes the code names (np.pi, config.W)
        for name in sorted(names or ()):
            if name in vars(value) and not name.startswith("__"):
                attr = vars(value)[name]
                if not isinstance(attr, types.ModuleType):
                    _visit(attr, path.child("attr", name), found, depth + 1, names)
    elif isinstance(value, dict):  # and OrderedDict, defaultdict, ...
        found.layouts.append((path, _layout(value)))
        found.contents[id(path)] = (value, dict(value))
        items = list(value.items())
        if len(items) > WHOLE_AFTER and _guarded_whole(items, tuple(items), path, found,
                                                       depth, names):
            return
        for k, v in items[:MAX_ITEMS]:
            _visit(v, path.child("item", k), found, depth + 1, names)
    elif isinstance(value, _SEQUENCES):  # and their subclasses (a namedtuple)
        found.layouts.append((path, _layout(value)))
        found.contents[id(path)] = (value, value if isinstance(value, tuple) else list(value))
        if (t is array.array or len(value) > WHOLE_AFTER) and _guarded_whole(
                list(enumerate(value)), tuple(value), path, found, depth, names):
            return
        for i, v in enumerate(itertools.islice(value, MAX_ITEMS)):
            _visit(v, path.child("item", i), found, depth + 1, names)
    elif hasattr(t, "_cr_recording"):
        # a tape tensor: its array is an input like any other, and whether derivatives
        # flow through it decides whether a compiled program may stand for the function
        found.numbers.append((path.child("attr", "_cr_recording"), value._cr_recording))
        _visit(value.data, path.child("attr", "data"), found, depth + 1, names)
    elif foreign_namespace(value) is not None:  # a PyTorch, CuPy or Dask array
        ns = foreign_namespace(value)
        found.foreign[id(value)] = (ns, *abstract_shape_dtype(value, ns))
        found.arrays.setdefault(id(value), path)
        found.aliases.setdefault(id(value), []).append(path)
        found.values[id(value)] = value
    elif type(value).__module__.startswith("chainrule."):
        # a transformed function (grad(f), jit(f), ...): what matters is the user's f
        try:  # not getattr: a class's __getattr__ may raise anything (a traced generator)
            inner = object.__getattribute__(value, "f")
        except AttributeError:
            inner = None
        if callable(inner):
            _visit(inner, path.child("attr", "f"), found, depth + 1, names)
    elif (hasattr(value, "__dict__") or _slots(type(value))) and not isinstance(
            value, np.generic):
        attrs = _attributes(value)
        for k in list(attrs)[:MAX_ITEMS]:
            _visit(attrs[k], path.child("attr", k), found, depth + 1, names)
        if names:  # self.bias read from the class: followed through the object, so a
            # value set on the object later, or on the class, is what the next call sees
            _visit_class_attributes(type(value), value, path, found, depth, names - attrs.keys())
        cls = type(value)  # the methods the code may call on it (self.forward(x))
        for name in sorted(names or ()):
            method = cls.__dict__.get(name)
            if isinstance(method, types.FunctionType):
                _visit(method, Path(_const_root(method), (), f"{cls.__name__}.{name}"),
                       found, depth + 1, names)
    elif callable(value):
        call = type(value).__dict__.get("__call__")
        if isinstance(call, types.FunctionType):
            _visit(call, Path(_const_root(call), (), f"{type(value).__name__}.__call__"),
                   found, depth + 1, names)


def _guarded_whole(entries: list, snapshot: tuple, path: Path, found: Found, depth: int,
                   names) -> bool:
    """A long container's (key, entry) pairs: when every entry is a number, one guard
    compares the whole ``snapshot`` by value (True: nothing more to walk); else the
    arrays past the entries walked one by one are still followed (False)."""
    if all(_is_number(v) for _, v in entries):
        found.numbers.append((path, snapshot))
        return True
    for k, v in entries[MAX_ITEMS:]:
        if type(v) is np.ndarray or type(v) is Array:
            _visit(v, path.child("item", k), found, depth + 1, names)
    return False


def _named_step(path: Path, names) -> bool:
    """Whether ``path``'s last step is one the code may take: an attribute it names, or
    an entry of a container."""
    if not path.steps:
        return True
    kind, key = path.steps[-1]
    return kind == "item" or (names is not None and key in names)


def _visit_class_attributes(cls: type, holder, path: Path, found: Found, depth: int,
                            names) -> None:
    """The arrays and numbers the code may read as attributes of ``holder`` that live
    in ``cls`` (a class, or the class of an object) or its bases."""
    if cls.__module__ in ("builtins",) or cls.__module__.startswith(("numpy", "chainrule.")):
        return
    for name in sorted(names):
        if name.startswith("__"):
            continue
        value = _class_attribute(cls, name)
        if value is not None:
            _visit(value, path.child("attr", name), found, depth + 1, names)


def _visit_function(fn, path: Path, found: Found, depth: int) -> None:
    wrapped = getattr(fn, "__wrapped__", None)  # functools.wraps: the function it wraps
    if wrapped is not None:
        _visit(wrapped, path.child("attr", "__wrapped__"), found, depth + 1, None)
    code = fn.__code__
    names = _code_names(code)
    found.names |= names
    label = getattr(fn, "__qualname__", "f")
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (assigned later)
            continue
        _visit(value, Path(_cell_root(cell), (), f"{name} (closure of {label})"), found,
               depth + 1, names)
    g = fn.__globals__
    for name in sorted(names):
        if name in g:
            value = g[name]
            if isinstance(value, types.ModuleType) and value.__name__.startswith(
                    ("numpy", "chainrule", "builtins")):
                continue
            _visit(value, Path(_global_root(g, name), (), f"{name} (global of {label})"),
                   found, depth + 1, names)
    for i, d in enumerate(fn.__defaults__ or ()):
        _visit(d, path.child("attr", "__defaults__").child("item", i), found, depth + 1, names)
    for k, d in (fn.__kwdefaults__ or {}).items():
        _visit(d, path.child("attr", "__kwdefaults__").child("item", k), found, depth + 1,
               names)


class Capture:
    """A hidden input: an array the traced function read through ``path``. An array of
    another library (``foreign``: its namespace, shape and NumPy dtype) is passed as
    the NumPy array it converts to, read afresh at every call as a NumPy array is."""

    __slots__ = ("path", "shape", "dtype", "namespace")

    def __init__(self, path: Path, value, foreign: tuple | None = None):
        self.path = path
        if foreign is None:
            self.namespace, self.shape, self.dtype = None, value.shape, value.dtype
        else:
            self.namespace, self.shape, self.dtype = foreign

    def current(self):
        """The array at the path now, or ``_Missing`` when the program must be traced
        again (the path fails, or the array has another shape or dtype)."""
        value = self.path.fetch()
        if type(value) is np.memmap or type(value) is Array:  # the program takes it as an
            value = value.view(np.ndarray)  # ndarray (a file's array, chainrule.numpy's)
        elif self.namespace is not None and self.namespace.owns(value):
            value = as_numpy(value, self.namespace, self.path.describe())
        if type(value) is not np.ndarray or value.shape != self.shape or (
                value.dtype != self.dtype):
            raise _Missing(self.path.describe())
        return value


class Guards:
    """What a compiled specialization assumed about the function's surroundings:
    its hidden inputs, and the Python numbers it baked in."""

    __slots__ = ("captures", "numbers", "pinned", "layouts")

    def __init__(self, captures=(), numbers=(), pinned=(), layouts=()):
        self.captures = list(captures)
        self.numbers = list(numbers)
        self.pinned = list(pinned)  # (path, array): arrays whose values were baked in
        self.layouts = list(layouts)  # (path, length or keys) of the containers read

    def inputs(self) -> list:
        """The current hidden inputs; raises ``Stale`` when a guard fails."""
        try:
            for path, value in self.numbers:
                now = path.fetch()
                if type(now) is not type(value):  # a container or an array guarded whole
                    now = _number_value(now)
                if type(now) is not type(value) or not _same_number(now, value):
                    raise Stale(f"{path.describe()} changed from {value!r} to {now!r}")
            for path, value in self.pinned:
                now = path.fetch()
                if type(now) is Array:
                    now = now.view(np.ndarray)
                if type(now) is not np.ndarray or now.shape != value.shape or (
                        now.dtype != value.dtype) or not np.array_equal(now, value):
                    raise Stale(f"{path.describe()} (an array whose values were baked in: "
                                f"a boolean mask used as an index, or read by a custom "
                                f"rule) changed")
            for path, layout in self.layouts:
                if _layout(path.fetch()) != layout:
                    raise Stale(f"{path.describe()} changed size (or keys)")
            return [c.current() for c in self.captures]
        except _Missing as exc:
            raise Stale(f"{exc} is no longer an array of the same shape and dtype") from None

    def __bool__(self) -> bool:
        return bool(self.captures or self.numbers or self.pinned or self.layouts)


def _same_number(a, b) -> bool:
    if isinstance(a, tuple):  # the same objects (a container unchanged) at C speed first
        return len(a) == len(b) and (all(map(operator.is_, a, b)) or all(
            _same_number(x, y) for x, y in zip(a, b)))
    if a != a and b != b:  # both NaN
        return True
    return a == b and (not isinstance(a, float) or np.signbit(a) == np.signbit(b))


class Unrepeatable(ConcretizationError):
    """The function does, while it runs, what compiled code cannot repeat at every call:
    it draws random numbers in a way the program cannot (``randomness.RandomDraws``), or
    changes a Python value (or a container's size) it reads. The API then runs it
    uncompiled at every call, as the Python function itself would run."""


class Effects:
    """What a trace changed of the function's surroundings (``Found.effects``): the
    error to raise if compiled code cannot stand for the function, whether it rebound
    an array's place (then it never can: the next call must read the new value), and
    how to put the numbers and containers back as they were before the trace."""

    __slots__ = ("error", "rebound", "put_back")

    def __init__(self, error: Unrepeatable, rebound: bool, put_back):
        self.error = error
        self.rebound = rebound
        self.put_back = put_back


class Stale(Exception):
    """A guard failed: the compiled specialization no longer describes the function."""
