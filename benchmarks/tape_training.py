"""A training loop on the eager tape: a 3-layer MLP, forward + backward + SGD update.

``h1 = tanh(X W1 + b1); h2 = tanh(h1 W2 + b2); out = h2 W3 + b3;
loss = mean((out - Y)^2)``, float64, one thread, on two sizes: a small one where
per-op overhead dominates (batch 16, 32-64-64-10) and the MNIST-sized one of
issue 16 (batch 32, 784-256-256-10). Every step records the same structure,
so from the third step on the tape runs its cached compiled pullback.

Rows: hand-written NumPy backprop (the baseline of the ratio column), the
chainrule tape in steady state, PyTorch eager and HIPS autograd when
installed, min and median over repeats; then the tape's first three steps of
a new structure (1: the VJP rules applied eagerly; 2: the structure came
back, its pullback built by the gradient pass and compiled; 3: the cached
compiled pullback).

    python benchmarks/tape_training.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: pins thread pools before NumPy loads

import gc
import os
import time
from functools import partial

import numpy as np

import chainrule.numpy as cnp
from chainrule import tape as ct
from chainrule.tape import graph as tape_graph

LR = 0.01


def init(sizes, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(size=(n_in, n_out)) / np.sqrt(n_in), np.zeros(n_out)]
    X = rng.normal(size=(batch, sizes[0]))
    Y = rng.normal(size=(batch, sizes[-1]))
    return params, X, Y


def loss_of(xp, params, X, Y):
    """The loss, written once for every array namespace (cnp on tape tensors, anp)."""
    W1, b1, W2, b2, W3, b3 = params
    h1 = xp.tanh(X @ W1 + b1)
    h2 = xp.tanh(h1 @ W2 + b2)
    d = h2 @ W3 + b3 - Y
    return xp.mean(d * d)


def numpy_grads(params, X, Y) -> list:
    """Hand-written backprop of ``loss_of``."""
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    d = h2 @ W3 + b3 - Y
    g_out = d * (2.0 / d.size)
    g_h2 = (g_out @ W3.T) * (1.0 - h2 * h2)
    g_h1 = (g_h2 @ W2.T) * (1.0 - h1 * h1)
    return [X.T @ g_h1, g_h1.sum(0), h1.T @ g_h2, g_h2.sum(0), h2.T @ g_out, g_out.sum(0)]


def numpy_step(params, X, Y) -> list:
    return [p - LR * g for p, g in zip(params, numpy_grads(params, X, Y))]


def tape_step(params: list, X, Y) -> list:
    """One step on tape tensors: the update is not recorded, its results are new leaves."""
    loss_of(cnp, params, X, Y).backward()
    with ct.no_grad():
        return [(p - LR * p.grad).requires_grad_() for p in params]


def leaves(params) -> list:
    return [ct.tensor(p, requires_grad=True) for p in params]


def torch_stepper(torch, params, X, Y):
    tX, tY = torch.tensor(X), torch.tensor(Y)

    def step(ps):
        W1, b1, W2, b2, W3, b3 = ps
        h1 = torch.tanh(tX @ W1 + b1)
        h2 = torch.tanh(h1 @ W2 + b2)
        d = h2 @ W3 + b3 - tY
        torch.mean(d * d).backward()
        with torch.no_grad():
            for p in ps:
                p -= LR * p.grad
                p.grad = None
        return ps

    return step, [torch.tensor(p, requires_grad=True) for p in params]


def autograd_stepper(ag, params, X, Y):
    import autograd.numpy as anp

    g = ag.grad(lambda ps: loss_of(anp, ps, X, Y))

    def step(ps):
        return [p - LR * gp for p, gp in zip(ps, g(ps))]

    return step


def looped(step, state):
    """A zero-argument function running ``step`` on the state it left last time."""
    box = [state]

    def run():
        box[0] = step(box[0])

    return run


def first_steps(params, X, Y) -> list:
    """Seconds of forward and of backward+update for steps 1, 2, 3 of a new structure."""
    tape_graph._BACKWARD_CACHE.clear()
    ps = leaves(params)
    out = []
    for _ in range(3):
        t0 = time.perf_counter()
        loss = loss_of(cnp, ps, X, Y)
        t1 = time.perf_counter()
        loss.backward()
        with ct.no_grad():
            ps = [(p - LR * p.grad).requires_grad_() for p in ps]
        out.append((t1 - t0, time.perf_counter() - t1))
    return out


def check(params, X, Y) -> float:
    """Largest difference between the tape's gradients and hand-written backprop."""
    ps = leaves(params)
    loss_of(cnp, ps, X, Y).backward()
    return max(float(np.max(np.abs(p.grad - g))) for p, g in zip(ps, numpy_grads(params, X, Y)))


def main() -> None:
    p = C.parser(__doc__)
    ns = p.parse_args()
    reps = C.repeats(ns, full=15, quick=3)
    print(C.versions(), f"; load average {os.getloadavg()[0]:.2f}")
    for label, sizes, batch in (("small", (32, 64, 64, 10), 16),
                                ("mnist", (784, 256, 256, 10), 32)):
        params, X, Y = init(sizes, batch)
        firsts = []
        for _ in range(5 if not ns.quick else 1):
            gc.collect()
            gc.disable()
            try:
                firsts.append(first_steps(params, X, Y))
            finally:
                gc.enable()
        err = check(params, X, Y)
        fns = {"NumPy, hand-written backprop": looped(partial(numpy_step, X=X, Y=Y), params),
               "chainrule tape (cached compiled pullback)": looped(
                   partial(tape_step, X=X, Y=Y), leaves(params))}
        torch = C.peer("torch")
        if torch is not None:
            step, state = torch_stepper(torch, params, X, Y)
            fns["PyTorch eager"] = looped(step, state)
        ag = C.peer("autograd")
        if ag is not None:
            fns["autograd"] = looped(autograd_stepper(ag, params, X, Y), params)
        times = C.compare(fns, reps)
        C.summary(f"tape training step {label}",
                  C.mins(times, {"chainrule": "chainrule tape (cached compiled pullback)",
                                 "numpy": "NumPy, hand-written backprop",
                                 "torch": "PyTorch eager", "autograd": "autograd"}),
                  f"MLP {'-'.join(map(str, sizes))}, batch {batch}")
        base = times["NumPy, hand-written backprop"]
        rows = [[name, mn * 1e6, md * 1e6, mn / base[0], md / base[1]]
                for name, (mn, md) in times.items()]
        C.table(f"{label}: MLP {'-'.join(map(str, sizes))}, batch {batch}, f64, one "
                f"training step, {reps} repeats", ["system", "min us", "median us",
                                                    "min x numpy", "median x numpy"], rows,
                f"tape gradients vs hand-written: max abs difference {err:.1e}")
        steps = []
        for k, what in enumerate(("1 (new: rules eagerly)", "2 (seen again: build, codegen)",
                                  "3 (cached, compiled)")):
            fw = sorted(f[k][0] for f in firsts)
            bw = sorted(f[k][1] for f in firsts)
            steps.append([what, fw[0] * 1e6, bw[0] * 1e6, bw[len(bw) // 2] * 1e6,
                          (fw[0] + bw[0]) / base[0]])
        C.table(f"{label}: the tape's first steps of a new structure (min/median of "
                f"{len(firsts)}; load average {os.getloadavg()[0]:.2f})",
                ["step", "forward us", "backward+update us", "median", "step x numpy"], steps)


if __name__ == "__main__":
    main()
