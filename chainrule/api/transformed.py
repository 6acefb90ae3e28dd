"""A transformed function (``grad(f)``, ``jit(f)``, ``vmap(f)``, a Jacobian...): traced,
transformed and compiled once per input signature (tree structure, shapes, dtypes,
static values) and cached; each call runs its specialization, which emits into an
enclosing trace when called on traced values (so transforms compose to any order),
or falls back to the tape (Python control flow on values, random draws compiled code
cannot repeat, tape tensors) or to running the function uncompiled.
"""

from __future__ import annotations

import functools
import warnings

from ..backend.numba import native_status
from ..checks import check_argnums
from ..emit.trace import Traced
from ..errors import (
    ChainruleWarning,
    CompiledHigherOrderError,
    ConcretizationError,
    RecordedValueError,
)
from ..frontend.capture import Stale, Unrepeatable
from ..ir.collector import paused
from .arguments import BoundCall, ManyStaticValues, StaticArgs, fast_key, leaf_signature
from .results import Allocated


class Transformed:
    """A function transformation cached per input signature and static values.

    ``build(call, leaves)`` traces ``call.fn`` on ``call.args`` (a ``BoundCall``: the
    static arguments are baked into ``call.fn``, see ``checks.StaticArgs``); ``diff``
    names the arguments differentiated (never static)."""

    MAX_SPECIALIZATIONS = 256  # then the oldest are dropped

    def __init__(self, f, build, name: str, on_tape=None,
                 fallback_for=(ConcretizationError, CompiledHigherOrderError),
                 statics: StaticArgs | None = None, diff=None):
        self.f = f
        self.build = build
        self.on_tape = on_tape
        self.cache: dict = {}
        self.fast_cache: dict = {}  # fast_key -> entry, for plain NumPy arguments
        self.uncompiled: set = set()  # signatures that run without compiling (see _fallback)
        self.fallback_for = fallback_for
        self.warned = False
        self.statics = statics if statics is not None else StaticArgs(f, None, None, name)
        self.diff = diff
        functools.update_wrapper(self, f, updated=())
        self.__name__ = f"{name}({getattr(f, '__name__', 'f')})"
        self.kind = name
        self.poly = None  # polymorphic_shapes specifications (frontend.polymorphic)

    def leaf_types(self, call: BoundCall):
        """The symbolic types of the leaves of ``call`` (None without polymorphic_shapes)."""
        if self.poly is None:
            return None
        from ..frontend.polymorphic import leaf_types

        return leaf_types(self.poly, call.args[:call.n_pos])

    def bind(self, args, kwargs) -> BoundCall:
        diff = () if self.diff is None else check_argnums(self.diff, len(args), self.kind)
        return self.statics.bind(args, kwargs, diff)

    def specialize(self, call: BoundCall):
        if not isinstance(call, BoundCall):  # a tuple of arguments (jit(f).module(x) etc.)
            call = self.bind(tuple(call), {})
        leaves, in_tree = call.flat()
        types = self.leaf_types(call)
        if types is None:
            sig = (in_tree, tuple(leaf_signature(x) for x in leaves))
        else:  # a symbolic leaf is keyed by its type: one program for every size
            types = types + [None] * (len(leaves) - len(types))
            sig = (in_tree, tuple(leaf_signature(x) if t is None or isinstance(x, Traced)
                                  else t for x, t in zip(leaves, types)))
        key = (call.key, sig)
        entry = self.cache.get(key)
        traced = any(isinstance(x, Traced) for x in leaves)
        if entry is None and not traced and self.on_tape and self.statics.too_many(call, sig):
            raise ManyStaticValues(self.__name__)
        if entry is None or traced or entry.traced.lifted_values:
            with paused():  # tracing and the passes make many objects, few cycles
                entry = self.build(call, leaves)
            if not entry.traced.lifted_values and not any(isinstance(x, Traced) for x in leaves):
                if len(self.cache) >= self.MAX_SPECIALIZATIONS:
                    self.forget(self.cache[next(iter(self.cache))])
                self.cache[key] = entry
                self.statics.compiled(call, sig, self.__name__)
        return entry, leaves

    @staticmethod
    def _signature(call: BoundCall):
        leaves, in_tree = call.flat()
        return (call.key, in_tree, tuple(leaf_signature(x) for x in leaves))

    def _fallback(self, call: BoundCall, exc):
        """Run on the tape (or, for jit, uncompiled) from now on for these argument
        types; say once why, when the reason is not Python control flow on values
        (the tape's ordinary use)."""
        if not isinstance(exc, RecordedValueError):  # that one lasts only while the tape
            self.uncompiled.add(self._signature(call))  # tensor is read: not remembered
        if isinstance(exc, Unrepeatable) and not self.warned:
            self.warned = True
            warnings.warn(f"{self.__name__}: not compiled, runs uncompiled at every call "
                          f"instead: {exc}", ChainruleWarning, stacklevel=3)
        return self.on_tape(call)

    def native_status(self, *args, **kwargs) -> str:
        """Where the compiled program for these arguments runs: ``"native"`` (one numba
        function: ``chainrule.backend.numba``), ``"compiling"`` (in the background; its
        NumPy code answers meanwhile), or ``"numpy: <why>"`` (the reason it has no native
        form, or that it is not compiled yet: the first calls run interpreted)."""
        entry, _ = self.specialize(self.bind(args, kwargs))
        return native_status(entry.tiers.compiled)

    def forget(self, entry) -> None:
        """Drop a specialization whose guards failed."""
        for cache in (self.cache, self.fast_cache):
            for key in [k for k, e in cache.items() if e is entry]:
                del cache[key]

    def __call__(self, *args, **kwargs):
        fast = None if kwargs else fast_key(args)
        if fast is not None:
            entry = self.fast_cache.get(fast[0])
            if entry is not None:
                try:
                    result = entry.run_fast(fast[1])  # the guards of captured values run
                except Stale:
                    self.forget(entry)
                else:
                    tiers = getattr(entry, "tiers", None)
                    if type(result) is tuple and tiers is not None and tiers.allocates_results:
                        result = Allocated(result)  # fresh arrays: own() copies none
                    return entry.finish(result, args)
        call = self.bind(args, kwargs)
        if self.on_tape is not None and any(
                getattr(x, "requires_grad", False) for x in call.flat()[0]):
            return self.on_tape(call)  # called on tape tensors: record on that tape
        if self.uncompiled and self._signature(call) in self.uncompiled:
            return self.on_tape(call)
        try:
            try:
                entry, leaves = self.specialize(call)
                result = entry.run(leaves)
            except Stale:
                # what the function reads from outside its arguments changed: trace again
                self.forget(entry)
                entry, leaves = self.specialize(call)
                result = entry.run(leaves)
        except ManyStaticValues:  # a Python int changing at every call: no compiling each
            return self.on_tape(call)
        except (ConcretizationError, CompiledHigherOrderError) as exc:
            # Python control flow on values, random draws compiled code cannot repeat, a
            # tape tensor it closes over, or a derivative of compiled control flow
            # differentiated again: run it uncompiled
            if (self.on_tape is None or not isinstance(exc, self.fallback_for)
                    or any(isinstance(x, Traced) for x in call.flat()[0])):
                raise
            return self._fallback(call, exc)
        if fast is not None and len(self.fast_cache) < 64 and entry.exact_for(fast[1]):
            self.fast_cache[fast[0]] = entry
        return entry.finish(result, call.args)
