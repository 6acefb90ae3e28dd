"""Linear algebra, NumPy's ``numpy.linalg``: ``import chainrule.numpy as cnp`` then
``cnp.linalg.solve(a, b)``.

Assembled like ``chainrule.numpy``: ops that declare ``"linalg.<name>"`` in
their ``namespace`` appear here, next to the functions written below.
"""

from __future__ import annotations

from ._assemble import assemble as _assemble

# the functions written here (besides the ops that declare "linalg.<name>")
_OWN: list[str] = []

__all__ = _assemble(globals(), "linalg.", _OWN)
