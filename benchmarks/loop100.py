"""A 100-step loop ``x = x - 0.1 * tanh(x @ W)``, loss ``sum(x * x)``, differentiated
with respect to W.

Rows: chainrule (the Python ``for`` loop unrolled by tracing, compiled
``cr.value_and_grad``), chainrule with the loop kept as a loop
(``cr.fori_loop``: reverse mode through ``While``, each step's residuals on stacks
of arrays; the same with the numba backend, when installed, the whole program one numba
function; the same with ``checkpoint_every=10``, and with binomial checkpointing
under ``checkpoint=cr.Budget(snapshots=10)``), hand-written NumPy
backprop (the baseline: forward
keeps each step's tanh, backward walks them in reverse), autograd, PyTorch
eager, JAX (``lax.scan`` under ``jit``), each when installed.

    python benchmarks/loop100.py [--quick] [--repeats N] [--steps 100]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend import numba as nb

SHAPES = ((16, 32), (64, 128))  # (batch, width)


def make_loss(ns, steps: int):
    def loss(w, x):
        for _ in range(steps):
            x = x - 0.1 * ns.tanh(x @ w)
        return ns.sum(x * x)

    return loss


def hand_value_and_grad(w, x, steps: int):
    xs, ts = [], []
    for _ in range(steps):
        xs.append(x)
        t = np.tanh(x @ w)
        ts.append(t)
        x = x - 0.1 * t
    value = np.sum(x * x)
    gx = 2 * x
    gw = np.zeros_like(w)
    for xk, t in zip(reversed(xs), reversed(ts)):
        ga = (-0.1 * gx) * (1 - t * t)
        gw += xk.T @ ga
        gx = gx + ga @ w.T
    return value, gw


def run_shape(batch: int, width: int, steps: int, reps: int) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((width, width)) / np.sqrt(width)
    x = rng.standard_normal((batch, width))
    ref_value, ref = hand_value_and_grad(w, x, steps)
    rows, notes = {}, []
    t0 = time.perf_counter()
    vg = cr.value_and_grad(make_loss(cnp, steps))
    value, g = vg(w, x)
    notes.append(f"chainrule first call {(time.perf_counter() - t0) * 1e3:.0f} ms")
    assert np.allclose(g, ref) and np.allclose(value, ref_value)
    rows["chainrule (unrolled, compiled)"] = lambda: vg(w, x)

    def looped(every, budget=None):
        def loss(w, x):
            body = lambda i, x: x - 0.1 * cnp.tanh(x @ w)
            return cnp.sum(cr.fori_loop(0, steps, body, x, checkpoint_every=every,
                                        checkpoint=budget) ** 2)

        return cr.value_and_grad(loss)

    vl, vc, vb = looped(None), looped(10), looped(None, cr.Budget(snapshots=10))
    for fn in (vl, vc, vb):
        assert np.allclose(fn(w, x)[1], ref)
    rows["chainrule (fori_loop, compiled)"] = lambda: vl(w, x)
    if nb.available():  # the whole program as one numba function (numba/loops.py)
        nb.use_numba(True)
        try:
            vn = looped(None)
            t0 = time.perf_counter()
            assert np.allclose(vn(w, x)[1], ref)
            notes.append(f"numba first call {(time.perf_counter() - t0) * 1e3:.0f} ms")
        finally:
            nb.use_numba(None)
        rows["chainrule (fori_loop, numba)"] = lambda: vn(w, x)
    rows["chainrule (fori_loop, checkpoint_every=10)"] = lambda: vc(w, x)
    rows["chainrule (fori_loop, Budget(snapshots=10))"] = lambda: vb(w, x)
    rows["hand-written NumPy"] = lambda: hand_value_and_grad(w, x, steps)
    ag = C.peer("autograd")
    if ag is not None:
        import autograd.numpy as anp

        avg = ag.value_and_grad(make_loss(anp, steps))
        assert np.allclose(avg(w, x)[1], ref)
        rows["autograd"] = lambda: avg(w, x)
    torch = C.peer("torch")
    if torch is not None:
        tloss = make_loss(torch, steps)
        tw, tx = torch.tensor(w, requires_grad=True), torch.tensor(x)

        def tvg():
            value = tloss(tw, tx)
            return value, torch.autograd.grad(value, tw)[0]

        assert np.allclose(tvg()[1].numpy(), ref)
        rows["PyTorch eager"] = tvg
    jax = C.peer("jax")
    if jax is not None:
        jnp = jax.numpy

        def jloss(w, x):
            def step(x, _):
                return x - 0.1 * jnp.tanh(x @ w), None

            x, _ = jax.lax.scan(step, x, None, length=steps)
            return jnp.sum(x * x)

        jvg = jax.jit(jax.value_and_grad(jloss))
        jw, jx = jax.device_put(w), jax.device_put(x)
        t0 = time.perf_counter()
        assert np.allclose(jvg(jw, jx)[1], ref)
        notes.append(f"JAX first call {(time.perf_counter() - t0) * 1e3:.0f} ms")
        rows["JAX jit (lax.scan)"] = lambda: jvg(jw, jx)[1].block_until_ready()
    rows = C.compare(rows, reps)
    C.summary(f"loop100 grad {batch}x{width}",
              C.mins(rows, {"chainrule": "chainrule (fori_loop, compiled)",
                            "numpy": "hand-written NumPy", "jax": "JAX jit (lax.scan)",
                            "torch": "PyTorch eager", "autograd": "autograd"}),
              "chainrule fori_loop; JAX lax.scan; autograd and PyTorch unrolled")
    h_min, h_med = rows["hand-written NumPy"]
    out = [[name, lo * 1e3, med * 1e3, lo / h_min, med / h_med]
           for name, (lo, med) in rows.items()]
    C.table(f"x: {batch}x{width}, W: {width}x{width} ({C.uptime()})",
            ["", "min ms", "median ms", "min/hand", "med/hand"], out, "; ".join(notes))


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--steps", type=int, default=100)
    ns = p.parse_args()
    reps = C.repeats(ns, 20, 5)
    steps = ns.steps
    print(f"{steps}-step loop x = x - 0.1 * tanh(x @ W), d sum(x*x) / dW, float64; "
          f"{reps} repeats; {C.versions()}")
    for batch, width in SHAPES:
        run_shape(batch, width, steps, reps)


if __name__ == "__main__":
    main()
