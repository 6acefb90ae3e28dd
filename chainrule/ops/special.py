"""Special functions (``chainrule.scipy.special``): error functions, gamma family,
Bessel functions, logistic functions."""

from __future__ import annotations

__all__: list[str] = []
