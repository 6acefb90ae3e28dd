"""Sorting and selection: sort, argsort, partition, searchsorted, unique."""

from __future__ import annotations

__all__: list[str] = []
