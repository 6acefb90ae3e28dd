"""Rules of ``ops/linalg.py`` beyond matmul (whose rules are in ``shape.py``): each op's
VJP and JVP side by side."""

from __future__ import annotations
