"""Lists, tuples and dicts a function reads from outside its arguments: a loop over
one ran as many times as it had entries while tracing, and a Python value read from
one decided a branch; when the container grows, shrinks or changes keys, or the value
changes, the next call must see it (the function is traced again), as autograd,
which runs the Python code at every call, does."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp

TRANSFORMS = {"grad": cr.grad, "jit": cr.jit,
              "hvp": lambda f: (lambda x: cr.hvp(f, (x,), (np.ones_like(x),)))}
X = np.linspace(-1.0, 1.0, 4)


def _sum_of_products(x, weights):
    return sum(cnp.sum(cnp.tanh(x * w)) for w in weights)


def _want(kind, weights):
    t = [np.tanh(X * w) for w in weights]
    return {"grad": sum((1 - ti**2) * w for ti, w in zip(t, weights)),
            "jit": sum(ti.sum() for ti in t),
            "hvp": sum(-2 * ti * (1 - ti**2) * w**2 for ti, w in zip(t, weights))}[kind]


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_a_list_that_grows_and_shrinks(kind):
    weights = [np.full(4, 0.5)]
    f = TRANSFORMS[kind](lambda x: _sum_of_products(x, weights))
    np.testing.assert_allclose(f(X), _want(kind, weights), rtol=1e-12)
    weights.append(np.full(4, -1.5))
    np.testing.assert_allclose(f(X), _want(kind, weights), rtol=1e-12)
    weights.pop(0)
    np.testing.assert_allclose(f(X), _want(kind, weights), rtol=1e-12)


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_a_dict_that_gains_keys(kind):
    layers = {"a": np.full(4, 0.5)}
    f = TRANSFORMS[kind](lambda x: _sum_of_products(x, layers.values()))
    np.testing.assert_allclose(f(X), _want(kind, list(layers.values())), rtol=1e-12)
    layers["b"] = np.full(4, 2.0)
    np.testing.assert_allclose(f(X), _want(kind, list(layers.values())), rtol=1e-12)
    del layers["a"]
    layers["c"] = np.full(4, 3.0)  # the same size, other keys
    np.testing.assert_allclose(f(X), _want(kind, list(layers.values())), rtol=1e-12)


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_an_attribute_list_that_grows(kind):
    class Model:
        def __init__(self):
            self.layers = [np.full(4, 0.5)]

        def loss(self, x):
            return _sum_of_products(x, self.layers)

    model = Model()
    f = TRANSFORMS[kind](model.loss)
    f(X)
    model.layers.append(np.full(4, 0.25))
    np.testing.assert_allclose(f(X), _want(kind, model.layers), rtol=1e-12)


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_a_flag_in_a_list_decides_a_branch(kind):
    options = [True, 2.0]
    w = np.full(4, 0.5)

    def loss(x):
        scale = options[1] if options[0] else 1.0
        return cnp.sum(cnp.tanh(x * w)) * scale

    f = TRANSFORMS[kind](loss)
    np.testing.assert_allclose(f(X), 2.0 * _want(kind, [w]), rtol=1e-12)
    options[0] = False
    np.testing.assert_allclose(f(X), _want(kind, [w]), rtol=1e-12)
    options[:] = [True, 3.0]
    np.testing.assert_allclose(f(X), 3.0 * _want(kind, [w]), rtol=1e-12)


def test_an_entry_past_the_first_64_is_followed():
    weights = [np.full(4, 0.01 * i) for i in range(100)]
    g = cr.grad(lambda x: _sum_of_products(x, weights))
    g(X)
    weights[80] = np.full(4, 5.0)
    np.testing.assert_allclose(g(X), _want("grad", weights), rtol=1e-12)


def test_a_counter_the_code_never_names_does_not_trace_again():
    """Guards cover what the code reads: a training loop's step counter or loss history
    kept on the model changes at every step without a new trace."""

    class Model:
        def __init__(self):
            self.W = np.full(4, 0.5)
            self.step = 0
            self.history = []

        def loss(self, x):
            traces.append(1)
            return cnp.sum(cnp.tanh(x * self.W))

    traces = []
    model = Model()
    g = cr.grad(model.loss)
    for _ in range(5):
        g(X)
        model.step += 1
        model.history.append(model.step)
    assert len(traces) == 1
