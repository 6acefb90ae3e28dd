"""Python identifiers for generated code: names made from the IR's name hints (ASCII,
never a keyword, builtin or the array module's name), unique within a function."""

from __future__ import annotations

import builtins
import keyword

RESERVED = (frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
            | frozenset(dir(builtins)) | {"np", "xp"})
MAX_NAME = 48


def safe_identifier(hint, default: str = "v") -> str:
    """An ASCII Python identifier made from a name hint (never a keyword)."""
    if type(hint) is not str:
        return default
    if len(hint) <= MAX_NAME and hint.isascii() and hint.isidentifier():
        return default if keyword.iskeyword(hint) else hint
    text = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_"
                   for c in hint[:MAX_NAME])
    if not text or text[0].isdigit():
        text = f"{default}_{text}"
    if not text.isidentifier() or keyword.iskeyword(text):
        return default
    return text


class UniqueNames:
    """Unique identifiers: ``hint``, ``hint_1``, ... avoiding ``taken``."""

    def __init__(self, taken):
        self.taken = set(taken)
        self._next: dict[str, int] = {}

    def fresh(self, hint, default: str = "v") -> str:
        taken = self.taken
        if (type(hint) is str and hint not in taken and len(hint) <= MAX_NAME
                and hint.isascii() and hint.isidentifier() and not keyword.iskeyword(hint)):
            self._next.setdefault(hint, 0)  # the common case: the hint itself, unused
            taken.add(hint)
            return hint
        base = safe_identifier(hint, default)
        name, k = base, self._next.get(base, 0)
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self._next[base] = k
        self.taken.add(name)
        return name
