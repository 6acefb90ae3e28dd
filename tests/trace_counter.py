"""A counter of traces (or calls) that a traced function may tick without changing
what it reads: its count is in the bytes of a ``bytearray``, which capture does not
follow (it follows numbers, sequences of numbers, ``array.array`` included, and
arrays). A function that changes a number or a list it reads runs uncompiled at every
call (the change would not be repeated by compiled code: ``frontend/capture.py``)."""

from __future__ import annotations


class Counter:
    def __init__(self):
        self._count = bytearray(8)

    def tick(self) -> None:
        self._count[:] = (self.traces + 1).to_bytes(8, "little")

    @property
    def traces(self) -> int:
        return int.from_bytes(self._count, "little")

    n = traces
