"""SciPy's ``scipy.stats``, differentiable: ops that declare ``"scipy.stats.<name>"`` in
their ``namespace`` appear here, next to the functions written below."""

from __future__ import annotations

from ..numpy._assemble import assemble as _assemble

# the functions written here (besides the ops that declare "scipy.stats.<name>")
_OWN: list[str] = []

__all__ = _assemble(globals(), "scipy.stats.", _OWN)
