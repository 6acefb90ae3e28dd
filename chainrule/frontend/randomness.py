"""Random draws inside a traced function become draws of the compiled program.

A function that calls ``rs.randn(3)`` on a NumPy ``RandomState`` or
``Generator`` it can reach (a closure, a global, an attribute), or NumPy's
global functions (``np.random.randn``), must draw afresh at every call. While
it is traced, those generators (and ``np.random``'s functions) are replaced by
stand-ins that emit ``random_draw`` ops: when the program runs, each op calls
the same method of the user's generator, found again at every call, so the
numbers, their order and the generator's state are those of running the
function itself. Parameters that are traced values (``rs.normal(mu, sigma)``
with ``mu`` differentiated) are applied outside the draw (``mu + sigma * z``),
so the draw is reparameterized and differentiable in them.

A draw the stand-ins do not see (a generator reached another way, a method
they do not know, a generator made without a seed inside the function) is
detected after tracing by the change of a generator's state: ``RandomDraws``
is raised, and the API runs the function without compiling it.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> rs = np.random.RandomState(0)
>>> g = cr.grad(lambda x: cnp.sum(x * rs.randn(3)))
>>> bool(np.array_equal(g(np.ones(3)), g(np.ones(3))))  # a new draw at every call
False
"""

from __future__ import annotations

import random

import numpy as np

from ..errors import TraceError
from ..ir.op import is_dispatched
from ..ops import random as rops
from .capture import Path, Unrepeatable


class RandomDraws(Unrepeatable):
    """The function drew random numbers in a way the compiled program cannot repeat
    at every call (the API then runs it uncompiled, as for Python control flow on
    values)."""


class _PathSource:
    """A generator found at a path: fetched again at every run."""

    def __init__(self, path: Path):
        self.path = path

    def generator(self):
        gen = self.path.fetch()
        if not isinstance(gen, (np.random.RandomState, np.random.Generator)):
            raise TraceError(f"random_draw: {self.path.describe()} is no longer a NumPy "
                             f"random generator")
        return gen


class _GlobalSource:
    """NumPy's global RandomState (``np.random.randn`` and friends)."""

    def generator(self):
        return np.random.mtrand._rand


GLOBAL = _GlobalSource()


def source_index(source) -> int:
    rops.SOURCES.append(source)
    return len(rops.SOURCES) - 1


def _size(size) -> tuple:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


class TracingGenerator:
    """Stands in for a generator while a function is traced: its methods emit draws."""

    def __init__(self, trace, source: int, legacy: bool):
        self._trace = trace
        self._source = source
        self._legacy = legacy  # a RandomState (else a Generator)

    def _draw(self, method, shape, dtype=np.float64, params=()):
        attrs = {"method": method, "shape": _size(shape), "dtype": np.dtype(dtype),
                 "source": self._source, "params": tuple(params)}
        return self._trace.apply(rops.random_draw, (), attrs)

    def _unit(self):
        return "random_sample" if self._legacy else "random"

    # -- normal ---------------------------------------------------------------------------
    def standard_normal(self, size=None, dtype=np.float64):
        if self._legacy:
            return self._draw("standard_normal", size)
        return self._draw("standard_normal", size, dtype,
                          () if np.dtype(dtype) == np.float64 else (("dtype", dtype),))

    def randn(self, *shape):
        return self._draw("standard_normal", shape)

    def normal(self, loc=0.0, scale=1.0, size=None):
        if size is None:
            size = np.broadcast_shapes(np.shape(loc), np.shape(scale))
        return loc + scale * self.standard_normal(size)

    # -- uniform ------------------------------------------------------------------------
    def random(self, size=None, dtype=np.float64):
        return self._draw(self._unit(), size, dtype)

    random_sample = random

    def rand(self, *shape):
        return self._draw(self._unit(), shape)

    def uniform(self, low=0.0, high=1.0, size=None):
        if size is None:
            size = np.broadcast_shapes(np.shape(low), np.shape(high))
        return low + (high - low) * self.random(size)

    # -- others ---------------------------------------------------------------------------
    def standard_exponential(self, size=None):
        return self._draw("standard_exponential", size)

    def exponential(self, scale=1.0, size=None):
        if size is None:
            size = np.shape(scale)
        return scale * self.standard_exponential(size)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        self._static("integers", low, high)
        return self._draw("integers", size, dtype, (("low", low), ("high", high),
                                                    ("dtype", np.dtype(dtype)),
                                                    ("endpoint", bool(endpoint))))

    def randint(self, low, high=None, size=None, dtype=int):
        self._static("randint", low, high)
        method = "randint" if self._legacy else "integers"
        return self._draw(method, size, np.dtype(dtype), (("low", low), ("high", high),
                                                          ("dtype", np.dtype(dtype))))

    def choice(self, a, size=None, replace=True, p=None):
        if is_dispatched(p):
            raise RandomDraws("choice with traced probabilities p cannot be compiled")
        n = a if isinstance(a, (int, np.integer)) else len(a)
        params = (("a", int(n)), ("replace", bool(replace)))
        if p is not None:
            params += (("p", tuple(float(v) for v in np.asarray(p).reshape(-1))),)
        picks = self._draw("choice", size, np.int64, params)
        if isinstance(a, (int, np.integer)):
            return picks
        from .. import ops

        return ops.getitem(a, picks) if is_dispatched(a) else ops.getitem(np.asarray(a), picks)

    def _static(self, what, *values):
        if any(is_dispatched(v) for v in values):
            raise RandomDraws(f"{what} with traced bounds cannot be compiled")

    def __getattr__(self, name):
        raise RandomDraws(f"the random method {name!r} is not compiled by chainrule (it knows "
                          f"normal, uniform, integers, choice, exponential and their variants)")


_GLOBAL_FUNCTIONS = ("randn", "rand", "random", "random_sample", "standard_normal", "normal",
                     "uniform", "randint", "choice", "exponential", "standard_exponential")


def _state(gen):
    if isinstance(gen, random.Random):  # Python's own: never a stand-in, only watched
        return gen.getstate()
    if isinstance(gen, np.random.RandomState):
        return gen.get_state(legacy=False)
    return gen.bit_generator.state


def _unseeded(factory, what):
    def make(seed=None, *args, **kwargs):
        if seed is None:
            raise RandomDraws(f"{what}() without a seed inside a compiled function gives new "
                              f"numbers at every call")
        return factory(seed, *args, **kwargs)

    return make


class Stand_ins:  # noqa: N801
    """Puts the stand-ins in place for one trace and checks afterwards that every
    draw went through them."""

    def __init__(self, trace, found):
        self.trace = trace
        self.found = found
        self.undo = []
        self.saved = []
        self.before = None

    def __enter__(self):
        from .capture import _Missing

        self.before = [(gen, _state(gen)) for gen in self._generators()]
        self.before.append((np.random.mtrand._rand, _state(np.random.mtrand._rand)))
        # Python's random module (its functions share one hidden generator) draws Python
        # numbers the program would bake in: a draw is caught by the state's change
        self.before.append((random._inst, _state(random._inst)))
        for path, gen in self.found.generators:
            if isinstance(gen, random.Random):
                continue
            stand_in = TracingGenerator(self.trace, source_index(_PathSource(path)),
                                        isinstance(gen, np.random.RandomState))
            try:
                self.undo.extend(path.assign(stand_in))
            except _Missing:
                pass
        glob = TracingGenerator(self.trace, source_index(GLOBAL), True)
        for name in _GLOBAL_FUNCTIONS:
            self.saved.append((name, getattr(np.random, name)))
            setattr(np.random, name, getattr(glob, name))
        self.saved.append(("default_rng", np.random.default_rng))
        np.random.default_rng = _unseeded(np.random.default_rng, "np.random.default_rng")
        return self

    def __exit__(self, *exc):
        for name, fn in reversed(self.saved):
            setattr(np.random, name, fn)
        self.found.restore(self.undo)
        changed = [(gen, state) for gen, state in self.before
                   if not _same_state(_state(gen), state)]
        for gen, state in changed:  # the draws tracing made are undone: running the
            _set_state(gen, state)  # function uncompiled then draws what it would have
        if exc[0] is None and changed:
            raise RandomDraws("the function drew random numbers in a way chainrule cannot "
                              "repeat at every call of compiled code (through a generator it "
                              "could not find, Python's random module, or np.random.seed "
                              "inside the function)")
        return False

    def _generators(self):
        return [gen for _, gen in self.found.generators]


def _set_state(gen, state) -> None:
    if isinstance(gen, random.Random):
        gen.setstate(state)
    elif isinstance(gen, np.random.RandomState):
        gen.set_state(state)
    else:
        gen.bit_generator.state = state


def _same_state(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b
