"""Arrays of other libraries (PyTorch, Dask) that a function closes over or mixes
into operators work as NumPy arrays do: read afresh at every call of a compiled
function (never baked in), on either side of an operator with a traced value or a
tape tensor, through every transform and the tape; PyTorch's own functions on
chainrule values go to chainrule.numpy's (``__torch_function__``)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ChainruleError


def _torch():
    torch = pytest.importorskip("torch", reason="pip install torch (CPU build)")
    torch.set_num_threads(1)
    return torch


def _dask():
    return pytest.importorskip("dask.array", reason="pip install 'dask[array]'")


def _make(lib: str, value: np.ndarray):
    if lib == "torch":
        return _torch().tensor(value)
    return _dask().from_array(value, chunks=value.shape or ())


LIBS = ["torch", "dask"]
RNG = np.random.default_rng(3)
XN = RNG.standard_normal((5, 3))
YN = np.sign(RNG.standard_normal(5))
W0 = RNG.standard_normal(3)


def _loss(w, X, Y):
    return cnp.mean(cnp.log1p(cnp.exp(-Y * (X @ w)))) + 0.1 * (w @ w)


def _reference_grad(w):
    m = YN * (XN @ w)
    s = 1.0 / (1.0 + np.exp(m))
    return -(XN.T @ (YN * s)) / len(YN) + 0.2 * w


PATHS = {
    "grad": lambda f: cr.grad(f)(W0),
    "jit_grad": lambda f: cr.jit(cr.grad(f))(W0),
    "tape": lambda f: cr.grad(lambda w: f(w) if cnp.sum(w) < 1e9 else 0.0 * f(w))(W0),
    "jvp_basis": lambda f: np.array([cr.jvp(f, (W0,), (e,))[1] for e in np.eye(3)]),
    "vmap": lambda f: cr.vmap(cr.grad(f))(np.stack([W0, W0]))[0],
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("lib", LIBS)
def test_closed_over_arrays_in_every_transform(lib, path):
    X, Y = _make(lib, XN), _make(lib, YN)
    got = PATHS[path](lambda w: _loss(w, X, Y))
    np.testing.assert_allclose(np.asarray(got), _reference_grad(W0), rtol=1e-10)


@pytest.mark.parametrize("lib", LIBS)
def test_hvp_of_a_closure_over_foreign_arrays(lib):
    """The issue's case: hvp of a loss closing over PyTorch (or Dask) data."""
    X, Y = _make(lib, XN), _make(lib, YN)
    v = np.array([1.0, -0.5, 0.25])
    got = cr.hvp(lambda w: _loss(w, X, Y), (W0,), (v,))
    want = cr.hvp(lambda w: _loss(w, XN, YN), (W0,), (v,))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)


def test_closed_over_torch_tensor_is_read_at_every_call():
    """Changed in place or rebound, a PyTorch tensor the compiled function reads is
    seen at the next call (it was baked in at the first call: silently stale)."""
    torch = _torch()
    X = torch.ones(2, 2, dtype=torch.float64)
    f = cr.jit(lambda w: X @ w)
    g = cr.grad(lambda w: cnp.sum(X @ w))
    w = np.ones(2)
    for _ in range(20):  # past the interpreted calls
        f(w), g(w)
    X.mul_(3.0)
    assert np.allclose(f(w), 6.0) and np.allclose(g(w), 6.0)
    X = torch.zeros(2, 2, dtype=torch.float64)  # noqa: F841 - rebound: read by f and g
    assert np.allclose(f(w), 0.0) and np.allclose(g(w), 0.0)


def test_closed_over_dask_array_is_read_at_every_call():
    da = _dask()
    D = da.ones((2, 2), chunks=(2, 2))
    h = cr.jit(lambda w: D @ w)
    for _ in range(20):
        h(np.ones(2))
    D = D * 5.0  # noqa: F841 - rebound: read by h
    assert np.allclose(h(np.ones(2)), 10.0)


def test_torch_tensor_requiring_grad_is_refused():
    torch = _torch()
    X = torch.ones(2, dtype=torch.float64, requires_grad=True)
    with pytest.raises(ChainruleError, match="requires grad"):
        cr.grad(lambda w: cnp.sum(X * w))(np.ones(2))


OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
             operator.matmul]


@pytest.mark.parametrize("where", ["traced", "tape"])
@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("lib", LIBS)
def test_foreign_array_on_either_side_of_an_operator(lib, op, where):
    a = np.array([0.5, 1.5, 2.0])
    b = np.array([1.2, 0.7, 1.1])
    A = _make(lib, a)

    def f(w):
        return cnp.sum(op(A, w)) + cnp.sum(op(w, A))

    want = cr.grad(lambda w: cnp.sum(op(a, w)) + cnp.sum(op(w, a)))(b)
    if where == "tape":
        g = cr.grad(lambda w: f(w) if cnp.sum(w) > 0 else -f(w))(b)
    else:
        g = cr.grad(f)(b)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_torch_functions_on_chainrule_values():
    torch = _torch()
    T = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)

    def f(w):
        return (torch.sum(torch.sin(w) * 2.0) + torch.mean(torch.matmul(T, w), dim=0)
                + torch.amax(torch.mm(T, w[:, None]))
                + torch.sum(torch.exp(w), dim=-1, keepdim=True)[0])

    w = np.array([0.3, -0.4])
    t = T.numpy()
    ref = lambda w: (np.sum(np.sin(w) * 2.0) + np.mean(t @ w)  # noqa: E731
                     + np.max(t @ w) + np.sum(np.exp(w)))
    eps = 1e-6
    want = np.array([(ref(w + e) - ref(w - e)) / (2 * eps) for e in np.eye(2) * eps])
    np.testing.assert_allclose(cr.grad(f)(w), want, rtol=1e-6)
    tape = cr.grad(lambda w: f(w) if cnp.sum(w) < 10 else f(w))(w)
    np.testing.assert_allclose(tape, want, rtol=1e-6)
    with pytest.raises(ChainruleError, match="not supported on chainrule values"):
        cr.grad(lambda w: torch.sum(torch.special.bessel_j0(w)))(w)


def test_torch_backend_with_a_captured_numpy_and_torch_array():
    torch = _torch()
    X = torch.tensor(XN)
    Yn = YN
    w = torch.tensor(W0)
    g = cr.grad(lambda w: _loss(w, X, Yn))(w)  # runs on PyTorch: the arguments decide
    assert isinstance(g, torch.Tensor)
    np.testing.assert_allclose(g.numpy(), _reference_grad(W0), rtol=1e-10)
