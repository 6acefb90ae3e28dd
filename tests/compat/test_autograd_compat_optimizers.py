"""autograd's stochastic optimizers (``chainrule.autograd_compat.sgd``, ``rmsprop``,
``adam``) against ``autograd.misc.optimizers`` itself: the same signatures, the same
callbacks and the same results to the last bit; and against the ``chainrule.optim``
transformations that take the same steps (up to rounding), as the module documents."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import chainrule.autograd_compat as ac
from chainrule import optim
from chainrule.compat.autograd import misc
from chainrule.errors import ArgumentError
from chainrule.tree import flatten

try:
    import autograd.misc.optimizers as ao
except ImportError:  # the bench extra is not installed
    ao = None

needs_autograd = pytest.mark.skipif(ao is None, reason="autograd (the bench extra: "
                                    "pip install autograd) is not installed")
NAMES = ("sgd", "rmsprop", "adam")


def grad_of(x, i):
    """A stochastic-looking gradient of a structured parameter (iteration-dependent)."""
    return {"w": np.cos(x["w"]) + 0.1 * np.sin(i), "b": x["b"] ** 2 - 1,
            "layers": [np.tanh(x["layers"][0]) - 0.3, 2.0 * x["layers"][1]]}


def x0_tree(dtype=np.float64):
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=(2, 3)).astype(dtype), "b": np.array([0.5, -0.4], dtype),
            "layers": [rng.normal(size=4).astype(dtype), np.array(1.5, dtype)]}


def leaves(tree):
    return flatten(tree)[0]


def assert_identical(ours, theirs):
    """Same structure, shapes, dtypes and bits."""
    lo, to = flatten(ours)
    lt, tt = flatten(theirs)
    assert to == tt
    for a, b in zip(lo, lt):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_array_equal(a, b)


@needs_autograd
@pytest.mark.parametrize("name", NAMES)
def test_signatures_are_autograds(name):
    """autograd's wrapper hides the signature; the function it wraps has the one we
    expose (same parameter names and defaults)."""
    inner = inspect.getclosurevars(getattr(ao, name)).nonlocals["optimize"]
    assert inspect.signature(getattr(ac, name)) == inspect.signature(inner)
    assert getattr(ac, name) is getattr(misc, name)


OPTIONS = {
    "sgd": [{}, {"num_iters": 57, "step_size": 0.03, "mass": 0.5},
            {"num_iters": 20, "step_size": -0.1, "mass": 0.0}],  # ascent, no momentum
    "rmsprop": [{}, {"num_iters": 57, "step_size": 0.02, "gamma": 0.7, "eps": 1e-4}],
    "adam": [{}, {"num_iters": 300, "step_size": 0.05},
             {"num_iters": 57, "step_size": 0.01, "b1": 0.5, "b2": 0.9, "eps": 1e-3}],
}


@needs_autograd
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kwargs", [(n, kw) for n in NAMES for kw in OPTIONS[n]])
def test_results_and_callbacks_equal_autograds(name, kwargs, dtype):
    """Also with float32 parameters: grad, callback and the result get float32 leaves
    (the optimizer's own vector is float64), as in autograd."""
    seen = {"ours": [], "theirs": []}

    def callback(who):
        def cb(x, i, g):
            seen[who].append((i, [np.copy(v) for v in leaves(x)],
                              [np.copy(v) for v in leaves(g)]))
        return cb

    ours = getattr(ac, name)(grad_of, x0_tree(dtype), callback("ours"), **kwargs)
    theirs = getattr(ao, name)(grad_of, x0_tree(dtype), callback("theirs"), **kwargs)
    assert_identical(ours, theirs)
    assert len(seen["ours"]) == len(seen["theirs"]) == kwargs.get(
        "num_iters", 200 if name == "sgd" else 100)
    for (i, x, g), (j, y, h) in zip(seen["ours"], seen["theirs"]):
        assert i == j
        for a, b in zip(x + g, y + h):
            assert a.dtype == b.dtype == dtype
            np.testing.assert_array_equal(a, b)


@needs_autograd
@pytest.mark.parametrize("name", NAMES)
def test_positional_arguments_and_other_structures(name):
    """Positional hyperparameters, a bare array, a tuple, float32 leaves (the flat
    vector becomes float64 at the first step, in autograd as here)."""
    def grad_arr(x, i):
        return x - np.arange(x.size).reshape(x.shape) / (i + 1)

    x = np.linspace(-1, 1, 6).reshape(2, 3)
    assert_identical(getattr(ac, name)(grad_arr, x, None, 30, 0.05),
                     getattr(ao, name)(grad_arr, x, None, 30, 0.05))

    def grad_tuple(x, i):
        return (x[0] ** 3, np.sin(x[1]))

    xt = (np.array([1.0, -2.0], np.float32), np.ones((2, 2)))  # float32 and float64
    assert_identical(getattr(ac, name)(grad_tuple, xt, num_iters=25, step_size=0.01),
                     getattr(ao, name)(grad_tuple, xt, num_iters=25, step_size=0.01))


def test_chainrule_optim_takes_the_same_steps():
    """The correspondence in misc's docstring: the same steps up to rounding."""
    x0 = x0_tree()

    def run(opt, n):
        x, state = x0, opt.init(x0)
        for i in range(n):
            updates, state = opt.update(grad_of(x, i), state, x)
            x = optim.apply_updates(x, updates)
        return x

    s, m, r, e, b1, b2 = 0.05, 0.8, 0.7, 1e-6, 0.85, 0.99
    pairs = [
        (ac.sgd(grad_of, x0, num_iters=60, step_size=s, mass=m),
         run(optim.sgd(s * (1 - m), momentum=m), 60)),
        (ac.rmsprop(grad_of, x0, num_iters=60, step_size=s, gamma=r, eps=e),
         run(optim.rmsprop(s, decay=r, eps=e, initial_scale=1.0, eps_in_sqrt=False), 60)),
        (ac.adam(grad_of, x0, num_iters=60, step_size=s, b1=b1, b2=b2, eps=e),
         run(optim.adam(s, b1, b2, e), 60)),
    ]
    for ours, theirs in pairs:
        for a, b in zip(leaves(ours), leaves(theirs)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_grad_must_be_callable(name):
    with pytest.raises(ArgumentError, match="grad must be callable"):
        getattr(ac, name)(np.zeros(2), np.zeros(2))
