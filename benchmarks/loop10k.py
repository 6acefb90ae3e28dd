"""A 10,000-step loop ``x = x - 0.01 * tanh(x @ W)``, loss ``sum(x * x)``: gradient with
respect to W, and a Hessian-vector product with respect to x; time and peak memory.

Rows: chainrule's ``fori_loop`` storing every step's residuals (stacks of arrays),
and under ``checkpoint=cr.Budget(snapshots=k)`` (binomial checkpointing, revolve)
for k = 10 and 100 (k = 1 is quadratic: its step count is printed, not run);
hand-written NumPy backprop (the baseline); JAX ``lax.fori_loop`` and ``lax.scan``
under ``jit``; PyTorch eager; autograd: each when installed. Peak memory is the
peak of NumPy's allocations during one call (tracemalloc; the peers' allocators are
not seen by it, so their column is empty). The checkpoint table puts the steps run
again, measured with a step that counts its runs, beside revolve's optimum.

    python benchmarks/loop10k.py [--quick] [--repeats N] [--steps 10000]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ops.common import define
from chainrule.ops.stack_schedule import revolve_cost
from chainrule.rules import jvp_rule, vjp_rule

BATCH, WIDTH = 8, 16
BUDGETS = (10, 100)

RUNS = [0]


def _counted(x):
    RUNS[0] += 1
    return np.tanh(x)


counted_tanh = define("bench_counted_tanh", lambda types, attrs: types[0], _counted,
                      elementwise=True, doc="tanh that counts its runs (benchmark)")


@vjp_rule(counted_tanh)
def _counted_vjp(z, g, x):
    """z = tanh(x);  dx = g (1 - z^2)"""
    return (g * (1 - z * z),)


@jvp_rule(counted_tanh)
def _counted_jvp(z, x):
    """z = tanh(x);  dz = dx (1 - z^2)"""
    return (lambda t: t * (1 - z * z),)


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
    hv = lambda: cr.hvp(lambda x: make_loss(steps)(w, x), (x,), (v,))
    rows["chainrule hvp, store all"] = ("hvp", hv)
    hvk = lambda: cr.hvp(lambda x: make_loss(steps, cr.Budget(snapshots=100))(w, x), (x,), (v,))
    rows["chainrule hvp, Budget(snapshots=100)"] = ("hvp", hvk)


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
            np.testing.assert_allclose(np.asarray(jg(jw, jx)), ref, rtol=1e-9)
            rows[f"JAX jit {name}"] = ("grad", lambda jg=jg: jg(jw, jx).block_until_ready())
        jh = jax.jit(lambda x, v: jax.jvp(jax.grad(lambda x: jloss_scan(jw, x)), (x,), (v,))[1])
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


def checkpoint_table(w, x, steps: int) -> None:
    """Steps run per gradient: measured with the counting step, beside revolve."""
    out = []
    for k in (1, *BUDGETS):
        best = revolve_cost(steps, k)
        theory = best + steps + 1  # revolve's advances, the taped steps, the final step
        if k == 1:
            out.append([f"Budget(snapshots={k})", theory, "not run (quadratic)", "", ""])
            continue
        g = cr.grad(make_loss(steps, cr.Budget(snapshots=k), tanh=counted_tanh))
        g(w, x)
        RUNS[0] = 0
        g(w, x)
        out.append([f"Budget(snapshots={k})", theory, RUNS[0], best,
                    RUNS[0] - steps - 1])
    C.table(f"steps run by one gradient of the {steps}-step loop",
            ["", "revolve: T(n,c)+n+1", "measured", "T(n,c) advances", "measured advances"],
            out, "store all: n steps (the forward; the backward reads stored residuals)")


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--steps", type=int, default=10_000)
    ns = p.parse_args()
    reps = C.repeats(ns, 5, 2)
    steps = ns.steps
    print(f"{steps}-step loop x = x - 0.01 * tanh(x @ W), x: {BATCH}x{WIDTH}, float64; "
          f"{reps} repeats; {C.versions()}")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)
    x = rng.standard_normal((BATCH, WIDTH))
    v = rng.standard_normal((BATCH, WIDTH))
    ref = hand_grad(w, x, steps)
    rows = {"hand-written NumPy": ("grad", lambda: hand_grad(w, x, steps))}
    chainrule_rows(w, x, v, steps, rows, ref)
    peer_rows(w, x, v, steps, rows, ref)
    times = C.compare({name: fn for name, (_, fn) in rows.items()}, reps, {n: 1 for n in rows})
    base = times["hand-written NumPy"][0]
    out = []
    for name, (kind, fn) in rows.items():
        lo, med = times[name]
        peak = C.peak_tracemalloc(fn) if not name.startswith(("JAX", "PyTorch")) else None
        out.append([name, kind, lo * 1e3, med * 1e3, lo / base,
                    "" if peak is None else f"{peak / 2**20:.1f}"])
    C.table("time and peak memory", ["", "what", "min ms", "median ms", "min/hand",
                                     "peak MiB"], out)
    checkpoint_table(w, x, steps)


if __name__ == "__main__":
    main()
