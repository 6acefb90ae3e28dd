"""NumPy's own functions called on traced values and tape tensors reach chainrule's
function of the same module and name (np.linalg.diagonal is not np.diagonal)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule import tape
from chainrule.errors import TraceError

A = np.arange(18.0).reshape(2, 3, 3)

CALLS = {
    "np.linalg.diagonal": lambda a: np.linalg.diagonal(a),
    "np.diagonal": lambda a: np.diagonal(a),
    "np.linalg.trace": lambda a: np.linalg.trace(a),
    "np.trace": lambda a: np.trace(a),
    "np.fft.rfft": lambda a: np.fft.rfft(a),
    "np.fft.fft2": lambda a: np.fft.fft2(a),
    "np.linalg.norm": lambda a: np.linalg.norm(a),
    "np.sum": lambda a: np.sum(a, axis=1),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_functions_dispatch_by_module(name):
    f = CALLS[name]
    want = f(A)
    np.testing.assert_allclose(cr.jit(f)(A), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(f(tape.tensor(A)).value()), want, rtol=1e-12)


def test_an_unsupported_submodule_function_is_named_with_its_module():
    window = np.lib.stride_tricks.sliding_window_view
    with pytest.raises(TraceError, match=r"np\.lib\.stride_tricks\.sliding_window_view is "
                                         r"not supported"):
        cr.jit(lambda a: window(a, 2))(A[0, 0])


def test_numpy_bool_scalars_combine_with_traced_comparisons():
    x = np.array([-1.0, 1.0])
    for f, want in [(lambda v: np.bool_(True) | (v > 0), [True, True]),
                    (lambda v: np.bool_(True) & (v > 0), [False, True]),
                    (lambda v: np.bool_(True) ^ (v > 0), [True, False]),
                    (lambda v: ~(v > 0), [True, False])]:
        np.testing.assert_array_equal(cr.jit(f)(x), want)
