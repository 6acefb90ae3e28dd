"""Fusion on the NumPy backend: the gradient program (value and gradient with respect to
every input) compiled without fusion, with ``fuse`` after differentiation
(``gradient, optimize, fuse``) and before it (``fuse, gradient, optimize`` without
inlining, which would undo the regions: each region's VJP stays a call returning a
pullback), against hand-written NumPy, on the tiny-op chain of ``tiny_ops.py`` and the
100-step loop ``x = x - 0.1 * tanh(x @ W)`` of ``loop100.py``. Min and median over
repeats, one thread; the load average is printed since the machine may be shared.

    python benchmarks/fusion.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import os

import numpy as np

import chainrule.numpy as cnp
from chainrule.backend.codegen import compile_module
from chainrule.frontend.tracer import trace_function
from chainrule.transform import fuse, gradient, optimize

import loop100
import tiny_ops


def programs(f, args) -> dict:
    """name -> compiled gradient program of ``f`` at ``args``, and the number of regions."""
    traced = trace_function(f, args, capture=True).module
    plain = optimize(gradient(traced, "main"))
    after = fuse(plain)
    before = optimize(gradient(fuse(traced), "main"), inline_calls=False)
    out = {}
    for name, module in (("unfused", plain), ("fuse after gradient", after),
                         ("fuse before gradient", before)):
        regions = sum(1 for fn in module.functions.values() if fn.attrs.get("fused"))
        out[f"{name} ({regions} regions)"] = compile_module(module, "main_adjoint")
    ref = out[next(iter(out))](*args)
    for fn in out.values():
        value, grads = fn(*args)
        assert np.allclose(value, ref[0])
        assert all(np.allclose(g, r) for g, r in zip(grads, ref[1]))
    return out


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
    rows = {k: (lambda fn=fn: fn(x, y)) for k, fn in
            programs(tiny_ops.make_loss(cnp, 1400), (x, y)).items()}
    np_loss = tiny_ops.make_loss(np, 1400)
    rows["hand-written NumPy forward"] = lambda: np_loss(x, y)
    run("1,400 tiny elementwise ops on shape (8,), value and gradient", rows, reps,
        "hand-written NumPy forward", "")

    rng = np.random.default_rng(0)
    for batch, width in ((16, 64), (64, 128)):
        w = rng.standard_normal((width, width)) / np.sqrt(width)
        x0 = rng.standard_normal((batch, width))
        rows = {k: (lambda fn=fn, w=w, x0=x0: fn(w, x0)) for k, fn in
                programs(loop100.make_loss(cnp, 100), (w, x0)).items()}
        rows["hand-written NumPy (grad wrt W only)"] = (
            lambda w=w, x0=x0: loop100.hand_value_and_grad(w, x0, 100))
        run(f"100-step loop x - 0.1 * tanh(x @ W), x {batch}x{width}: value and gradient",
            rows, reps, "hand-written NumPy (grad wrt W only)", "")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
