"""``x.at[...]`` on every array a user gets from chainrule's namespace: eagerly, under
``grad``/``jit``/``vmap`` and on the tape, with JAX's semantics, while staying a NumPy
array (a subclass) for NumPy's own functions."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from namespace_cases import collect

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir.array import Array
from chainrule.tape import tensor

MAKERS = {
    "zeros": lambda: cnp.zeros((3, 2, 2)),
    "ones": lambda: cnp.ones((3, 2, 2)),
    "full": lambda: cnp.full((3, 2, 2), 0.5),
    "eye": lambda: cnp.eye(4),
    "identity": lambda: cnp.identity(4),
    "zeros_like": lambda: cnp.zeros_like(np.ones((3, 2))),
    "ones_like": lambda: cnp.ones_like(np.ones((3, 2))),
    "full_like": lambda: cnp.full_like(np.ones((3, 2)), 2.0),
    "empty": lambda: cnp.empty((2, 2)) * 0.0,
    "arange": lambda: cnp.arange(6.0),
    "linspace": lambda: cnp.linspace(0.0, 1.0, 5),
    "asarray": lambda: cnp.asarray([[1.0, 2.0], [3.0, 4.0]]),
    "array": lambda: cnp.array([[1.0, 2.0], [3.0, 4.0]]),
    "tri": lambda: cnp.tri(3),
    "r_": lambda: cnp.r_[0.0:3.0, 7.0],
    "sin": lambda: cnp.sin(np.arange(4.0)),
    "stack": lambda: cnp.stack([np.ones(2), np.zeros(2)]),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_made_arrays_take_at_updates_and_stay_ndarrays(name):
    x = MAKERS[name]()
    assert isinstance(x, np.ndarray) and type(x) is Array
    key = (0,) * x.ndim
    want = np.array(x, copy=True)
    want[key] = 9.0
    np.testing.assert_array_equal(x.at[key].set(9.0), want)
    assert x[key] != 9.0 or want[key] == x[key]  # x itself unchanged
    # NumPy takes it as its own array
    assert np.allclose(np.sum(x), np.sum(np.asarray(x)))
    assert repr(x).startswith("array(")


def test_every_namespace_function_returns_arrays_with_at():
    """Walk the namespace's cases: a function computing on NumPy arrays hands back
    ``Array``s (NumPy's array methods, ``x.repeat()``, are NumPy's own)."""
    plain = []
    for case in collect():
        for args in case.args[:1]:
            try:
                out = case.fn(*args)
            except Exception:  # noqa: BLE001 - the case's own test reports errors
                continue
            leaves = out if isinstance(out, (tuple, list)) else [out]
            if (any(type(o) is np.ndarray for o in leaves) and "method" not in case.note
                    and "cr." not in inspect.getsource(case.fn)):  # a transform's result
                plain.append(case.name)
    # cases that apply NumPy's own operators (x // y, x % y) to NumPy arrays, return the
    # user's own array (put_along_axis), index with np.s_, or call a SciPy object
    numpy_own = {"floor_divide", "mod", "put_along_axis", "s_", "scipy.stats.norm"}
    assert sorted(set(plain) - numpy_own) == []


def test_the_issue_idioms_under_every_transform():
    k, d = 3, 2

    def f(l):
        z = cnp.zeros((k, d, d)).at[:, 1, 0].set(l)
        pose = cnp.eye(4).at[:3, :3].set(cnp.ones((3, 3)) * cnp.sum(l))
        return cnp.sum(z ** 2) + cnp.sum(pose)

    l = np.array([1.0, 2.0, 3.0])
    want_value = np.sum(l ** 2) + 9 * np.sum(l) + 1
    want_grad = 2 * l + 9
    assert np.isclose(f(l), want_value)
    assert np.isclose(cr.jit(f)(l), want_value)
    assert np.allclose(cr.grad(f)(l), want_grad)
    assert np.allclose(cr.jacfwd(f)(l), want_grad)
    assert np.allclose(cr.vmap(cr.grad(f))(np.stack([l, l])), [want_grad, want_grad])
    tape_path = lambda l: f(l) if cnp.sum(l) > 0 else -f(l)  # noqa: E731
    assert np.allclose(cr.grad(tape_path)(l), want_grad)
    t = tensor(l, requires_grad=True)
    f(t).backward()
    assert np.allclose(t.grad, want_grad)


UPDATES = ["set", "add", "multiply", "divide", "min", "max"]


@pytest.mark.parametrize("method", UPDATES)
def test_semantics_match_jax(method):
    """Repeated positions accumulate (add, multiply, min, max), the last write wins for
    set, as in JAX; checked against JAX when installed, else against np.<ufunc>.at."""
    x = cnp.arange(1.0, 6.0)
    idx = np.array([0, 2, 2, 4])
    v = np.array([2.0, 3.0, 0.5, -1.0])
    got = getattr(x.at[idx], method)(v)
    jax = pytest.importorskip("jax", reason="pip install jax (for the comparison)")
    jax.config.update("jax_enable_x64", True)
    want = getattr(jax.numpy.arange(1.0, 6.0).at[idx], method)(v)
    np.testing.assert_allclose(got, np.asarray(want))
    assert np.allclose(x.at[idx].get(), np.asarray(jax.numpy.arange(1.0, 6.0)[idx]))


def test_captured_array_of_the_namespace_is_an_input():
    """A compiled function closing over an ``Array`` reads it at every call (as it does
    an ndarray), not its first value."""
    W = cnp.ones((2, 2))
    g = cr.jit(lambda x: x @ W)
    for _ in range(3):
        assert np.allclose(g(np.ones(2)), 2.0)
    W[...] = 2.0
    assert np.allclose(g(np.ones(2)), 4.0)
    assert np.allclose(g(cnp.ones(2)), 4.0)  # an Array argument, the fast path
