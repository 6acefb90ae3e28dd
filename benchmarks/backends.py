"""One generated program on several array backends.

1. The MLP of ``benchmarks/mlp.py`` (784-256-256-10, tanh, softmax cross-entropy):
   ``cr.value_and_grad`` on NumPy arrays, the same on PyTorch tensors (the program
   generated against ``xp`` = PyTorch), and PyTorch eager's own autograd; one thread
   for everyone (``torch.set_num_threads(1)``).
2. Dask: the gradient of a logistic-regression loss over a dataset held in a local
   dask.distributed cluster's memory (``persist``), 1 and 2 single-threaded workers,
   in MB of data per second per worker; the same gradient written by hand with Dask
   for reference.

    python benchmarks/backends.py [--quick] [--repeats N] [--rows N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
import mlp


def mlp_rows(reps: int) -> list:
    torch = C.peer("torch")
    rows = []
    for batch in mlp.BATCHES:
        for dtype in mlp.DTYPES:
            params, x, labels = mlp.make_problem(batch, dtype)
            vg = cr.value_and_grad(mlp.cr_loss)
            fns = {"numpy": lambda vg=vg, a=(params, x, labels): vg(*a)}
            want_value, want_grads = vg(params, x, labels)
            if torch is not None:
                tparams = [torch.tensor(p) for p in params]
                tx, tlabels = torch.tensor(x), torch.tensor(labels)
                value, grads = vg(tparams, tx, tlabels)
                tol = 2e-4 if dtype == np.float32 else 1e-9
                assert abs(float(value) - float(want_value)) <= tol * (1 + abs(want_value))
                for g, w in zip(grads, want_grads):
                    np.testing.assert_allclose(g.numpy(), w, rtol=10 * tol, atol=tol)
                fns["torch backend"] = lambda vg=vg, a=(tparams, tx, tlabels): vg(*a)
                eager = mlp.torch_value_and_grad()
                targs = mlp.torch_args(params, x, labels)
                fns["torch eager"] = lambda eager=eager, a=targs: eager(*a)
            t = C.compare(fns, reps)
            row = [f"batch {batch} {np.dtype(dtype).name}", t["numpy"][0] * 1e3]
            if torch is not None:
                row += [t["torch backend"][0] * 1e3, t["torch eager"][0] * 1e3,
                        t["torch backend"][0] / t["torch eager"][0]]
            rows.append(row)
    return rows


def logistic_loss(w, X, y):
    return cnp.mean(cnp.logaddexp(0.0, -y * (X @ w)))


def dask_rows(rows_n: int, features: int, chunk_rows: int, reps: int) -> list:
    try:
        import dask.array as da
        from dask.distributed import Client, LocalCluster, wait
    except ImportError:
        return []
    out = []
    for n_workers in (1, 2):
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1,
                               dashboard_address=None, memory_limit="2GB")
        client = Client(cluster)
        try:
            rng = da.random.default_rng(0)
            X = rng.standard_normal((rows_n, features), chunks=(chunk_rows, features))
            y = da.where(X @ np.linspace(-1, 1, features) > 0, 1.0, -1.0)
            X, y = client.persist([X, y])
            wait([X, y])
            w = np.full(features, 0.1)
            grad = cr.grad(logistic_loss)

            def chainrule_step(client=client, grad=grad, w=w, X=X, y=y):
                return client.compute(grad(w, X, y)).result()

            def hand_step(client=client, w=w, X=X, y=y):
                s = -y / (1 + da.exp(y * (X @ w))) / rows_n
                return client.compute(X.T @ s).result()

            np.testing.assert_allclose(chainrule_step(), hand_step(), rtol=1e-10)
            for name, fn in (("chainrule grad", chainrule_step), ("hand-written Dask",
                                                                   hand_step)):
                times = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t0)
                best = min(times)
                out.append([f"{name}, {n_workers} worker(s)", best,
                            X.nbytes / best / 1e6 / n_workers])
        finally:
            client.close()
            cluster.close()
    return out


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--rows", type=int, default=2_000_000)
    ns = p.parse_args()
    reps = C.repeats(ns, 7, 3)
    print(f"backends ({C.versions()})")
    header = ["MLP value_and_grad", "numpy ms"]
    if C.peer("torch") is not None:
        header += ["torch backend ms", "torch eager ms", "backend/eager"]
    C.table("1. the MLP on NumPy and PyTorch (min of repeats)", header, mlp_rows(reps))
    rows = dask_rows(ns.rows, 10, max(ns.rows // 16, 1), max(2, reps // 2))
    if rows:
        C.table(f"2. Dask: logistic-regression gradient over {ns.rows} x 10 float64 "
                f"({ns.rows * 80 / 1e6:.0f} MB) held by the workers",
                ["gradient", "seconds", "MB/s per worker"], rows)


if __name__ == "__main__":
    main()
