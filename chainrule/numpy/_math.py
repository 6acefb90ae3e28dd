"""User-namespace functions of the elementwise-math family (adapters and
composites; ops that declare ``namespace`` appear without being listed here)."""

from __future__ import annotations

__all__: list[str] = []
