"""The cyclic garbage collector, paused while the compiler works.

A pass over a long program allocates millions of small objects (nodes, types,
dictionaries) and frees few: every 700 allocations Python's cyclic collector
runs, and its older generations rescan everything still alive, which is the
whole program being transformed. On a 10,000-binding chain that doubled the
time of ``linearize`` and made it grow faster than the program. IR nodes are
immutable and refer only to older nodes, so the passes make few reference
cycles; the collector is paused for the duration of the outermost pass (or
trace, or code generation) and resumes, as it was, when that returns.

>>> import gc
>>> with paused():
...     inner = gc.isenabled()
>>> inner, gc.isenabled()
(False, True)
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

_depth = 0
_was_enabled = True


class paused:
    """Context manager: no cyclic collection inside (re-entrant; the outermost one
    restores the collector's state)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth, _was_enabled
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1

    def __exit__(self, *exc) -> None:
        global _depth
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()


def collector_paused(fn: F) -> F:
    """Decorator: ``fn`` runs with the cyclic collector paused (see ``paused``)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with paused():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
