"""How the IR pipeline scales with program length.

Traces a chain of N bindings (multiply, exp, negative, add, repeated), then prints,
parses, verifies and runs it, and reports microseconds per binding (min and median
over repeats) for N = 1k, 10k, 100k. Flat columns mean linear time.

    python benchmarks/ir_scaling.py [--repeats 3] [--sizes 1000 10000 100000]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before NumPy is imported
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import chainrule as cr  # noqa: E402
import chainrule.numpy as cnp  # noqa: E402

STEPS = ("trace", "print", "parse", "verify", "run")


def make_chain(n: int):
    def chain(x):
        for _ in range(n // 4):
            x = cnp.multiply(x, 0.5)
            x = cnp.exp(x)
            x = cnp.negative(x)
            x = cnp.add(x, 1.0)
        return x

    return chain


def measure(n: int) -> dict[str, float]:
    """Seconds per step for one pass over a program of n bindings."""
    x = np.zeros(3)
    out = {}
    t = time.perf_counter()
    m = cr.trace(make_chain(n), x)
    out["trace"] = time.perf_counter() - t
    t = time.perf_counter()
    text = str(m)
    out["print"] = time.perf_counter() - t
    t = time.perf_counter()
    m2 = cr.parse(text)
    out["parse"] = time.perf_counter() - t
    t = time.perf_counter()
    cr.verify(m2)
    out["verify"] = time.perf_counter() - t
    t = time.perf_counter()
    cr.run(m2, x)
    out["run"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    args = ap.parse_args()
    print(f"microseconds per binding (min / median of {args.repeats}), "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    header = f"{'bindings':>9} | " + " | ".join(f"{s:>15}" for s in STEPS)
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        runs = [measure(n) for _ in range(args.repeats)]
        cells = []
        for step in STEPS:
            us = [r[step] / n * 1e6 for r in runs]
            cells.append(f"{min(us):6.2f} / {statistics.median(us):6.2f}")
        print(f"{n:>9} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
