"""Peak memory and time of reverse mode through a 1,000-step loop, with and
without checkpointing the loop body (chainrule.checkpoint): the checkpointed
version keeps only each iteration's carry and recomputes the rest backward.

    python benchmarks/checkpoint_memory.py
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

import chainrule as cr  # noqa: E402
import chainrule.numpy as cnp  # noqa: E402

STEPS, N, REPEATS = 1000, 64, 5


def make_loss(x0, mode):
    """mode: None (store everything), "body" (checkpoint(step): carries only), or k
    (fori_loop(checkpoint_every=k): a carry every k steps)."""

    def loss(W):
        def step(i, x):
            a = cnp.tanh(x @ W)
            b = cnp.sin(a) * a
            return x - 0.01 * cnp.exp(-b * b)

        if isinstance(mode, int):
            return cnp.sum(cr.fori_loop(0, STEPS, step, x0, checkpoint_every=mode) ** 2)
        body = cr.checkpoint(step) if mode == "body" else step
        return cnp.sum(cr.fori_loop(0, STEPS, body, x0) ** 2)

    return loss


def main() -> None:
    rng = np.random.default_rng(0)
    W, x0 = rng.normal(size=(N, N)) * 0.1, rng.normal(size=(N, N))
    rows = []
    for checkpointed in (None, "body", 10, 32):
        g = cr.grad(make_loss(x0, checkpointed))
        g(W)  # compile
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            g(W)
            times.append(time.perf_counter() - t)
        tracemalloc.start()
        g(W)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append((checkpointed, peak, min(times), float(np.median(times))))
    print(f"reverse mode through a {STEPS}-step loop on {N}x{N} matrices (one BLAS thread)")
    print(f"{'checkpoint':>22} | {'peak MB':>8} | {'saved':>6} | {'min ms':>7} | {'median ms':>9}")
    labels = {None: "none", "body": "checkpoint(step)"}
    for ck, peak, tmin, tmed in rows:
        label = labels.get(ck, f"checkpoint_every={ck}")
        print(f"{label:>22} | {peak / 1e6:8.1f} | {rows[0][1] / peak:5.1f}x | "
              f"{tmin * 1e3:7.1f} | {tmed * 1e3:9.1f}")


if __name__ == "__main__":
    main()
