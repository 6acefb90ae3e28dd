"""The gradient program of a softmax cross-entropy MLP does no more work than backprop
written by hand: logsumexp's derivative stays in the input's dtype (no float64
temporaries and casts in a float32 program) and its weights are exactly the
stable softmax, masked (all -inf) slices included."""

import numpy as np
import pytest
from model_losses import mlp_loss

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir.types import TensorType
from chainrule.testing import check_grads


def _weights_reference(x, axis):
    """The weights logsumexp's derivative uses, in NumPy: exp(x - m) / sum with m the
    finite maximum; a slice of -inf only gets uniform weights."""
    top = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0))
    w = e + (top == -np.inf).astype(e.dtype)
    return w / np.sum(w, axis=axis, keepdims=True)


def _tensor_dtypes(module):
    out = set()
    for fn in module.functions.values():
        for b in fn.body.bindings:
            t = b.var.type
            if isinstance(t, TensorType) and t.dtype.is_float:
                out.add(str(t.dtype))
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the -inf and inf slices
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, (0, 1)])
def test_logsumexp_gradient_is_the_stable_softmax(dtype, axis):
    x = np.array([[0.5, -1.0, 3.0], [-np.inf, -np.inf, -np.inf], [1e4, 1e4 - 1, -np.inf],
                  [np.inf, 0.0, 1.0]], dtype)
    if axis != 1:
        x = x[[0, 2]]  # a masked or infinite column would make every slice along 0 odd
    g = cr.grad(lambda x: cnp.sum(cnp.logsumexp(x, axis=axis)), eager_compile=True)(x)
    want = _weights_reference(x, axis)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g, want)


def test_logsumexp_gradient_of_float32_has_no_float64_work():
    vg = cr.value_and_grad(lambda x: cnp.sum(cnp.logsumexp(x, axis=1)), eager_compile=True)
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    vg(x)
    entry = next(iter(vg.cache.values()))
    assert _tensor_dtypes(entry.module) == {"f32"}


def test_logsumexp_derivatives_order_two():
    x = np.array([[0.3, -1.2, 2.0], [4.0, 4.5, -3.0]])
    check_grads(lambda x: cnp.sum(cnp.logsumexp(x, axis=1) ** 2), (x,), order=2,
                modes=("fwd", "rev"))


def _mlp_hand(params, x, labels):
    """Backprop by hand (as benchmarks/mlp.py's baseline, one hidden layer)."""
    w1, b1, w2, b2 = params
    n, rows = x.shape[0], np.arange(x.shape[0])
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = (np.log(s).sum() - z[rows, labels].sum()) / n
    d = e / s
    d[rows, labels] -= 1
    d /= n
    d1 = (d @ w2.T) * (1 - h * h)
    return loss, [x.T @ d1, d1.sum(axis=0), h.T @ d, d.sum(axis=0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_gradient_matches_hand_written_backprop(dtype):
    rng = np.random.default_rng(5)
    params = [rng.standard_normal((12, 8)) / 3, 0.1 * rng.standard_normal(8),
              rng.standard_normal((8, 4)) / 3, 0.1 * rng.standard_normal(4)]
    params = [p.astype(dtype) for p in params]
    x = rng.standard_normal((6, 12)).astype(dtype)
    labels = rng.integers(0, 4, 6)
    ref_value, ref_grads = _mlp_hand(params, x, labels)
    value, grads = cr.value_and_grad(mlp_loss, eager_compile=True)(params, x, labels)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    assert np.isclose(value, ref_value, rtol=tol, atol=tol)
    for g, r in zip(grads, ref_grads):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, r, rtol=10 * tol, atol=tol)
