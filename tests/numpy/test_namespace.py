"""Every public function of chainrule.numpy (and numpy.linalg, numpy.fft,
chainrule.scipy.*) against NumPy/SciPy, in every route: values on arrays and
in generated code, derivatives against finite differences in both modes to
order 2, and the tape against the compiler. Cases: tests/cases_*.py (see
tests/namespace_cases.py). A public name without a case fails here."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from namespace_cases import Case, collect

import chainrule as cr
from chainrule import tape
from chainrule.testing import check_grads
from chainrule.tree import flatten, unflatten

CASES = collect()
NAMESPACES = {"": "chainrule.numpy", "linalg.": "chainrule.numpy.linalg",
              "fft.": "chainrule.numpy.fft", "scipy.special.": "chainrule.scipy.special",
              "scipy.stats.": "chainrule.scipy.stats", "scipy.signal.": "chainrule.scipy.signal",
              "scipy.linalg.": "chainrule.scipy.linalg", "nn.": "chainrule.nn"}
# public names that are not functions of arrays
NOT_FUNCTIONS = {"bool_", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "complex64", "complex128", "ndarray", "e", "pi", "inf", "nan",
                 "newaxis", "shape", "ndim", "size", "linalg", "fft", "r_", "c_", "index_exp"}


def _public_names() -> list[str]:
    names = []
    for prefix, module in NAMESPACES.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for n in getattr(mod, "__all__", ()):
            if n not in NOT_FUNCTIONS and not isinstance(getattr(mod, n), type(importlib)):
                names.append(prefix + n)
    return names


def test_every_public_function_has_a_case():
    covered = {c.name for c in CASES}
    missing = sorted(set(_public_names()) - covered)
    assert not missing, f"public functions without a case in tests/cases_*.py: {missing}"


def _close(got, want, c: Case, where: str) -> None:
    got_leaves, want_leaves = flatten(got)[0], flatten(want)[0]
    assert len(got_leaves) == len(want_leaves), where
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "biu" and g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            np.testing.assert_allclose(g, w, rtol=c.rtol, atol=c.atol, err_msg=where,
                                       equal_nan=True)


IDS = [c.id for c in CASES]


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_values(c):
    for k, args in enumerate(c.args):
        got = c.fn(*args)
        if c.ref is not None:
            _close(got, c.ref(*args), c, f"{c.id} on argument set {k}")
        if c.jit:
            _close(cr.jit(c.fn)(*args), got, c, f"{c.id} compiled, argument set {k}")


def _differentiable_sets(c):
    return [a for a in c.args[:c.grad_sets]
            if any(np.issubdtype(np.asarray(x).dtype, np.floating) for x in flatten(a)[0])]


@pytest.mark.parametrize("c", [c for c in CASES if c.grad], ids=[c.id for c in CASES if c.grad])
def test_derivatives(c):
    for args in _differentiable_sets(c):
        check_grads(c.fn, args, order=c.order, modes=("fwd", "rev"), atol=c.grad_tol,
                    rtol=c.grad_tol)


@pytest.mark.parametrize("c", [c for c in CASES if c.grad and c.tape],
                         ids=[c.id for c in CASES if c.grad and c.tape])
def test_tape_equals_compiled(c):
    rng = np.random.default_rng(3)
    for args in _differentiable_sets(c):
        floats = [i for i, a in enumerate(args)
                  if np.issubdtype(np.asarray(a).dtype, np.floating)]
        out, pullback = cr.vjp(c.fn, *args)
        out_leaves, out_tree = flatten(out)
        cot = [rng.standard_normal(np.shape(o)) for o in out_leaves]
        want = pullback(unflatten(out_tree, cot))
        tensors = [tape.tensor(a, requires_grad=True) if i in floats else a
                   for i, a in enumerate(args)]
        res = c.fn(*tensors)
        leaves = flatten(res)[0]
        total = None
        for leaf, u in zip(leaves, cot):
            term = (leaf * u).sum()
            total = term if total is None else total + term
        total.backward()
        for i in floats:
            np.testing.assert_allclose(tensors[i].grad, want[i], rtol=1e-9, atol=1e-11,
                                       err_msg=f"{c.id}: tape vs compiled, argument {i}")
