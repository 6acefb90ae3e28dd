"""value_and_grad of a tanh MLP 784-256-256-10 with softmax cross-entropy.

Rows: chainrule (``cr.value_and_grad``, compiled), a hand-written NumPy
backprop (the baseline), autograd, PyTorch eager, JAX jit (each when
installed). Batch 32 and 256, float32 and float64, one thread. Also: peak
NumPy memory (tracemalloc) of chainrule vs the hand-written backprop, the
grad/forward time ratio (forward = ``cr.jit(loss)``), and the compilation
time of the first call split into trace, gradient pass, optimize, codegen.

    python benchmarks/mlp.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp

SIZES = (784, 256, 256, 10)
BATCHES = (32, 256)
DTYPES = (np.float32, np.float64)


def make_problem(batch: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(SIZES, SIZES[1:]):
        params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype))
        params.append((0.1 * rng.standard_normal(n_out)).astype(dtype))
    x = rng.standard_normal((batch, SIZES[0])).astype(dtype)
    labels = rng.integers(0, SIZES[-1], batch)
    return params, x, labels


# -- the loss, once per library --------------------------------------------------------


def cr_loss(params, x, labels):
    w1, b1, w2, b2, w3, b3 = params
    h = cnp.tanh(x @ w1 + b1)
    h = cnp.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    logp = logits - cnp.logsumexp(logits, axis=1, keepdims=True)
    return -cnp.mean(logp[np.arange(x.shape[0]), labels])


def hand_forward(params, x, labels):
    w1, b1, w2, b2, w3, b3 = params
    h = np.tanh(x @ w1 + b1)
    h = np.tanh(h @ w2 + b2)
    z = h @ w3 + b3
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(x.shape[0]), labels].mean()


def hand_value_and_grad(params, x, labels):
    """Backprop written by hand, the way a NumPy user would."""
    w1, b1, w2, b2, w3, b3 = params
    n = x.shape[0]
    rows = np.arange(n)
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = (np.log(s).sum() - z[rows, labels].sum()) / n
    d = e / s  # softmax
    d[rows, labels] -= 1
    d /= n
    g_w3 = h2.T @ d
    g_b3 = d.sum(axis=0)
    d2 = (d @ w3.T) * (1 - h2 * h2)
    g_w2 = h1.T @ d2
    g_b2 = d2.sum(axis=0)
    d1 = (d2 @ w2.T) * (1 - h1 * h1)
    g_w1 = x.T @ d1
    g_b1 = d1.sum(axis=0)
    return loss, [g_w1, g_b1, g_w2, g_b2, g_w3, g_b3]


def autograd_value_and_grad():
    ag = C.peer("autograd")
    if ag is None:
        return None
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def loss(params, x, labels):
        w1, b1, w2, b2, w3, b3 = params
        h = anp.tanh(anp.dot(x, w1) + b1)
        h = anp.tanh(anp.dot(h, w2) + b2)
        logits = anp.dot(h, w3) + b3
        logp = logits - logsumexp(logits, axis=1, keepdims=True)
        return -anp.mean(logp[np.arange(x.shape[0]), labels])

    return ag.value_and_grad(loss), loss


def torch_loss(torch):
    def loss(params, x, labels):
        w1, b1, w2, b2, w3, b3 = params
        h = torch.tanh(x @ w1 + b1)
        h = torch.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        logp = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        return -logp[torch.arange(x.shape[0]), labels].mean()

    return loss


def torch_value_and_grad():
    torch = C.peer("torch")
    if torch is None:
        return None
    loss = torch_loss(torch)

    def vg(params, x, labels):
        value = loss(params, x, labels)
        return value, torch.autograd.grad(value, params)

    return vg


def torch_args(params, x, labels):
    torch = C.peer("torch")
    return ([torch.tensor(p, requires_grad=True) for p in params], torch.tensor(x),
            torch.tensor(labels))


def jax_loss(jax):
    jnp = jax.numpy

    def loss(params, x, labels):
        w1, b1, w2, b2, w3, b3 = params
        h = jnp.tanh(x @ w1 + b1)
        h = jnp.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(logp[jnp.arange(x.shape[0]), labels])

    return loss


def jax_args(params, x, labels):
    jax = C.peer("jax")
    return [jax.device_put(p) for p in params], jax.device_put(x), jax.device_put(labels)


def block(out):
    """Wait for JAX's asynchronous dispatch."""
    value, grads = out
    for g in grads:
        g.block_until_ready()
    return out


# -- the benchmark ----------------------------------------------------------------------


def compile_breakdown(params, x, labels) -> dict:
    """Seconds spent in each stage of the first call of ``cr.value_and_grad``."""
    from chainrule.backend.codegen.generate import compile_module
    from chainrule.frontend.tracer import trace_function
    from chainrule.ir.nodes import Module
    from chainrule.transform.reverse.gradient import gradient

    args = (params, x, labels)
    t0 = time.perf_counter()
    tf = trace_function(cr_loss, args)
    t1 = time.perf_counter()
    main = tf.module["main"]
    g = gradient(tf.module, "main", require_grads=list(main.params[:6]))
    t2 = time.perf_counter()
    m = cr.optimize(Module({"main_adjoint": g["main_adjoint"]}, g.meta))
    t3 = time.perf_counter()
    compile_module(m, "main_adjoint")
    t4 = time.perf_counter()
    vg = cr.value_and_grad(cr_loss)
    t5 = time.perf_counter()
    vg(params, x, labels)
    t6 = time.perf_counter()
    return {"trace": t1 - t0, "gradient": t2 - t1, "optimize": t3 - t2, "codegen": t4 - t3,
            "first call": t6 - t5}


def check(value, grads, ref_value, ref_grads, dtype, who):
    tol = 2e-4 if dtype == np.float32 else 1e-9
    ok = np.allclose(float(value), float(ref_value), rtol=tol, atol=tol) and all(
        np.allclose(np.asarray(g), r, rtol=tol * 10, atol=tol) for g, r in zip(grads, ref_grads))
    if not ok:
        raise AssertionError(f"{who}: value or gradient differs from the hand-written one")


def run_case(batch, dtype, reps):
    params, x, labels = make_problem(batch, dtype)
    ref_value, ref_grads = hand_value_and_grad(params, x, labels)
    vg = cr.value_and_grad(cr_loss)
    value, grads = vg(params, x, labels)
    check(value, grads, ref_value, ref_grads, dtype, "chainrule")

    fns = {"chainrule": lambda: vg(params, x, labels),
           "hand-written NumPy": lambda: hand_value_and_grad(params, x, labels)}
    ag = autograd_value_and_grad()
    if ag is not None:
        value, grads = ag[0](params, x, labels)
        check(value, grads, ref_value, ref_grads, dtype, "autograd")
        fns["autograd"] = lambda: ag[0](params, x, labels)
    tvg = torch_value_and_grad()
    if tvg is not None:
        targs = torch_args(params, x, labels)
        value, grads = tvg(*targs)
        check(value.item(), [g.numpy() for g in grads], ref_value, ref_grads, dtype, "torch")
        fns["PyTorch eager"] = lambda: tvg(*targs)
    jax = C.peer("jax")
    if jax is not None:
        jvg = jax.jit(jax.value_and_grad(jax_loss(jax)))
        jargs = jax_args(params, x, labels)
        value, grads = block(jvg(*jargs))
        check(value, grads, ref_value, ref_grads, dtype, "jax")
        fns["JAX jit"] = lambda: block(jvg(*jargs))
    # forward alone, for the grad/forward ratio
    fwd = cr.jit(cr_loss)
    fwd(params, x, labels)
    fns["chainrule forward"] = lambda: fwd(params, x, labels)
    fns["hand forward"] = lambda: hand_forward(params, x, labels)
    rows = C.compare(fns, reps)
    extra = {k: rows.pop(k) for k in ("chainrule forward", "hand forward")}
    mem = {"chainrule": C.peak_tracemalloc(lambda: vg(params, x, labels)),
           "hand-written NumPy": C.peak_tracemalloc(
               lambda: hand_value_and_grad(params, x, labels))}
    return rows, extra, mem


def main() -> None:
    ns = C.parser(__doc__).parse_args()
    reps = C.repeats(ns, 30, 5)
    print(f"MLP {'-'.join(map(str, SIZES))} tanh, softmax cross-entropy: value_and_grad; "
          f"{reps} repeats; {C.versions()}")
    summary = []
    for dtype in DTYPES:
        for batch in BATCHES:
            rows, extra, mem = run_case(batch, dtype, reps)
            h_min, h_med = rows["hand-written NumPy"]
            out = [[name, lo * 1e3, med * 1e3, lo / h_min, med / h_med]
                   for name, (lo, med) in rows.items()]
            C.table(f"B={batch} {np.dtype(dtype).name}",
                    ["", "min ms", "median ms", "min/hand", "med/hand"], out)
            C.summary(f"mlp grad B={batch} f{np.dtype(dtype).itemsize * 8}",
                      C.mins(rows, {"chainrule": "chainrule", "numpy": "hand-written NumPy",
                                    "jax": "JAX jit", "torch": "PyTorch eager",
                                    "autograd": "autograd"}))
            f_min = extra["chainrule forward"][0]
            hf_min = extra["hand forward"][0]
            summary.append([f"B={batch} {np.dtype(dtype).name}", rows["chainrule"][0] / h_min,
                            rows["chainrule"][0] / f_min, rows["hand-written NumPy"][0] / hf_min,
                            mem["chainrule"] / 2**20, mem["hand-written NumPy"] / 2**20,
                            mem["chainrule"] / mem["hand-written NumPy"]])
    C.table("summary (min times; peak = NumPy memory during one call, tracemalloc)",
            ["case", "cr/hand", "cr grad/fwd", "hand grad/fwd", "cr peak MB", "hand peak MB",
             "peak ratio"], summary)
    params, x, labels = make_problem(256, np.float32)
    stages = compile_breakdown(params, x, labels)
    C.table("compilation (B=256 f32, one run, ms)", ["stage", "ms"],
            [[k, v * 1e3] for k, v in stages.items()],
            "first call = trace + gradient + optimize + codegen + one execution")


if __name__ == "__main__":
    main()
