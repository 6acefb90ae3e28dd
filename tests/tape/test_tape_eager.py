"""The tape's two backward routes agree: the first backward of a structure applies the
VJP rules eagerly, a later one runs the pullback the gradient pass built and compiled.
Checked on every catalog function, with the compiled reverse mode as the reference."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.tape.pullback import STATS


def _tape_grads(f, args, weights):
    leaves = [tape.tensor(a, requires_grad=True) for a in args]
    cnp.sum(f(*leaves) * weights).backward()
    return [t.grad for t in leaves]


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_eager_first_backward_equals_the_compiled_pullback(name):
    f, args = CATALOG[name]
    args = [np.asarray(a, np.float64) for a in args]
    weights = np.random.default_rng(0).standard_normal(np.shape(f(*args)))
    want = cr.grad(lambda *xs: cnp.sum(f(*xs) * weights), argnums=tuple(range(len(args))))(
        *args)
    sys.modules["chainrule.tape.graph"]._BACKWARD_CACHE.clear()
    eager, built = STATS["eager_backwards"], STATS["backward_compilations"]
    first = _tape_grads(f, args, weights)
    second = _tape_grads(f, args, weights)  # the same structure: the compiled pullback
    assert STATS["eager_backwards"] == eager + 1
    assert STATS["backward_compilations"] == built + 1
    for a, b, c in zip(want, first, second):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-14)


def test_tuple_valued_ops_and_constant_operands():
    x = tape.tensor(np.arange(6.0), requires_grad=True)
    a, b = cnp.split(x, 2)
    loss = cnp.sum(a * np.array([1.0, 2.0, 3.0])) + 2.0 * cnp.sum(b ** 2)  # a scalar operand
    loss.backward()
    np.testing.assert_allclose(x.grad, [1.0, 2.0, 3.0, 12.0, 16.0, 20.0])
