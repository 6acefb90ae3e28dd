"""Reverse mode on a chain of 1,400 tiny elementwise ops on shape (8,): per-op overhead.

``loss(x, y) = sum(chain(x, y))`` where the chain cycles through add, tanh,
multiply, sin, subtract, exp, maximum. Reports microseconds per forward op
(min and median over repeats) of the whole gradient call for chainrule
(compiled ``cr.grad``), the eager tape (``backward()`` on tensors, its
structure's pullback cached), autograd, PyTorch eager and JAX jit (when installed),
and of the NumPy forward alone (the baseline of the ratio column).

    python benchmarks/tiny_ops.py [--quick] [--repeats N] [--ops 1400]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape as ct

# (name, binary?) cycled along the chain
CYCLE = ("add", "tanh", "multiply", "sin", "subtract", "exp", "maximum")


def make_loss(ns, n_ops: int):
    """The loss written against a NumPy-like namespace ``ns`` (np, cnp, anp, torch, jnp)."""
    fns = [getattr(ns, name) for name in CYCLE]
    binary = [name in ("add", "multiply", "subtract", "maximum") for name in CYCLE]

    def loss(x, y):
        v = x
        for i in range(n_ops):
            k = i % len(CYCLE)
            v = fns[k](v, y) if binary[k] else fns[k](v)
        return ns.sum(v)

    return loss


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--ops", type=int, default=1400)
    ns = p.parse_args()
    reps = C.repeats(ns, 30, 5)
    n = ns.ops
    x = np.linspace(-0.5, 0.5, 8)
    y = np.linspace(0.1, 0.3, 8)
    rows = {}

    t0 = time.perf_counter()
    g = cr.grad(make_loss(cnp, n))
    ref = g(x, y)
    compile_s = time.perf_counter() - t0
    rows["chainrule grad (compiled)"] = lambda: g(x, y)
    tape_loss = make_loss(cnp, n)

    def tape_grad():
        tx = ct.tensor(x, requires_grad=True)
        tape_loss(tx, y).backward()
        return tx.grad

    tape_grad()  # a new structure: the rules applied eagerly; then built and compiled
    assert np.allclose(tape_grad(), ref)
    rows["chainrule tape (cached pullback)"] = tape_grad
    fwd = cr.jit(make_loss(cnp, n))
    fwd(x, y)
    rows["chainrule forward (jit)"] = lambda: fwd(x, y)
    ag = C.peer("autograd")
    if ag is not None:
        import autograd.numpy as anp

        agrad = ag.grad(make_loss(anp, n))
        assert np.allclose(agrad(x, y), ref)
        rows["autograd grad"] = lambda: agrad(x, y)
    torch = C.peer("torch")
    if torch is not None:
        tloss = make_loss(torch, n)
        tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y)

        def tgrad():
            return torch.autograd.grad(tloss(tx, ty), tx)[0]

        assert np.allclose(tgrad().numpy(), ref)
        rows["PyTorch eager grad"] = tgrad
    jax = C.peer("jax")
    if jax is not None:
        jgrad = jax.jit(jax.grad(make_loss(jax.numpy, n)))
        jx, jy = jax.device_put(x), jax.device_put(y)
        t1 = time.perf_counter()
        assert np.allclose(jgrad(jx, jy), ref)
        jax_compile = time.perf_counter() - t1
        rows["JAX jit grad"] = lambda: jgrad(jx, jy).block_until_ready()
    else:
        jax_compile = None
    npf = make_loss(np, n)
    rows["NumPy forward alone"] = lambda: npf(x, y)
    rows = C.compare(rows, reps)
    C.summary(f"tiny ops grad ({n} ops)",
              C.mins(rows, {"chainrule": "chainrule grad (compiled)", "jax": "JAX jit grad",
                            "torch": "PyTorch eager grad", "autograd": "autograd grad"}))
    base = rows["NumPy forward alone"]
    out = [[name, lo / n * 1e6, med / n * 1e6, lo / base[0], med / base[1]]
           for name, (lo, med) in rows.items()]
    C.table(f"{n} elementwise ops on shape (8,), reverse mode, {reps} repeats; {C.versions()}",
            ["", "min us/op", "median us/op", "min/numpy fwd", "med/numpy fwd"], out,
            f"chainrule first call (trace + AD + optimize + codegen + run): "
            f"{compile_s * 1e3:.0f} ms" + (f"; JAX first call {jax_compile * 1e3:.0f} ms"
                                           if jax_compile is not None else ""))


if __name__ == "__main__":
    main()
