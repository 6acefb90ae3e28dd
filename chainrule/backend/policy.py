"""Execution policy, in one place: when a program is interpreted, compiled to NumPy
code, compiled to native code, cached, and dropped from a cache.

Every transform (``grad``, ``jit``, ``jvp``, ``vmap``...) and the eager tape decide by
these numbers and functions; their modules read them from here at each decision (so
``monkeypatch.setattr(policy, "INTERPRETED_CALLS", 1)`` changes every transform).

A transformed function meets a new function or argument signature with a program
traced and differentiated for it, cached per function and signature (at most
``MAX_PROGRAMS`` per function for ``jvp``/``vjp``/``linearize``; ``IMPLICIT_STATIC_LIMIT``
values of undeclared int/bool/str arguments compiled per signature, the later ones run
on the tape). A program is then:

1. interpreted for its first ``INTERPRETED_CALLS`` calls (``compile_now``): optimizing
   and generating code costs about 60 us per binding once, the interpreter about 3.5 us
   per binding per call more than generated code, so compiling pays off after about 17
   calls, and compiling then never costs more than twice the better choice (the
   ski-rental rule); a count, not a timer, so that behaviour is the same on every
   machine. ``eager_compile=True`` (or ``CHAINRULE_EAGER_COMPILE=1``) compiles first.
2. run as generated NumPy code from then on;
3. with numba installed (``CHAINRULE_NATIVE=0`` turns it off), also compiled to native
   code in the background when ``worth_native`` says so, swapped in when ready; a
   program without loops keeps whichever of the two ran faster over ``TRIAL_CALLS``
   calls each.

Python control flow on traced values sends a call to the eager tape instead (a
``TraceError`` while tracing); the tape backpropagates a structure eagerly until it has
seen it ``sightings_before_codegen`` times, then builds and compiles its pullback once,
keeping at most ``PULLBACK_CACHE_ENTRIES`` pullbacks and ``PULLBACK_CACHE_NODES``
recorded ops (least recently used dropped first).
"""

from __future__ import annotations

import os

__all__ = ["INTERPRETED_CALLS", "compile_now", "eager_default", "sightings_before_codegen",
           "worth_native"]

INTERPRETED_CALLS = 15  # calls run in the interpreter before a program is compiled
IMPLICIT_STATIC_LIMIT = 8  # values of undeclared static arguments compiled per signature
RETRACE_WARNING = 32  # values of declared static arguments compiled per signature: warn
MAX_PROGRAMS = 64  # jvp/vjp/linearize programs kept per function (the oldest dropped)

# the tape: building and compiling a pullback costs about 15 eager backwards of its
# structure, whatever its size; a small structure is compiled the second time it is seen
# (a training loop reaches generated code at once), a 100,000-op one after 20 sightings
CODEGEN_NODES_PER_SIGHTING = 5000
PULLBACK_CACHE_ENTRIES = 128
PULLBACK_CACHE_NODES = 2_000_000
TAPE_SIGNATURES = 8192  # the tape's memo of op signatures (type rules run once), cleared when full

# native code (numba): a straight-line program of fewer op calls has no Python calls worth
# saving; one on bigger arrays spends its time in NumPy's loops, which numba's do not beat
# op for op (a chain of elementwise ops in one loop, one pass over memory, does)
NATIVE_MIN_OPS = 4
NATIVE_MAX_ELEMENTS = 1 << 16
# calls of each (NumPy code, native code) after which a straight-line program keeps the
# faster: on arrays of thousands of elements NumPy's loops can beat numba's (GradBench's
# gmm gradient: 0.18 ms against 0.29), on small ones numba wins (det's: 0.107 against
# 0.048); a program with a loop keeps its native code (its NumPy code can take seconds)
TRIAL_CALLS = 3
# lines of numba code past which a straight-line program stays NumPy code (a loop's may
# have programs.MAX_LINES): a 1,400-op chain written as 1,400 lines compiled for minutes,
# the 775 lines of a 256x256 Jacobian unrolled for more than 20 s, for a gain a trial may
# not even keep
NATIVE_MAX_LINES_STRAIGHT = 400
# the buffers of a native program's stacks kept between its calls (reused: no page faults)
NATIVE_WORKSPACE_BYTES = 256 * 2**20


def eager_default() -> bool:
    """Whether transforms compile before their first call unless told otherwise
    (``CHAINRULE_EAGER_COMPILE=1`` in the environment)."""
    return os.environ.get("CHAINRULE_EAGER_COMPILE", "") not in ("", "0")


def compile_now(calls: int, eager: bool) -> bool:
    """Whether a program interpreted ``calls`` times so far is compiled before this call.

    >>> compile_now(0, eager=False), compile_now(INTERPRETED_CALLS, eager=False)
    (False, True)
    """
    return eager or calls >= INTERPRETED_CALLS


def sightings_before_codegen(n_nodes: int) -> int:
    """How many times the tape backpropagates a structure of ``n_nodes`` recorded ops
    eagerly before it compiles its pullback.

    >>> sightings_before_codegen(50), sightings_before_codegen(100_000)
    (2, 20)
    """
    return max(2, n_nodes // CODEGEN_NODES_PER_SIGHTING)


def worth_native(calls: int, loops: int, largest: int, chained: int = 0) -> str | None:
    """None when a program of ``calls`` op calls and ``loops`` while loops, whose largest
    array has ``largest`` elements and which computes ``chained`` values inside element
    loops (``numba/deferred.py``: never stored), is worth compiling to native code; else
    why not.

    >>> worth_native(3, 0, 10)
    '3 op call(s) and no loop: no Python calls to save'
    >>> worth_native(3, 1, 10**9) is None
    True
    >>> worth_native(20, 0, 10**6, chained=0)[:30]
    'arrays of more than 65536 elem'
    >>> worth_native(20, 0, 10**6, chained=3) is None
    True
    """
    if loops:
        return None
    if calls < NATIVE_MIN_OPS:
        return f"{calls} op call(s) and no loop: no Python calls to save"
    if largest > NATIVE_MAX_ELEMENTS and not chained:
        return (f"arrays of more than {NATIVE_MAX_ELEMENTS} elements and no chain of "
                f"elementwise ops to compute in one loop: NumPy's calls cost little next "
                f"to the work")
    return None
