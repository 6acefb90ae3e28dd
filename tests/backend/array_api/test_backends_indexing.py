"""Every indexing key form NumPy takes (ellipsis, new axes, slices stepping either way,
ints, index arrays, boolean masks, mixtures) on every installed array backend: the value
and the reverse-mode derivative of ``x[key]`` and of ``x.at[key].<method>(v)`` are
NumPy's, or, where NumPy refuses, the backend refuses with the same chainrule error."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.backend.array_api.namespaces import NAMESPACES
from chainrule.errors import BackendError, ChainruleError

BACKENDS = [
    pytest.param("torch", marks=pytest.mark.skipif(
        not NAMESPACES["torch"].available(),
        reason="PyTorch is not installed (pip install 'chainrule[torch]')")),
    pytest.param("dask", marks=pytest.mark.skipif(
        not NAMESPACES["dask"].available(),
        reason="Dask is not installed (pip install 'chainrule[dask]')")),
]

X = np.random.default_rng(1).standard_normal((3, 4, 5))
REPEATED = np.array([2, 0, -1, 0])  # position 0 twice: the derivatives accumulate
DISTINCT = np.array([2, 0, -2])
TABLE = np.array([[1, 0], [2, 2]])

_ = slice(None)
KEYS = {
    "ellipsis_newaxis": (Ellipsis, None, _),
    "newaxis_front": (None,),
    "newaxis_between": (_, None, 1),
    "newaxis_twice": (None, 0, None, _, None),
    "int": (1,),
    "negative_int": (-1,),
    "negative_int_backward_slice": (-1, slice(None, None, -1)),
    "slices": (slice(None, None, 2), slice(1, None)),
    "backward_slice": (slice(None, None, -1),),
    "backward_slice_bounds": (slice(2, 0, -1), slice(-1, None, -2)),
    "backward_slice_newaxis": (slice(None, None, -2), None, slice(1, 3)),
    "empty_slice": (slice(2, 1),),
    "empty_backward_slice": (slice(0, 2, -1),),
    "ellipsis_int": (Ellipsis, 2),
    "ellipsis_backward_slice": (Ellipsis, slice(None, None, -2)),
    "int_array_repeated": (REPEATED,),
    "int_array_distinct": (DISTINCT,),
    "int_array_2d": (TABLE,),
    "int_array_axis1": (_, DISTINCT),
    "int_array_backward_slice": (DISTINCT, slice(None, None, -1)),
    "backward_slice_int_array": (slice(None, None, -1), DISTINCT, slice(4, 0, -2)),
    "newaxis_int_array": (None, DISTINCT),
    "int_array_newaxis_int_array": (DISTINCT, None, np.array([0, 3, 1])),
    "ellipsis_int_array": (Ellipsis, DISTINCT),
    "two_int_arrays": (REPEATED, REPEATED),
    "int_array_int": (DISTINCT, 1),
    "int_slice_int_array": (1, _, DISTINCT),  # NumPy puts the array's axes first
    "int_array_slice_int": (TABLE, _, -1),
    "int_newaxis_int_array_backward": (1, None, DISTINCT, slice(None, None, -1)),
}


def _gather(key):
    return lambda x: x[key]


def _update(key, method):
    return lambda x, v: getattr(x.at[key], method)(v)


# boolean masks: NumPy takes a mask written in the traced function (a constant of its
# source), not one read from outside (its shape would depend on data)
GATHERS = {name: _gather(key) for name, key in KEYS.items()}
GATHERS["bool_mask_axis1"] = lambda x: x[:, np.array([True, False, True, True])]
GATHERS["ellipsis_bool_mask"] = lambda x: x[..., np.array([False, True, True, False, True])]
GATHERS["make_diagonal"] = lambda d: d[..., None, :] * cnp.eye(d.shape[-1])

METHODS = ("add", "set", "multiply", "max")
UPDATES = {f"{name}-{method}": _update(key, method)
           for name, key in KEYS.items() for method in METHODS}
UPDATES["bool_mask_axis1-add"] = (
    lambda x, v: x.at[:, np.array([True, False, True, True])].add(v))


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


def _compare_vjp(fn, args, name):
    """``cr.vjp`` of ``fn`` at ``args`` on backend ``name`` gives NumPy's value and
    derivatives, or the error NumPy gives."""
    try:
        out, pullback = cr.vjp(fn, *args)
        cot = np.random.default_rng(0).standard_normal(np.shape(out))
        want = pullback(cot)
    except ChainruleError as exc:
        with pytest.raises(type(exc)):
            _backend_vjp(fn, args, cot=None, name=name)
        return
    got_out, got = _backend_vjp(fn, args, cot, name)
    to_numpy = NAMESPACES[name].to_numpy
    np.testing.assert_allclose(to_numpy(got_out), out, rtol=1e-12, atol=1e-12)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = to_numpy(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _backend_vjp(fn, args, cot, name):
    ns = NAMESPACES[name]
    out, pullback = cr.vjp(fn, *[ns.asarray(a) for a in args])
    if cot is None:
        cot = np.ones(tuple(out.shape))
    return out, pullback(ns.asarray(cot))


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("form", list(GATHERS))
def test_gather_vjp_matches_numpy(form, name):
    _compare_vjp(GATHERS[form], (X,), name)


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("form", list(UPDATES))
def test_update_vjp_matches_numpy(form, name):
    key_form = form.rsplit("-", 1)[0]
    selected = GATHERS[key_form](X)
    value = np.random.default_rng(2).standard_normal(np.shape(selected))
    _compare_vjp(UPDATES[form], (X, value), name)


def test_update_kernel_refusal_names_op_backend_and_key():
    """A namespace whose scatter is not written (the shared kernel assigns at basic keys
    only) refuses an index array naming the op, the backend and the key."""
    from chainrule.backend.array_api.kernels import GENERIC, KernelContext
    from chainrule.ir.indexing import ArrayIndex, Slice

    ctx = KernelContext("cupy", np)
    key = (Slice(None, None, -1), ArrayIndex(0))
    with pytest.raises(BackendError, match=r"index_add.*cupy.*\[::-1, <array 0>\]"):
        GENERIC[ops.index_add](ctx, np.zeros((3, 4)), np.ones(3), np.array([0, 1, 2]), key=key)
