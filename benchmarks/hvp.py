"""Hessian-vector product of the MLP loss (``mlp.py``), as a ratio to the gradient.

For each library, ``hvp time / grad time`` on the same loss and parameters
(the goal for chainrule is at most 1.3): chainrule ``cr.hvp`` (forward over
reverse) vs ``cr.grad``; JAX ``jvp(grad)`` under jit; PyTorch double
backward; autograd reverse over reverse (each when installed).

    python benchmarks/hvp.py [--quick] [--repeats N] [--batch 256]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
from mlp import cr_loss, jax_loss, make_problem, torch_loss


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
        rows.append(["autograd (reverse over reverse)", t_grad[0] * 1e3, t_hvp[0] * 1e3,
                     t_hvp[0] / t_grad[0], t_hvp[1] / t_grad[1]])
    C.table(f"MLP loss, B={ns.batch} float64: hvp vs grad, {reps} repeats; {C.versions()}",
            ["", "grad min ms", "hvp min ms", "hvp/grad min", "hvp/grad med"], rows,
            "; ".join(notes))


if __name__ == "__main__":
    main()
