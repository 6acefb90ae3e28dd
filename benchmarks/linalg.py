"""Gradients of linear algebra: einsum and tensordot contractions, linalg.solve,
cholesky and svd, on 64x64 and 256x256 float64 matrices.

For each workload: the NumPy forward time (the baseline, measured in the same
run), then chainrule's compiled forward (``cr.jit``) and gradient
(``cr.grad``, compiled) and the peers' gradients (autograd; PyTorch eager;
JAX jit) as ratios to it, each library's gradient also as a ratio to its own
forward. The date and the machine's load average (start and end) are printed
with the tables. One thread, the process pinned; min of the repeats (medians in the
second table).

    python benchmarks/linalg.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import os
import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp

SIZES = (64, 256)


def make_inputs(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    b = rng.standard_normal((n, n)) / np.sqrt(n)
    c = rng.standard_normal((n, n)) / np.sqrt(n)
    return {"a": a, "b": b, "c": c, "w": a + 2 * np.eye(n), "s": a @ a.T + np.eye(n)}


# name -> (inputs used, loss written once for any namespace m with m.linalg)
def _einsum(m, a, b, c):
    return m.sum(m.einsum("ij,jk,kl->il", a, b, c, optimize=True) ** 2)


def _tensordot(m, a, b):
    return m.sum(m.tanh(m.tensordot(a, b, axes=([1], [0]))))


def _solve(m, w, b):
    return m.sum(m.linalg.solve(w, b) ** 2)


def _cholesky(m, s):
    return m.sum(m.linalg.cholesky(s) * m.linalg.cholesky(s))


def _svd(m, a, c):
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    return m.sum(s) + m.sum((u * s) @ vh * c)


WORKLOADS = {"einsum ij,jk,kl": (_einsum, "abc"), "tensordot": (_tensordot, "ab"),
             "linalg.solve": (_solve, "wb"), "cholesky": (_cholesky, "s"),
             "svd": (_svd, "ac")}


def autograd_grad(fn):
    ag = C.peer("autograd")
    if ag is None:
        return None
    import autograd.numpy as anp

    return ag.grad(lambda args: fn(anp, *args))


class _TorchNamespace:
    """torch under NumPy's names, for the losses above."""

    def __init__(self, torch):
        self.torch = torch
        self.linalg = torch.linalg

    def __getattr__(self, name):
        return getattr(self.torch, name)

    def einsum(self, s, *xs, optimize=None):  # torch picks the contraction order itself
        return self.torch.einsum(s, *xs)

    def tensordot(self, a, b, axes):
        return self.torch.tensordot(a, b, dims=axes)


def torch_grad(fn):
    """(forward, gradient) in PyTorch eager, or None without PyTorch."""
    torch = C.peer("torch")
    if torch is None:
        return None
    ns = _TorchNamespace(torch)

    def grad(*args):
        ts = [torch.tensor(x, requires_grad=True) for x in args]
        return torch.autograd.grad(fn(ns, *ts), ts)

    def forward(*tensors):
        with torch.no_grad():
            return fn(ns, *tensors)

    return forward, grad


def run(repeats: int) -> None:
    print(f"linear algebra gradients, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{C.versions()}; load average {_load()}")
    rows_min, rows_med = [], []
    jax = C.peer("jax")
    for n in SIZES:
        inputs = make_inputs(n)
        for name, (fn, keys) in WORKLOADS.items():
            args = [inputs[k] for k in keys]
            fns = {"numpy fwd": lambda fn=fn, args=args: fn(np, *args)}
            cr_fwd = cr.jit(lambda *xs, fn=fn: fn(cnp, *xs))
            cr_grad = cr.grad(lambda *xs, fn=fn: fn(cnp, *xs),
                              argnums=tuple(range(len(args))))
            fns["cr fwd"] = lambda f=cr_fwd, args=args: f(*args)
            fns["cr grad"] = lambda g=cr_grad, args=args: g(*args)
            ag = autograd_grad(fn)
            if ag is not None:
                import autograd.numpy as anp

                fns["ag fwd"] = lambda fn=fn, args=args: fn(anp, *args)
                fns["ag grad"] = lambda g=ag, args=args: g(args)
            torch_fns = torch_grad(fn)
            if torch_fns is not None:
                tf, tg = torch_fns
                targs = [C.peer("torch").tensor(x) for x in args]
                fns["torch fwd"] = lambda f=tf, a=targs: f(*a)
                fns["torch grad"] = lambda g=tg, args=args: g(*args)
            if jax is not None:
                jargs = [jax.device_put(x) for x in args]
                loss = lambda *xs, fn=fn: fn(jax.numpy, *xs)  # noqa: E731
                jf = jax.jit(loss)
                jg = jax.jit(jax.grad(loss, argnums=tuple(range(len(args)))))
                fns["jax fwd"] = lambda f=jf, a=jargs: f(*a).block_until_ready()
                fns["jax grad"] = lambda g=jg, a=jargs: [x.block_until_ready() for x in g(*a)]
            _check(fn, args, cr_grad, ag, jax)
            times = C.compare(fns, repeats)
            for rows, k in ((rows_min, 0), (rows_med, 1)):
                base = times["numpy fwd"][k]
                row = [f"{name} {n}", base * 1e3, times["cr fwd"][k] / base,
                       times["cr grad"][k] / base, times["cr grad"][k] / times["cr fwd"][k]]
                for peer, fwd in (("ag", "ag fwd"), ("torch", "torch fwd"), ("jax", "jax fwd")):
                    g = times.get(f"{peer} grad")
                    row.append(None if g is None else g[k] / base)
                    if fwd is not None:
                        row.append(None if g is None else g[k] / times[fwd][k])
                rows.append(row)
    header = ["workload n", "numpy fwd ms", "cr fwd/np", "cr grad/np", "cr grad/fwd",
              "ag grad/np", "ag grad/fwd", "torch grad/np", "torch grad/fwd", "jax grad/np",
              "jax grad/fwd"]
    C.table(f"min over {repeats} repeats (ratios to NumPy's forward, same run)", header,
            rows_min)
    C.table("medians", header, rows_med)
    print(f"load average at the end: {_load()}")


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _check(fn, args, cr_grad, ag, jax) -> None:
    """The gradients agree (so the rows compare the same computation)."""
    got = cr_grad(*args)
    ref = ag(args) if ag is not None else None
    if ref is None and jax is not None:
        ref = jax.grad(lambda *xs: fn(jax.numpy, *xs), argnums=tuple(range(len(args))))(*args)
    if ref is None:
        return
    for g, r in zip(got, ref):
        if fn is _cholesky:  # autograd/JAX symmetrize; chainrule reads the lower triangle
            g, r = g + g.T - np.diag(np.diag(g)), np.asarray(r) + np.asarray(r).T - np.diag(
                np.diag(np.asarray(r)))
        if not np.allclose(g, np.asarray(r), rtol=1e-6, atol=1e-8):
            raise AssertionError(f"{fn.__name__}: gradients differ from the peer's")


def main() -> None:
    ns = C.parser(__doc__).parse_args()
    run(C.repeats(ns, 15, 3))


if __name__ == "__main__":
    main()
