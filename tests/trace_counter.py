"""A counter of traces (or calls) that a traced function may tick without changing
what it reads: its count is in an ``array.array``, which capture does not follow. A
function that changes a number or a list it reads runs uncompiled at every call (the
change would not be repeated by compiled code: ``frontend/capture.py``)."""

from __future__ import annotations

import array


class Counter:
    def __init__(self):
        self._count = array.array("q", [0])

    def tick(self) -> None:
        self._count[0] += 1

    @property
    def traces(self) -> int:
        return self._count[0]

    n = traces
