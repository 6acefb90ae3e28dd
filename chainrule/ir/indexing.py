"""Static index keys of the ``index`` and ``index_add`` ops.

A key is a tuple of entries, one per indexing position: an ``int``, a
``Slice``, ``None`` (a new axis) or an ``ArrayIndex`` (the k-th index-array
operand). An ellipsis is expanded away when the key is built.
"""

from __future__ import annotations

from typing import NamedTuple


class Slice(NamedTuple):
    start: int | None
    stop: int | None
    step: int | None

    def to_slice(self) -> slice:
        return slice(self.start, self.stop, self.step)

    def __str__(self) -> str:
        start = "" if self.start is None else str(self.start)
        stop = "" if self.stop is None else str(self.stop)
        text = f"{start}:{stop}"
        if self.step is not None:
            text += f":{self.step}"
        return text


class ArrayIndex(NamedTuple):
    """Stands for the ``position``-th index-array operand of the call."""

    position: int


KEY_ENTRY_TYPES = (int, Slice, ArrayIndex, type(None))


def key_to_python(key: tuple, arrays) -> tuple:
    """The key as NumPy understands it, with the index arrays filled in."""
    out = []
    for k in key:
        if isinstance(k, Slice):
            out.append(k.to_slice())
        elif isinstance(k, ArrayIndex):
            out.append(arrays[k.position])
        else:
            out.append(k)
    return tuple(out)


# ``base.at[key].<method>(v)`` in the text format and in @script -> the op's name
AT_METHODS = {"add": "index_add", "set": "index_set", "multiply": "index_multiply",
              "min": "index_min", "max": "index_max"}
