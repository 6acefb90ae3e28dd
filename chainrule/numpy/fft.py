"""Discrete Fourier transforms, NumPy's ``numpy.fft``.

Assembled like ``chainrule.numpy``: ops that declare ``"fft.<name>"`` in
their ``namespace`` appear here, next to the functions written below.
"""

from __future__ import annotations

from ._assemble import assemble as _assemble

# the functions written here (besides the ops that declare "fft.<name>")
_OWN: list[str] = []

__all__ = _assemble(globals(), "fft.", _OWN)
