"""Logistic regression on a dataset larger than any worker's memory, on a Dask cluster.

The dataset is a Dask array of row chunks, generated on the workers (never on this
machine). chainrule traces the loss once, differentiates it, and runs the generated
gradient program on the Dask arrays: every op becomes Dask graph nodes, the reductions
that cross chunks (the mean, ``X.T @ g``) are Dask's tree reductions, and the scheduler
streams the chunks through the workers, spilling to disk when they fill up.

    python examples/dask_logistic_regression.py                 # a local 2-worker cluster
    python examples/dask_logistic_regression.py --rows 20_000_000 --memory-limit 500MB
    python examples/dask_logistic_regression.py --scheduler tcp://scheduler-host:8786

With ``--scheduler`` it connects to an existing cluster (see docs/backends.md); the
workers need chainrule importable only if the program uses an op whose Dask kernel is
chainrule's own (this one uses Dask's functions only), and NumPy and Dask everywhere.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp


def loss(w, b, X, y):
    """Mean logistic loss of labels y in {-1, +1}: mean(log(1 + exp(-y (X w + b))))."""
    return cnp.mean(cnp.logaddexp(0.0, -y * (X @ w + b)))


def make_dataset(rows: int, features: int, chunk_rows: int, seed: int = 0):
    """X (rows, features) and labels y, as lazy Dask arrays generated chunk by chunk on
    the workers; the labels come from a hidden linear model plus noise."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, features), chunks=(chunk_rows, features))
    w_true = np.linspace(-1.0, 1.0, features)
    noise = rng.standard_normal(rows, chunks=chunk_rows)
    y = da.where(X @ w_true + 0.5 * noise > 0, 1.0, -1.0)
    return X, y, w_true


def fit(client, X, y, steps: int, lr: float, show_progress: bool = True, out=None):
    """Gradient descent; each step is one pass over the data on the cluster."""
    from dask.distributed import progress

    out = out if out is not None else sys.stdout
    value_and_grad = cr.value_and_grad(loss, argnums=(0, 1))
    features = X.shape[1]
    w, b = np.zeros(features), np.float64(0.0)
    history = []
    for step in range(steps):
        t0 = time.perf_counter()
        value, (gw, gb) = value_and_grad(w, b, X, y)  # lazy: Dask arrays
        futures = client.compute([value, gw, gb])
        if show_progress:
            print(f"step {step + 1}/{steps}", file=out)
            progress(futures)  # a text progress bar in a terminal, a widget in Jupyter
            print(file=out)
        value, gw, gb = client.gather(futures)
        w, b = w - lr * gw, b - lr * gb
        seconds = time.perf_counter() - t0
        history.append((float(value), seconds))
        print(f"  loss {float(value):.6f}  |grad| {np.linalg.norm(gw):.3e}  "
              f"{X.nbytes / seconds / 1e6:.0f} MB/s", file=out)
    return w, b, history


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12_500_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--chunk-rows", type=int, default=500_000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--scheduler", default=None,
                        help="address of a running Dask scheduler (default: start a local "
                             "cluster)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="400MB",
                        help="memory limit per local worker")
    args = parser.parse_args(argv)

    from dask.distributed import Client, LocalCluster

    if args.scheduler:
        client, cluster = Client(args.scheduler), None
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               memory_limit=args.memory_limit, dashboard_address=None)
        client = Client(cluster)
    try:
        X, y, w_true = make_dataset(args.rows, args.features, args.chunk_rows)
        limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
        print(f"dataset {X.nbytes / 1e9:.2f} GB in {X.numblocks[0]} chunks; "
              f"{len(limits)} workers, memory limit {min(limits) / 1e9:.2f} GB each")
        w, b, _ = fit(client, X, y, args.steps, args.lr)
        cosine = w @ w_true / (np.linalg.norm(w) * np.linalg.norm(w_true) + 1e-300)
        print(f"fitted direction vs the true one: cosine {cosine:.4f}")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
