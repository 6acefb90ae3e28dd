"""custom_vjp / custom_jvp with JAX's conventions; the missing direction is derived
(forward mode through a custom_vjp function, reverse through a custom_jvp one)."""

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape as ct
from chainrule.testing import check_grads


@cr.custom_vjp
def twice_sin(x):
    return cnp.sin(x) * 2.0


def _fwd(x):
    return cnp.sin(x) * 2.0, (cnp.cos(x),)


def _bwd(res, g):
    (c,) = res
    return (g * c * 2.0,)


twice_sin.defvjp(_fwd, _bwd)


@cr.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, ()), lambda res, g: (cnp.clip(g, -1.0, 1.0),))


@cr.custom_jvp
def softplus(x):
    return cnp.log1p(cnp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * cnp.sigmoid(x)


X = np.array([0.3, -0.5, 1.2])


def test_custom_vjp_rule_is_used():
    g = cr.grad(lambda x: cnp.sum(clip_gradient(x) * 10.0))(X)
    np.testing.assert_allclose(g, [1.0, 1.0, 1.0])  # 10 clipped to 1
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(twice_sin(x)))(X), 2 * np.cos(X))
    np.testing.assert_allclose(twice_sin(X), 2 * np.sin(X))
    np.testing.assert_allclose(cr.jit(twice_sin)(X), 2 * np.sin(X))


def test_forward_mode_through_custom_vjp():
    v = np.array([1.0, -2.0, 0.5])
    _, t = cr.jvp(twice_sin, (X,), (v,))
    np.testing.assert_allclose(t, 2 * np.cos(X) * v)
    _, t = cr.jvp(lambda x: twice_sin(x) ** 2, (X,), (v,))
    np.testing.assert_allclose(t, 2 * (2 * np.sin(X)) * 2 * np.cos(X) * v)
    check_grads(lambda x: twice_sin(x) ** 2, (X,), modes=("fwd", "rev"))


def test_custom_jvp_both_modes_and_second_order():
    np.testing.assert_allclose(cr.jvp(softplus, (X,), (np.ones(3),))[1], 1 / (1 + np.exp(-X)))
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(softplus(x)))(X), 1 / (1 + np.exp(-X)))
    check_grads(lambda x: cnp.sum(softplus(x) ** 2), (X,), modes=("fwd", "rev"), order=2)


def test_custom_rules_on_the_tape():
    x = ct.tensor(X, requires_grad=True)
    cnp.sum(twice_sin(x)).backward()
    np.testing.assert_allclose(x.grad, 2 * np.cos(X))


def test_custom_vjp_needs_defvjp():
    @cr.custom_vjp
    def f(x):
        return x * 2.0

    with pytest.raises(cr.ChainruleError, match="defvjp"):
        cr.grad(lambda x: cnp.sum(f(x)))(X)
