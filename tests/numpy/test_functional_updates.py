"""x.at[idx].set / add / multiply / divide / min / max / get, as JAX defines them: values
against NumPy's in-place equivalents, derivatives against finite differences (both modes,
order 2), compiled vs tape vs @script, the text format, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.errors import ConcretizationError, NoRuleError, TraceError, TypeInferenceError
from chainrule.ir.verify import verify
from chainrule.testing import check_grads

rng = np.random.default_rng(3)
X = rng.uniform(0.5, 1.5, (4, 5))

# key, value shape; index arrays with repeats included
KEYS = {
    "int": ((1,), (5,)),
    "slice": ((slice(1, 3), slice(None, None, 2)), (2, 3)),
    "array": ((np.array([0, 2]),), (2, 5)),
    "repeated": ((np.array([3, 1, 3]), slice(1, 4)), (3, 3)),
    "broadcast": ((slice(None), 2), ()),
}

NUMPY = {
    "set": lambda a, k, v: a.__setitem__(k, v),
    "add": lambda a, k, v: np.add.at(a, k, v),
    "multiply": lambda a, k, v: np.multiply.at(a, k, v),
    "min": lambda a, k, v: np.minimum.at(a, k, v),
    "max": lambda a, k, v: np.maximum.at(a, k, v),
}


def _reference(method, x, key, v):
    out = x.copy()
    NUMPY[method](out, key, v)
    return out


def _update(method, key):
    return lambda x, v: getattr(x.at[key], method)(v)


@pytest.mark.parametrize("method", sorted(NUMPY))
@pytest.mark.parametrize("case", sorted(KEYS))
def test_values_match_numpy_on_every_route(method, case):
    key, vshape = KEYS[case]
    v = rng.uniform(0.2, 2.0, vshape)
    want = _reference(method, X, key, v)
    f = _update(method, key)
    np.testing.assert_allclose(cr.jit(f)(X, v), want, rtol=1e-15)
    np.testing.assert_allclose(getattr(tape.tensor(X).at[key], method)(v).value(),
                               want, rtol=1e-15)
    fn = cr.trace(f, X, v)
    np.testing.assert_allclose(cr.run(fn, X, v), want, rtol=1e-15)


@pytest.mark.parametrize("method", ["set", "add", "min", "max", "multiply"])
@pytest.mark.parametrize("case", sorted(KEYS))
def test_derivatives_against_finite_differences(method, case):
    key, vshape = KEYS[case]
    v = rng.uniform(0.2, 2.0, vshape) + 0.013  # no ties with X
    f = cr.jit(lambda x, v: cnp.sum(cnp.sin(_update(method, key)(x, v)) * np.arange(20.0)
                                    .reshape(4, 5)))
    if method == "multiply" and any(isinstance(k, np.ndarray) for k in key):
        check_grads(lambda x: f(x, v), (X,), order=2, modes=("fwd", "rev"))
        with pytest.raises(NoRuleError, match="multiply.*positions may repeat"):
            cr.grad(f, argnums=1)(X, v)
        return
    check_grads(f, (X, v), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("method", ["set", "add", "min", "max", "multiply"])
def test_tape_equals_compiled(method):
    key, vshape = KEYS["repeated"]
    v = rng.uniform(0.2, 2.0, vshape) + 0.013
    argnums = 0 if method == "multiply" else (0, 1)
    f = lambda x, v: cnp.sum(cnp.cos(_update(method, key)(x, v)))  # noqa: E731
    compiled = cr.grad(f, argnums=argnums)(X, v)
    xt, vt = tape.tensor(X, requires_grad=True), tape.tensor(v, requires_grad=argnums != 0)
    f(xt, vt).backward()
    if method == "multiply":
        compiled, got = (compiled,), (xt.grad,)
    else:
        got = (xt.grad, vt.grad)
    for a, b in zip(compiled, got):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_set_sends_cotangent_only_to_the_write_that_won():
    g = cr.grad(lambda v: cnp.sum(cnp.zeros_like(v).at[np.array([1, 1, 2])].set(v) * 10.0))(
        np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 10.0, 10.0])  # NumPy keeps the last write


def test_min_max_share_the_derivative_among_ties():
    gx, gv = cr.grad(lambda x, v: cnp.sum(x.at[np.array([0, 0])].max(v)), argnums=(0, 1))(
        np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    np.testing.assert_allclose(gx, [1 / 3, 1.0])
    np.testing.assert_allclose(gv, [1 / 3, 1 / 3])


def test_divide_and_get():
    x = np.arange(1.0, 5.0)
    f = cr.jit(lambda x: x.at[1:3].divide(4.0))
    np.testing.assert_allclose(f(x), [1.0, 0.5, 0.75, 4.0])
    np.testing.assert_allclose(cr.jit(lambda x: x.at[::2].get())(x), x[::2])
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(x.at[1:3].divide(4.0)))(x),
                               [1.0, 0.25, 0.25, 1.0])


def test_second_and_third_order():
    x = np.array([0.3, 0.7, 1.1])
    f = lambda x: cnp.sum(cnp.sin(x.at[0].set(x[1] * x[2]) * x))  # noqa: E731
    check_grads(cr.jit(f), (x,), order=3, modes=("fwd", "rev"))


def test_script_and_text_round_trip():
    @cr.script
    def s(x, v):
        y = x.at[1:3].max(v)
        z = y.at[0].multiply(v[0])
        return cnp.sum(z.at[3].set(v[1]) * y)

    x, v = np.arange(4.0), np.array([1.5, 0.5])
    ref = x.copy()
    ref[1:3] = np.maximum(ref[1:3], v)
    z = ref.copy()
    z[0] *= v[0]
    z[3] = v[1]
    assert s(x, v) == pytest.approx(np.sum(z * ref))
    check_grads(cr.jit(lambda x, v: s(x, v)), (x + 0.01, v), order=2, modes=("fwd", "rev"))
    module = cr.trace(cr.grad(lambda x, v: s(x, v), argnums=(0, 1)), x, v)
    text = str(module)
    for method in ("max", "multiply", "set"):
        assert ".at[" in text and f".{method}(" in str(cr.trace(s, x, v))
    again = cr.parse(text)
    assert str(again) == text
    verify(again)


def test_parse_each_update():
    text = ("def main(x: f64[4], v: f64[2], i: i64[2]) -> f64[4]:\n"
            "    a = x.at[i].set(v)\n    b = a.at[1:3].multiply(v)\n"
            "    c = b.at[i].min(v)\n    d = c.at[:2].max(v)\n    return d\n")
    module = cr.parse(text)
    assert str(module) == text
    x, v, i = np.arange(4.0), np.array([5.0, -1.0]), np.array([2, 0])
    want = x.copy()
    want[i] = v
    want[1:3] *= v
    np.minimum.at(want, i, v)
    want[0:2] = np.maximum(want[0:2], v)
    np.testing.assert_allclose(cr.run(module, x, v, i), want)


def test_errors():
    x = np.zeros(3)
    with pytest.raises(TypeInferenceError, match="does not broadcast to the indexed shape"):
        cr.jit(lambda x: x.at[0:2].set(np.ones(3)))(x)
    with pytest.raises(TypeInferenceError, match="losing information"):
        cr.jit(lambda x: x.at[0].set(1.5))(np.zeros(3, np.int64))
    with pytest.raises(TypeInferenceError, match="out of bounds"):
        cr.jit(lambda x: x.at[5].set(1.0))(x)
    with pytest.raises(TraceError, match="x.at\\[idx\\].set"):
        cr.jit(lambda x: x.__setitem__(0, 1.0))(x)
    with pytest.raises(TraceError, match="mode="):
        cr.jit(lambda x: x.at[0].set(1.0, mode="drop"))(x)
    with pytest.raises(TraceError, match="unknown option"):
        cr.jit(lambda x: x.at[0].set(1.0, wrap=True))(x)


def test_item_and_tolist_on_traced_values():
    for method in ("item", "tolist"):
        with pytest.raises(ConcretizationError, match=f".{method}\\(\\) needs a concrete"):
            cr.jit(lambda x, m=method: getattr(x, m)())(np.ones(()))
        with pytest.raises(ConcretizationError, match=f"{method}"):
            cr.grad(lambda x, m=method: x * getattr(x, m)())(np.float64(2.0))
    seen = []
    cr.jit(lambda x: seen.append(hasattr(x, "no_such_method")) or x)(np.ones(2))
    assert seen == [False]
