"""Ops that assemble and rearrange arrays beyond the basic shape ops (pad, roll,
repeat, ...), where a composite of the basic ops would not do."""

from __future__ import annotations

__all__: list[str] = []
