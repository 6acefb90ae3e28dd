"""Lists, tuples and dicts a function reads from outside its arguments: a loop over
one ran as many times as it had entries while tracing, and a Python value read from
one decided a branch; when the container grows, shrinks or changes keys, or the value
changes, the next call must see it (the function is traced again), as autograd,
which runs the Python code at every call, does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from trace_counter import Counter

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
            seen.tick()
            return cnp.sum(cnp.tanh(x * self.W))

    seen = Counter()
    model = Model()
    g = cr.grad(model.loss)
    for _ in range(5):
        g(X)
        model.step += 1
        model.history.append(model.step)
    assert seen.traces == 1


class Model:
    def __init__(self):
        self.W = np.full(4, 0.5)
        self.calls = 0
        self.layers = (self.W,)

    def counting_loss(self, x):
        self.calls += 1  # a number the function reads and changes
        return cnp.sum(cnp.tanh(x * self.W)) * self.calls

    def growing_loss(self, x):
        self.layers = self.layers + (self.W,)  # rebinds what it reads
        return _sum_of_products(x, self.layers)

    def doubling_loss(self, x):
        self.W = self.W * 2.0
        return cnp.sum(cnp.tanh(x * self.W))


def _run_uncompiled(model, method: str, kind: str, calls: int = 3) -> list:
    """What each call returns (grad and jit: and the warning that it runs uncompiled;
    ``cr.hvp`` called on a function runs it uncompiled without one)."""
    fn = TRANSFORMS[kind](getattr(model, method))
    with _uncompiled_warning(kind):
        return [fn(X) for _ in range(calls)]


def _uncompiled_warning(kind: str):
    if kind == "hvp":
        return warnings.catch_warnings(action="ignore")
    return pytest.warns(cr.errors.ChainruleWarning, match="runs uncompiled")


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_a_function_that_changes_what_it_reads_runs_as_python_would(kind):
    """``self.calls += 1``, ``self.layers = self.layers + ...`` and ``self.W = self.W * 2``
    inside the function: every call sees the state the previous call left, once per call
    (tracing's own change is put back), as autograd gives; compiled code would have
    baked in the state after the first call."""
    model = Model()
    got = _run_uncompiled(model, "counting_loss", kind)
    for k, value in enumerate(got, start=1):
        np.testing.assert_allclose(value, k * _want(kind, [model.W]), rtol=1e-12)
    assert model.calls == 3

    model = Model()
    got = _run_uncompiled(model, "growing_loss", kind)
    for k, value in enumerate(got, start=2):
        np.testing.assert_allclose(value, _want(kind, [model.W] * k), rtol=1e-12)
    assert len(model.layers) == 4

    model = Model()
    w0 = model.W
    got = _run_uncompiled(model, "doubling_loss", kind)
    for k, value in enumerate(got, start=1):
        np.testing.assert_allclose(value, _want(kind, [w0 * 2.0**k]), rtol=1e-12)
    np.testing.assert_allclose(model.W, w0 * 8.0)


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_python_random_draws_at_every_call(kind):
    import random

    w = np.full(4, 0.5)
    fn = TRANSFORMS[kind](lambda x: cnp.sum(cnp.tanh(x * w)) * random.random())
    with _uncompiled_warning(kind):
        random.seed(7)
        got = [fn(X) for _ in range(3)]
    random.seed(7)
    for value in got:
        np.testing.assert_allclose(value, random.random() * _want(kind, [w]), rtol=1e-12)


@pytest.mark.parametrize("container", ["defaultdict", "OrderedDict", "deque", "list subclass"])
def test_containers_of_other_types_are_followed(container):
    from collections import OrderedDict, defaultdict, deque

    class Weights(list):
        pass

    make = {"defaultdict": lambda w: defaultdict(list, {0: w}),
            "OrderedDict": lambda w: OrderedDict({0: w}),
            "deque": lambda w: deque([w]), "list subclass": lambda w: Weights([w])}[container]
    holder = make(np.full(4, 0.5))
    g = cr.grad(lambda x: cnp.sum(cnp.tanh(x * holder[0])))
    g(X)
    holder[0] = np.full(4, -2.0)
    np.testing.assert_allclose(g(X), _want("grad", [holder[0]]), rtol=1e-12)


@pytest.mark.parametrize("kind", ["grad", "jit"])
def test_a_side_effect_the_result_does_not_depend_on_stays_compiled(kind):
    """``calls.append(1)`` (JAX's way of counting traces) and a cache filled on the first
    call change what the function reads, but a second trace from the changed state
    makes the same program: compiled, the effect made once, as JAX does."""
    calls, cache = [], {}
    w = np.full(4, 0.5)

    def loss(x):
        calls.append(1)
        if "scale" not in cache:
            cache["scale"] = 2.0
        return cnp.sum(cnp.tanh(x * w)) * cache["scale"]

    f = TRANSFORMS[kind](loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "runs uncompiled"
        for _ in range(3):
            np.testing.assert_allclose(f(X), 2.0 * _want(kind, [w]), rtol=1e-12)
    assert len(calls) == 1 and cache == {"scale": 2.0}


def test_a_tuple_of_arrays_stays_compiled():
    """Each array of a captured tuple is swapped in by rebuilding the tuple: the tracing's
    own rebuilds are not the function's rebinding (it was run uncompiled for that)."""
    seen = Counter()
    weights = (np.full(4, 0.5), np.full(4, -1.0), np.full(4, 2.0))
    holder = {"weights": weights}

    def loss(x):
        seen.tick()
        return _sum_of_products(x, holder["weights"]) + _sum_of_products(x, weights)

    g = cr.grad(loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_allclose(g(X), 2 * _want("grad", list(weights)), rtol=1e-12)
    assert seen.traces == 1
