"""Random numbers drawn inside compiled functions are drawn afresh at every call,
from the user's own generator, in the order running the function would draw
them; what cannot be compiled runs uncompiled with a warning; chainrule.random
gives JAX-style keys that compile."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ChainruleWarning


def eager_twice(make_gen, draw):
    gen = make_gen()
    return draw(gen), draw(gen)


def test_closure_randomstate_under_grad_matches_running_it():
    rs = np.random.RandomState(0)
    g = cr.grad(lambda x: cnp.sum(x * rs.randn(3)))
    got = [g(np.ones(3)) for _ in range(3)]
    ref = np.random.RandomState(0)
    for draw in got:
        np.testing.assert_array_equal(draw, ref.randn(3))


def test_global_functions_under_jit_vjp_and_hvp():
    np.random.seed(5)
    f = cr.jit(lambda x: x * np.random.randn(2) + np.random.rand(2))
    a, b = f(np.ones(2)), f(np.ones(2))
    np.random.seed(5)
    np.testing.assert_array_equal(a, np.random.randn(2) + np.random.rand(2))
    np.testing.assert_array_equal(b, np.random.randn(2) + np.random.rand(2))
    # hvp of a noisy objective: the noise is redrawn, the curvature term is exact
    h = lambda x: cnp.sum(x * x * np.random.normal(0.0, 1.0, 2))  # noqa: E731
    np.random.seed(1)
    got = cr.hvp(h, (np.ones(2),), (np.ones(2),))
    np.random.seed(1)
    np.testing.assert_allclose(got, 2 * np.random.normal(0.0, 1.0, 2))


def test_generator_reparameterized_gradient():
    gen = np.random.default_rng(3)
    mu = np.array([1.0, 2.0])
    loss = lambda m: cnp.sum(gen.normal(m, 2.0) ** 2)  # noqa: E731
    g = cr.grad(loss)
    ref = np.random.default_rng(3)
    for _ in range(3):
        z = ref.standard_normal(2)
        np.testing.assert_allclose(g(mu), 2 * (mu + 2 * z), rtol=1e-14)


def test_draws_in_a_loop_are_one_per_iteration():
    rs = np.random.RandomState(2)
    f = cr.jit(lambda x: cr.fori_loop(0, 4, lambda i, c: c + rs.randn(2), x))
    got = f(np.zeros(2))
    ref = np.random.RandomState(2)
    np.testing.assert_allclose(got, sum(ref.randn(2) for _ in range(4)))


def test_two_draws_are_not_merged_and_unused_draws_still_advance():
    rs = np.random.RandomState(4)

    def f(x):
        rs.randn(5)  # unused: still advances the generator, as running f does
        return x + rs.randn(2) - rs.randn(2)

    got = cr.jit(f)(np.zeros(2))
    ref = np.random.RandomState(4)
    ref.randn(5)
    np.testing.assert_array_equal(got, ref.randn(2) - ref.randn(2))


def test_black_box_variational_gradient_is_unbiased():
    """autograd's black-box SVI: the Monte Carlo ELBO gradient is new at every call and
    averages to the exact gradient (target N(3, 1), q = N(mu, 1))."""
    rs = np.random.RandomState(0)

    def neg_elbo(mu):
        z = mu + rs.randn(64)
        return cnp.mean(0.5 * (z - 3.0) ** 2)

    g = cr.grad(neg_elbo)
    draws = [g(np.float64(0.0)) for _ in range(200)]
    assert len(set(draws)) == 200
    assert abs(np.mean(draws) - (0.0 - 3.0)) < 0.05


def test_what_cannot_be_compiled_runs_uncompiled_with_a_warning():
    rs = np.random.RandomState(7)

    def f(x):
        perm = rs.permutation(3)  # not compiled by chainrule
        return cnp.sum(x[perm] * np.arange(3.0))

    g = cr.grad(f)
    with pytest.warns(ChainruleWarning, match="permutation"):
        a = g(np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        b = g(np.ones(3))
    ref = np.random.RandomState(7)
    for got in (a, b):
        want = np.zeros(3)
        want[ref.permutation(3)] = np.arange(3.0)
        np.testing.assert_array_equal(got, want)


def test_unseeded_generator_inside_and_seed_inside():
    with pytest.warns(ChainruleWarning, match="without a seed"):
        f = cr.jit(lambda x: x * np.random.default_rng().standard_normal(2))
        assert not np.array_equal(f(np.ones(2)), f(np.ones(2)))

    def reseeding(x):
        np.random.seed(0)
        return x * np.random.randn(2)

    with pytest.warns(ChainruleWarning):
        got = cr.jit(reseeding)(np.ones(2))
    np.random.seed(0)
    np.testing.assert_array_equal(got, np.random.randn(2))


def test_keys_are_reproducible_and_compile():
    key = cr.random.PRNGKey(0)
    k1, k2 = cr.random.split(key)
    a = cr.random.normal(k1, (1000,))
    np.testing.assert_array_equal(a, cr.random.normal(k1, (1000,)))
    assert not np.array_equal(a, cr.random.normal(k2, (1000,)))
    assert abs(a.mean()) < 0.1 and abs(a.std() - 1) < 0.1
    f = cr.jit(lambda k, mu, s: mu + s * cr.random.normal(k, (3,)))
    np.testing.assert_allclose(f(k1, 1.0, 2.0), 1.0 + 2.0 * cr.random.normal(k1, (3,)))
    g = cr.grad(lambda mu, k: cnp.sum((mu + cr.random.normal(k, (3,))) ** 2))
    np.testing.assert_allclose(g(np.zeros(3), k2), 2 * cr.random.normal(k2, (3,)))
    u = cr.random.uniform(k1, (2000,), minval=-1.0, maxval=3.0)
    assert u.min() >= -1 and u.max() < 3
    counts = np.bincount(np.asarray([cr.random.categorical(k, np.log([0.2, 0.8]))
                                     for k in cr.random.split(key, 400)]), minlength=2)
    assert 0.7 < counts[1] / 400 < 0.9
    assert cr.random.randint(k1, (50,), 2, 5).min() >= 2
    assert not np.array_equal(cr.random.fold_in(key, 1), cr.random.fold_in(key, 2))
