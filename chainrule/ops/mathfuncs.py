"""More elementwise math: hyperbolic and inverse trigonometric functions, exponents
and logarithms in other bases, rounding, remainders, classification (isnan, ...).
"""

from __future__ import annotations

__all__: list[str] = []
