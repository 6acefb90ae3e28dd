"""Residuals of loops with a known trip count stored in rows of one preallocated
array (``stack_alloc``, ``ops/stack.py``'s ``RowStack``): the gradient program that
uses them (Before/After text), persistence of the stack values, and every order
through ``fori_loop`` (static and traced bounds) and ``scan`` with rows, against the
unrolled programs, finite differences, linearize + transpose and budgets."""

from __future__ import annotations

import numpy as np
import pytest
from test_loops_higher_order import PROGRAMS, V, X, third
from test_loops_higher_order import compiled as compiled  # a fixture, used by name

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import InterpretError
from chainrule.ir import OPS, verify
from chainrule.ops import stack
from chainrule.testing import check_grads
from chainrule.transform.reverse.gradient import gradient

PUSH, POP, ALLOC = (OPS[n].kernel for n in ("stack_push", "stack_pop", "stack_alloc"))

LOOP = """
def f(x0: f64[64, 64], w: f64[64, 64], n: i64) -> f64:
    i0 = 0
    x, i = x0, i0
    while True:
        c = less(i, n)
        if not c:
            break
        y = matmul(x, w)
        z = tanh(y)
        j = add(i, 1)
        x, i = z, j
    r = (x, i)
    out = r[0]
    s = sum(out)
    return s
"""


@pytest.fixture
def rows_always(monkeypatch):
    """Every array residual on rows, however small (the programs below are small)."""
    monkeypatch.setattr(stack, "ROW_MIN_BYTES", 0)
    monkeypatch.setattr(stack, "ROW_MIN_TOTAL", 0)


def test_before_after_a_counted_loop_stores_rows():
    before = cr.parse(LOOP)
    assert "stack" not in str(before)
    after = verify(gradient(before, "f"))
    text = str(after)
    # the trip count n - i0 is known before the loop: one array of rows per residual
    assert "r_rows = subtract(n, i0)" in text
    assert "x_stack = stack_alloc(r_rows, elem=f64[64, 64], slot='x')" in text
    assert "z_stack = stack_alloc(r_rows, elem=f64[64, 64], slot='z')" in text
    assert "x_stack_2 = stack_push(x_stack_1, x)" in text  # pushes and pops as before
    assert "x_top = stack_pop(" in text
    assert cr.parse(text) == after  # prints and reads back


def test_unknown_trip_count_and_small_residuals_keep_linked_cells():
    by_two = LOOP.replace("j = add(i, 1)", "j = add(i, 2)")  # not one trip per count
    # a bound computed in the loop (here the same n, but the pass does not look)
    moving = LOOP.replace("c = less(i, n)", "m = add(n, 0)\n        c = less(i, m)")
    for text in (by_two, moving):
        out = str(gradient(cr.parse(text), "f"))
        assert "stack_alloc" not in out and "stack_empty(elem=f64[64, 64])" in out
    small = str(gradient(cr.parse(LOOP.replace("64, 64", "4, 4")), "f"))
    assert "stack_alloc" not in small and "stack_empty(elem=f64[4, 4])" in small


def test_gradient_with_rows_matches_finite_differences(rows_always):
    rng = np.random.default_rng(0)
    x0, w = rng.normal(size=(64, 64)), rng.normal(size=(64, 64)) * 0.1
    m = cr.parse(LOOP)
    for n in (0, 1, 7):
        def f(x0, w, n=n):
            return cr.run(m, x0, w, np.int64(n), func="f")
        g = cr.grad(lambda x0, w, n=n: cnp.sum(cr.fori_loop(
            0, n, lambda i, x: cnp.tanh(x @ w), x0)), argnums=(0, 1))(x0, w)
        d0, d1, eps = rng.normal(size=x0.shape), rng.normal(size=w.shape), 1e-6
        fd = (f(x0 + eps * d0, w + eps * d1) - f(x0 - eps * d0, w - eps * d1)) / (2 * eps)
        np.testing.assert_allclose(np.vdot(g[0], d0) + np.vdot(g[1], d1), fd, rtol=1e-6)


def test_row_stacks_are_persistent(rows_always):
    elem = cr.parse("def f(x: f64[2]) -> f64[2]:\n    return x\n").functions["f"].params[0].type
    a, b, c = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])
    s0 = ALLOC(np.int64(2), elem=elem, slot='a')
    s1 = PUSH(s0, a)
    s2 = PUSH(s1, b)
    other = PUSH(s1, c)  # row 1 is written: a linked cell on top of s1, s2 unchanged
    s3 = PUSH(s2, c)  # past the rows: a linked cell
    assert type(s2) is stack.RowStack and type(other) is stack.StackCell
    np.testing.assert_array_equal(POP(other)[0], c)
    top, rest = POP(s3)
    np.testing.assert_array_equal(top, c)
    top, rest = POP(rest)
    np.testing.assert_array_equal(top, b)
    assert not top.flags.writeable  # a row is shared: read-only
    np.testing.assert_array_equal(POP(rest)[0], a)
    assert not stack.is_empty(rest) and stack.is_empty(POP(rest)[1])
    with pytest.raises(InterpretError, match="empty"):
        POP(POP(rest)[1])
    # an empty count is no error: the rows are a size hint
    assert stack.is_empty(ALLOC(np.int64(-3), elem=elem, slot='a'))
    np.testing.assert_array_equal(POP(PUSH(ALLOC(np.int64(-3), elem=elem, slot='a'), a))[0], a)
    added = stack.add_stacks(s2, PUSH(None, c))
    np.testing.assert_array_equal(POP(added)[0], b + c)
    np.testing.assert_array_equal(POP(POP(added)[1])[0], a)


@pytest.mark.parametrize("name", ["fori_loop", "scan", "scan_reverse", "nested_loops",
                                  "checkpoint_every", "script_for"])
def test_every_order_with_rows_matches_the_unrolled_program(name, compiled, rows_always):
    looped, unrolled = PROGRAMS[name]
    h = cr.hessian(unrolled)(X)
    np.testing.assert_allclose(cr.jacrev(cr.grad(looped))(X), h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cr.hvp(looped, (X,), (V,)), h @ V, rtol=1e-10, atol=1e-12)
    rev_fwd = cr.grad(lambda x: cr.jvp(looped, (x,), (V,))[1])(X)
    np.testing.assert_allclose(rev_fwd, h @ V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(third(looped)(X), third(unrolled)(X), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", ["fori_loop", "scan"])
def test_rows_match_finite_differences_to_order_two(name, compiled, rows_always):
    check_grads(PROGRAMS[name][0], (X,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def traced_bounds(x, n):
    return cnp.sum(cr.fori_loop(1, n, lambda i, h: cnp.sin(h) * 0.9 + h * 0.1, x) ** 2)


def test_traced_bounds_every_order(rows_always):
    for n in (0, 1, 4):
        def f(x, n=n):
            return traced_bounds(x, n)

        def unrolled(x, n=n):
            for _ in range(max(n - 1, 0)):
                x = cnp.sin(x) * 0.9 + x * 0.1
            return cnp.sum(x ** 2)

        traced = cr.grad(traced_bounds)
        np.testing.assert_allclose(traced(X, n), cr.grad(unrolled)(X), rtol=1e-12)
        np.testing.assert_allclose(cr.jacrev(cr.grad(traced_bounds))(X, n),
                                   cr.hessian(unrolled)(X), rtol=1e-10, atol=1e-12)
        check_grads(f, (X,), order=2, modes=("rev",), atol=1e-5, rtol=1e-5)


def test_reverse_matches_linearize_and_transpose(rows_always):
    f = PROGRAMS["fori_loop"][0]
    ct = np.array([1.0, -0.5, 2.0])
    _, lin = cr.linearize(cr.grad(f), X)
    (got,) = cr.linear_transpose(lin, X)(ct)
    np.testing.assert_allclose(got, cr.hessian(f)(X).T @ ct, rtol=1e-10, atol=1e-12)
    _, vjp = cr.vjp(f, X)
    np.testing.assert_allclose(vjp(1.0)[0], cr.grad(f)(X), rtol=1e-12)


def test_budgets_unchanged(rows_always):
    W = np.array([[0.5, -0.3], [0.2, 0.4]])
    x = np.array([0.3, -0.2])

    def g(x, budget):
        body = lambda i, h: h - 0.1 * cnp.tanh(h @ W)  # noqa: E731
        return cnp.sum(cr.fori_loop(0, 60, body, x, checkpoint=budget) ** 2)

    stored = cr.grad(lambda x: g(x, None))(x)
    for budget in (cr.Budget(snapshots=1), cr.Budget(snapshots=5), cr.Budget(bytes=100)):
        np.testing.assert_allclose(cr.grad(lambda x, b=budget: g(x, b))(x), stored, rtol=1e-12)
    h = cr.hessian(lambda x: g(x, None))(x)
    np.testing.assert_allclose(cr.hessian(lambda x: g(x, cr.Budget(snapshots=4)))(x), h,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["fori_loop", "scan"])
def test_the_checked_programs_use_rows(name, rows_always):
    from chainrule.frontend.tracer import trace_function

    module = trace_function(PROGRAMS[name][0], (X,)).module
    assert "stack_alloc(" in str(verify(gradient(module)))


@pytest.mark.parametrize("name", ["torch", "dask"])
def test_other_array_namespaces_go_on_linked_cells(name, rows_always):
    """stack_alloc runs as Python on every namespace; a pushed tensor that is not a NumPy
    array goes on a linked cell."""
    from array_backends import host, on

    from chainrule.backend.array_api.namespaces import NAMESPACES

    if not NAMESPACES[name].available():
        pytest.skip(f"{name} is not installed")
    f = PROGRAMS["fori_loop"][0]
    np.testing.assert_allclose(host(name, cr.grad(f)(on(name, X))), cr.grad(f)(X),
                               rtol=1e-12)
