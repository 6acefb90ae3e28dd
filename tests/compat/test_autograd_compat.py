"""chainrule.autograd_compat against HIPS autograd itself (a bench extra: those tests
skip without it): the same small programs, written once for a NumPy-like module and
run with autograd.numpy and chainrule.numpy, give the same numbers. Primitives
(``primitive`` + ``defvjp`` / ``defjvp``) are also checked against their math."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import chainrule.numpy as cnp
import chainrule.scipy.special as csp
from chainrule.compat.autograd import api as ac
from chainrule.errors import ArgumentError, ChainruleError, GradientError

try:
    import autograd
    import autograd.numpy as anp
    import autograd.scipy.special as asp
except ImportError:  # the bench extra is not installed
    autograd = anp = asp = None

needs_autograd = pytest.mark.skipif(autograd is None, reason="autograd (the bench extra: "
                                    "pip install autograd) is not installed")
RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 4))
X = RNG.normal(size=4)
Z = np.array([0.5 + 0.3j, -0.2 + 1.0j, 0.1 - 0.4j])


def both(name: str):
    """The autograd function ``name`` and its chainrule counterpart."""
    return getattr(autograd, name), getattr(ac, name)


def close(a, b, rtol=1e-10, atol=1e-12):
    la, ta = ac._tree_flatten(a)
    lb, tb = ac._tree_flatten(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


# each program: a function of the NumPy-like module, and its arguments
PROGRAMS = {
    "mlp_loss": (lambda np: lambda W, x: np.sum(np.tanh(np.dot(W, x)) ** 2), (W, X)),
    "softmax_xent": (lambda np: lambda W, x: -np.log(
        np.exp(np.dot(W, x))[1] / np.sum(np.exp(np.dot(W, x)))), (W, X)),
    "reductions": (lambda np: lambda W, x: np.dot(np.max(W, axis=1), np.mean(W ** 2, axis=1))
                   + np.prod(x[:2]), (W, X)),
    "indexing": (lambda np: lambda W, x: np.sum(W[1:, ::2] * x[None, 1::2]) + W[0, 3] ** 3,
                 (W, X)),
    "where_abs": (lambda np: lambda W, x: np.sum(np.where(W > 0, W, -0.5 * W) * np.abs(x)),
                  (W, X)),
    "concat_reshape": (lambda np: lambda W, x: np.sum(np.concatenate(
        [np.reshape(W, (-1,)), x]) ** 2 * np.arange(16.0)), (W, X)),
}


@needs_autograd
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_value_and_grad_and_tuple_argnum(name):
    make, args = PROGRAMS[name]
    f_ag, f_cr = make(anp), make(cnp)
    ag_grad, cr_grad = both("grad")
    close(cr_grad(f_cr)(*args), ag_grad(f_ag)(*args))
    close(cr_grad(f_cr, 1)(*args), ag_grad(f_ag, 1)(*args))
    close(cr_grad(f_cr, (0, 1))(*args), ag_grad(f_ag, (0, 1))(*args))
    ag_vg, cr_vg = both("value_and_grad")
    close(cr_vg(f_cr)(*args), ag_vg(f_ag)(*args))


@needs_autograd
def test_jacobian_hessian_and_products():
    vec = lambda np: lambda x: np.sin(x) * np.sum(x ** 2) + np.dot(W, x)[0]  # noqa: E731
    scal = lambda np: lambda x: np.sum(np.tanh(x) ** 3) * np.sum(x)  # noqa: E731
    v = RNG.normal(size=4)
    close(ac.jacobian(vec(cnp))(X), autograd.jacobian(vec(anp))(X))
    close(ac.jacobian(lambda M: cnp.dot(M, X))(W), autograd.jacobian(lambda M: anp.dot(M, X))(W))
    close(ac.hessian(scal(cnp))(X), autograd.hessian(scal(anp))(X))
    close(ac.hessian_vector_product(scal(cnp))(X, v),
          autograd.hessian_vector_product(scal(anp))(X, v))
    hvp_cr, g_cr = ac.make_hvp(scal(cnp))(X)
    hvp_ag, g_ag = autograd.make_hvp(scal(anp))(X)
    close(g_cr, g_ag)
    close(hvp_cr(v), hvp_ag(v))
    u = RNG.normal(size=4)
    close(ac.tensor_jacobian_product(vec(cnp))(X, u),
          autograd.tensor_jacobian_product(vec(anp))(X, u))
    close(ac.elementwise_grad(lambda x: cnp.sin(x) * x)(X),
          autograd.elementwise_grad(lambda x: anp.sin(x) * x)(X))


@needs_autograd
def test_vjp_jvp_and_deriv():
    f = lambda np: lambda a, x: np.tanh(np.dot(a, x)) * x[0]  # noqa: E731
    vjp_cr, ans_cr = ac.make_vjp(f(cnp), 1)(W, X)
    vjp_ag, ans_ag = autograd.make_vjp(f(anp), 1)(W, X)
    close(ans_cr, ans_ag)
    g = RNG.normal(size=3)
    close(vjp_cr(g), vjp_ag(g))
    t = RNG.normal(size=4)
    close(ac.make_jvp(f(cnp), 1)(W, X)(t), autograd.make_jvp(f(anp), 1)(W, X)(t))
    close(ac.deriv(lambda x: cnp.exp(x) * x)(X), autograd.deriv(lambda x: anp.exp(x) * x)(X))


@needs_autograd
def test_complex_numbers_follow_the_same_convention():
    real_of_complex = lambda np: lambda z: np.sum(np.abs(z) ** 2 + np.real(z * z))  # noqa: E731
    close(ac.grad(real_of_complex(cnp))(Z), autograd.grad(real_of_complex(anp))(Z))
    holo = lambda np: lambda z: z ** 3 + np.sin(z)  # noqa: E731
    for z in Z:
        close(ac.holomorphic_grad(holo(cnp))(z), autograd.holomorphic_grad(holo(anp))(z))


@needs_autograd
def test_python_int_picks_the_batch_as_in_autograds_examples():
    data, targets = RNG.normal(size=(8, 4)), RNG.normal(size=8)

    def objective(np):
        def f(w, it):
            k = it % 4
            rows = slice(2 * k, 2 * k + 2)
            return np.sum((np.dot(data[rows], w) - targets[rows]) ** 2)
        return f

    g_cr, g_ag = ac.grad(objective(cnp)), autograd.grad(objective(anp))
    for it in range(6):
        close(g_cr(X, it), g_ag(X, it))


@needs_autograd
def test_pytrees_and_named_gradients():
    params = {"W": W, "b": np.zeros(3), "layers": [X, X * 2]}
    loss = lambda np: lambda p, s: s * np.sum(  # noqa: E731
        np.tanh(np.dot(p["W"], p["layers"][0]) + p["b"]) * np.dot(p["W"], p["layers"][1]))
    close(ac.grad(loss(cnp))(params, 0.5), autograd.grad(loss(anp))(params, 0.5))
    f = lambda np: lambda a, b=2.0: np.sum(a * b ** 2)  # noqa: E731
    close(ac.grad_named(f(cnp), "b")(X, 3.0), autograd.grad_named(f(anp), "b")(X, 3.0))
    close(ac.grad(lambda x: csp.logsumexp(x * 2.0))(X),
          autograd.grad(lambda x: asp.logsumexp(x * 2.0))(X))


@needs_autograd
def test_user_primitive_matches_autograds():
    def make(np_mod, extend):
        @extend.primitive
        def logsumexp(x):
            m = np.max(x)
            return m + np.log(np.sum(np.exp(x - m)))

        extend.defvjp(logsumexp, lambda ans, x: lambda g: g * np_mod.exp(x - ans))
        return lambda x: logsumexp(x) * np_mod.sum(x ** 2)

    import autograd.extend as ag_extend

    f_cr, f_ag = make(cnp, ac), make(anp, ag_extend)
    close(ac.grad(f_cr)(X), autograd.grad(f_ag)(X))
    close(ac.hessian(f_cr)(X), autograd.hessian(f_ag)(X))


# -- without autograd --------------------------------------------------------------------


def test_primitive_with_statics_keywords_and_every_mode():
    @ac.primitive
    def scaled_power(x, n, *, scale=1.0):
        return scale * np.asarray(x) ** n

    ac.defvjp(scaled_power,
              lambda ans, x, n, scale=1.0: lambda g: g * scale * n * x ** (n - 1))
    x = np.array([0.5, 1.5, 2.0])
    f = lambda x: cnp.sum(scaled_power(x, 3, scale=2.0))  # noqa: E731
    np.testing.assert_allclose(ac.grad(f)(x), 6 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(ac.hessian(f)(x), np.diag(12 * x), rtol=1e-12)
    # forward mode through a VJP-only primitive: the transpose of its VJP
    np.testing.assert_allclose(ac.deriv(lambda x: scaled_power(x, 2))(x), 2 * x, rtol=1e-12)
    import chainrule as cr

    text = str(cr.trace(f, x))
    assert "autograd_scaled_power" in text
    assert cr.parse(text) == cr.trace(f, x)
    np.testing.assert_allclose(cr.jit(f)(x), np.sum(2 * x ** 3), rtol=1e-12)


def test_primitive_with_defjvp_only_and_same():
    @ac.primitive
    def cube(x):
        return x ** 3

    ac.defjvp(cube, lambda g, ans, x: g * 3 * x ** 2)

    @ac.primitive
    def double(x):
        return 2 * x

    ac.defjvp(double, "same")
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(ac.grad(lambda x: cnp.sum(cube(x)))(x), 3 * x ** 2)
    np.testing.assert_allclose(ac.jacobian(cube)(x), np.diag(3 * x ** 2))
    np.testing.assert_allclose(ac.deriv(lambda x: double(x) * x)(x), 4 * x)
    with pytest.raises(GradientError, match="forward mode only"):  # autograd's meaning too
        ac.grad(lambda x: cnp.sum(double(x) * x))(x)
    ac.defvjp(double, lambda ans, x: lambda g: 2 * g)
    np.testing.assert_allclose(ac.grad(lambda x: cnp.sum(double(x) * x))(x), 4 * x)


def test_primitive_errors_and_declared_zeros():
    @ac.primitive
    def mix(x, y):
        return x * np.sign(y)

    ac.defvjp(mix, lambda ans, x, y: lambda g: g * cnp.sign(y), None)
    x, y = np.array([1.0, 2.0]), np.array([-1.0, 3.0])
    np.testing.assert_allclose(ac.grad(lambda y: cnp.sum(mix(x, y)))(y), [0.0, 0.0])

    @ac.primitive
    def half(x, y):
        return x * y

    ac.defvjp(half, lambda ans, x, y: lambda g: g * y)
    with pytest.raises(GradientError, match="no VJP for argument 1"):
        ac.grad(lambda y: cnp.sum(half(x, y)))(y)
    with pytest.raises(ArgumentError, match="not a primitive"):
        ac.defvjp(lambda x: x, lambda ans, x: lambda g: g)
    with pytest.raises(ChainruleError, match="positionally"):
        ac.grad(lambda x: cnp.sum(half(x, y=x)))(x)


def test_multigrad_dict_and_flatten():
    def f(a, b, c=2.0):
        return cnp.sum(a * b) * c

    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    g = ac.multigrad_dict(f)(a, b)
    assert isinstance(g, collections.OrderedDict) and list(g) == ["a", "b", "c"]
    np.testing.assert_allclose(g["a"], 2 * b)
    np.testing.assert_allclose(g["c"], 11.0)
    params = {"W": np.ones((2, 2)), "b": [np.zeros(3), np.float64(1.5)]}
    vec, unflatten = ac.flatten(params)
    assert vec.shape == (8,)
    back = unflatten(vec * 2)
    np.testing.assert_allclose(back["W"], 2 * np.ones((2, 2)))
    np.testing.assert_allclose(back["b"][1], 3.0)
    # flatten's unflatten inside a compiled function (autograd's optimizers pattern)
    loss = lambda v: cnp.sum(unflatten(v)["W"] ** 2)  # noqa: E731
    np.testing.assert_allclose(ac.grad(loss)(vec)[:4], 2 * np.ones(4))


@needs_autograd
def test_tensor_jacobian_product_contracts_the_leading_axes_as_autograd():
    scale = np.arange(1.0, 4.0)
    rs = np.random.RandomState(0)
    x = rs.randn(5, 4)
    for vshape in [(5, 4, 3), (5, 4), (5,)]:
        v = rs.randn(*vshape)
        ours = ac.tensor_jacobian_product(lambda x: cnp.tanh(x)[..., None] * scale)(x, v)
        theirs = autograd.tensor_jacobian_product(
            lambda x: anp.tanh(x)[..., None] * scale)(x, v)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
