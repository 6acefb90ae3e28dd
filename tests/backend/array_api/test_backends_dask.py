"""The gradient of a loss summed over a dataset larger than each worker's memory, as a
Dask array of row chunks, through the generated program and a local dask.distributed
cluster of two worker processes: the chunks are generated on the workers, the
reductions that cross chunks (the mean, ``X.T @ g``) are Dask's, and the result equals
the gradient written by hand with Dask (the same data, the same graph of chunks)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from repo_paths import ROOT

import chainrule as cr

pytest.importorskip("dask.array", reason="Dask is not installed (pip install 'chainrule[dask]')")
distributed = pytest.importorskip(
    "dask.distributed", reason="dask.distributed is not installed (pip install "
                               "'chainrule[dask]')")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")

sys.path.insert(0, str(ROOT / "examples"))
import dask_logistic_regression as example  # noqa: E402

MEMORY_LIMIT = 250_000_000  # bytes per worker
ROWS, FEATURES, CHUNK_ROWS = 4_000_000, 10, 100_000  # 320 MB of float64 in 40 chunks
# Spill early and in small pieces: with Dask's defaults (spill at 70%) a worker on a loaded
# machine overshot 95% of its limit while a 20 MB chunk was in flight and was restarted.
# Measured peaks with these settings: about 135 MB of the 250 MB limit.
EARLY_SPILL = {"distributed.worker.memory.target": 0.3, "distributed.worker.memory.spill": 0.4,
               "distributed.worker.memory.pause": 0.7}


@pytest.fixture(scope="module")
def client():
    import dask

    with dask.config.set(EARLY_SPILL):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           memory_limit=MEMORY_LIMIT, dashboard_address=None,
                                           processes=True)
        c = distributed.Client(cluster)
        yield c
        c.close()
        cluster.close()


def test_gradient_over_a_dataset_larger_than_worker_memory(client):
    import dask
    import dask.array as da

    X, y, w_true = example.make_dataset(ROWS, FEATURES, CHUNK_ROWS)
    workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    assert all(X.nbytes > w["memory_limit"] for w in workers.values())

    w, b = np.linspace(0.5, -0.5, FEATURES), np.float64(0.1)
    value, (gw, gb) = cr.value_and_grad(example.loss, argnums=(0, 1))(w, b, X, y)
    assert isinstance(gw, da.Array) and isinstance(value, da.Array)

    # the same gradient written by hand with Dask: d/dw mean(log(1 + exp(-y z))) =
    # X.T @ (-y sigmoid(-y z)) / n
    z = X @ w + b
    s = -y / (1 + da.exp(y * z)) / ROWS
    want_gw, want_gb = X.T @ s, da.sum(s)
    want_value = da.mean(da.logaddexp(0.0, -y * z))
    got = client.gather(client.compute([value, gw, gb, want_value, want_gw, want_gb]))
    np.testing.assert_allclose(got[0], got[3], rtol=1e-12)
    np.testing.assert_allclose(got[1], got[4], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(got[2], got[5], rtol=1e-10, atol=1e-14)
    # the workers survived (none was restarted for exceeding its memory limit)
    assert set(client.scheduler_info()["workers"]) == set(workers)
    del dask


def test_example_fits_with_a_progress_bar(client, capsys):
    X, y, w_true = example.make_dataset(400_000, 4, 100_000)
    w, b, history = example.fit(client, X, y, steps=3, lr=2.0)
    out = capsys.readouterr().out
    assert "step 3/3" in out and "loss" in out
    losses = [h[0] for h in history]
    assert losses[0] > losses[-1]
    assert w @ np.linspace(-1.0, 1.0, 4) > 0
