"""Fusion and the numba backend (issue 16) on the workloads where JAX jit led: gradients
against hand-written NumPy backprop, JAX jit, PyTorch eager and ``torch.compile``.

Workloads: 1,400 tiny elementwise ops on shape (8,) (``tiny_ops.py``'s chain, d/dx);
the 100-step loop ``x -= 0.01 * tanh(x @ W)``, x 16x64 (value and d/dW; unrolled by
tracing and as ``cr.fori_loop``; and the fori_loop's Hessian-vector product in x, whose
row shares the same baseline; with numba the fori_loop programs run whole as one numba
function, ``chainrule/backend/numba/loops.py``); the MLP 784-256-256-10 (``mlp.py``: value and
gradient, float32 and float64, batch 32 and 256); the MLP's Hessian-vector product
(``hvp.py``, float64, batch 256). chainrule rows: generated NumPy code (the default),
and with ``CHAINRULE_NUMBA=1`` semantics (fused regions compiled by numba, waited for:
``eager_compile=True``). Min and median over repeats, one thread (``_common.py``), the
ratio column against the hand-written NumPy row; compile times (first calls) listed
separately, with the load average. numba kernels are cached on disk across runs
(``--cold`` uses an empty cache directory to show a first compile).

``--only order`` compares, as NumPy code, fusing after differentiation with fusing
before it (the measurement of issue 16's item 1).

    python benchmarks/fusion.py [--quick] [--repeats N] [--only tiny,loop,mlp,hvp,order]
                                [--cold] [--torch-compile]
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

import mlp
import tiny_ops

COMPILE_NOTES: list[str] = []


def first_call(label: str, fn):
    """Call ``fn`` once, noting how long it took (trace, passes, compiles)."""
    t0 = time.perf_counter()
    out = fn()
    COMPILE_NOTES.append(f"{label}: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    return out


def chainrule_rows(rows: dict, label: str, make, call) -> list:
    """Rows for chainrule's NumPy code and its numba backend; ``make()`` builds the
    transform (anew for each backend), ``call(transform)`` runs it. Returns the results."""
    outs = []
    for backend, flag in (("NumPy code", False), ("numba", True)):
        nb.use_numba(flag)
        try:
            fn = make()
            outs.append(first_call(f"chainrule {label} ({backend}) first call",
                                   lambda fn=fn: call(fn)))
        finally:
            nb.use_numba(None)
        rows[f"chainrule {label}, {backend}"] = lambda fn=fn: call(fn)
    return outs


def torch_compile_row(rows: dict, label: str, build, ns) -> None:
    """A ``torch.compile`` row when asked (``--torch-compile``): ``build()`` returns the
    callable to time; a failure (no compiler here) is noted instead."""
    if not ns.torch_compile:
        return
    try:
        fn = build()
        first_call(f"torch.compile {label} first call", fn)
        rows[f"torch.compile {label}"] = fn
    except Exception as exc:  # noqa: BLE001 - not available on this machine: say why
        COMPILE_NOTES.append(f"torch.compile {label}: failed ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:100]})")


def report(title: str, rows: dict, reps: int, baseline: str) -> None:
    times = C.compare(rows, reps)
    lo, med = times[baseline]
    C.table(f"{title}; load average {os.getloadavg()[0]:.2f}",
            ["", "min ms", "median ms", "min / hand", "median / hand"],
            [[name, t[0] * 1e3, t[1] * 1e3, t[0] / lo, t[1] / med]
             for name, t in times.items()],
            "compile (first calls): " + "; ".join(COMPILE_NOTES))
    COMPILE_NOTES.clear()


# -- 1,400 tiny ops ----------------------------------------------------------------------
TINY_FORWARD = {"add": np.add, "tanh": lambda u, y: np.tanh(u), "multiply": np.multiply,
                "sin": lambda u, y: np.sin(u), "subtract": np.subtract,
                "exp": lambda u, y: np.exp(u), "maximum": np.maximum}


def tiny_hand_grad(x, y, n_ops: int):
    """d sum(chain(x, y)) / dx by hand: the forward keeps each op's input and output."""
    v, saved = x, []
    for i in range(n_ops):
        name = tiny_ops.CYCLE[i % len(tiny_ops.CYCLE)]
        u, v = v, TINY_FORWARD[name](v, y)
        saved.append((name, u, v))
    g = np.ones_like(v)
    for name, u, out in reversed(saved):
        if name == "tanh":
            g = g * (1 - out * out)
        elif name == "multiply":
            g = g * y
        elif name == "sin":
            g = g * np.cos(u)
        elif name == "exp":
            g = g * out
        elif name == "maximum":
            g = np.where(u >= y, g, 0.0)
    return g


def bench_tiny(reps: int, ns) -> None:
    n = 1400
    x, y = np.linspace(-0.5, 0.5, 8), np.linspace(0.1, 0.3, 8)
    rows = {"hand-written NumPy backprop": lambda: tiny_hand_grad(x, y, n)}
    ref = tiny_hand_grad(x, y, n)
    outs = chainrule_rows(rows, "grad", lambda: cr.grad(tiny_ops.make_loss(cnp, n),
                                                        eager_compile=True),
                          lambda g: g(x, y))
    assert all(np.allclose(o, ref) for o in outs)
    jax = C.peer("jax")
    if jax is not None:
        jg = jax.jit(jax.grad(tiny_ops.make_loss(jax.numpy, n)))
        jx, jy = jax.device_put(x), jax.device_put(y)
        assert np.allclose(first_call("JAX jit first call", lambda: jg(jx, jy)), ref)
        rows["JAX jit"] = lambda: jg(jx, jy).block_until_ready()
    torch = C.peer("torch")
    if torch is not None:
        tloss = tiny_ops.make_loss(torch, n)
        tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y)
        rows["PyTorch eager"] = lambda: torch.autograd.grad(tloss(tx, ty), tx)[0]
        if ns.torch_compile:
            COMPILE_NOTES.append("torch.compile: not attempted (a 1,400-op graph)")
    report(f"{n} tiny elementwise ops on shape (8,), d/dx", rows, reps,
           "hand-written NumPy backprop")


# -- the 100-step loop -------------------------------------------------------------------
STEPS, RATE = 100, 0.01


def loop_loss(ns):
    def loss(w, x):
        for _ in range(STEPS):
            x = x - RATE * ns.tanh(x @ w)
        return ns.sum(x * x)

    return loss


def loop_fori_loss(w, x):
    x = cr.fori_loop(0, STEPS, lambda i, x: x - RATE * cnp.tanh(x @ w), x)
    return cnp.sum(x * x)


def loop_hand(w, x):
    xs, ts = [], []
    for _ in range(STEPS):
        xs.append(x)
        t = np.tanh(x @ w)
        ts.append(t)
        x = x - RATE * t
    gx, gw = 2 * x, np.zeros_like(w)
    for xk, t in zip(reversed(xs), reversed(ts)):
        ga = (-RATE * gx) * (1 - t * t)
        gw += xk.T @ ga
        gx = gx + ga @ w.T
    return np.sum(x * x), gw


def bench_loop(reps: int, ns) -> None:
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((64, 64)) / 8, rng.standard_normal((16, 64))
    ref = loop_hand(w, x)
    rows = {"hand-written NumPy backprop": lambda: loop_hand(w, x)}
    for label, loss in (("unrolled", lambda: loop_loss(cnp)),
                        ("fori_loop", lambda: lambda w, x: loop_fori_loss(w, x))):
        outs = chainrule_rows(rows, label, lambda loss=loss: cr.value_and_grad(
            loss(), eager_compile=True), lambda vg: vg(w, x))
        assert all(np.allclose(o[1], ref[1]) for o in outs)
    # the Hessian-vector product in x (forward over reverse) through the fori_loop
    v = rng.standard_normal(x.shape)

    def make_hvp():  # one loss function per backend: hvp traces it once
        lx = lambda x: loop_fori_loss(w, x)  # noqa: E731
        return lambda x, v: cr.hvp(lx, (x,), (v,), eager_compile=True)

    outs = chainrule_rows(rows, "fori_loop hvp", make_hvp, lambda h: h(x, v))
    assert np.allclose(outs[0], outs[1])
    jax = C.peer("jax")
    if jax is not None:
        jnp = jax.numpy

        def jloss(w, x):
            x, _ = jax.lax.scan(lambda x, _: (x - RATE * jnp.tanh(x @ w), None), x, None,
                                length=STEPS)
            return jnp.sum(x * x)

        jvg = jax.jit(jax.value_and_grad(jloss))
        jw, jx, jv = jax.device_put(w), jax.device_put(x), jax.device_put(v)
        first_call("JAX jit first call", lambda: jvg(jw, jx))
        rows["JAX jit (lax.scan)"] = lambda: jvg(jw, jx)[1].block_until_ready()
        jh = jax.jit(lambda x, v: jax.jvp(jax.grad(lambda x: jloss(jw, x)), (x,), (v,))[1])
        first_call("JAX jit hvp first call", lambda: jh(jx, jv))
        rows["JAX jit hvp (lax.scan)"] = lambda: jh(jx, jv).block_until_ready()
    torch = C.peer("torch")
    if torch is not None:
        tloss = loop_loss(torch)
        tw, tx = torch.tensor(w, requires_grad=True), torch.tensor(x)

        def tvg(tloss=tloss):
            value = tloss(tw, tx)
            return value, torch.autograd.grad(value, tw)[0]

        rows["PyTorch eager"] = tvg
        def compiled_loop():
            cl = torch.compile(tloss)
            return lambda: tvg(cl)

        torch_compile_row(rows, "", compiled_loop, ns)
    report(f"{STEPS}-step loop x -= {RATE} * tanh(x @ W), x 16x64, value and d/dW", rows,
           reps, "hand-written NumPy backprop")


# -- the MLP and its HVP -------------------------------------------------------------------
def bench_mlp(reps: int, ns) -> None:
    for dtype in (np.float32, np.float64):
        for batch in (32, 256):
            params, x, labels = mlp.make_problem(batch, dtype)
            ref_value, ref_grads = mlp.hand_value_and_grad(params, x, labels)
            rows = {"hand-written NumPy backprop":
                    lambda p=params, x=x, lb=labels: mlp.hand_value_and_grad(p, x, lb)}
            outs = chainrule_rows(rows, "value_and_grad", lambda: cr.value_and_grad(
                lambda p, xs, lb: mlp.cr_loss(p, xs, lb), eager_compile=True),
                lambda vg, p=params, x=x, lb=labels: vg(p, x, lb))
            for value, grads in outs:
                mlp.check(value, grads, ref_value, ref_grads, dtype, "chainrule")
            jax = C.peer("jax")
            if jax is not None:
                jvg = jax.jit(jax.value_and_grad(mlp.jax_loss(jax)))
                jargs = mlp.jax_args(params, x, labels)
                first_call("JAX jit first call", lambda jvg=jvg, a=jargs: jvg(*a))
                rows["JAX jit"] = lambda jvg=jvg, a=jargs: mlp.block(jvg(*a))
            torch = C.peer("torch")
            if torch is not None:
                tvg = mlp.torch_value_and_grad()
                targs = mlp.torch_args(params, x, labels)
                rows["PyTorch eager"] = lambda tvg=tvg, a=targs: tvg(*a)
                torch_compile_row(rows, "", lambda targs=targs: _torch_compiled_mlp(targs),
                                  ns)
            report(f"MLP 784-256-256-10 {np.dtype(dtype).name}, batch {batch}: value and "
                   f"gradient", rows, reps, "hand-written NumPy backprop")


def _torch_compiled_mlp(targs):
    torch = C.peer("torch")
    loss = torch.compile(mlp.torch_loss(torch))

    def vg():
        value = loss(*targs)
        return value, torch.autograd.grad(value, targs[0])

    return vg


def bench_hvp(reps: int, ns) -> None:
    params, x, labels = mlp.make_problem(256, np.float64)
    rng = np.random.default_rng(1)
    v = [rng.standard_normal(q.shape) for q in params]
    rows = {"hand-written NumPy backprop (the gradient)":
            lambda: mlp.hand_value_and_grad(params, x, labels)}

    for backend, flag in (("NumPy code", False), ("numba", True)):
        nb.use_numba(flag)
        try:
            def f(ps):  # a new function for each backend: its own compiled programs
                return mlp.cr_loss(ps, x, labels)

            first_call(f"chainrule hvp ({backend}) first call",
                       lambda f=f: cr.hvp(f, (params,), (v,)))
        finally:
            nb.use_numba(None)
        rows[f"chainrule hvp, {backend}"] = lambda f=f: cr.hvp(f, (params,), (v,))
    jax = C.peer("jax")
    if jax is not None:
        jl = mlp.jax_loss(jax)
        jps, jx, jlb = mlp.jax_args(params, x, labels)
        jv = [jax.device_put(t) for t in v]
        jhvp = jax.jit(lambda ps, vs: jax.jvp(jax.grad(lambda q: jl(q, jx, jlb)), (ps,),
                                                (vs,))[1])
        first_call("JAX jit hvp first call", lambda: jhvp(jps, jv))
        rows["JAX jit hvp (jvp of grad)"] = lambda: [t.block_until_ready() for t in jhvp(jps, jv)]
    torch = C.peer("torch")
    if torch is not None:
        tl = mlp.torch_loss(torch)
        tps, tx, tlb = mlp.torch_args(params, x, labels)
        tv = [torch.tensor(t) for t in v]

        def thvp():
            g = torch.autograd.grad(tl(tps, tx, tlb), tps, create_graph=True)
            return torch.autograd.grad(g, tps, tv)

        rows["PyTorch eager hvp (double backward)"] = thvp
    report("MLP float64 batch 256: Hessian-vector product", rows, reps,
           "hand-written NumPy backprop (the gradient)")


# -- where fusion goes in the pipeline (NumPy code) ---------------------------------------
def bench_order(reps: int, ns) -> None:
    """The gradient program compiled without fusion, with ``fuse`` after differentiation
    (``gradient, optimize, fuse``) and before it (``fuse, gradient, optimize`` without
    inlining, which would undo the regions), all as NumPy code."""
    from chainrule.backend.codegen.generate import compile_module
    from chainrule.frontend.tracer import trace_function
    from chainrule.transform import fuse, gradient, optimize

    x, y = np.linspace(-0.5, 0.5, 8), np.linspace(0.1, 0.3, 8)
    traced = trace_function(tiny_ops.make_loss(cnp, 1400), (x, y), capture=True).module
    plain = optimize(gradient(traced, "main"))
    rows = {"hand-written NumPy backprop": lambda: tiny_hand_grad(x, y, 1400)}
    for name, module in (("unfused", plain), ("fuse after gradient", fuse(plain)),
                         ("fuse before gradient",
                          optimize(gradient(fuse(traced), "main"), inline_calls=False))):
        regions = sum(1 for fn in module.functions.values() if fn.attrs.get("fused"))
        fn = compile_module(module, "main_adjoint")
        rows[f"{name} ({regions} regions)"] = lambda fn=fn: fn(x, y)
    report("1,400 tiny ops, value and gradient as NumPy code: where fuse goes", rows, reps,
           "hand-written NumPy backprop")


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--only", default="tiny,loop,mlp,hvp")
    p.add_argument("--cold", action="store_true", help="an empty numba kernel cache")
    p.add_argument("--torch-compile", action="store_true", help="add torch.compile rows")
    ns = p.parse_args()
    reps = C.repeats(ns, 20, 5)
    if ns.cold:
        os.environ["CHAINRULE_CACHE_DIR"] = tempfile.mkdtemp(prefix="chainrule-cold-")
    print(C.versions(), f"; numba {'installed' if nb.available() else 'missing'}; "
          f"kernel cache {nb.cache_dir()}")
    os.system("uptime")  # noqa: S605 - the load, as the notes ask with every table
    benches = {"tiny": bench_tiny, "loop": bench_loop, "mlp": bench_mlp, "hvp": bench_hvp,
               "order": bench_order}
    for name in ns.only.split(","):
        benches[name](reps, ns)
    os.system("uptime")  # noqa: S605


if __name__ == "__main__":
    main()
