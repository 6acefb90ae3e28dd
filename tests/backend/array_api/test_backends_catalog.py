"""The op catalog (tests/cases_*.py) on every installed array backend: each public
function compiled for PyTorch, Dask and NumPy-through-the-array-API gives NumPy's values
(within the dtype's tolerance), and its reverse-mode derivative (``cr.vjp``) NumPy's
derivative. A function whose program uses an op with no kernel on a backend must say
so (a BackendError naming the op and the backend): such cases are skipped with that
message, never answered wrongly."""

from __future__ import annotations

import numpy as np
import pytest
from namespace_cases import Case, collect

import chainrule as cr
from chainrule.backend.array_api.namespaces import NAMESPACES, compile_for
from chainrule.errors import BackendError, ChainruleError
from chainrule.tree import flatten, unflatten

CASES = collect()
IDS = [c.id for c in CASES]
# decompositions whose vectors LAPACK (NumPy), PyTorch and Dask may return with other
# signs (or phases): compared by magnitude here; their derivatives are compared exactly
SIGN_FREE = {"linalg.eigh", "linalg.svd", "linalg.qr", "linalg.eig", "scipy.linalg.eigh",
             "scipy.linalg.qr", "scipy.linalg.svd"}


def _available(name: str) -> bool:
    return NAMESPACES[name].available()


BACKENDS = [
    pytest.param("numpy", marks=pytest.mark.skipif(
        not _available("numpy"), reason="array-api-compat is not installed")),
    pytest.param("torch", marks=pytest.mark.skipif(
        not _available("torch"), reason="PyTorch is not installed (pip install "
                                        "'chainrule[torch]')")),
    pytest.param("dask", marks=pytest.mark.skipif(
        not _available("dask"), reason="Dask is not installed (pip install 'chainrule[dask]')")),
]


@pytest.fixture(autouse=True, scope="module")
def _dask_in_process():
    """Small arrays: Dask's synchronous scheduler (no thread pool per compute)."""
    try:
        import dask
    except ImportError:
        yield
        return
    with dask.config.set(scheduler="synchronous"):
        yield


def to_backend(x, name):
    """A NumPy leaf as an array of backend ``name`` (Python numbers stay numbers)."""
    if name == "numpy" or not isinstance(x, (np.ndarray, np.generic)):
        return x
    return NAMESPACES[name].asarray(np.asarray(x))


def to_numpy(x, name):
    if isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
        return np.asarray(x)
    return NAMESPACES[name].to_numpy(x)


def _convert(tree, fn):
    leaves, td = flatten(tree)
    return unflatten(td, [fn(x) for x in leaves])


def close(got, want, c: Case, where: str, name: str, scale: float = 1.0,
          sign_free: bool = False) -> None:
    got_leaves, want_leaves = flatten(got)[0], flatten(want)[0]
    assert len(got_leaves) == len(want_leaves), where
    for g, w in zip(got_leaves, want_leaves):
        g, w = to_numpy(g, name), np.asarray(w)
        if sign_free:
            g, w = np.abs(g), np.abs(w)
        assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != {w.dtype}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            # float32 programs agree to float32 rounding; float64 to a few ulps times the
            # conditioning the case already allows
            eps = np.finfo(w.dtype).eps if w.dtype.kind in "fc" else 0.0
            rtol = max(c.rtol, 64 * eps) * scale
            np.testing.assert_allclose(g, w, rtol=rtol, atol=max(c.atol, 64 * eps) * scale,
                                       err_msg=where, equal_nan=True)


def _run(name, fn, args):
    """``fn`` compiled, on backend ``name``: the API for PyTorch and Dask (arrays choose
    the backend), the NumPy namespace rendering called directly for "numpy"."""
    if name != "numpy":
        return cr.jit(fn)(*[_convert(a, lambda x: to_backend(x, name)) for a in args])
    module = cr.jit(fn).module(*args)
    leaves = flatten(tuple(args))[0]
    params = module["main"].params
    if len(params) != len(leaves):
        pytest.skip("reads arrays from outside its arguments")
    out = compile_for(module, "numpy")(*leaves)
    ret = cr.jit(fn)(*args)  # the output structure
    return unflatten(flatten(ret)[1], list(out) if isinstance(out, tuple) else [out])


def _expected_refusal(exc: ChainruleError, name: str) -> None:
    text = str(exc)
    if isinstance(exc, BackendError) and name in text:
        pytest.skip(text)
    raise exc


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("c", [c for c in CASES if c.jit], ids=[c.id for c in CASES if c.jit])
def test_values_on_backend(c, name):
    args = c.args[0]
    want = cr.jit(c.fn)(*args)
    try:
        got = _run(name, c.fn, args)
    except ChainruleError as exc:
        _expected_refusal(exc, name)
    close(got, want, c, f"{c.id} on {name}", name, sign_free=c.name in SIGN_FREE)


def _float_positions(args) -> list[int]:
    return [i for i, a in enumerate(args)
            if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


GRAD_CASES = [c for c in CASES if c.grad and c.jit]


@pytest.mark.parametrize("name", [p for p in BACKENDS if p.values[0] != "numpy"])
@pytest.mark.parametrize("c", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_vjp_on_backend(c, name):
    if c.name in SIGN_FREE:
        pytest.skip("the derivative of sign-free vectors depends on the signs each library "
                    "picks")
    args = c.args[0]
    floats = _float_positions(args)
    if not floats:
        pytest.skip("no float array argument")
    rng = np.random.default_rng(5)

    def f(*diff):
        full = list(args)
        for i, d in zip(floats, diff):
            full[i] = d
        return c.fn(*full)

    diff = [args[i] for i in floats]
    out, pullback = cr.vjp(f, *diff)
    out_leaves, tree = flatten(out)
    cot = [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype)
           if np.asarray(o).dtype.kind in "fc" else np.zeros(np.shape(o), np.asarray(o).dtype)
           for o in out_leaves]
    want = pullback(unflatten(tree, cot))
    try:
        b_out, b_pullback = cr.vjp(f, *[to_backend(d, name) for d in diff])
        got = b_pullback(unflatten(tree, [to_backend(x, name) for x in cot]))
    except ChainruleError as exc:
        _expected_refusal(exc, name)
    close(b_out, out, c, f"{c.id}: value of vjp on {name}", name,
          sign_free=c.name in SIGN_FREE)
    close(got, want, c, f"{c.id}: vjp on {name}", name, scale=10.0)
