"""What a compiled function reads from what it closes over is seen anew at every call
(chainrule/frontend/capture.py), where the walk did not reach before: an
``array.array``, a list, tuple, deque or dict of numbers longer than the walk's
per-container bound (guarded whole, by value: a sign of zero and a NaN included),
arrays past that bound, an array six attribute and item steps deep, and arrays of other
classes (``np.memmap``, ``np.matrix``, masked arrays, subclasses, a ``memoryview``).
Each of these gave the first call's numbers again, silently."""

from __future__ import annotations

import array
import collections
import warnings

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.frontend.capture import MAX_ITEMS


def test_an_array_array_changed_in_place_is_seen_by_jit_and_grad():
    a = array.array("d", [1.0, 2.0, 3.0])
    f = cr.jit(lambda x: cnp.sum(x * cnp.asarray(a)))
    g = cr.grad(lambda x: cnp.sum(cnp.sin(x) * cnp.asarray(a)))
    x = np.array([0.5, -0.25, 2.0])
    for change in range(3):
        assert np.isclose(f(x), np.sum(x * np.asarray(a)))
        assert np.allclose(g(x), np.cos(x) * np.asarray(a))
        a[change] = 10.0 + change


@pytest.mark.parametrize("kind", [list, tuple, collections.deque])
def test_a_long_sequence_of_numbers_is_guarded_past_the_walks_bound(kind):
    n = MAX_ITEMS + 500
    values = [1.0] * n
    box = {"seq": kind(values)}
    f = cr.jit(lambda x: cnp.sum(x * cnp.asarray(list(box["seq"]))))
    x = np.linspace(0.0, 1.0, n)
    assert np.isclose(f(x), np.sum(x))
    values[n - 3] = 7.0
    if kind is tuple:  # immutable: rebound
        box["seq"] = tuple(values)
    else:
        box["seq"][n - 3] = 7.0
    assert np.isclose(f(x), np.sum(x * np.asarray(values)))


def test_a_long_list_guard_tells_the_sign_of_zero_and_nan():
    b = [1.0] * (MAX_ITEMS + 300)
    b[-5] = 0.0
    h = cr.jit(lambda x: cnp.sum(1.0 / cnp.asarray(b)) + cnp.sum(x))
    x = np.ones(3)
    with np.errstate(divide="ignore", invalid="ignore"):
        assert h(x) == np.inf
        b[-5] = -0.0
        assert h(x) == -np.inf
        b[-7] = float("nan")
        assert np.isnan(h(x)) and np.isnan(h(x))


def test_arrays_past_the_walks_bound_are_captured():
    arrs = [np.ones(2) for _ in range(MAX_ITEMS + 200)]
    k = cr.jit(lambda x: cnp.sum(x * arrs[MAX_ITEMS + 100]))
    assert k(np.ones(2)) == 2.0
    arrs[MAX_ITEMS + 100][:] = 3.0  # in place
    assert k(np.ones(2)) == 6.0
    arrs[MAX_ITEMS + 100] = np.full(2, -1.0)  # rebound
    assert k(np.ones(2)) == -2.0


def test_an_array_array_the_result_reads_and_the_function_appends_to_runs_uncompiled():
    log = array.array("d", [0.0])

    def f(x):
        log.append(2.0)
        return cnp.sum(x) * log[-1] + len(log)

    jf = cr.jit(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert jf(np.ones(2)) == 6.0
        assert list(log) == [0.0, 2.0]  # the trace's append undone, the run's kept
        assert jf(np.ones(2)) == 7.0  # runs f: it appends at every call
    assert list(log) == [0.0, 2.0, 2.0]
    assert any("changes log" in str(w.message) for w in caught)


def test_a_long_dict_of_numbers_and_of_arrays():
    weights = {f"w{k}": 1.0 for k in range(MAX_ITEMS + 100)}
    f = cr.jit(lambda x: x * weights[f"w{MAX_ITEMS + 50}"])
    assert f(np.ones(2))[0] == 1.0
    weights[f"w{MAX_ITEMS + 50}"] = 4.0
    assert f(np.ones(2))[0] == 4.0
    tables = {k: np.ones(2) for k in range(MAX_ITEMS + 100)}
    g = cr.jit(lambda x: cnp.sum(x * tables[MAX_ITEMS + 60]))
    assert g(np.ones(2)) == 2.0
    tables[MAX_ITEMS + 60][:] = 5.0
    assert g(np.ones(2)) == 10.0


def test_an_array_deeper_than_the_walks_bound_along_what_the_code_names():
    class Node:
        pass

    root = Node()
    root.a = Node()
    root.a.b = {"c": [Node()]}
    root.a.b["c"][0].d = Node()
    root.a.b["c"][0].d.W = np.ones(2)
    f = cr.jit(lambda x: cnp.sum(x * root.a.b["c"][0].d.W))
    g = cr.grad(lambda x: cnp.sum(cnp.sin(x) * root.a.b["c"][0].d.W))
    x = np.array([0.2, -0.4])
    assert f(np.ones(2)) == 2.0 and np.allclose(g(x), np.cos(x))
    root.a.b["c"][0].d.W[:] = 3.0  # in place
    assert f(np.ones(2)) == 6.0 and np.allclose(g(x), 3 * np.cos(x))
    root.a.b["c"][0].d.W = np.full(2, -1.0)  # rebound
    assert f(np.ones(2)) == -2.0 and np.allclose(g(x), -np.cos(x))


def test_a_list_of_numbers_guarded_whole_sees_each_entry_change():
    """A list of more than WHOLE_AFTER numbers is one guard (one comparison per call, not
    one path per entry): every entry's change is still seen."""
    from chainrule.frontend.capture import WHOLE_AFTER

    coefficients = [float(k) for k in range(WHOLE_AFTER + 4)]
    f = cr.jit(lambda x: x * coefficients[3] + coefficients[-1])
    x = np.ones(2)
    for k in (3, len(coefficients) - 1):
        expected = coefficients[3] + coefficients[-1]
        assert f(x)[0] == expected
        coefficients[k] = -2.5
        assert f(x)[0] == coefficients[3] + coefficients[-1]


class _Tagged(np.ndarray):
    """A user's ndarray subclass."""


def _kinds(tmp_path):
    memmap = np.memmap(tmp_path / "w.dat", dtype=float, mode="w+", shape=(3,))
    memmap[:] = 1.0
    return {"memmap": memmap, "subclass": np.ones(3).view(_Tagged),
            "masked": np.ma.masked_array(np.ones(3), mask=[False] * 3),
            "matrix": np.matrix(np.ones(3)), "memoryview": memoryview(np.ones(3))}


@pytest.mark.parametrize("kind", ["memmap", "subclass", "masked", "matrix", "memoryview"])
def test_an_array_of_another_class_changed_in_place_is_seen(kind, tmp_path):
    """A np.memmap is an input as an array is; the other classes (and a memoryview) are
    guarded by value: a change in place retraces. Each gave the first call's values."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix
        W = _kinds(tmp_path)[kind]
        f = cr.jit(lambda x: cnp.sum(x * cnp.asarray(W)))
        g = cr.grad(lambda x: cnp.sum(cnp.sin(x) * cnp.asarray(W)))
        x = np.array([0.5, -1.0, 2.0])
        for value in (1.0, 5.0, -2.0):
            view = np.asarray(W).reshape(3)
            view[0] = value
            assert np.isclose(f(x), np.sum(x * view))
            assert np.allclose(g(x), np.cos(x) * view)
