"""Checks of what users pass to the API, and of what it hands back; how a call's
arguments split into static values and the dynamic ones to trace (``StaticArgs``),
and the cache keys they make.

Every function here turns a mistake into a chainrule error that names the
function and the argument, and never casts silently: a cotangent or tangent
must have the shape and dtype of its primal (a Python number is converted,
as JAX treats it as weakly typed).

>>> import numpy as np
>>> like(1.0, (), np.dtype("float64"), "pullback", "the cotangent")
array(1.)
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from .emit.trace import Traced
from .errors import ArgumentError, ChainruleWarning, GradientError
from .ir.array import Array
from .ir.op import PYTHON_SCALARS, is_dispatched
from .tree import NODE_TYPES, flatten, unflatten


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
AUTO_STATIC = (int, bool, str)


def static_key(value, what: str, name: str):
    """A hashable key telling static values apart by type and value (``1``, ``1.0`` and
    ``True`` differ, and so do ``0.0`` and ``-0.0``). Lists and dicts are keyed by their
    contents (read at every call); other unhashable values are refused. Other objects
    are keyed by their own hash and equality, as in JAX: one changed in place without
    changing them must not be static (its old value stays baked in).

    >>> static_key((1, "a"), "jit", "n") == static_key((1, "a"), "jit", "n")
    True
    >>> static_key(1, "jit", "n") == static_key(True, "jit", "n")
    False
    """
    t = type(value)
    if t is tuple or t is list:
        return (t, tuple(static_key(v, what, name) for v in value))
    if t is dict:
        return (t, tuple((static_key(k, what, name), static_key(value[k], what, name))
                         for k in sorted(value, key=repr)))
    if t is float:
        return (t, value.hex())
    try:
        hash(value)
    except TypeError:
        raise ArgumentError(
            f"{what}: static argument {name} is an unhashable {t.__name__} ({value!r:.40}); "
            f"static values are part of the cache key, so they must be hashable (a tuple "
            f"instead of an array), or pass it as an ordinary (traced) argument") from None
    return (t, value)


class BoundCall:
    """One call of a transformed function, split into its static part and the dynamic
    arguments to trace: ``fn(*args)`` calls the user's function with the static values
    put back (``args`` keeps every positional place; a static argument's place holds
    None, an empty pytree, and keyword arguments come last, as a dict, when given)."""

    __slots__ = ("fn", "args", "n_pos", "key", "implicit", "_flat")

    def __init__(self, fn, args: tuple, n_pos: int, key, implicit: bool = False, flat=None):
        self.fn = fn
        self.args = args
        self.n_pos = n_pos
        self.key = key
        self.implicit = implicit  # some static values were not declared static
        self._flat = flat

    def flat(self) -> tuple:
        """``(leaves, tree)`` of the dynamic arguments (computed once)."""
        if self._flat is None:
            self._flat = flatten(self.args)
        return self._flat


class _Rebind:
    """The user's function with the static values of one call put back in place. A
    chainrule object holding the function as ``f``, so the capture of what the function
    reads from outside its arguments looks at the user's function only."""

    def __init__(self, f, plans, kw_plans, signature):
        self.f = f
        self.plans = plans  # per positional argument: None (dynamic) or a rebuild plan
        self.kw_plans = kw_plans  # keyword -> plan, or None when there are no keywords
        self.__name__ = getattr(f, "__name__", "f")
        self.__signature__ = signature

    def __call__(self, *args):
        n = len(self.plans)
        pos = [a if p is None else _rebuild(p, a) for p, a in zip(self.plans, args[:n])]
        if self.kw_plans is None:
            return self.f(*pos)
        given = args[n]
        kw = {k: given.get(k) if p is None else _rebuild(p, given.get(k))
              for k, p in self.kw_plans.items()}
        return self.f(*pos, **kw)


def _rebuild(plan, dynamic):
    """An argument from its static leaves (``plan``) and its dynamic part."""
    kind, tree, values = plan
    if kind == "whole":
        return values
    dyn = iter(flatten(dynamic)[0])
    return unflatten(tree, [next(dyn) if v is _DYNAMIC else v for v in values])


_DYNAMIC = object()


class ManyStaticValues(Exception):
    """A call whose undeclared static argument took too many values: run it uncompiled."""


class StaticArgs:
    """How a transformed function's arguments split into static and dynamic ones:
    ``static_argnums`` / ``static_argnames`` as declared (JAX's meaning: a name given
    by position, or a position given by name, is static too), and every Python
    int/bool/str leaf of an argument that is not differentiated."""

    IMPLICIT_LIMIT = 8  # values of undeclared static arguments compiled per signature
    RETRACE_WARNING = 32  # static values compiled for one signature: say so

    def __init__(self, f, static_argnums, static_argnames, what: str):
        self.f = f
        self.what = what
        nums = () if static_argnums is None else static_argnums
        nums = (nums,) if isinstance(nums, (int, np.integer)) else nums
        if not isinstance(nums, (tuple, list)) or not all(
                isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in nums):
            raise ArgumentError(f"{what}: static_argnums must be an int or a tuple of ints, "
                                f"got {static_argnums!r}")
        names = () if static_argnames is None else static_argnames
        names = (names,) if isinstance(names, str) else names
        if not isinstance(names, (tuple, list)) or not all(isinstance(a, str) for a in names):
            raise ArgumentError(f"{what}: static_argnames must be a str or a tuple of str, "
                                f"got {static_argnames!r}")
        self.nums, self.names = tuple(int(a) for a in nums), set(names)
        try:
            self.signature = inspect.signature(f)
        except (TypeError, ValueError):  # builtins and the like
            self.signature = None
        self.params = [] if self.signature is None else [
            p.name for p in self.signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for name in names:  # a name that is also a position is static given either way
            if name in self.params:
                self.nums += (self.params.index(name),)
        for i in self.nums:
            if 0 <= i < len(self.params):
                self.names.add(self.params[i])
        self.declared = bool(self.nums or self.names)
        self.values: dict = {}  # argument signature -> the static keys compiled for it
        self.warned = False

    def too_many(self, call: BoundCall, sig) -> bool:
        """Whether a call with undeclared static values (a Python int) should run
        uncompiled: ``IMPLICIT_LIMIT`` values were compiled already for its signature
        (an iteration counter would otherwise compile a program at every call)."""
        if not call.implicit or len(self.values.get(sig, ())) < self.IMPLICIT_LIMIT:
            return False
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"{self.what}({getattr(self.f, '__name__', 'f')}) was compiled for "
                f"{self.IMPLICIT_LIMIT} values of its Python int/bool/str arguments (static: "
                f"baked into the program); new values run uncompiled instead of compiling "
                f"again. Declare the argument in static_argnums to compile every value, or, if "
                f"the function only computes with it (no shapes, slices or branches), pass "
                f"np.int64(i) to trace it as a value", ChainruleWarning, stacklevel=4)
        return True

    def compiled(self, call: BoundCall, sig, label: str) -> None:
        """Count the static values compiled for a signature (and say when a declared
        static argument has compiled ``RETRACE_WARNING`` programs)."""
        if call.key is None:
            return
        seen = self.values.setdefault(sig, set())
        seen.add(call.key)
        if len(seen) == self.RETRACE_WARNING:
            warnings.warn(f"{label} was compiled for {len(seen)} values of its static "
                          f"arguments: each new value compiles anew", ChainruleWarning,
                          stacklevel=5)

    def bind(self, args: tuple, kwargs: dict, diff: tuple = ()) -> BoundCall:
        """Split one call; ``diff`` are the (non-negative) positions differentiated."""
        n = len(args)
        if not self.declared and not kwargs:  # the common case: one flatten, no statics
            flat = flatten(tuple(args))
            if not any(type(x) in AUTO_STATIC for x in flat[0]):
                return BoundCall(self.f, tuple(args), n, None, False, flat)
        static = {i % n for i in self.nums if -n <= i < n}
        for i in sorted(static & set(diff)):
            raise ArgumentError(f"{self.what}: argument {i} is both differentiated (argnums) "
                                f"and static (static_argnums)")
        plans, dyn, key = [], [], []
        for i, a in enumerate(args):
            plan, part, k = self._split(a, i in static, i in diff, f"{i}")
            plans.append(plan)
            dyn.append(part)
            key.append(k)
        kw_plans = None
        if kwargs:
            kw_plans, kw_dyn = {}, {}
            for name in sorted(kwargs):
                plan, part, k = self._split(kwargs[name], name in self.names, False, name)
                kw_plans[name] = plan
                kw_dyn[name] = part
                key.append((name, k))
            dyn.append(kw_dyn)
        if all(p is None for p in plans) and kw_plans is None:
            return BoundCall(self.f, tuple(args), n, None)
        if self.signature is not None:  # the call is checked here: f is called rebound
            try:
                self.signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise ArgumentError(f"{self.what}: {getattr(self.f, '__name__', 'f')}: {exc}"
                                    ) from None
        fn = _Rebind(self.f, plans, kw_plans, _signature(self.params, n, kw_plans))
        parts = key[:n] + [k for _, k in key[n:]]
        implicit = any(k is not None and k[0] != "declared" for k in parts)
        return BoundCall(fn, tuple(dyn), n, tuple(key), implicit)

    def _split(self, value, declared: bool, differentiated: bool, name: str):
        """(plan, dynamic part, key part) of one argument."""
        if declared:
            return ("whole", None, value), None, ("declared", static_key(value, self.what, name))
        if differentiated or type(value) is np.ndarray or type(value) is Array:
            return None, value, None
        if type(value) in AUTO_STATIC:
            return ("whole", None, value), None, ("static", static_key(value, self.what, name))
        leaves, tree = flatten(value)
        if not any(type(x) in AUTO_STATIC for x in leaves):
            return None, value, None
        values = [x if type(x) in AUTO_STATIC else _DYNAMIC for x in leaves]
        part = unflatten(tree, [None if type(x) in AUTO_STATIC else x for x in leaves])
        k = ("leaves", tree, tuple(static_key(x, self.what, name) if v is not _DYNAMIC
                                   else None for x, v in zip(leaves, values)))
        return ("leaves", tree, values), part, k


def _signature(names: list[str], n: int, kw_plans):
    """The signature a rebinding function shows (so traced parameters keep the user's
    argument names); keyword arguments come last, as one dict argument ``kw``."""
    kind = inspect.Parameter.POSITIONAL_ONLY
    taken = set(names[:n])
    params = [inspect.Parameter(names[i] if i < len(names) else f"arg{i}", kind)
              for i in range(n)]
    if kw_plans is not None:
        params.append(inspect.Parameter("kw" if "kw" not in taken else "kw_", kind))
    return inspect.Signature(params)


# -- cache keys ---------------------------------------------------------------------------


def leaf_signature(x):
    """The part of a cache key one argument leaf contributes (shape, dtype...)."""
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype.str)
    if isinstance(x, Traced):
        return ("traced", x.variable.type)
    if hasattr(x, "_cr_value"):  # a tape tensor
        return ("tensor", tuple(x.shape), np.dtype(x.dtype).str)
    from .backend.array_api.namespaces import foreign_namespace
    from .backend.array_api.namespaces import leaf_signature as foreign_signature

    ns = foreign_namespace(x)
    if ns is not None:  # a PyTorch/CuPy/Dask array: never read its data here
        return foreign_signature(x, ns)
    arr = np.asarray(x)
    return (arr.shape, arr.dtype.str)


def fast_key(args):
    """``(key, leaves)`` when every argument is a NumPy array, a plain list/tuple of
    them or a static Python int/bool/str (the common cases, keyed without building a
    tree structure), else None."""
    leaves, key = [], []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            leaves.append(a)
            key.append(a.shape)
            key.append(a.dtype)
        elif t is Array:  # chainrule.numpy's: the program takes it as the ndarray it is
            leaves.append(a.view(np.ndarray))
            key.append(a.shape)
            key.append(a.dtype)
        elif t is list or t is tuple:
            key.append(t)
            key.append(len(a))
            for b in a:
                if type(b) is not np.ndarray:
                    return None
                leaves.append(b)
                key.append(b.shape)
                key.append(b.dtype)
        elif t is int or t is bool or t is str:  # static (checks.StaticArgs): its value
            key.append(t)
            key.append(a)
        else:
            return None
    return tuple(key), leaves
