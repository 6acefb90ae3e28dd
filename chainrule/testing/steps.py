"""A loop step that counts its runs: how tests and benchmarks see how often reverse mode
runs a loop's body again under a checkpointing budget (``checkpoint=cr.Budget(...)``).

``counted_tanh`` is ``tanh`` with its rules (so it differentiates to any order, like
``tanh``), whose NumPy kernel adds one to ``RUNS[0]`` at every run. Importing this
module registers the op; nothing else in chainrule imports it.

>>> import numpy as np
>>> import chainrule as cr
>>> import chainrule.numpy as cnp
>>> f = lambda x: cnp.sum(cr.fori_loop(0, 10, lambda i, h: counted_tanh(h), x,
...                                    checkpoint=cr.Budget(snapshots=2)))
>>> count_runs(cr.grad(f, eager_compile=True), np.ones(3))   # T(10, 2) + 10 + 1
31
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ops.common import define
from ..rules import jvp_rule, vjp_rule

RUNS = [0]


def _counted_tanh(x):
    RUNS[0] += 1
    return np.tanh(x)


counted_tanh = define("counted_tanh", lambda types, attrs: types[0], _counted_tanh,
                      elementwise=True, doc="tanh that counts its runs in RUNS[0] (tests, "
                                            "benchmarks)")


@vjp_rule(counted_tanh)
def _counted_tanh_vjp(z, g, x):
    """z = tanh(x);  dx = g (1 - z^2)"""
    return (g * (1 - z * z),)


@jvp_rule(counted_tanh)
def _counted_tanh_jvp(z, x):
    """z = tanh(x);  dz = dx (1 - z^2)"""
    return (lambda t: t * (1 - z * z),)


def count_runs(fn: Callable, *args) -> int:
    """How many times one call ``fn(*args)`` runs ``counted_tanh`` (after a first call,
    which may compile)."""
    fn(*args)
    RUNS[0] = 0
    fn(*args)
    return RUNS[0]
