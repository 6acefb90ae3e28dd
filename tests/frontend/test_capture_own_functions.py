"""The capture walk (chainrule/frontend/capture.py) does not walk into chainrule's own
functions (``cnp.tanh``, ``cnp.sum``: they read chainrule's state only; issue 14, the
fixed cost of every new function), and still follows what chainrule made around a
user's function (``grad(h)`` holding ``h``), so arrays reached through it are seen
anew at every call."""

from __future__ import annotations

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.frontend.capture import sources
from chainrule.frontend.capture_objects import _own_function


def test_chainrule_functions_are_own_and_wrappers_of_user_code_are_not():
    assert _own_function(cnp.tanh) and _own_function(cnp.sum) and _own_function(cnp.add)

    def h(x):
        return cnp.sum(x * x)

    assert not _own_function(cr.grad(h))  # holds h: followed
    assert not _own_function(h)


W = np.ones(3)
steps = [cnp.tanh, cnp.sin, lambda v: v * W]


def f(x):
    for step in steps:
        x = step(x)
    return cnp.sum(x)


def test_the_walk_records_the_users_containers_only():
    found = sources(f)
    assert [p.describe() for p, _ in found.layouts] == ["steps (global of f)"]
    assert [p.describe() for p in found.arrays.values()] == ["W (global of <lambda>)"]


def test_an_array_behind_a_transformed_function_is_seen_at_every_call():
    W = np.array([1.0, 2.0, 3.0])

    def h(x):
        return cnp.sum(x * x * W)

    dh = cr.grad(h)

    @cr.jit
    def f(x):
        return dh(x) * 2.0

    x = np.array([0.5, -1.0, 2.0])
    assert np.allclose(f(x), 4 * x * W)
    W[:] = [3.0, 0.5, -1.0]  # in place: the next call sees it
    assert np.allclose(f(x), 4 * x * W)
    assert np.allclose(f(x), 4 * x * W)


def test_an_array_reached_through_a_list_of_chainrule_and_user_functions():
    W = np.array([1.0, 2.0])
    steps = [cnp.sin, lambda v: v * W, cnp.tanh]

    @cr.jit
    def f(x):
        for step in steps:
            x = step(x)
        return cnp.sum(x)

    x = np.array([0.3, -0.7])
    expected = lambda: np.sum(np.tanh(np.sin(x) * W))  # noqa: E731
    assert np.isclose(f(x), expected())
    W[:] = [-2.0, 0.25]
    assert np.isclose(f(x), expected())
    direct = cr.grad(lambda v: cnp.sum(cnp.tanh(cnp.sin(v) * W)))(x)
    assert np.allclose(cr.grad(f)(x), direct)


def _reads_weights(x):
    return x * WEIGHTS  # noqa: F821 - a global of the namespace the test gives it


def test_a_function_of_a_copy_of_a_chainrule_namespace_is_walked():
    """A doctest of a chainrule module runs in a copy of the module's namespace: its
    functions name the module but are the user's (a random draw in one was made once)."""
    import types

    weights = np.ones(2)
    namespace = {"__name__": "chainrule.numpy", "WEIGHTS": weights}
    g = types.FunctionType(_reads_weights.__code__, namespace)
    assert not _own_function(g)
    assert id(weights) in sources(g).arrays


def test_an_array_library_function_is_not_walked():
    """A closure holding a SciPy function (a test case's reference, a model's solver):
    SciPy's memo of LAPACK routines grows as SciPy is used, and guarding it made the
    next call of a ``vjp``'s pullback fail as stale."""
    import types

    import pytest
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="pip install scipy")
    case = types.SimpleNamespace(ref=scipy_linalg.eigvalsh, w=np.arange(3.0))

    def f(x):
        return cnp.sum(x * case.w)

    found = sources(f)
    assert not any("get_lapack_funcs" in path.describe() for path, _ in found.layouts)
    out, pullback = cr.vjp(f, np.ones(3))
    scipy_linalg.eigvalsh(np.eye(5, dtype=np.complex64))  # grows SciPy's memo
    np.testing.assert_allclose(pullback(1.0)[0], np.arange(3.0))
