"""User-namespace shape and assembly functions (adapters and composites)."""

from __future__ import annotations

__all__: list[str] = []
