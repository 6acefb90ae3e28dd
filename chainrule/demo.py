"""``python -m chainrule demo``: what chainrule does, on one small model.

A 2-layer tanh MLP classifies two interleaved spirals. The demo prints the
model as IR, its gradient program and the NumPy code that runs it, trains it
with Adam on compiled gradients, checks those gradients three ways, takes a
second derivative, and times a training step against hand-written backprop.
Everything but the timings is deterministic (fixed seeds, one BLAS thread).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # effective for BLAS libraries loaded from now on

import time  # noqa: E402

import numpy as np  # noqa: E402

import chainrule as cr  # noqa: E402
import chainrule.numpy as cnp  # noqa: E402
from chainrule import tape  # noqa: E402
from chainrule.api import trace_grad_module  # noqa: E402
from chainrule.backend.codegen import compile_module  # noqa: E402
from chainrule.testing import check_grads  # noqa: E402
from chainrule.transform.gradient import gradient  # noqa: E402

HIDDEN = 32


def heading(text: str) -> None:
    print(f"\n== {text} ==")


# -- data and model ------------------------------------------------------------------


def two_spirals(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points on two interleaved spirals, labels 0/1 alternating."""
    t = np.sqrt(rng.uniform(0.05, 1.0, n)) * 3 * np.pi
    label = np.arange(n) % 2
    r = t / (3 * np.pi)
    x = np.stack([r * np.cos(t + np.pi * label), r * np.sin(t + np.pi * label)], axis=1)
    return x + 0.03 * rng.standard_normal((n, 2)), label


def loss(params, x, y):
    """Mean cross-entropy of a tanh MLP; ``y`` is one-hot."""
    W1, b1, W2, b2 = params
    h = cnp.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    return -cnp.mean(cnp.sum(y * cnp.log_softmax(logits, axis=-1), axis=-1))


def logits(params, x):
    W1, b1, W2, b2 = params
    return cnp.tanh(x @ W1 + b1) @ W2 + b2


def numpy_value_and_grad(params, x, y):
    """The same loss and gradient, backpropagated by hand in NumPy (the baseline)."""
    W1, b1, W2, b2 = params
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    value = -(y * logp).sum() / len(x)
    dz = (np.exp(logp) - y) / len(x)
    dh = (dz @ W2.T) * (1 - h * h)
    return value, (x.T @ dh, dh.sum(axis=0), h.T @ dz, dz.sum(axis=0))


def init_params(rng):
    return (rng.standard_normal((2, HIDDEN)), np.zeros(HIDDEN),
            rng.standard_normal((HIDDEN, 2)) / np.sqrt(HIDDEN), np.zeros(2))


def max_diff(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(u) - np.asarray(v)))) for u, v in zip(a, b))


# -- the sections --------------------------------------------------------------------


def show_ir(params, x, y) -> None:
    heading("1. The model, traced to IR (cr.trace)")
    module = cr.trace(loss, params, x, y)
    print(module, end="")
    assert cr.parse(str(module)) == module  # the text is Python and parses back
    print("(this text is valid Python: cr.parse(str(module)) == module)")


def show_gradient(params, x, y) -> None:
    heading("2. Its gradient program: reverse mode + optimize (trace_grad_module)")
    grad_module = trace_grad_module(loss, params, x, y)
    print(grad_module, end="")
    fn = cr.trace(loss, params, x, y)
    raw = gradient(fn, "main", require_grads=fn["main"].params[:4])
    print(f"(the gradient pass emits {len(raw['main_adjoint'].body.bindings)} bindings; "
          f"after optimize: {len(grad_module['main_adjoint'].body.bindings)})")
    source = compile_module(grad_module, "main_adjoint").source.strip().splitlines()
    print(f"\nThe NumPy code it runs as (first 14 of {len(source)} lines; `del` frees "
          f"dead arrays, `out=` reuses them):")
    print("\n".join("    " + line for line in source[:14]))
    print("    ...")


def train(params, data, steps: int):
    heading(f"3. Training: Adam, {steps} steps, full batch, cr.value_and_grad (compiled)")
    (x, y, label), (x_test, label_test) = data
    value_and_grad = cr.value_and_grad(loss)
    predict = cr.jit(logits)

    def accuracy(params, x, label):
        return float(np.mean(np.argmax(predict(params, x), axis=1) == label))

    lr, b1, b2 = 0.05, 0.9, 0.999
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    every = max(1, steps // 8)
    first = None
    for step in range(1, steps + 1):
        value, grads = value_and_grad(params, x, y)
        first = float(value) if first is None else first
        new = []
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            m_hat, v_hat = m[i] / (1 - b1 ** step), v[i] / (1 - b2 ** step)
            new.append(p - lr * m_hat / (np.sqrt(v_hat) + 1e-8))
        params = tuple(new)
        if step == 1 or step % every == 0 or step == steps:
            print(f"step {step:4d}   loss {float(value):.4f}   "
                  f"train accuracy {accuracy(params, x, label):6.1%}")
    final = float(loss(params, x, y))
    print(f"loss {first:.4f} -> {final:.4f}")
    print(f"final accuracy: train {accuracy(params, x, label):.1%}, "
          f"test {accuracy(params, x_test, label_test):.1%} "
          f"({len(x_test)} held-out points)")
    return params


def check(params, x, y) -> None:
    heading("4. Checking the gradient")
    _, grads = cr.value_and_grad(loss)(params, x, y)
    eps, rng, worst = 1e-6, np.random.default_rng(1), 0.0
    for i, p in enumerate(params):  # central differences on 3 entries of each parameter
        for flat in rng.choice(p.size, size=min(3, p.size), replace=False):
            idx = np.unravel_index(flat, p.shape)
            plus, minus = [q.copy() for q in params], [q.copy() for q in params]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            fd = (float(loss(tuple(plus), x, y)) - float(loss(tuple(minus), x, y))) / (2 * eps)
            worst = max(worst, abs(fd - float(grads[i][idx])))
    print(f"vs central finite differences (12 entries):    max |difference| {worst:.1e}")
    tensors = tuple(tape.tensor(p, requires_grad=True) for p in params)
    loss(tensors, x, y).backward()  # the same function, run eagerly on the tape
    print(f"vs the eager tape (chainrule.tape, backward):  max |difference| "
          f"{max_diff(grads, [t.grad for t in tensors]):.1e}")
    print(f"vs the hand-written NumPy backprop:            max |difference| "
          f"{max_diff(grads, numpy_value_and_grad(params, x, y)[1]):.1e}")
    check_grads(loss, (params, x[:16], y[:16]), order=2, modes=("fwd", "rev"))
    print("check_grads(loss, order=2, modes=('fwd', 'rev')): all compositions agree")


def higher_order(params, x, y) -> None:
    heading("5. Higher order: a Hessian-vector product (forward over reverse)")
    rng = np.random.default_rng(2)
    v = tuple(rng.standard_normal(p.shape) for p in params)
    f = lambda p: loss(p, x, y)
    hv = cr.hvp(f, (params,), (v,))
    vhv = sum(float(np.vdot(a, b)) for a, b in zip(v, hv))
    g = cr.grad(f)
    eps = 1e-5
    gp = g(tuple(p + eps * d for p, d in zip(params, v)))
    gm = g(tuple(p - eps * d for p, d in zip(params, v)))
    fd = [(a - b) / (2 * eps) for a, b in zip(gp, gm)]
    print(f"v . H v = {vhv:.6f}   (H v: {sum(h.size for h in hv)} numbers, one pass)")
    print(f"vs differences of gradients: max |difference| {max_diff(hv, fd):.1e}")
    d3 = cr.grad(cr.grad(cr.grad(cnp.tanh)))(np.float64(0.5))
    t = np.tanh(0.5)
    print(f"grad(grad(grad(tanh)))(0.5) = {float(d3):.6f}   "
          f"exact -2(1-t^2)(1-3t^2) = {-2 * (1 - t * t) * (1 - 3 * t * t):.6f}")


def _one_blas_thread() -> str:
    """Limit the already-loaded OpenBLAS to one thread (what threadpoolctl does)."""
    import ctypes

    try:
        with open("/proc/self/maps") as fh:
            libs = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        libs = set()
    for path in sorted(libs):
        lib = ctypes.CDLL(path)
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("", ""), ("scipy_", "")):
            setter = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if setter is not None:
                setter(1)
                return "1 BLAS thread"
    return f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"


def timing(params, x, y, quick: bool) -> None:
    threads = _one_blas_thread()
    heading(f"6. Time per gradient evaluation, i.e. per training step ({threads})")
    candidates = {"chainrule value_and_grad (generated NumPy code)": cr.value_and_grad(loss),
                  "hand-written NumPy backprop": numpy_value_and_grad}
    number, repeat = (20, 3) if quick else (100, 7)
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeat):  # interleaved, best of `repeat`: robust to a busy machine
        for name, fn in candidates.items():
            fn(params, x, y)
            t0 = time.perf_counter()
            for _ in range(number):
                fn(params, x, y)
            best[name] = min(best[name], (time.perf_counter() - t0) / number)
    for name, t in best.items():
        print(f"{name + ':':50s}{t * 1e6:8.1f} us")
    t_cr, t_np = best.values()
    print(f"ratio: {t_cr / t_np:.2f}x   (timings vary from run to run)")


def main(args) -> int:
    steps = max(1, min(args.steps, 40) if args.quick else args.steps)
    rng = np.random.default_rng(0)
    x, label = two_spirals(200, rng)
    x_test, label_test = two_spirals(200, rng)
    y = np.eye(2)[label]
    params = init_params(rng)
    print("chainrule demo: automatic differentiation as a compiler")
    print(f"Model: 2 -> {HIDDEN} (tanh) -> 2 softmax, cross-entropy; data: two spirals, "
          f"{len(x)} training points (seed 0)")
    show_ir(params, x, y)
    show_gradient(params, x, y)
    trained = train(params, ((x, y, label), (x_test, label_test)), steps)
    check(trained, x, y)
    higher_order(trained, x, y)
    timing(trained, x, y, args.quick)
    return 0
