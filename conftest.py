"""Test-session settings shared by the tests and the doctests of the package.

One BLAS thread: on shared 2-core machines two threads make matrix products 15-60x
slower (set before NumPy is imported by any test). Native code off but in its own tests
(see below).

Modules that are code of an optional package themselves (numba kernels) are
imported only where that package is installed; without it their doctests are not
collected, and the session header says what to install to run them. Every other
module imports with NumPy alone, and a test that needs an optional package skips
saying what to install.
"""

import importlib.util
import os
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# Programs run as the reference NumPy code in the tests: whole programs as native code (on
# by default with numba) compile in a background thread, at a time no test chooses, and
# take seconds of CPU each; tests/backend/numba/test_native.py turns them on and checks
# them against the NumPy code
os.environ.setdefault("CHAINRULE_NATIVE", "0")

# module (relative to the repository) -> (the package it is written in, or its doctests
# need, and what installs it)
_WRITTEN_IN = {
    "chainrule/backend/array_api/namespaces.py": ("array_api_compat",
                                                  "pip install array-api-compat"),
}
_ROOT = Path(__file__).resolve().parent
_MISSING = {path: need for path, need in _WRITTEN_IN.items()
            if importlib.util.find_spec(need[0]) is None}


def pytest_ignore_collect(collection_path, config):
    rel = Path(collection_path).resolve()
    try:
        rel = rel.relative_to(_ROOT).as_posix()
    except ValueError:
        return None
    return True if rel in _MISSING else None


def pytest_report_header(config):
    if not _MISSING:
        return None
    return [f"doctests not collected: {path} needs {package} ({how})"
            for path, (package, how) in sorted(_MISSING.items())]
