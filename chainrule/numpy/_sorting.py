"""User-namespace sorting and selection (adapters and composites)."""

from __future__ import annotations

__all__: list[str] = []
