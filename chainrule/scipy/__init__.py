"""SciPy-compatible functions: ``chainrule.scipy.special``, ``.stats``, ``.signal``,
``.linalg``. Their kernels may call SciPy (an optional extra: ``pip install
chainrule[scipy]``); a function whose kernel needs it says so when SciPy is
missing."""

from . import linalg, signal, special, stats

__all__ = ["linalg", "signal", "special", "stats"]
