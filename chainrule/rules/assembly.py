"""Rules of ``ops/assembly.py``: each op's VJP and JVP side by side."""

from __future__ import annotations
