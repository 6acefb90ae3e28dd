"""The table every public function of chainrule's namespaces is tested from.

Each ``tests/cases_<family>.py`` defines ``CASES``, a list of ``Case``;
``collect()`` gathers them. ``tests/numpy/test_namespace.py`` runs every case through
every route and fails when a public name has no case: a new function without
a test entry fails CI.

A case names the public function (``"sinh"``, ``"linalg.solve"``,
``"scipy.special.erf"``), a chainrule function that applies it, a NumPy/SciPy
reference computing the same thing, and argument sets (several shapes,
including 0-d and empty where NumPy allows). Checked for every argument set:
the value on NumPy arrays equals the reference, and so does the generated
code (``cr.jit``). For differentiable cases, on the first ``grad_sets``
argument sets: finite differences in float64, reverse and forward mode,
orders 1 and 2 (``check_grads``), and the tape's gradient equals the
compiled one.
"""

from __future__ import annotations

import importlib
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

rng = np.random.default_rng(7)


def U(*shape, lo=-1.0, hi=1.0):
    """Uniform float64 values in [lo, hi)."""
    return rng.uniform(lo, hi, shape)


def P(*shape):
    """Positive values away from 0, in [0.5, 1.5)."""
    return rng.uniform(0.5, 1.5, shape)


def I(*shape, lo=0, hi=4):  # noqa: E743 - integer arrays
    return rng.integers(lo, hi, shape)


@dataclass
class Case:
    name: str  # the public name: "sinh", "linalg.solve", "scipy.special.erf"
    fn: Callable  # applies it with chainrule (works on arrays, traced values, tensors)
    ref: Callable | None  # the NumPy/SciPy reference; None: no independent reference
    args: list  # argument tuples
    grad: bool = True  # differentiable: check derivatives on the first grad_sets sets
    grad_sets: int = 1
    order: int = 2
    rtol: float = 1e-7
    atol: float = 1e-9
    grad_tol: float = 1e-5  # for the finite-difference checks (atol and rtol)
    tape: bool = True  # check the tape's gradient against the compiled one
    jit: bool = True  # check the generated code
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.name if not self.note else f"{self.name}[{self.note}]"


def case(name, fn, ref, *args, **options) -> Case:
    """A case; each positional after ``ref`` is one argument tuple (or one array,
    for single-argument functions)."""
    sets = [a if isinstance(a, tuple) else (a,) for a in args]
    return Case(name, fn, ref, sets, **options)


def collect() -> list[Case]:
    """Every ``CASES`` of ``tests/cases_*.py``."""
    out = []
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("cases_*.py")):
        module = importlib.import_module(path.stem)
        out.extend(module.CASES)
    return out

