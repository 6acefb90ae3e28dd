"""User-namespace reductions, scans and statistics (adapters and composites)."""

from __future__ import annotations

__all__: list[str] = []
