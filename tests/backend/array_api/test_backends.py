"""Programs on PyTorch and Dask arrays, written as users write them: grad,
value_and_grad, vjp, jvp, hvp, control flow and checkpointing give NumPy's results
(and finite differences' on the backend itself); the backend is chosen by the
arguments' type or by ``cr.jit(f, backend=...)``; an op a backend cannot run is an
error naming the op and the backend. Tests of a backend whose package is missing are
skipped, saying which package."""

from __future__ import annotations

import numpy as np
import pytest
from array_backends import host, is_backend_array, on
from finite_differences import fd_grad

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.array_api.namespaces import NAMESPACES, compile_for
from chainrule.errors import ArgumentError, BackendError, InterpretError

BACKENDS = [
    pytest.param(name, marks=pytest.mark.skipif(
        not NAMESPACES[name].available(),
        reason=f"{name} is not installed (pip install 'chainrule[{name}]')"))
    for name in ("torch", "dask")
]


def mlp_loss(W1, b1, W2, x, y):
    h = cnp.tanh(x @ W1 + b1)
    return cnp.mean((h @ W2 - y) ** 2)


def mlp_args(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype)
            for s in [(4, 8), (8,), (8, 1), (16, 4), (16, 1)]]


@pytest.mark.parametrize("name", BACKENDS)
def test_grad_of_an_mlp_equals_numpy(name):
    args = mlp_args()
    want = cr.grad(mlp_loss, argnums=(0, 1, 2))(*args)
    got = cr.grad(mlp_loss, argnums=(0, 1, 2))(*[on(name, a) for a in args])
    for g, w in zip(got, want):
        assert is_backend_array(name, g)
        np.testing.assert_allclose(host(name, g), w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", BACKENDS)
def test_float32_stays_float32(name):
    args = mlp_args(np.float32)
    want = cr.value_and_grad(mlp_loss)(*args)
    value, g = cr.value_and_grad(mlp_loss)(*[on(name, a) for a in args])
    assert host(name, g).dtype == np.float32 and host(name, value).dtype == np.float32
    np.testing.assert_allclose(host(name, value), want[0], rtol=1e-5)
    np.testing.assert_allclose(host(name, g), want[1], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", BACKENDS)
def test_grad_matches_finite_differences_on_the_backend(name):
    args = mlp_args()
    g = cr.grad(mlp_loss)(*[on(name, a) for a in args])
    loss_on = cr.jit(mlp_loss)

    def f(w1):  # the loss evaluated on the backend
        return float(host(name, loss_on(on(name, w1), *[on(name, a) for a in args[1:]])))

    np.testing.assert_allclose(host(name, g), fd_grad(f, (args[0],)), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("name", BACKENDS)
def test_vjp_jvp_hvp(name):
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal(5), rng.standard_normal(5)

    def f(x):
        return cnp.sin(x) * cnp.exp(x / 3)

    def scalar(x):
        return cnp.sum(cnp.tanh(x) ** 3)

    out, pull = cr.vjp(f, on(name, x))
    (ct,) = pull(on(name, v))
    want_out, want_pull = cr.vjp(f, x)
    np.testing.assert_allclose(host(name, out), want_out, rtol=1e-13)
    np.testing.assert_allclose(host(name, ct), want_pull(v)[0], rtol=1e-13)
    y, t = cr.jvp(f, (on(name, x),), (on(name, v),))
    want_y, want_t = cr.jvp(f, (x,), (v,))
    np.testing.assert_allclose(host(name, y), want_y, rtol=1e-13)
    np.testing.assert_allclose(host(name, t), want_t, rtol=1e-13)
    hv = cr.hvp(scalar, (on(name, x),), (on(name, v),))
    np.testing.assert_allclose(host(name, hv), cr.hvp(scalar, (x,), (v,)), rtol=1e-12)


@pytest.mark.parametrize("name", BACKENDS)
def test_control_flow_and_checkpointing(name):
    def f(x, n):
        def body(i, carry):
            return carry * 0.5 + cnp.sin(carry) * x

        y = cr.fori_loop(0, n, body, x)
        z = cr.cond(cnp.sum(y) > 0, lambda a: a * 2.0, lambda a: a - 1.0, y)

        def inner(a):
            return cnp.tanh(a) @ a

        return cr.checkpoint(inner)(z)

    x = np.linspace(-1.0, 1.0, 6)
    want = cr.value_and_grad(f)(x, 4)
    value, g = cr.value_and_grad(f)(on(name, x), 4)
    np.testing.assert_allclose(host(name, value), want[0], rtol=1e-12)
    np.testing.assert_allclose(host(name, g), want[1], rtol=1e-12)

    def loop(x):
        return cr.while_loop(lambda c: cnp.sum(c) < 10.0, lambda c: c * 1.5 + 0.1, x)

    np.testing.assert_allclose(host(name, cr.jit(loop)(on(name, x + 1.5))),
                               cr.jit(loop)(x + 1.5), rtol=1e-13)


@pytest.mark.parametrize("name", BACKENDS)
def test_gather_gradient_accumulates_repeated_positions(name):
    labels = np.array([0, 2, 2, 1])

    def f(logits):
        logp = logits - cnp.logsumexp(logits, axis=1, keepdims=True)
        return -cnp.mean(logp[np.arange(4), labels] + logp[:, ::-1][0, 0])

    x = np.random.default_rng(2).standard_normal((4, 3))
    try:
        g = cr.grad(f)(on(name, x))
    except (BackendError, InterpretError) as exc:  # Dask: no 2-d fancy indexing
        assert name == "dask" and name in str(exc) and "index" in str(exc), exc
        pytest.skip(str(exc))
    np.testing.assert_allclose(host(name, g), cr.grad(f)(x), rtol=1e-13)


@pytest.mark.parametrize("name", BACKENDS)
def test_jit_backend_moves_numpy_arguments(name):
    f = cr.jit(lambda x, y: cnp.sum(x * y), backend=name)
    out = f(np.arange(3.0), np.ones(3))
    assert is_backend_array(name, out)
    assert float(host(name, out)) == 3.0
    assert "xp.multiply(x, y)" in f.source(np.arange(3.0), np.ones(3))


@pytest.mark.parametrize("name", BACKENDS[:1])
def test_an_op_without_a_kernel_names_the_op_and_the_backend(name):
    import chainrule.scipy.special as css

    f = cr.jit(lambda a, x: cnp.sum(css.gammainc(a, x)))
    with pytest.raises(BackendError, match=rf"gammainc.*{name}"):
        f(on(name, np.ones(3)), on(name, np.ones(3)))


@pytest.mark.skipif(not NAMESPACES["dask"].available(), reason="Dask is not installed")
def test_dask_runs_numpy_kernels_chunk_by_chunk_or_as_one_task():
    import dask.array as da

    import chainrule.scipy.special as css

    a, x = np.linspace(0.5, 2.0, 8), np.linspace(0.1, 3.0, 8)
    f = cr.jit(lambda a, x: css.gammainc(a, x))  # elementwise: map_blocks per chunk
    out = f(da.from_array(a, chunks=4), da.from_array(x, chunks=4))
    assert out.chunks == ((4, 4),)
    np.testing.assert_allclose(out.compute(), f(a, x), rtol=1e-14)
    m = np.array([[4.0, 1.0], [1.0, 3.0]])  # a factorization: one task on the whole matrix
    g = cr.grad(lambda m: cnp.sum(cnp.linalg.eigvalsh(m) ** 3))
    np.testing.assert_allclose(g(da.from_array(m, chunks=1)).compute(), g(m), rtol=1e-12)


@pytest.mark.parametrize("name", BACKENDS)
def test_wrong_shape_and_mixed_libraries_are_refused(name):
    f = cr.jit(lambda x: cnp.sum(x))
    f(on(name, np.ones(3)))
    g = compile_for(f.module(np.ones(3)), name)
    with pytest.raises(cr.ChainruleError, match="expected f64\\[3\\]"):
        g(on(name, np.ones(4)))
    other = "dask" if name == "torch" else "torch"
    if NAMESPACES[other].available():
        with pytest.raises(ArgumentError, match="two array libraries"):
            cr.jit(lambda x, y: cnp.sum(x + y))(on(name, np.ones(3)), on(other, np.ones(3)))


def test_unknown_backend_is_refused():
    with pytest.raises(ArgumentError, match="unknown backend 'jax'"):
        cr.jit(lambda x: x, backend="jax")


@pytest.mark.skipif(not NAMESPACES["torch"].available(), reason="PyTorch is not installed")
def test_torch_result_never_aliases_an_argument_and_keeps_the_device():
    import torch

    x = torch.ones(3, dtype=torch.float64)
    y = cr.jit(lambda a: a)(x)
    assert y is not x and y.device == x.device
    y[0] = 5.0
    assert float(x[0]) == 1.0


@pytest.mark.skipif(not NAMESPACES["torch"].available(), reason="PyTorch is not installed")
def test_torch_special_functions_use_torch_special():
    import torch

    import chainrule.scipy.special as css

    x = np.linspace(0.1, 2.0, 5)
    g = cr.grad(lambda x: cnp.sum(css.erf(x) * css.gammaln(x)))
    out = g(torch.tensor(x))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), g(x), rtol=1e-12)


@pytest.mark.skipif(not NAMESPACES["dask"].available(), reason="Dask is not installed")
def test_dask_gradient_is_lazy_and_keeps_chunks():
    import dask.array as da

    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((1000, 4)), np.sign(rng.standard_normal(1000))
    w = np.full(4, 0.1)

    def loss(w, X, y):
        return cnp.mean(cnp.logaddexp(0.0, -y * (X @ w)))

    Xd, yd = da.from_array(X, chunks=(250, 4)), da.from_array(y, chunks=250)
    g = cr.grad(loss)(w, Xd, yd)
    assert isinstance(g, da.Array)  # nothing computed yet
    z = cr.jit(lambda X, w: cnp.tanh(X @ w))(Xd, w)
    assert z.chunks == ((250, 250, 250, 250),)  # row chunks survive the program
    np.testing.assert_allclose(g.compute(), cr.grad(loss)(w, X, y), rtol=1e-12)
