"""What transformed functions hand back is the caller's own: distinct, writeable arrays
that share no memory with the arguments (``checks.own``, which runs after every call and
so has a fast path for arrays that own their memory)."""

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.api.results import own


def _assert_owned(results, inputs):
    arrays = [r for r in results if isinstance(r, np.ndarray)]
    for i, r in enumerate(arrays):
        assert r.flags.writeable
        for other in arrays[i + 1:]:
            assert not np.shares_memory(r, other)
        for x in inputs:
            assert not np.shares_memory(r, x)


@pytest.mark.parametrize("make", [
    lambda: np.arange(12.0),
    lambda: np.arange(24.0)[3:15],                                  # a view of an owner
    lambda: np.frombuffer(bytearray(np.arange(12.0).tobytes())),    # memory of a bytearray
    lambda: np.lib.stride_tricks.as_strided(np.arange(12.0), (12,), (8,)),
    lambda: np.arange(24.0).reshape(2, 12)[1],
])
@pytest.mark.parametrize("eager", [True, False])
def test_jit_results_never_alias_arguments(make, eager):
    x = make()
    f = cr.jit(lambda x: (x, x[2:], x.reshape(3, 4), x * 2, x, cnp.sum(x)),
               eager_compile=eager)
    for _ in range(2):  # the second call takes the fast path
        out = f(x)
        _assert_owned(out, [x])
        assert [np.array_equal(o, e) for o, e in zip(out[:4], (x, x[2:], x.reshape(3, 4),
                                                              x * 2))] == [True] * 4
        assert type(out[5]) is np.float64


def test_result_is_the_owner_of_an_argument_view():
    """The argument is a view of an array the function reads from outside (a captured
    array it returns): the result owns its memory, the argument is inside it."""
    w = np.arange(6.0)
    f = cr.jit(lambda v: (v * 1.0, w + 0.0, w), eager_compile=True)
    for _ in range(2):
        out = f(w[1:4])
        _assert_owned(out, [w, w[1:4]])
        np.testing.assert_array_equal(out[2], w)


def test_own_copies_exactly_what_the_caller_may_not_keep():
    x = np.ones(4)
    fresh = np.zeros(3)
    frozen = np.ones(2)
    frozen.flags.writeable = False
    out = own((x, x[1:], fresh, fresh, frozen, (np.array(2.0), [fresh * 3])), (x,))
    assert out[2] is fresh  # owned by nobody else: kept as it is
    assert out[0] is not x and out[1].base is None and out[3] is not fresh
    assert out[4] is not frozen and out[4].flags.writeable
    assert type(out[5][0]) is np.float64 and isinstance(out[5][1], list)
    _assert_owned([*out[:5], out[5][1][0]], [x])


@pytest.mark.parametrize("structure", ["array", "list", "tuple", "dict", "nested"])
def test_value_and_grad_keeps_the_argument_structure(structure):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(3), rng.standard_normal((2, 3))
    params = {"array": a, "list": [a, b], "tuple": (a, b), "dict": {"w": b, "a": a},
              "nested": [(a,), {"b": b}]}[structure]

    def loss(p):
        return sum(cnp.sum(cnp.tanh(q) ** 2) for q in _leaves(p))

    vg = cr.value_and_grad(loss, eager_compile=True)
    for _ in range(2):
        value, grad = vg(params)
        assert type(grad) is type(params)
        got, want = _leaves(grad), [2 * np.tanh(q) * (1 - np.tanh(q) ** 2)
                                    for q in _leaves(params)]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        _assert_owned(got, _leaves(params))


def _leaves(tree):
    from chainrule.tree import flatten

    return flatten(tree)[0]
