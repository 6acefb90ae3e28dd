"""How the compiler stages scale with program length: the gradient pass alone
(``chainrule.transform.gradient.gradient``) on a traced chain of N bindings,
then ``optimize`` of its output and code generation (``compile_module``) of
that, each timed separately. Microseconds per binding of the traced input
(min and median over repeats) for N = 1k, 10k, 100k; flat columns mean
linear time.

    python benchmarks/transform_scaling.py [--quick] [--repeats N] [--sizes 1000 10000] [--no-gc]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import gc
import statistics
import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen import compile_module
from chainrule.ir.nodes import Module
from chainrule.transform.gradient import gradient

STAGES = ("gradient", "optimize", "codegen")


def make_chain(n: int):
    def chain(x, y):
        for _ in range(n // 4):
            x = cnp.multiply(x, y)
            x = cnp.tanh(x)
            x = cnp.sin(x)
            x = cnp.add(x, y)
        return cnp.sum(x)

    return chain


def measure(module: Module, collect: bool) -> dict[str, float]:
    out = {}
    main = module["main"]
    gc.collect()
    if not collect:
        gc.disable()
    t = time.perf_counter()
    g = gradient(module, "main", require_grads=list(main.params))
    out["gradient"] = time.perf_counter() - t
    g = Module({"main_adjoint": g["main_adjoint"]}, g.meta)
    t = time.perf_counter()
    m = cr.optimize(g)
    out["optimize"] = time.perf_counter() - t
    t = time.perf_counter()
    compile_module(m, "main_adjoint")
    out["codegen"] = time.perf_counter() - t
    gc.enable()
    return out


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    p.add_argument("--no-gc", action="store_true", help="cyclic collector off while timing")
    ns = p.parse_args()
    reps = C.repeats(ns, 3, 1)
    x, y = np.zeros(3), np.full(3, 0.5)
    rows = []
    for n in ns.sizes:
        module = cr.trace(make_chain(n), x, y)
        count = len(module["main"].body.bindings)
        runs = [measure(module, not ns.no_gc) for _ in range(reps)]
        row = [count]
        for stage in STAGES:
            us = [r[stage] / count * 1e6 for r in runs]
            row += [min(us), statistics.median(us)]
        rows.append(row)
    header = ["bindings"]
    for stage in STAGES:
        header += [f"{stage} min", "median"]
    C.table(f"microseconds per binding of the traced chain, {reps} repeat(s), collector "
            f"{'off' if ns.no_gc else 'on'}", header, rows)


if __name__ == "__main__":
    main()
