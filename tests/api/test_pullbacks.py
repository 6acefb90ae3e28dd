"""A pullback from vjp is a function like any other: its cotangent may be traced
(under jit, grad, jvp, vjp) or a tape tensor; the double-VJP route to forward
mode (MindSpore's Jvp) is public as cr.jvp_via_vjp."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape


def f(x, w):
    return cnp.tanh(x @ w) * cnp.sum(w)


X = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.7]])
W = np.array([[1.0, -0.5, 0.2], [0.3, 0.8, -1.1]])
CT = np.array([[1.0, -2.0, 0.5]] * 3)


def reference(ct):
    """J^T ct, by the compiled vjp on arrays."""
    return cr.vjp(f, X, W)[1](ct)


@pytest.mark.parametrize("route", ["jit", "grad", "jvp", "vjp", "tape"])
def test_pullback_on_traced_and_recorded_cotangents(route):
    _, pullback = cr.vjp(f, X, W)
    want = reference(CT)
    if route == "jit":
        got = cr.jit(lambda ct: pullback(ct))(CT)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    elif route == "grad":  # pullback is linear in ct: grad of <pullback(ct)[0], u> is J u
        u = np.ones_like(X)
        g = cr.grad(lambda ct: cnp.sum(pullback(ct)[0] * u))(CT)
        e = np.zeros_like(CT)
        for idx in np.ndindex(CT.shape):
            e[:] = 0
            e[idx] = 1
            assert abs(g[idx] - np.sum(reference(e)[0] * u)) < 1e-12
    elif route == "jvp":
        t = np.random.default_rng(0).standard_normal(CT.shape)
        _, tout = cr.jvp(lambda ct: pullback(ct)[1], (CT,), (t,))
        np.testing.assert_allclose(tout, reference(t)[1], rtol=1e-12)
    elif route == "vjp":  # the VJP of a pullback is the JVP of f
        _, pb2 = cr.vjp(lambda ct: pullback(ct), CT)
        tx, tw = np.ones_like(X), np.zeros_like(W)
        (jt,) = pb2((tx, tw))
        np.testing.assert_allclose(jt, cr.jvp(f, (X, W), (tx, tw))[1], rtol=1e-12)
    else:
        ct = tape.tensor(CT, requires_grad=True)
        gx, gw = pullback(ct)
        cnp.sum(gx * gx).backward()
        u = 2 * want[0]
        np.testing.assert_allclose(ct.grad, cr.jvp(f, (X, W), (u, np.zeros_like(W)))[1],
                                   rtol=1e-12)


def test_jvp_via_vjp_equals_jvp():
    tx, tw = np.random.default_rng(1).standard_normal(X.shape), np.ones_like(W)
    y1, t1 = cr.jvp_via_vjp(f, (X, W), (tx, tw))
    y2, t2 = cr.jvp(f, (X, W), (tx, tw))
    np.testing.assert_allclose(y1, y2, rtol=1e-14)
    np.testing.assert_allclose(t1, t2, rtol=1e-12)


def test_mindspore_jvp_from_two_vjps_in_a_loop():
    """seed 004's example: forward mode built from reverse mode, through control flow."""
    def g(x):
        return cr.fori_loop(0, 3, lambda i, c: cnp.sin(c) * c, x)

    x, t = np.array([0.4, 1.1]), np.array([1.0, -1.0])
    np.testing.assert_allclose(cr.jvp_via_vjp(g, (x,), (t,))[1], cr.jvp(g, (x,), (t,))[1],
                               rtol=1e-12)
