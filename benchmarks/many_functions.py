"""Many small functions, each differentiated twice: the wall time to finish.

A user of autograd's own test programs (or of a notebook) writes a few hundred
distinct small functions and asks for each one's gradient a couple of times.
Every new function (and every new argument signature) costs chainrule a trace
and the AD and clean-up passes; with tiered execution (``chainrule.api.reverse``) the
first call runs the optimized program in the straight-line runner and only a
second call of the same specialization generates and compiles Python code.

The programs are built from a seeded random choice of a few elementwise ops and
a reduction (5 to 12 ops each, shapes (3,) to (8,)), the same for every library.
For each function: ``g = grad(f); g(x); g(x)`` (plus a ``jit`` of the function
itself, called twice, in the ``grad+jit`` rows). Rows: chainrule tiered (the
default), chainrule compile-first (``eager_compile=True``), autograd, and JAX
(``jax.jit(jax.grad(f))``) when installed. Seconds for the whole run (min and
median over repeats; every repeat makes fresh functions).

    python benchmarks/many_functions.py [--quick] [--repeats N] [--functions 300]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import gc
import os
import random
import statistics
import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp

UNARY = ("tanh", "sin", "cos", "exp_small", "square", "sigmoid", "log1p_sq")
BINARY = ("add", "multiply", "subtract")


def _unary(ns, name):
    if name == "exp_small":
        return lambda v: ns.exp(v * 0.1)
    if name == "square":
        return lambda v: v * v
    if name == "sigmoid":
        return lambda v: 1.0 / (1.0 + ns.exp(-v))
    if name == "log1p_sq":
        return lambda v: ns.log1p(v * v)
    return getattr(ns, name)


def program(seed: int):
    """(recipe, size): the same random program for every library."""
    rng = random.Random(seed)
    steps = []
    for _ in range(rng.randint(5, 12)):
        if rng.random() < 0.4:
            steps.append(("b", rng.choice(BINARY)))
        else:
            steps.append(("u", rng.choice(UNARY)))
    return steps, rng.randint(3, 8)


def make(ns, steps):
    """A fresh Python function applying ``steps`` with namespace ``ns``."""
    ops = [(kind, getattr(ns, name) if kind == "b" else _unary(ns, name))
           for kind, name in steps]

    def f(x, y):
        v = x
        for kind, op in ops:
            v = op(v, y) if kind == "b" else op(v)
        return ns.sum(v * v)

    return f


def run_chainrule(progs, eager: bool, with_jit: bool) -> float:
    fns = [(make(cnp, steps), size) for steps, size in progs]
    t = time.perf_counter()
    for f, size in fns:
        x, y = np.linspace(-1.0, 1.0, size), np.full(size, 0.3)
        g = cr.grad(f, eager_compile=eager)
        g(x, y)
        g(x, y)
        if with_jit:
            j = cr.jit(f, eager_compile=eager)
            j(x, y)
            j(x, y)
    return time.perf_counter() - t


def run_autograd(progs, ag, with_jit: bool) -> float:
    anp = __import__("autograd.numpy", fromlist=["numpy"])
    fns = [(make(anp, steps), size) for steps, size in progs]
    t = time.perf_counter()
    for f, size in fns:
        x, y = np.linspace(-1.0, 1.0, size), np.full(size, 0.3)
        g = ag.grad(f)
        g(x, y)
        g(x, y)
        if with_jit:  # autograd has no jit: the function itself, twice
            f(x, y)
            f(x, y)
    return time.perf_counter() - t


def run_jax(progs, jax, with_jit: bool) -> float:
    fns = [(make(jax.numpy, steps), size) for steps, size in progs]
    t = time.perf_counter()
    for f, size in fns:
        x, y = np.linspace(-1.0, 1.0, size), np.full(size, 0.3)
        g = jax.jit(jax.grad(f))
        g(x, y).block_until_ready()
        g(x, y).block_until_ready()
        if with_jit:
            j = jax.jit(f)
            j(x, y).block_until_ready()
            j(x, y).block_until_ready()
    return time.perf_counter() - t


def check_same(progs) -> None:
    """The tiers agree (the first call runs uncompiled, the second compiled)."""
    for steps, size in progs[:20]:
        f = make(cnp, steps)
        x, y = np.linspace(-1.0, 1.0, size), np.full(size, 0.3)
        g = cr.grad(f, eager_compile=False)
        first, second = g(x, y), g(x, y)
        ref = cr.grad(f, eager_compile=True)(x, y)
        assert np.allclose(first, ref, rtol=1e-15, atol=1e-15), (steps, first, ref)
        assert np.allclose(second, ref, rtol=1e-15, atol=1e-15), (steps, second, ref)


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--functions", type=int, default=300)
    ns = p.parse_args()
    reps = C.repeats(ns, 3, 1)
    n = ns.functions
    peers = {"autograd": C.peer("autograd"), "jax": C.peer("jax")}
    print(C.versions(), f"; load average {os.getloadavg()[0]:.2f}")
    check_same([program(s) for s in range(n)])
    rows = []
    for with_jit in (False, True):
        label = "grad+jit" if with_jit else "grad"
        runners = {
            f"chainrule tiered ({label})": lambda p, j=with_jit: run_chainrule(p, False, j),
            f"chainrule eager_compile ({label})": lambda p, j=with_jit: run_chainrule(p, True, j),
        }
        if peers["autograd"]:
            runners[f"autograd ({label})"] = lambda p, j=with_jit: run_autograd(
                p, peers["autograd"], j)
        if peers["jax"]:
            runners[f"jax jit ({label})"] = lambda p, j=with_jit: run_jax(p, peers["jax"], j)
        times: dict = {k: [] for k in runners}
        for r in range(reps):
            progs = [program(1000 * (r + 1) + s) for s in range(n)]
            for name, fn in runners.items():
                gc.collect()
                times[name].append(fn(progs))
        base = statistics.median(times[f"autograd ({label})"]) if peers["autograd"] else None
        for name, ts in times.items():
            med = statistics.median(ts)
            rows.append([name, min(ts), med, C.ratio(med, base),
                         min(ts) / n * 1e3])
    C.table(f"{n} functions, each differentiated twice: seconds to finish, {reps} repeat(s), "
            f"load average {os.getloadavg()[0]:.2f}",
            ["", "min s", "median s", "x autograd", "ms/function"], rows)


if __name__ == "__main__":
    main()
