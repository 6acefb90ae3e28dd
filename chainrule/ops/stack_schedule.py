"""Binomial checkpointing (Griewank's revolve): where the reverse mode of a loop
keeps the next snapshot of the carry, under a budget of ``snapshots`` carries.

Reversing ``l`` steps from a snapshot at the first of them, with ``c`` snapshots
in all (that one included), costs at least ``T(l, c)`` advances (steps run
without keeping their residuals): ``T(1, c) = 0``, ``T(l, 1) = l (l - 1) / 2``
and ``T(l, c) = min over m of m + T(l - m, c - 1) + T(m, c)``, which is
``r l - C(c + r, r - 1)`` for the repetition number ``r``, the least with
``C(c + r, c) >= l`` (Griewank and Walther, Algorithm 799). A split ``m`` that
reaches it leaves the first ``m`` steps to be repeated ``r - 1`` more times with
``c`` snapshots and the other ``l - m`` ``r`` times with ``c - 1``: any ``m`` with
``max(l - C(c + r - 1, c - 1), C(c + r - 2, c)) <= m`` and
``m <= min(C(c + r - 1, c), l - C(c + r - 2, c - 1))``; ``revolve_split`` takes
the largest (checked against the recursion in
``tests/transform/reverse/test_loops_checkpoint.py``).

The reverse loop applies the rule online: at the snapshot ``p`` on top, to reach
iteration ``j`` with ``f`` snapshots free, it keeps the next one at
``p + split(j + 1 - p, f + 1)`` (the snapshot at ``p`` counts as one), and so on
until ``j``. The forward loop does the same towards ``n - 1`` when the trip count
``n`` is known before the loop runs (``fori_loop``, ``scan``); a ``while_loop``
keeps only its first carry, and the reverse loop, knowing ``n`` by then,
schedules from there (one more sweep than revolve offline).

>>> revolve_cost(10, 3), [revolve_cost(10, c) for c in (1, 2, 10)]
(15, [45, 20, 9])
"""

from __future__ import annotations

from math import comb

import numpy as np

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import TensorType
from .common import NOT_YET_ON_ARRAY_API, define


def repetitions(steps: int, snapshots: int) -> int:
    """The least r with C(snapshots + r, snapshots) >= steps."""
    r = 0
    while comb(snapshots + r, snapshots) < steps:
        r += 1
    return r


def revolve_cost(steps: int, snapshots: int) -> int:
    """T(steps, snapshots): the fewest advances that reverse ``steps`` steps."""
    if steps <= 1:
        return 0
    if snapshots <= 1:
        return steps * (steps - 1) // 2
    r = repetitions(steps, snapshots)
    return r * steps - comb(snapshots + r, r - 1)


def revolve_split(steps: int, snapshots: int) -> int:
    """How far past the snapshot on top to keep the next one, reversing ``steps``
    steps with ``snapshots`` snapshots (the one on top included): 0 for none."""
    if steps <= 1 or snapshots <= 1:
        return 0
    c, r = snapshots, repetitions(steps, snapshots)
    return max(1, min(steps - 1, comb(c + r - 1, c), steps - comb(c + r - 2, c - 1)))


def _next_kernel(pos, last, free):
    pos, last, free = int(pos), int(last), int(free)
    if last < 0:  # the trip count is not known yet: no more snapshots for now
        return np.int64(-1)
    m = revolve_split(last + 1 - pos, free + 1)
    return np.int64(pos + m if m > 0 else last + 1)


def _next_type(types, attrs):
    for t in types:
        if not (isinstance(t, TensorType) and t.shape == () and t.dtype.is_int):
            raise TypeInferenceError(f"revolve_next: operands are integer scalars, got {t!r}")
    return TensorType((), "i64")


REVOLVE_NEXT = define(
    "revolve_next", _next_type, _next_kernel, 3, differentiable=False, internal=True,
    doc="revolve_next(pos, last, free): where to keep the next snapshot of a loop's carry "
        "when the snapshot on top is at iteration pos, iteration last must be reached and "
        "free snapshots are left (last + 1: none)", kernels=NOT_YET_ON_ARRAY_API)


def _marker_type(types, attrs):
    x, trips = types
    if not (isinstance(trips, TensorType) and trips.shape == () and trips.dtype.is_int):
        raise TypeInferenceError(f"loop_checkpoint: the trip count is an integer scalar, got "
                                 f"{trips!r}")
    return x


def _marker_normalize(types, attrs):
    k = attrs["snapshots"]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise TypeInferenceError(f"loop_checkpoint: snapshots must be an integer >= 1, got "
                                 f"{k!r}")
    return {**attrs, "snapshots": int(k)}


LOOP_CHECKPOINT = define(
    "loop_checkpoint", _marker_type, lambda x, trips, snapshots: x, 2,
    {"snapshots": REQUIRED}, _marker_normalize, internal=True,
    doc="loop_checkpoint(init, trips, snapshots=k) is init; it marks the loop that starts "
        "from it: reverse mode keeps at most k snapshots of the carry (binomial "
        "checkpointing) instead of every iteration's residuals. trips is the trip count "
        "when known before the loop runs, else -1", kernels=NOT_YET_ON_ARRAY_API)
