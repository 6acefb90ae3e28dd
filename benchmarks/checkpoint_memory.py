"""Peak memory and time of reverse mode through a 1,000-step loop, with and
without checkpointing the loop body (chainrule.checkpoint): the checkpointed
version keeps only each iteration's carry and recomputes the rest backward.
One thread, the process pinned to one core (``_common``); peak memory is what
NumPy allocates during one call (tracemalloc) with the pool of residual rows emptied
first (``kept MB``: what the pool holds after the call, for the next one), times are
min and median. ``faults`` are the minor page faults of one timed call (getrusage).

    python benchmarks/checkpoint_memory.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: pins the thread pools and the core before NumPy loads

import gc
import resource
import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ops import stack

STEPS, N = 1000, 64


def make_loss(x0, mode):
    """mode: None (store everything), "body" (checkpoint(step): carries only), k
    (fori_loop(checkpoint_every=k): a carry every k steps) or a cr.Budget (revolve)."""

    def loss(W):
        def step(i, x):
            a = cnp.tanh(x @ W)
            b = cnp.sin(a) * a
            return x - 0.01 * cnp.exp(-b * b)

        if isinstance(mode, int):
            return cnp.sum(cr.fori_loop(0, STEPS, step, x0, checkpoint_every=mode) ** 2)
        if isinstance(mode, cr.Budget):
            return cnp.sum(cr.fori_loop(0, STEPS, step, x0, checkpoint=mode) ** 2)
        body = cr.checkpoint(step) if mode == "body" else step
        return cnp.sum(cr.fori_loop(0, STEPS, body, x0) ** 2)

    return loss


def peak_with_rows(fn) -> tuple[int, int]:
    """Peak bytes NumPy allocates in one call of ``fn`` (after a first call), the rows
    of the loop's residuals included: their pool is emptied first (else the first call
    allocated them). Also the bytes the pool keeps after the call."""
    import tracemalloc

    fn()
    pool = getattr(stack, "ROW_POOL", None)  # None before rows existed (to compare)
    if pool is not None:
        pool.clear()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, pool.bytes if pool is not None else 0


def main() -> None:
    ns = C.parser(__doc__).parse_args()
    repeats = C.repeats(ns, full=5, quick=2)
    rng = np.random.default_rng(0)
    W, x0 = rng.normal(size=(N, N)) * 0.1, rng.normal(size=(N, N))
    rows = []
    for checkpointed in (None, "body", 10, 32, cr.Budget(snapshots=10)):
        g = cr.grad(make_loss(x0, checkpointed))
        g(W)  # compile
        times = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(repeats):
            t = time.perf_counter()
            g(W)
            times.append(time.perf_counter() - t)
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) // repeats
        peak, kept = peak_with_rows(lambda g=g: g(W))
        rows.append((checkpointed, peak, kept, faults, min(times), float(np.median(times))))
    print(f"reverse mode through a {STEPS}-step loop on {N}x{N} matrices "
          f"({C.versions()}, {repeats} repeats; {C.uptime()})")
    print(f"{'checkpoint':>22} | {'peak MB':>8} | {'saved':>6} | {'kept MB':>7} | "
          f"{'faults':>6} | {'min ms':>7} | {'median ms':>9}")
    labels = {None: "none", "body": "checkpoint(step)"}
    for ck, peak, kept, faults, tmin, tmed in rows:
        label = (f"Budget(snapshots={ck.snapshots})" if isinstance(ck, cr.Budget)
                 else labels.get(ck, f"checkpoint_every={ck}"))
        print(f"{label:>22} | {peak / 1e6:8.1f} | {rows[0][1] / peak:5.1f}x | "
              f"{kept / 1e6:7.1f} | {faults:6d} | {tmin * 1e3:7.1f} | {tmed * 1e3:9.1f}")


if __name__ == "__main__":
    main()
