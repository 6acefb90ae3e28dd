"""vmap: per-example gradients of an MLP, and Jacobians built on vmap.

1. Per-example gradients of the tanh MLP 784-256-256-10 with softmax
   cross-entropy (the loss of ``benchmarks/mlp.py``, for one example), batch 32
   and 256, float64: ``cr.vmap(cr.grad(loss), in_axes=(None, 0, 0))`` against a
   Python loop calling ``cr.grad(loss)`` per example, JAX's ``jit(vmap(grad))``
   and ``torch.func.vmap(grad)`` when installed.
2. ``jacrev`` / ``jacfwd`` of ``x -> tanh(W x)``, 256 -> 256, and ``hessian`` of
   ``sum(tanh(W x)^2)``: chainrule's Jacobians (the derivative program batched over
   the basis by the vmap pass) against the same with the vmap path switched off
   (copies of the derivative program unrolled, or run chunk by chunk), and JAX's
   ``jit(jacrev)``; first call (trace + compile) and later calls.

    python benchmarks/vmap.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
import chainrule.api.jacobian as api_jacobian
import chainrule.numpy as cnp

SIZES = (784, 256, 256, 10)
BATCHES = (32, 256)


def make_problem(batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(SIZES, SIZES[1:]):
        params.append(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in))
        params.append(0.1 * rng.standard_normal(n_out))
    x = rng.standard_normal((batch, SIZES[0]))
    labels = rng.integers(0, SIZES[-1], batch)
    return params, x, labels


def cr_loss(params, x, label):
    """The cross-entropy of one example."""
    w1, b1, w2, b2, w3, b3 = params
    h = cnp.tanh(x @ w1 + b1)
    h = cnp.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    return cnp.logsumexp(logits) - logits[label]


def jax_per_example(jax):
    jnp = jax.numpy

    def loss(params, x, label):
        w1, b1, w2, b2, w3, b3 = params
        h = jnp.tanh(x @ w1 + b1)
        h = jnp.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        return jax.nn.logsumexp(logits) - logits[label]

    return jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))


def torch_per_example(torch):
    from torch.func import grad, vmap

    def loss(params, x, label):
        w1, b1, w2, b2, w3, b3 = params
        h = torch.tanh(x @ w1 + b1)
        h = torch.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        return torch.logsumexp(logits, 0) - logits.gather(0, label.unsqueeze(0))[0]

    return vmap(grad(loss), in_dims=(None, 0, 0))


def first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def per_example_row(batch: int, reps: int) -> list:
    params, x, labels = make_problem(batch)
    batched = cr.vmap(cr.grad(cr_loss), in_axes=(None, 0, 0))
    one = cr.grad(cr_loss)
    first = first_call(lambda: batched(params, x, labels))
    want = batched(params, x, labels)
    loop_out = [one(params, x[k], labels[k]) for k in range(batch)]
    for leaf, got in enumerate(want):
        assert np.allclose(got, np.stack([g[leaf] for g in loop_out]), atol=1e-10)
    fns = {"vmap": lambda: batched(params, x, labels),
           "loop": lambda: [one(params, x[k], labels[k]) for k in range(batch)]}
    jax = C.peer("jax")
    if jax is not None:
        jf = jax_per_example(jax)
        jargs = (tuple(jax.numpy.asarray(p) for p in params), jax.numpy.asarray(x),
                 jax.numpy.asarray(labels))
        assert np.allclose(np.asarray(jf(*jargs)[0]), want[0], atol=1e-10)
        fns["jax"] = lambda: jax.block_until_ready(jf(*jargs))
    torch = C.peer("torch")
    if torch is not None:
        tf = torch_per_example(torch)
        targs = (tuple(torch.tensor(p) for p in params), torch.tensor(x), torch.tensor(labels))
        assert np.allclose(tf(*targs)[0].numpy(), want[0], atol=1e-10)
        fns["torch"] = lambda: tf(*targs)
    times = C.compare(fns, reps)
    C.summary(f"per-example grads B={batch}",
              C.mins(times, {"chainrule": "vmap", "jax": "jax", "torch": "torch"}))
    ms = {k: v[0] * 1e3 for k, v in times.items()}
    return [f"batch {batch}", ms["vmap"], ms["loop"], ms.get("jax"), ms.get("torch"),
            C.ratio(ms["loop"], ms["vmap"]), C.ratio(ms["vmap"], ms.get("jax")), first * 1e3]


def per_example(ns) -> None:
    reps = C.repeats(ns, 15, 3)
    rows = [per_example_row(batch, reps) for batch in BATCHES]
    C.table("per-example gradients, MLP 784-256-256-10, float64 (ms per batch, min)",
            ["", "cr vmap(grad)", "cr loop", "jax jit(vmap)", "torch.func", "loop/vmap",
             "vmap/jax", "cr 1st call"], rows,
            note="cr loop: cr.grad per example (compiled once), results not stacked")


def time_jacobian(make, fn, x, elements: int, reps: int):
    """(first call, later call, result) with the vmap path allowed up to ``elements``."""
    saved = api_jacobian.VMAP_ELEMENTS
    api_jacobian.VMAP_ELEMENTS = elements
    try:
        jac = make(fn)
        first = first_call(lambda: jac(x))
        return first, C.timeit(lambda: jac(x), reps)[0], jac(x)
    finally:
        api_jacobian.VMAP_ELEMENTS = saved


def time_jax(jax, name: str, w, x, reps: int):
    jnp = jax.numpy
    jw, jx = jnp.asarray(w), jnp.asarray(x)
    if name == "hessian":
        jf = lambda x: jnp.sum(jnp.tanh(jw @ x) ** 2)  # noqa: E731
    else:
        jf = lambda x: jnp.tanh(jw @ x)  # noqa: E731
    jj = jax.jit(getattr(jax, name)(jf))
    first = first_call(lambda: jax.block_until_ready(jj(jx)))
    return first, C.timeit(lambda: jax.block_until_ready(jj(jx)), reps)[0], np.asarray(jj(jx))


def jacobians(ns) -> None:
    reps = C.repeats(ns, 10, 3)
    n = 256
    rng = np.random.default_rng(1)
    w = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    f = lambda x: cnp.tanh(w @ x)  # noqa: E731
    s = lambda x: cnp.sum(cnp.tanh(w @ x) ** 2)  # noqa: E731
    jax = C.peer("jax")
    rows = []
    for name, make, fn in (("jacrev", cr.jacrev, f), ("jacfwd", cr.jacfwd, f),
                           ("hessian", cr.hessian, s)):
        v1, v, result = time_jacobian(make, fn, x, api_jacobian.VMAP_ELEMENTS, reps)
        u1, u, unrolled = time_jacobian(make, fn, x, 0, reps)
        assert np.allclose(result, unrolled, atol=1e-12)
        j1 = j = None
        if jax is not None:
            j1, j, jresult = time_jax(jax, name, w, x, reps)
            assert np.allclose(jresult, result, atol=1e-10)
        label = f"{name} {n}->{n if name != 'hessian' else 1}"
        C.summary(label, {"chainrule": v, "jax": j},
                  "the tools timed one after the other, not interleaved")
        rows.append([label, v * 1e3, u * 1e3,
                     None if j is None else j * 1e3, u / v, v1 * 1e3, u1 * 1e3,
                     None if j1 is None else j1 * 1e3])
    C.table("Jacobians of x -> tanh(W x), 256 inputs, float64 (ms, min)",
            ["", "cr (vmap)", "cr unrolled/chunked", "jax jit", "speedup", "cr 1st (vmap)",
             "cr 1st (unrolled)", "jax 1st"], rows,
            note="1st: the first call (trace, passes, code generation / XLA compilation)")


def main() -> None:
    ns = C.parser(__doc__).parse_args()
    print(C.versions())
    per_example(ns)
    jacobians(ns)


if __name__ == "__main__":
    main()
