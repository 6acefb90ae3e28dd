"""Per-op overhead of the eager tape: forward + backward on small tensors.

Two workloads: a chain of ~1,000 elementwise ops on shape (8,) (then a sum),
and a small MLP training step (batch 16, 32 -> 64 -> 10, tanh, squared loss).
Rows: the chainrule tape in steady state (the structure's pullback cached
and compiled) and on its first iteration (a new structure: the pullback is
built by the gradient pass and interpreted), the same forward in plain NumPy
(no gradient), HIPS autograd and PyTorch eager when installed, and the
recording alone (the forward on tensors requiring grad) of the tape and of
PyTorch. Prints min and median microseconds per recorded op over repeats,
the ratio to NumPy and, for the tape's rows, to PyTorch's same row,
then the chainrule forward and backward alone for iterations 1 (a new
structure: the VJP rules applied eagerly), 2 (the structure came back: its
pullback built by the gradient pass, optimized and generated
code once) and 3 (the cached compiled pullback).

    python benchmarks/tape_overhead.py [--ops 1000] [--quick] [--repeats N]
"""

from __future__ import annotations

import gc  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import _common as C  # noqa: I001  (first: pins thread pools before NumPy loads)
import numpy as np  # noqa: E402

import chainrule.numpy as cnp  # noqa: E402
from chainrule import tape as ct  # noqa: E402
from chainrule.tape import graph as tape_graph  # noqa: E402


# -- the workloads, written once for every array namespace ------------------------------
def chain(xp, x, y, n_ops: int):
    """``n_ops`` elementwise ops (then a sum), values stay bounded."""
    v = x
    for k in range(n_ops // 6):
        v = v * y
        v = xp.tanh(v)
        v = v + y
        v = xp.sin(v)
        v = v - 0.5
        v = v * 1.5 if k % 2 else v / 1.5
    return xp.sum(v)


def mlp(xp, params, X, Y):
    W1, b1, W2, b2 = params
    h = xp.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    d = out - Y
    return xp.mean(d * d)


def workloads(n_ops: int):
    rng = np.random.default_rng(0)
    x8, y8 = rng.normal(size=8), rng.normal(size=8)
    X, Y = rng.normal(size=(16, 32)), rng.normal(size=(16, 10))
    P = [rng.normal(size=(32, 64)) * 0.1, np.zeros(64), rng.normal(size=(64, 10)) * 0.1,
         np.zeros(10)]
    return {  # name: (f(xp, params, constants), params, constants)
        "chain": (lambda xp, ps, cs: chain(xp, ps[0], cs[0], n_ops), [x8], [y8]),
        "mlp": (lambda xp, ps, cs: mlp(xp, ps, *cs), P, [X, Y]),
    }


# -- one forward + backward per system ----------------------------------------------------
def run_tape(f, params, consts):
    ts = [ct.tensor(p, requires_grad=True) for p in params]
    loss = f(cnp, ts, consts)
    loss.backward()
    return [t.grad for t in ts]


ITERATIONS = ["1 (new: rules eagerly)", "2 (seen again: build, codegen)",
              "3 (cached, compiled)"]


def tape_iterations(f, params, consts):
    """Seconds of forward and of backward for iterations 1, 2, 3 of a new structure."""
    tape_graph._BACKWARD_CACHE.clear()
    out = []
    for _ in range(3):
        ts = [ct.tensor(p, requires_grad=True) for p in params]
        t0 = time.perf_counter()
        loss = f(cnp, ts, consts)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        out.append((t1 - t0, t2 - t1))
    return out


def record_tape(f, params, consts):
    return f(cnp, [ct.tensor(p, requires_grad=True) for p in params], consts)


def systems(f, params, consts):
    fns = {"chainrule tape": lambda: run_tape(f, params, consts),
           "chainrule tape, recording only": lambda: record_tape(f, params, consts),
           "numpy forward only": lambda: f(np, params, consts)}
    ag = C.peer("autograd")
    if ag is not None:
        import autograd.numpy as anp

        g = ag.grad(lambda ps: f(anp, ps, consts))
        fns["autograd"] = lambda: g(params)
    torch = C.peer("torch")
    if torch is not None:
        class TorchNS:  # the few functions the workloads use
            tanh, sin, sum, mean = torch.tanh, torch.sin, torch.sum, torch.mean

        tconsts = [torch.tensor(c) for c in consts]

        def run_torch(backward=True):
            ts = [torch.tensor(p, requires_grad=True) for p in params]
            loss = f(TorchNS, ts, tconsts)
            if not backward:
                return loss
            loss.backward()
            return [t.grad for t in ts]

        fns["torch eager"] = run_torch
        fns["torch eager, recording only"] = lambda: run_torch(backward=False)
    return fns


def main():
    p = C.parser(__doc__)
    p.add_argument("--ops", type=int, default=1000, help="ops in the elementwise chain")
    ns = p.parse_args()
    reps = C.repeats(ns, full=15, quick=3)
    print(C.versions(), f"; load average {os.getloadavg()[0]:.2f}")
    for name, (f, params, consts) in workloads(ns.ops).items():
        run_tape(f, params, consts)
        n = tape_graph.STATS["last_nodes"]
        gc.collect()
        gc.disable()
        try:  # each iteration's forward and backward: the best of 5 new structures
            runs = [tape_iterations(f, params, consts) for _ in range(5 if reps > 3 else 1)]
            its = [(min(r[k][0] for r in runs), min(r[k][1] for r in runs))
                   for k in range(3)]
        finally:
            gc.enable()
        times = C.compare(systems(f, params, consts), reps)
        base = times["numpy forward only"][0]
        torch_row = {"chainrule tape": "torch eager",
                     "chainrule tape, recording only": "torch eager, recording only"}
        rows = [[k, mn / n * 1e6, md / n * 1e6, C.ratio(mn, base),
                 C.ratio(md, times[torch_row[k]][1]) if torch_row.get(k) in times else None]
                for k, (mn, md) in times.items()]
        rows.insert(0, ["chainrule tape, 1st iteration (new structure)",
                        sum(its[0]) / n * 1e6, None, sum(its[0]) / base, None])
        C.table(f"{name}: forward + backward, {n} recorded ops, us per op", [
            "system", "min us/op", "median us/op", "min x numpy", "median x torch"], rows)
        C.table(f"{name}: chainrule forward and backward by iteration (load average "
                f"{os.getloadavg()[0]:.2f})", [
            "iteration", "forward us/op", "backward us/op", "backward x 1st"],
            [[label, fw / n * 1e6, bw / n * 1e6, bw / its[0][1]]
             for label, (fw, bw) in zip(ITERATIONS, its)])


if __name__ == "__main__":
    main()
