"""Per-op overhead of execution: a chain of 1,400 tiny elementwise ops on shape (8,),
run by the interpreter, by the compiled code (in place and not), and by a
hand-written NumPy function doing the same ops. Prints min and median
microseconds per op over repeats, and the ratios to hand-written NumPy.

    python benchmarks/codegen_overhead.py [--ops 1400] [--repeats 30]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import chainrule as cr  # noqa: E402
from chainrule.backend.codegen.generate import compile_module  # noqa: E402
from chainrule.backend.interpret import Interpreter  # noqa: E402

# the cycle of ops: (IR op, second operand or None, the same op written by hand)
CYCLE = [
    ("add", "y", "v + y"),
    ("tanh", None, "np.tanh(v)"),
    ("multiply", "y", "v * y"),
    ("sin", None, "np.sin(v)"),
    ("subtract", "y", "v - y"),
    ("exp", None, "np.exp(v)"),
    ("maximum", "y", "np.maximum(v, y)"),
]


def build(n_ops: int) -> cr.Module:
    lines = ["def main(x: f64[8], y: f64[8]) -> f64[8]:"]
    prev = "x"
    for i in range(n_ops):
        op, other, _ = CYCLE[i % len(CYCLE)]
        args = f"{prev}, {other}" if other else prev
        lines.append(f"    v{i} = {op}({args})")
        prev = f"v{i}"
    lines.append(f"    return {prev}")
    return cr.parse("\n".join(lines) + "\n")


def hand_numpy(n_ops: int):
    # written out as straight-line source, as a person would: v = np.tanh(v) ...
    body = [f"    v = {CYCLE[i % len(CYCLE)][2]}" for i in range(n_ops)]
    src = "def hand(x, y):\n    v = x\n" + "\n".join(body) + "\n    return v\n"
    ns = {"np": np}
    exec(compile(src, "<hand>", "exec"), ns)  # noqa: S102 - our own text
    return ns["hand"]


def timeit(f, args, repeats: int, n_ops: int) -> tuple[float, float]:
    f(*args)  # warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
    per_op = [t / n_ops * 1e6 for t in times]
    return min(per_op), statistics.median(per_op)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=1400)
    parser.add_argument("--repeats", type=int, default=30)
    ns = parser.parse_args()
    n = ns.ops
    m = build(n)
    x = np.linspace(-0.5, 0.5, 8)
    y = np.linspace(0.1, 0.3, 8)

    t0 = time.perf_counter()
    compiled = compile_module(m)
    compile_s = time.perf_counter() - t0
    plain = compile_module(m, inplace=False)
    interp = Interpreter(m)
    fn = m["main"]

    def interpreted(a, b):
        return interp.call_function(fn, [a, b], {})

    hand = hand_numpy(n)
    ref = interpreted(x, y)
    assert np.array_equal(compiled.fn(x, y), ref) and np.array_equal(hand(x, y), ref)

    rows = [
        ("interpreter", interpreted),
        ("compiled (in place)", compiled.fn),
        ("compiled (no in place)", plain.fn),
        ("compiled, checked call", compiled),
        ("hand-written NumPy", hand),
    ]
    results = {name: timeit(f, (x, y), ns.repeats, n) for name, f in rows}
    hand_min, hand_med = results["hand-written NumPy"]
    print(f"{n} elementwise ops on shape (8,), {ns.repeats} repeats; "
          f"compile time {compile_s * 1e3:.1f} ms")
    print(f"{'':26s} {'min us/op':>10s} {'median':>10s} {'min/hand':>9s} {'med/hand':>9s}")
    for name, (lo, med) in results.items():
        print(f"{name:26s} {lo:10.3f} {med:10.3f} {lo / hand_min:9.2f} {med / hand_med:9.2f}")


if __name__ == "__main__":
    main()
