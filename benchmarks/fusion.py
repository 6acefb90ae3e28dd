"""Fusion on the NumPy backend: the same gradient program compiled with and without the
``fuse`` pass (run after ``optimize``, which would inline the regions back), against
hand-written NumPy, on the tiny-op chain of ``tiny_ops.py`` and the 100-step loop
``x = x - 0.1 * tanh(x @ W)`` of ``loop100.py``. Min and median over repeats, one
thread; the load average is printed since the machine may be shared.

    python benchmarks/fusion.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import os

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen import compile_module
from chainrule.transform import fuse

import loop100
import tiny_ops


def fused_and_unfused(f, args) -> tuple:
    """The compiled gradient program of ``f`` at ``args`` without and with fusion, and
    the number of fused regions."""
    vg = cr.value_and_grad(f, argnums=0)
    entry, _ = vg.specialize(args)
    fused = fuse(entry.module)
    regions = len(fused.functions) - len(entry.module.functions)
    return (compile_module(entry.module, entry.func), compile_module(fused, entry.func),
            regions)


def run(title: str, rows: dict, reps: int, baseline: str, note: str) -> None:
    times = C.compare(rows, reps)
    base = times[baseline][0]
    C.table(title, ["", "min us", "median us", "min / NumPy"],
            [[name, t[0] * 1e6, t[1] * 1e6, C.ratio(t[0], base)] for name, t in times.items()],
            note)


def main() -> None:
    p = C.parser(__doc__)
    ns = p.parse_args()
    reps = C.repeats(ns, 30, 5)
    print(C.versions(), f"; load average {os.getloadavg()[0]:.2f}")

    x = np.linspace(-0.5, 0.5, 8)
    y = np.linspace(0.1, 0.3, 8)
    loss = tiny_ops.make_loss(cnp, 1400)
    plain, fused, regions = fused_and_unfused(loss, (x, y))
    a, b = plain(x, y), fused(x, y)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    np_loss = tiny_ops.make_loss(np, 1400)
    run("1,400 tiny elementwise ops on shape (8,), value and gradient wrt x",
        {"unfused (codegen)": lambda: plain(x, y), "fused (codegen)": lambda: fused(x, y),
         "hand-written NumPy forward": lambda: np_loss(x, y)}, reps,
        "hand-written NumPy forward", f"{regions} fused regions")

    rng = np.random.default_rng(0)
    for batch, width in ((16, 64), (64, 128)):
        w = rng.standard_normal((width, width)) / np.sqrt(width)
        x0 = rng.standard_normal((batch, width))
        loss = loop100.make_loss(cnp, 100)
        plain, fused, regions = fused_and_unfused(loss, (w, x0))
        a, b = plain(w, x0), fused(w, x0)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        run(f"100-step loop x - 0.1 * tanh(x @ W), x {batch}x{width}: value and grad wrt W",
            {"unfused (codegen)": lambda p=plain, w=w, x0=x0: p(w, x0),
             "fused (codegen)": lambda f=fused, w=w, x0=x0: f(w, x0),
             "hand-written NumPy": lambda w=w, x0=x0: loop100.hand_value_and_grad(w, x0, 100)},
            reps,
            "hand-written NumPy", f"{regions} fused regions")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
