"""Hessian-vector product of the MLP loss (``mlp.py``), as a ratio to the gradient.

For each library, ``hvp time / grad time`` on the same loss and parameters
(the goal for chainrule is at most 1.3): chainrule ``cr.hvp`` (forward over
reverse) vs ``cr.grad``; JAX ``jvp(grad)`` under jit; PyTorch double
backward; autograd reverse over reverse (each when installed).

A second table times the hvp against forward-over-reverse written by hand in
NumPy (``hand_hvp``, Pearlmutter's R-operator on the hand-written backprop),
in one run: chainrule's ``cr.hvp`` of a loss capturing the data, and with
every array of the MLP an argument (parameters, tangents, inputs, labels: a
``cr.jit`` function calling ``cr.hvp`` on the parameters, as JAX's
``jit(lambda ps, vs, x, labels: jvp(grad(...)))``), where the tangents of the
inputs are symbolic zeros that must cost nothing.

A third table times the hvp of a loop (``fori_loop``) one of whose carries
does not depend on the parameters, against JAX: its tangent is a symbolic
zero, carried by neither the forward nor the reverse loop.

    python benchmarks/hvp.py [--quick] [--repeats N] [--batch 256]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import os
import time

import numpy as np

import chainrule as cr
from mlp import cr_loss, jax_loss, make_problem, torch_loss


def hand_hvp(params, x, labels, v):
    """Forward over reverse by hand: the R-operator (the tangent along ``v``) of the
    hand-written backprop of ``mlp.hand_value_and_grad``, one line per tangent."""
    w1, b1, w2, b2, w3, b3 = params
    vw1, vb1, vw2, vb2, vw3, vb3 = v
    n = x.shape[0]
    rows = np.arange(n)
    h1 = np.tanh(x @ w1 + b1)
    s1 = 1 - h1 * h1
    r_h1 = (x @ vw1 + vb1) * s1
    h2 = np.tanh(h1 @ w2 + b2)
    s2 = 1 - h2 * h2
    r_h2 = (r_h1 @ w2 + h1 @ vw2 + vb2) * s2
    z = h2 @ w3 + b3
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)  # softmax
    r_z = r_h2 @ w3 + h2 @ vw3 + vb3
    r_d = p * (r_z - (p * r_z).sum(axis=1, keepdims=True)) / n
    d = p
    d[rows, labels] -= 1
    d /= n
    u2 = d @ w3.T
    d2 = u2 * s2
    r_d2 = (r_d @ w3.T + d @ vw3.T) * s2 - 2 * u2 * h2 * r_h2
    u1 = d2 @ w2.T
    r_d1 = (r_d2 @ w2.T + d2 @ vw2.T) * s1 - 2 * u1 * h1 * r_h1
    return [x.T @ r_d1, r_d1.sum(axis=0), r_h1.T @ d2 + h1.T @ r_d2, r_d2.sum(axis=0),
            r_h2.T @ d + h2.T @ r_d, r_d.sum(axis=0)]


def _load() -> str:
    return " ".join(f"{a:.2f}" for a in os.getloadavg())


def against_hand(params, x, labels, v, ref, reps: int) -> None:
    """hvp time / hand-written forward-over-reverse time, min and median, one run."""
    assert all(np.allclose(a, b) for a, b in zip(hand_hvp(params, x, labels, v), ref))

    def f(ps):
        return cr_loss(ps, x, labels)

    @cr.jit
    def all_args(ps, vs, x, labels):  # every array of the MLP an argument
        return cr.hvp(lambda q: cr_loss(q, x, labels), (ps,), (vs,))

    assert all(np.allclose(a, b) for a, b in zip(all_args(params, v, x, labels), ref))
    fns = {"hand": lambda: hand_hvp(params, x, labels, v),
           "chainrule cr.hvp (data captured)": lambda: cr.hvp(f, (params,), (v,)),
           "chainrule jit(hvp), all arrays arguments": lambda: all_args(params, v, x, labels)}
    jax = C.peer("jax")
    if jax is not None:
        jl = jax_loss(jax)
        jhvp = jax.jit(lambda ps, vs, x, labels: jax.jvp(
            lambda q: jax.grad(jl)(q, x, labels), (ps,), (vs,))[1])
        jargs = [[jax.device_put(q) for q in params], [jax.device_put(q) for q in v],
                 jax.device_put(x), jax.device_put(labels)]
        assert all(np.allclose(a, b) for a, b in zip(jhvp(*jargs), ref))
        fns["JAX jit(jvp(grad)), all arrays arguments"] = (
            lambda: [a.block_until_ready() for a in jhvp(*jargs)])
    r = C.compare(fns, reps)
    C.summary(f"mlp jit(hvp) B={x.shape[0]} f64, all arrays args",
              C.mins(r, {"chainrule": "chainrule jit(hvp), all arrays arguments", "numpy": "hand",
                         "jax": "JAX jit(jvp(grad)), all arrays arguments"}),
              "numpy: forward-over-reverse by hand")
    hand = r.pop("hand")
    rows = [["hand-written NumPy", hand[0] * 1e3, hand[1] * 1e3, 1.0, 1.0]]
    rows += [[name, t[0] * 1e3, t[1] * 1e3, t[0] / hand[0], t[1] / hand[1]]
             for name, t in r.items()]
    C.table(f"MLP hvp against hand-written forward-over-reverse, B={x.shape[0]} float64, "
            f"{reps} repeats; {C.versions()}; load average {_load()}",
            ["", "min ms", "median ms", "/hand min", "/hand med"], rows)


def loop_loss(xp, fori_loop):
    """A loop carrying ``h`` (which depends on ``w``) and ``s`` (which does not)."""

    def loss(w):
        def body(i, carry):
            h, s = carry
            return xp.tanh(h @ w), xp.sin(s) @ (s * 0.5)

        h, s = fori_loop(0, 10, body, (w * 2, xp.ones(w.shape) * 0.1))
        return xp.sum(h * h) + xp.sum(s * h)

    return loss


def loop_case(reps: int, n: int = 128) -> None:
    """hvp through a loop with a carry that does not vary: chainrule vs JAX jit."""
    import chainrule.numpy as cnp

    rng = np.random.default_rng(2)
    w = rng.standard_normal((n, n)) / np.sqrt(n)
    v = rng.standard_normal((n, n))
    f = loop_loss(cnp, cr.fori_loop)
    ref = cr.hvp(f, (w,), (v,))
    fns = {"chainrule cr.hvp": lambda: cr.hvp(f, (w,), (v,))}
    jax = C.peer("jax")
    if jax is not None:
        jf = loop_loss(jax.numpy, jax.lax.fori_loop)
        jhvp = jax.jit(lambda w, v: jax.jvp(jax.grad(jf), (w,), (v,))[1])
        jw, jv = jax.device_put(w), jax.device_put(v)
        assert np.allclose(jhvp(jw, jv), ref)
        fns["JAX jit(jvp(grad))"] = lambda: jhvp(jw, jv).block_until_ready()
    r = C.compare(fns, reps)
    base = r["chainrule cr.hvp"]
    rows = [[name, t[0] * 1e3, t[1] * 1e3, t[0] / base[0], t[1] / base[1]]
            for name, t in r.items()]
    C.table(f"hvp through a 10-step loop, one carry constant, {n}x{n} float64, {reps} "
            f"repeats; load average {_load()}",
            ["", "min ms", "median ms", "/chainrule min", "/chainrule med"], rows)


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--batch", type=int, default=256)
    ns = p.parse_args()
    reps = C.repeats(ns, 20, 3)
    dtype = np.float64
    params, x, labels = make_problem(ns.batch, dtype)
    rng = np.random.default_rng(1)
    v = [rng.standard_normal(q.shape).astype(dtype) for q in params]
    rows, notes = [], []
    hvp_min = {}  # tool -> min seconds of its hvp, for the summary

    def pair(grad_fn, hvp_fn):
        r = C.compare({"grad": grad_fn, "hvp": hvp_fn}, reps)
        return r["grad"], r["hvp"]

    # chainrule
    def f(ps):
        return cr_loss(ps, x, labels)

    g = cr.grad(f)
    t0 = time.perf_counter()
    ref = cr.hvp(f, (params,), (v,))
    notes.append(f"chainrule hvp first call {(time.perf_counter() - t0) * 1e3:.0f} ms")
    t_grad, t_hvp = pair(lambda: g(params), lambda: cr.hvp(f, (params,), (v,)))
    hvp_min["chainrule"] = t_hvp[0]
    rows.append(["chainrule", t_grad[0] * 1e3, t_hvp[0] * 1e3, t_hvp[0] / t_grad[0],
                 t_hvp[1] / t_grad[1]])
    jax = C.peer("jax")
    if jax is not None:
        jl = jax_loss(jax)
        jp = [jax.device_put(q) for q in params]
        jv = [jax.device_put(q) for q in v]
        jx, jlab = jax.device_put(x), jax.device_put(labels)
        jgrad = jax.jit(jax.grad(jl))
        jhvp = jax.jit(lambda ps, vs: jax.jvp(lambda q: jax.grad(jl)(q, jx, jlab),
                                              (ps,), (vs,))[1])
        out = jhvp(jp, jv)
        assert all(np.allclose(a, b) for a, b in zip(out, ref))
        t_grad, t_hvp = pair(lambda: [a.block_until_ready() for a in jgrad(jp, jx, jlab)],
                             lambda: [a.block_until_ready() for a in jhvp(jp, jv)])
        hvp_min["jax"] = t_hvp[0]
        rows.append(["JAX jit (jvp of grad)", t_grad[0] * 1e3, t_hvp[0] * 1e3,
                     t_hvp[0] / t_grad[0], t_hvp[1] / t_grad[1]])
    torch = C.peer("torch")
    if torch is not None:
        tl = torch_loss(torch)
        tp = [torch.tensor(q, requires_grad=True) for q in params]
        tv = [torch.tensor(q) for q in v]
        tx, tlab = torch.tensor(x), torch.tensor(labels)

        def tgrad():
            return torch.autograd.grad(tl(tp, tx, tlab), tp)

        def thvp():
            gs = torch.autograd.grad(tl(tp, tx, tlab), tp, create_graph=True)
            return torch.autograd.grad(gs, tp, grad_outputs=tv)

        assert all(np.allclose(a.numpy(), b) for a, b in zip(thvp(), ref))
        t_grad, t_hvp = pair(tgrad, thvp)
        hvp_min["torch"] = t_hvp[0]
        rows.append(["PyTorch double backward", t_grad[0] * 1e3, t_hvp[0] * 1e3,
                     t_hvp[0] / t_grad[0], t_hvp[1] / t_grad[1]])
    ag = C.peer("autograd")
    if ag is not None:
        from mlp import autograd_value_and_grad

        aloss = autograd_value_and_grad()[1]

        def af(ps):
            return aloss(ps, x, labels)

        agrad = ag.grad(af)
        import autograd.numpy as anp

        # reverse over reverse: the gradient of <grad f(p), v> (the parameters are a list,
        # which autograd's hessian_vector_product cannot contract with v)
        ahvp = ag.grad(lambda ps, vs: sum(anp.sum(g * w) for g, w in zip(agrad(ps), vs)))
        assert all(np.allclose(a, b) for a, b in zip(ahvp(params, v), ref))
        t_grad, t_hvp = pair(lambda: agrad(params), lambda: ahvp(params, v))
        hvp_min["autograd"] = t_hvp[0]
        rows.append(["autograd (reverse over reverse)", t_grad[0] * 1e3, t_hvp[0] * 1e3,
                     t_hvp[0] / t_grad[0], t_hvp[1] / t_grad[1]])
    C.summary(f"mlp hvp B={ns.batch} f64", hvp_min,
              "the tools timed one after the other, not interleaved")
    against_hand(params, x, labels, v, ref, reps)
    loop_case(reps)
    C.table(f"MLP loss, B={ns.batch} float64: hvp vs grad, {reps} repeats; {C.versions()}",
            ["", "grad min ms", "hvp min ms", "hvp/grad min", "hvp/grad med"], rows,
            "; ".join(notes))


if __name__ == "__main__":
    main()
