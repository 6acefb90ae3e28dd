"""How a call of a transformed function binds its arguments: which are static (Python
ints, bools and strings not differentiated, and those ``static_argnums`` /
``static_argnames`` name: part of the cache key) and which are traced, and the cache
keys the traced ones make (``leaf_signature``, ``fast_key``).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from ..backend import policy
from ..emit.trace import Traced
from ..errors import ArgumentError, ChainruleWarning
from ..ir.array import Array
from ..tree import flatten, unflatten

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
        uncompiled: ``policy.IMPLICIT_STATIC_LIMIT`` values were compiled already for its
        signature
        (an iteration counter would otherwise compile a program at every call)."""
        if not call.implicit or len(self.values.get(sig, ())) < policy.IMPLICIT_STATIC_LIMIT:
            return False
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"{self.what}({getattr(self.f, '__name__', 'f')}) was compiled for "
                f"{policy.IMPLICIT_STATIC_LIMIT} values of its Python int/bool/str arguments "
                f"(static: baked into the program); new values run uncompiled instead of compiling "
                f"again. Declare the argument in static_argnums to compile every value, or, if "
                f"the function only computes with it (no shapes, slices or branches), pass "
                f"np.int64(i) to trace it as a value", ChainruleWarning, stacklevel=4)
        return True

    def compiled(self, call: BoundCall, sig, label: str) -> None:
        """Count the static values compiled for a signature (and say when a declared
        static argument has compiled ``policy.RETRACE_WARNING`` programs)."""
        if call.key is None:
            return
        seen = self.values.setdefault(sig, set())
        seen.add(call.key)
        if len(seen) == policy.RETRACE_WARNING:
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
    from ..backend.array_api.namespaces import foreign_namespace
    from ..backend.array_api.namespaces import leaf_signature as foreign_signature

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
