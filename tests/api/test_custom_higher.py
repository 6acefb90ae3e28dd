"""Custom rules at every order: the residuals fwd saves carry derivatives and bwd is
differentiated again (as in JAX), so second and third derivatives through a
custom_vjp function are right; nondiff_argnums and pytree arguments; bwd's
output is checked."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.errors import ChainruleError, GradientError
from chainrule.testing import check_grads


@cr.custom_vjp
def softplus(x):
    """A stable softplus whose VJP uses a residual nonlinear in x (sigmoid)."""
    return cnp.logaddexp(x, 0.0) if hasattr(cnp, "logaddexp") else cnp.softplus(x)


def _softplus_fwd(x):
    return cnp.softplus(x), (cnp.sigmoid(x),)


def _softplus_bwd(res, g):
    (s,) = res
    return (g * s,)


softplus.defvjp(_softplus_fwd, _softplus_bwd)


@cr.custom_vjp
def cube(x):
    return x * x * x


def _cube_fwd(x):
    return x * x * x, (x * x,)  # residual nonlinear in x


def _cube_bwd(res, g):
    (sq,) = res
    return (3.0 * g * sq,)


cube.defvjp(_cube_fwd, _cube_bwd)


@cr.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, ()), lambda res, g: (cnp.clip(g, -1.0, 1.0),))

X = np.array([0.3, -1.2, 2.0])


@pytest.mark.parametrize("f", [lambda x: cnp.sum(softplus(x) * x),
                               lambda x: cnp.sum(cube(x) * cnp.sin(x)),
                               lambda x: cnp.sum(softplus(cube(x)))],
                         ids=["softplus", "cube", "composed"])
def test_orders_1_to_3_against_finite_differences(f):
    check_grads(f, (X,), order=3, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)


def test_second_derivatives_by_every_route():
    f = lambda x: cnp.sum(cube(x))  # noqa: E731  f'' = 6x
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(cr.grad(f)(x)))(X), 6 * X)
    np.testing.assert_allclose(cr.hessian(f)(X), np.diag(6 * X), atol=1e-12)
    np.testing.assert_allclose(cr.hvp(f, (X,), (np.ones(3),)), 6 * X)
    np.testing.assert_allclose(cr.jvp(cr.grad(f), (X,), (np.ones(3),))[1], 6 * X)
    # third order: f''' = 6
    d3 = cr.grad(lambda x: cnp.sum(cr.grad(lambda y: cnp.sum(cr.grad(f)(y)))(x)))(X)
    np.testing.assert_allclose(d3, 6.0)


def test_clipped_gradient_at_second_order():
    # d/dx [clip(10 x) ...]: the bwd clips; its derivative through clip is 0 where clipped
    f = lambda x: cnp.sum(clip_gradient(x) * 10.0 * x)  # noqa: E731
    g = cr.grad(f)(X)
    np.testing.assert_allclose(g, np.clip(10 * X, -1, 1) + 10 * X)
    # grad f = clip(10 x) + 10 c(x); its derivative is 10 [|10 x| < 1] from the clip, and
    # 10 c(x) differentiates through the custom rule again: clip(10) = 1 (as JAX)
    x = np.array([0.05, -1.2, 2.0])
    second = cr.grad(lambda x: cnp.sum(cr.grad(f)(x)))(x)  # reverse over reverse
    np.testing.assert_allclose(second, [11.0, 1.0, 1.0], atol=1e-12)
    # forward mode derives the JVP by transposing bwd, which must be linear in g
    with pytest.raises(ChainruleError, match="linear in its cotangent"):
        cr.jvp(f, (x,), (np.ones(3),))


def test_grad_of_grad_on_the_tape():
    x = tape.tensor(X, requires_grad=True)
    (g,) = tape.graph.grad_tensors(cnp.sum(cube(x)), [x], create_graph=True)
    (h,) = tape.graph.grad_tensors(cnp.sum(g), [x])
    np.testing.assert_allclose(h, 6 * X)


@cr.custom_vjp
def scaled(x, k):
    return x * k


scaled.defvjp(lambda x, k: (x * k, None), lambda k, res, g: (g * k,))
scaled_nd = cr.custom_vjp(lambda x, k: x * k, nondiff_argnums=(1,))
scaled_nd.defvjp(lambda x, k: (x * k, None), lambda k, res, g: (g * k * 2,))


def test_nondiff_argnums_pass_first_to_bwd():
    g = cr.grad(lambda x: cnp.sum(scaled_nd(x, 3.0)))(X)
    np.testing.assert_allclose(g, 6.0)  # the (deliberately doubled) rule is used


@cr.custom_vjp
def tree_fn(params, x):
    return cnp.sum(params["w"] * x) + params["b"]


def _tree_fwd(params, x):
    return tree_fn(params, x), (params, x)


def _tree_bwd(res, g):
    params, x = res
    return {"w": g * x, "b": g}, g * params["w"]


tree_fn.defvjp(_tree_fwd, _tree_bwd)


def test_pytree_arguments():
    params = {"w": np.array([1.0, 2.0]), "b": np.float64(0.5)}
    x = np.array([3.0, 4.0])
    gp, gx = cr.grad(tree_fn, argnums=(0, 1))(params, x)
    np.testing.assert_allclose(gp["w"], x)
    np.testing.assert_allclose(gp["b"], 1.0)
    np.testing.assert_allclose(gx, params["w"])


def _bad(bwd):
    f = cr.custom_vjp(lambda x: x * 2.0)
    f.__name__ = "doubling"
    f.name = "doubling"
    f.defvjp(lambda x: (x * 2.0, ()), bwd)
    return lambda x: cnp.sum(f(x))


@pytest.mark.parametrize("bwd, words", [
    (lambda res, g: (cnp.sum(g),), "shape"),
    (lambda res, g: (g, g), "one entry per differentiable argument"),
    (lambda res, g: g, "must return a tuple"),
    (lambda res, g: (cnp.astype(g, np.float32),), "dtype"),
])
def test_bwd_output_is_checked(bwd, words):
    with pytest.raises(GradientError, match=words) as info:
        cr.grad(_bad(bwd))(X)
    assert "doubling" in str(info.value)


def test_nondiff_argument_that_is_differentiated_is_an_error():
    with pytest.raises(ChainruleError, match="nondiff_argnums"):
        cr.grad(lambda k: cnp.sum(scaled_nd(X, k)))(np.float64(2.0))


def test_a_closure_over_a_differentiated_value_is_refused_not_zero():
    """As JAX: the rule covers the arguments only, so differentiating with respect to a
    value the function reads from outside them is an error (it was a silent 0)."""
    from chainrule import tape
    from chainrule.errors import NoRuleError

    def outer(a, x):
        @cr.custom_vjp
        def f(x):
            return x * a

        f.defvjp(lambda x: (x * a, None), lambda res, g: (g * 2.0,))
        return cnp.sum(f(x))

    a, x = np.float64(2.0), np.array([1.0, 3.0])
    with pytest.raises(NoRuleError, match="reads from outside its arguments"):
        cr.grad(outer)(a, x)
    np.testing.assert_allclose(cr.grad(outer, argnums=1)(a, x), [2.0, 2.0])  # a is constant
    ta, tx = tape.tensor(a, requires_grad=True), tape.tensor(x, requires_grad=True)
    with pytest.raises(NoRuleError, match="reads from outside its arguments"):
        outer(ta, tx).backward()
    tx = tape.tensor(x, requires_grad=True)
    outer(tape.tensor(a), tx).backward()
    np.testing.assert_allclose(tx.grad, [2.0, 2.0])


def test_a_closure_over_a_global_array_still_compiles():
    weights = np.array([1.0, 2.0])

    @cr.custom_vjp
    def f(x):
        return x * weights

    f.defvjp(lambda x: (x * weights, None), lambda res, g: (g * weights,))
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(f(x)))(np.ones(2)), weights)
    weights[:] = 3.0  # read afresh at each call
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(f(x)))(np.ones(2)), [3.0, 3.0])
