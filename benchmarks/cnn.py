"""A small CNN (examples/cnn_digits.py) and conv2d alone: chainrule against PyTorch eager.

Rows:

1. One training epoch of the digits CNN (conv 1->16 3x3, ReLU, 2x2 max pool, conv
   16->32 3x3, ReLU, 2x2 max pool, dense 128->10; softmax cross-entropy; Adam; batch 32,
   1437 images of 8x8, float32): chainrule's one ``cr.jit`` step (loss, gradient,
   update) against the same model in PyTorch eager (``torch.optim.Adam``). Synthetic
   images of the digits' shape, so scikit-learn is not needed. Target: ratio <= 1.5.
2. conv2d forward + backward (the loss ``sum(conv2d(x, w, b) * c)``, its value and the
   gradients in x, w and b) at batch 64, 32 channels in and out, 3x3 kernel, padding 1,
   28x28, float32 and float64. Target: ratio <= 2.

One thread for everyone (``_common``). chainrule's convolutions are GEMMs in NumPy's
BLAS, so their speed is that BLAS's: the script prints which kernels OpenBLAS runs (with
``threadpoolctl`` installed). On a virtual machine whose CPU OpenBLAS does not recognize
(an "AMD EPYC" with AVX-512) it falls back to its Haswell (AVX2) kernels;
``OPENBLAS_CORETYPE=SkylakeX`` selects the AVX-512 ones, and its GEMMs there run 1.4-2x
faster (PyTorch's oneDNN uses AVX-512 either way).

    python benchmarks/cnn.py [--quick] [--repeats N]
    OPENBLAS_CORETYPE=SkylakeX python benchmarks/cnn.py
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import importlib.util
import os

import numpy as np

import chainrule as cr
import chainrule.nn as F
import chainrule.numpy as cnp
from chainrule import optim


def _example():
    """examples/cnn_digits.py as a module: the benchmark times that very model."""
    path = os.path.join(C.ROOT, "examples", "cnn_digits.py")
    spec = importlib.util.spec_from_file_location("cnn_digits", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EX = _example()
TRAIN, BATCH = 1437, 32


def digits_like(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (TRAIN, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, TRAIN)
    return x, y


# -- one epoch --------------------------------------------------------------------------------
def chainrule_epoch(x, y):
    params = EX.init_params(np.random.default_rng(0))
    opt = optim.adam(5e-3)
    state = [params, opt.init(params)]
    step = EX.make_step(opt)
    steps = len(y) // BATCH

    def epoch():
        p, s = state
        for k in range(steps):
            sl = slice(k * BATCH, (k + 1) * BATCH)
            p, s, loss = step(p, s, x[sl], y[sl])
        state[:] = [p, s]
        return float(loss)

    return epoch


def torch_epoch(x, y):
    torch = C.peer("torch")
    tf = torch.nn.functional
    params = {k: torch.from_numpy(v.copy()).requires_grad_()
              for k, v in EX.init_params(np.random.default_rng(0)).items()}
    opt = torch.optim.Adam(params.values(), lr=5e-3)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    steps = len(y) // BATCH

    def model(p, x):
        h = tf.max_pool2d(tf.relu(tf.conv2d(x, p["conv1"], p["b1"], padding=1)), 2)
        h = tf.max_pool2d(tf.relu(tf.conv2d(h, p["conv2"], p["b2"], padding=1)), 2)
        return h.reshape(h.shape[0], -1) @ p["dense"] + p["b3"]

    def epoch():
        for k in range(steps):
            sl = slice(k * BATCH, (k + 1) * BATCH)
            opt.zero_grad()
            loss = tf.cross_entropy(model(params, tx[sl]), ty[sl])
            loss.backward()
            opt.step()
        return loss.item()

    return epoch


# -- conv2d forward + backward ----------------------------------------------------------------
def conv_problem(dtype, batch=64, channels=32, size=28, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, size, size)).astype(dtype)
    w = (rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(9 * channels)).astype(dtype)
    b = rng.standard_normal(channels).astype(dtype)
    c = rng.standard_normal((batch, channels, size, size)).astype(dtype)
    return x, w, b, c


def chainrule_conv(x, w, b, c):
    vg = cr.jit(cr.value_and_grad(
        lambda x, w, b: cnp.sum(F.conv2d(x, w, b, padding=1) * c), argnums=(0, 1, 2)))
    return lambda: vg(x, w, b)


def torch_conv(x, w, b, c):
    torch = C.peer("torch")
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x, w, b))
    tc = torch.from_numpy(c)

    def run():
        loss = (torch.nn.functional.conv2d(tx, tw, tb, padding=1) * tc).sum()
        return loss.item(), torch.autograd.grad(loss, (tx, tw, tb))

    return run


def check_conv(x, w, b, c) -> None:
    """chainrule's value and gradients equal PyTorch's (float64)."""
    if C.peer("torch") is None:
        return
    args = [a.astype(np.float64) for a in (x[:4], w, b, c[:4])]
    value, grads = chainrule_conv(*args)()
    tvalue, tgrads = torch_conv(*args)()
    assert np.isclose(value, tvalue, rtol=1e-10), (value, tvalue)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g, tg.numpy(), rtol=1e-9, atol=1e-9)


def blas() -> str:
    """Which BLAS NumPy runs, with which kernels (threadpoolctl, when installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS: unknown kernels (pip install threadpoolctl to see them)"
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "BLAS: " + "; ".join(
        f"{i.get('internal_api')} {i.get('version')}, {i.get('architecture')} kernels, "
        f"{i.get('num_threads')} thread(s)" for i in infos)


def main() -> None:
    ns = C.parser(__doc__).parse_args()
    reps = C.repeats(ns, 7, 2)
    print(f"CNN training epoch and conv2d forward+backward; {reps} repeats; {C.versions()}")
    print(blas())
    print(C.uptime())
    torch = C.peer("torch")
    x, y = digits_like()
    fns = {"chainrule": chainrule_epoch(x, y)}
    if torch is not None:
        fns["PyTorch eager"] = torch_epoch(x, y)
    times = C.compare(fns, reps, {name: 1 for name in fns})
    cr_min, cr_med = times["chainrule"]
    rows = [[name, 1e3 * t[0], 1e3 * t[1], C.ratio(cr_min, t[0]), C.ratio(cr_med, t[1])]
            for name, t in times.items()]
    C.table(f"one epoch of the digits CNN ({TRAIN // BATCH} steps of batch {BATCH}, float32)",
            ["", "min ms", "median ms", "chainrule / this (min)", "(median)"], rows,
            "target: chainrule / PyTorch eager <= 1.5")
    rows = []
    for dtype in (np.float32, np.float64):
        problem = conv_problem(dtype)
        check_conv(*problem)
        fns = {"chainrule": chainrule_conv(*problem)}
        if torch is not None:
            fns["PyTorch eager"] = torch_conv(*problem)
        times = C.compare(fns, reps)
        cr_min, cr_med = times["chainrule"]
        for name, t in times.items():
            rows.append([f"{name} {np.dtype(dtype).name}", 1e3 * t[0], 1e3 * t[1],
                         C.ratio(cr_min, t[0]), C.ratio(cr_med, t[1])])
    C.table("conv2d forward + backward (x, w, b): batch 64, 32 -> 32 channels, 3x3, 28x28",
            ["", "min ms", "median ms", "chainrule / this (min)", "(median)"], rows,
            "target: chainrule / PyTorch <= 2")
    print(C.uptime())


if __name__ == "__main__":
    main()
