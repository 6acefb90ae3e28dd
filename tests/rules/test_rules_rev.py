"""Reverse-mode derivatives of every op, orders 1 and 2, against central finite
differences in float64 (random cotangents, inner-product identity)."""

import numpy as np
import pytest
from model_losses import layers_mlp_loss
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.testing import check_grads


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_reverse_order_1(name):
    f, args = CATALOG[name]
    check_grads(f, args, order=1, modes=("rev",))


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_reverse_order_2(name):
    f, args = CATALOG[name]
    check_grads(f, args, order=2, modes=("rev",), atol=1e-4, rtol=1e-4)


def test_grad_of_sin_to_order_4():
    x = np.float64(0.7)
    g = cnp.sin
    expected = [np.cos(x), -np.sin(x), -np.cos(x), np.sin(x)]
    for want in expected:
        g = cr.grad(g)
        np.testing.assert_allclose(g(x), want, rtol=1e-12)


def _mlp(rng, sizes):
    return [(rng.normal(size=(m, n)) / np.sqrt(m), rng.normal(size=n) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:])]


def test_mlp_softmax_cross_entropy():
    rng = np.random.default_rng(0)
    params = _mlp(rng, [5, 7, 6, 3])
    x = rng.normal(size=(4, 5))
    labels = np.array([0, 2, 1, 2])
    check_grads(lambda p: layers_mlp_loss(p, x, labels), (params,), order=1)
    check_grads(lambda p: layers_mlp_loss(p, x, labels), (params,), order=2, atol=1e-4, rtol=1e-4)


def test_value_and_grad_argnums_and_aux():
    rng = np.random.default_rng(1)
    W, b, x = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(5, 4))

    def loss(W, b, x):
        y = cnp.tanh(x @ W + b)
        return cnp.sum(y ** 2), {"y": y}

    (v, aux), (gW, gb) = cr.value_and_grad(loss, argnums=(0, 1), has_aux=True)(W, b, x)
    y = np.tanh(x @ W + b)
    np.testing.assert_allclose(v, np.sum(y ** 2))
    np.testing.assert_allclose(aux["y"], y)
    dz = 2 * y * (1 - y ** 2)
    np.testing.assert_allclose(gW, x.T @ dz)
    np.testing.assert_allclose(gb, dz.sum(0))
    g, aux2 = cr.grad(loss, argnums=1, has_aux=True)(W, b, x)
    np.testing.assert_allclose(g, gb)


def test_vjp_pytree_and_nonscalar():
    x = {"a": np.array([0.1, 0.2]), "b": np.array(3.0)}

    def f(p):
        return (cnp.exp(p["a"]) * p["b"], cnp.sum(p["a"]))

    out, pullback = cr.vjp(f, x)
    np.testing.assert_allclose(out[0], np.exp(x["a"]) * 3.0)
    (g,) = pullback((np.array([1.0, 2.0]), np.array(1.0)))
    np.testing.assert_allclose(g["a"], np.exp(x["a"]) * 3.0 * [1.0, 2.0] + 1.0)
    np.testing.assert_allclose(g["b"], np.sum(np.exp(x["a"]) * [1.0, 2.0]))


def test_grad_cache_by_signature():
    calls = []

    def f(x):
        calls.append(1)
        return cnp.sum(x * x)

    g = cr.grad(f)
    g(np.ones(3))
    g(np.zeros(3))
    assert len(calls) == 1
    g(np.ones(4))
    assert len(calls) == 2


def test_stop_gradient_blocks_the_gradient():
    x = np.array([0.5, -1.0, 2.0])
    g = cr.grad(lambda x: cnp.sum(cnp.stop_gradient(x) * x))(x)
    np.testing.assert_allclose(g, x)
    hess_diag = cr.grad(lambda x: cnp.sum(cr.grad(lambda y: cnp.sum(y ** 3))(x)))(x)
    np.testing.assert_allclose(hess_diag, 6 * x)
