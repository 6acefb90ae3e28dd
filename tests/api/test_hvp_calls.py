"""``cr.hvp`` called again and again: once its program is compiled, calls with NumPy
arrays of exactly its types run it directly (``api.forward._hvp_exact``). Those calls
must give what the general path gives, bit for bit, and everything the general path
checks or notices (tangents' types and structure, captured arrays that changed, other
argument types) must still be checked or noticed."""

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.api.forward import _HVP_EXACT
from chainrule.errors import ChainruleError

RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 3))
X = RNG.standard_normal((5, 4))


def _loss(ps):
    w, b = ps
    return cnp.sum(cnp.tanh(X @ w + b) ** 2) + cnp.sum(w ** 3) * 0.1


def _exact_plans(f):
    return list(_HVP_EXACT.get(f, {}))


def _general(f, primals, tangents):
    """hvp through the general path (a fresh function each time: no exact plan)."""
    return cr.hvp(lambda *a: f(*a), primals, tangents, eager_compile=True)


def test_exact_calls_match_the_general_path_bit_for_bit():
    def f(ps):
        return _loss(ps)

    ps, vs = [W, np.arange(3.0)], [np.ones((4, 3)), np.full(3, 0.5)]
    want = _general(f, (ps,), (vs,))
    got = [cr.hvp(f, (ps,), (vs,)) for _ in range(20)]
    assert _exact_plans(f)  # compiled at the 16th call, exact from then on
    for g in got:
        assert type(g) is list and len(g) == 2
        for a, b in zip(g, want):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_exact_calls_still_check_the_tangents():
    def f(ps):
        return _loss(ps)

    ps, vs = [W, np.arange(3.0)], [np.ones((4, 3)), np.full(3, 0.5)]
    for _ in range(20):
        cr.hvp(f, (ps,), (vs,), eager_compile=True)
    assert _exact_plans(f)
    with pytest.raises(ChainruleError, match="dtype"):
        cr.hvp(f, (ps,), ([np.ones((4, 3), np.float32), vs[1]],))
    with pytest.raises(ChainruleError, match="shape"):
        cr.hvp(f, (ps,), ([np.ones((3, 4)), vs[1]],))
    with pytest.raises(ChainruleError, match="structure"):
        cr.hvp(f, (ps,), ((vs[0], vs[1]),))
    # a Python number as a tangent of a 0-d primal, a list of numbers: the general path
    got = cr.hvp(lambda s: s ** 3, (np.float64(2.0),), (1.0,))
    assert float(got) == 12.0


def test_a_changed_capture_is_noticed():
    data = {"x": X.copy()}

    def f(w):
        return cnp.sum(cnp.tanh(data["x"] @ w) ** 2)

    v = np.ones((4, 3))
    for _ in range(20):
        cr.hvp(f, (W,), (v,), eager_compile=True)
    assert _exact_plans(f)
    data["x"] = X[:, :3].copy()  # another shape: traced again
    w3 = W[:3]
    got = cr.hvp(f, (w3,), (v[:3],))
    want = _general(f, (w3,), (v[:3],))
    assert np.array_equal(got, want)
    data["x"] = X * 2.0  # the same shape, new values: read at every call
    got = cr.hvp(f, (W,), (v,))
    assert np.array_equal(got, _general(f, (W,), (v,)))
    data["x"] = X.astype(np.float32)  # another dtype: the exact plan is stale
    got = cr.hvp(f, (W,), (v,))
    assert np.array_equal(got, _general(f, (W,), (v,)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_calls_of_integer_and_float_leaves(dtype):
    """An integer leaf has no tangent in the program; the tangents given for it must
    still have its type for the exact route (otherwise the general path takes it)."""
    def f(w, idx):
        return cnp.sum(w[idx] ** 3)

    w, idx = np.arange(1.0, 7.0, dtype=dtype), np.array([0, 2, 2])
    tw = np.ones(6, dtype)
    want = _general(f, (w, idx), (tw, np.zeros(3, np.int64)))
    for _ in range(20):
        got = cr.hvp(f, (w, idx), (tw, np.zeros(3, np.int64)), eager_compile=True)
        assert got.dtype == dtype and np.array_equal(got, want)
    assert _exact_plans(f)


def test_a_function_without_weak_references_is_not_cached():
    class Loss:
        __slots__ = ()

        def __call__(self, w):
            return cnp.sum(w ** 3)

    f = Loss()
    w, v = np.arange(3.0), np.ones(3)
    for _ in range(20):
        np.testing.assert_array_equal(cr.hvp(f, (w,), (v,), eager_compile=True), 6 * w)
