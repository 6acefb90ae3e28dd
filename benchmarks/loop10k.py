"""A 10,000-step loop ``x = x - 0.01 * tanh(x @ W)``, loss ``sum(x * x)``: gradient with
respect to W, and a Hessian-vector product with respect to x; time and peak memory.

Rows: chainrule's ``fori_loop`` storing every step's residuals (stacks of arrays),
and under ``checkpoint=cr.Budget(snapshots=k)`` (binomial checkpointing, revolve)
for k = 10 and 100; hand-written NumPy backprop (the baseline); JAX ``lax.fori_loop``
and ``lax.scan`` under ``jit``; PyTorch eager; autograd: each when installed. Peak
memory is the peak of NumPy's allocations during one call (tracemalloc; the peers'
allocators are not seen by it, so their column is empty).

The budget table runs the loop of ``--budget-steps`` steps (1,000: one snapshot costs
T(n, 1) = n (n - 1) / 2 steps run again, 50 million at 10,000 steps) under budgets of
1, 10 and 100 snapshots and storing everything, at first order (grad) and second
order (hvp: forward over reverse; grad of grad: reverse over reverse), with time, peak
memory, and the steps run (measured with a step that counts its runs) beside revolve's
count. ``uptime`` is printed with every table.

``chainrule numba`` rows: the numba backend (``CHAINRULE_NUMBA=1``), where the whole
program, forward loop and reverse loop with its residual stacks, is one numba function;
its first call (a compile into an empty kernel cache) is listed with JAX's first calls.
``--steps 100 --batch 16 --width 64 --no-budget`` runs ``fusion.py``'s loop workload.

    python benchmarks/loop10k.py [--quick] [--repeats N] [--steps 10000] [--budget-steps 1000]
                                 [--batch 8] [--width 16] [--no-budget]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import os
import tempfile
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend import numba as nb
from chainrule.ops.stack_schedule import revolve_cost
from chainrule.testing.steps import count_runs, counted_tanh

BATCH, WIDTH = 8, 16
BUDGETS = (10, 100)

def make_loss(steps: int, budget=None, tanh=cnp.tanh):
    def loss(w, x):
        body = lambda i, x: x - 0.01 * tanh(x @ w)
        return cnp.sum(cr.fori_loop(0, steps, body, x, checkpoint=budget) ** 2)

    return loss


def hand_grad(w, x, steps: int):
    xs, ts = [], []
    for _ in range(steps):
        xs.append(x)
        t = np.tanh(x @ w)
        ts.append(t)
        x = x - 0.01 * t
    gx = 2 * x
    gw = np.zeros_like(w)
    for xk, t in zip(reversed(xs), reversed(ts)):
        ga = (-0.01 * gx) * (1 - t * t)
        gw += xk.T @ ga
        gx = gx + ga @ w.T
    return gw


def chainrule_rows(w, x, v, steps: int, rows: dict, ref) -> None:
    vg = cr.grad(make_loss(steps))
    np.testing.assert_allclose(vg(w, x), ref, rtol=1e-9)
    rows["chainrule fori_loop, store all"] = ("grad", lambda: vg(w, x))
    for k in BUDGETS:
        g = cr.grad(make_loss(steps, cr.Budget(snapshots=k)))
        np.testing.assert_allclose(g(w, x), ref, rtol=1e-9)
        rows[f"chainrule fori_loop, Budget(snapshots={k})"] = ("grad", lambda g=g: g(w, x))
    for label, budget in (("store all", None), ("Budget(snapshots=100)",
                                                  cr.Budget(snapshots=100))):
        lx = _loss_of_x(steps, budget, w)  # one function: hvp traces it once
        rows[f"chainrule hvp, {label}"] = ("hvp", lambda lx=lx: cr.hvp(lx, (x,), (v,)))


COMPILE_NOTES: list[str] = []


def numba_rows(w, x, v, steps: int, rows: dict, ref) -> None:
    """The same loop with the numba backend (the whole program one numba function,
    ``chainrule/backend/numba/loops.py``), compiled at the first call into an empty
    kernel cache (so the first call's time is a real compile), noted in COMPILE_NOTES."""
    if not nb.available():
        COMPILE_NOTES.append("numba rows: numba is not installed")
        return
    os.environ["CHAINRULE_CACHE_DIR"] = tempfile.mkdtemp(prefix="chainrule_loop10k_")
    nb.use_numba(True)
    try:
        g = cr.grad(make_loss(steps), eager_compile=True)
        lx = _loss_of_x(steps, None, w)

        def h():
            return cr.hvp(lx, (x,), (v,), eager_compile=True)

        for label, kind, fn in (("chainrule numba, store all", "grad", lambda: g(w, x)),
                                ("chainrule numba hvp, store all", "hvp", h)):
            t0 = time.perf_counter()
            out = fn()
            COMPILE_NOTES.append(f"{label}: first call {(time.perf_counter() - t0):.2f} s")
            if kind == "grad":
                np.testing.assert_allclose(out, ref, rtol=1e-9)
            rows[label] = (kind, fn)
    finally:
        nb.use_numba(None)


def _loss_of_x(steps: int, budget, w, tanh=cnp.tanh):
    loss = make_loss(steps, budget, tanh)
    return lambda x: loss(w, x)


def peer_rows(w, x, v, steps: int, rows: dict, ref) -> None:
    jax = C.peer("jax")
    if jax is not None:
        jnp = jax.numpy

        def jloss_fori(w, x):
            x = jax.lax.fori_loop(0, steps, lambda i, x: x - 0.01 * jnp.tanh(x @ w), x)
            return jnp.sum(x * x)

        def jloss_scan(w, x):
            x, _ = jax.lax.scan(lambda x, _: (x - 0.01 * jnp.tanh(x @ w), None), x, None,
                                length=steps)
            return jnp.sum(x * x)

        jw, jx, jv = jax.device_put(w), jax.device_put(x), jax.device_put(v)
        for name, jl in (("fori_loop", jloss_fori), ("scan", jloss_scan)):
            jg = jax.jit(jax.grad(jl))
            t0 = time.perf_counter()
            jg(jw, jx).block_until_ready()
            COMPILE_NOTES.append(f"JAX jit {name} grad: first call "
                                 f"{(time.perf_counter() - t0):.2f} s")
            np.testing.assert_allclose(np.asarray(jg(jw, jx)), ref, rtol=1e-9)
            rows[f"JAX jit {name}"] = ("grad", lambda jg=jg: jg(jw, jx).block_until_ready())
        jh = jax.jit(lambda x, v: jax.jvp(jax.grad(lambda x: jloss_scan(jw, x)), (x,), (v,))[1])
        t0 = time.perf_counter()
        jh(jx, jv).block_until_ready()
        COMPILE_NOTES.append(f"JAX jit hvp (scan): first call {(time.perf_counter() - t0):.2f} s")
        rows["JAX jit hvp (scan)"] = ("hvp", lambda: jh(jx, jv).block_until_ready())
    torch = C.peer("torch")
    if torch is not None:
        tw, tx, tv = torch.tensor(w, requires_grad=True), torch.tensor(x), torch.tensor(v)

        def tgrad():
            h = tx
            for _ in range(steps):
                h = h - 0.01 * torch.tanh(h @ tw)
            return torch.autograd.grad(torch.sum(h * h), tw)[0]

        np.testing.assert_allclose(tgrad().numpy(), ref, rtol=1e-9)
        rows["PyTorch eager"] = ("grad", tgrad)

        def thvp():
            x0 = tx.clone().requires_grad_(True)
            h = x0
            for _ in range(steps):
                h = h - 0.01 * torch.tanh(h @ tw.detach())
            (g,) = torch.autograd.grad(torch.sum(h * h), x0, create_graph=True)
            return torch.autograd.grad(g, x0, tv)[0]

        rows["PyTorch eager hvp"] = ("hvp", thvp)
    ag = C.peer("autograd")
    if ag is not None:
        import autograd.numpy as anp

        def aloss(w, x):
            for _ in range(steps):
                x = x - 0.01 * anp.tanh(x @ w)
            return anp.sum(x * x)

        agrad = ag.grad(aloss)
        np.testing.assert_allclose(agrad(w, x), ref, rtol=1e-9)
        rows["autograd"] = ("grad", lambda: agrad(w, x))


def _derivatives(steps: int, budget, w, v, tanh=cnp.tanh) -> dict:
    """grad, hvp and grad of grad (with respect to x) of the loop, compiled at once."""
    lx = _loss_of_x(steps, budget, w, tanh)
    g = cr.grad(lx, eager_compile=True)
    gg = cr.grad(lambda x: cnp.sum(g(x) * v), eager_compile=True)
    return {"grad": g, "hvp": lambda x: cr.hvp(lx, (x,), (v,), eager_compile=True),
            "grad of grad": gg}


def _time(fn, reps: int) -> tuple[float, float]:
    """(min, median) seconds of ``reps`` calls after one warm-up call (slow rows: no
    calibration runs)."""
    import time

    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), float(np.median(times))


def budget_table(w, x, v, steps: int, reps: int) -> None:
    """Time, peak memory and steps run under budgets of 1, 10, 100 snapshots, orders 1-2."""
    out = []
    for k in (None, 1, 10, 100):
        budget = None if k is None else cr.Budget(snapshots=k)
        label = "store all" if k is None else f"Budget(snapshots={k})"
        plain = _derivatives(steps, budget, w, v)
        counted = _derivatives(steps, budget, w, v, tanh=counted_tanh)
        for what, fn in plain.items():
            if k == 1 and what == "grad of grad":
                out.append([label, what, None, None, None, None, "not run (cubic)"])
                continue
            if k is None:
                theory = steps
            elif what == "grad of grad":
                theory = None  # revolve of revolve: measured only
            else:  # forward over reverse runs each step once with its tangent
                theory = revolve_cost(steps, k) + steps + 1
            lo, med = _time(lambda fn=fn: fn(x), 1 if k == 1 else reps)
            peak = C.peak_tracemalloc(lambda fn=fn: fn(x))
            out.append([label, what, lo * 1e3, med * 1e3, f"{peak / 2**20:.2f}", theory,
                        count_runs(counted[what], x)])
    C.table(f"{steps}-step loop under a budget: time, peak memory, steps run ({C.uptime()})",
            ["", "what", "min ms", "median ms", "peak MiB", "revolve: T(n,c)+n+1",
             "measured steps"], out,
            "store all runs n steps (the forward; the backward reads stored residuals); "
            "revolve's T(n, c) advances + the n taped steps + 1 (the forward keeps the last "
            "carry); grad of grad checkpoints the first reverse mode's loops in turn "
            "(docs/loops.md)")


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--budget-steps", type=int, default=1_000)
    p.add_argument("--batch", type=int, default=BATCH)
    p.add_argument("--width", type=int, default=WIDTH)
    p.add_argument("--no-budget", action="store_true", help="skip the budget table")
    ns = p.parse_args()
    reps = C.repeats(ns, 5, 2)
    steps = ns.steps
    batch, width = ns.batch, ns.width
    print(f"{steps}-step loop x = x - 0.01 * tanh(x @ W), x: {batch}x{width}, float64; "
          f"{reps} repeats; {C.versions()}; {C.uptime()}")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((width, width)) / np.sqrt(width)
    x = rng.standard_normal((batch, width))
    v = rng.standard_normal((batch, width))
    ref = hand_grad(w, x, steps)
    rows = {"hand-written NumPy": ("grad", lambda: hand_grad(w, x, steps))}
    chainrule_rows(w, x, v, steps, rows, ref)
    numba_rows(w, x, v, steps, rows, ref)
    peer_rows(w, x, v, steps, rows, ref)
    times = C.compare({name: fn for name, (_, fn) in rows.items()}, reps, {n: 1 for n in rows})
    base = times["hand-written NumPy"][0]
    out = []
    for name, (kind, fn) in rows.items():
        lo, med = times[name]
        peak = C.peak_tracemalloc(fn) if not name.startswith(("JAX", "PyTorch")) else None
        out.append([name, kind, lo * 1e3, med * 1e3, lo / base,
                    "" if peak is None else f"{peak / 2**20:.1f}"])
    C.table(f"time and peak memory ({C.uptime()})", ["", "what", "min ms", "median ms",
                                                     "min/hand", "peak MiB"], out)
    print("compile (first call) times: " + "; ".join(COMPILE_NOTES))
    if ns.no_budget:
        return
    budget_table(w, x, v, ns.budget_steps, reps)


if __name__ == "__main__":
    main()
