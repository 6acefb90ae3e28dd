"""The tests live in folders that mirror the package (tests/ir, tests/transform/reverse,
...); the modules they share (op_catalog.py, cases_*.py, finite_differences.py, ...) live
here, at the root of tests/, and are imported by name from every folder: this folder is on
``sys.path`` whatever pytest's import mode."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
