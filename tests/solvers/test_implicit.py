"""fixed_point and custom_root: values, implicit derivatives (both modes, order 2)
against closed forms and central differences, pytrees, closures, jit, the tape,
and errors."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.solvers import SolverArgumentError, SolverError, custom_root, fixed_point


def dottie(a):
    """x = cos(a x), by fixed_point."""
    return fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), a)


def dottie_exact(a: float) -> float:
    x = 0.5
    for _ in range(2000):
        x = np.cos(a * x)
    return x


def dottie_derivative(a: float) -> float:
    """dx/da of x = cos(a x): -x sin(a x) / (1 + a sin(a x))."""
    x = dottie_exact(a)
    return -x * np.sin(a * x) / (1 + a * np.sin(a * x))


def dottie_second(a: float, eps: float = 1e-5) -> float:
    return (dottie_derivative(a + eps) - dottie_derivative(a - eps)) / (2 * eps)


A = np.float64(0.8)


# -- fixed_point -------------------------------------------------------------------------------
def test_value_and_first_derivatives():
    np.testing.assert_allclose(dottie(A), dottie_exact(A), rtol=1e-9)
    np.testing.assert_allclose(cr.grad(dottie)(A), dottie_derivative(A), rtol=1e-8)
    np.testing.assert_allclose(cr.jvp(dottie, (A,), (np.float64(1.0),))[1],
                               dottie_derivative(A), rtol=1e-8)


def test_second_derivatives_by_every_route():
    expected = dottie_second(A)
    d1 = cr.grad(dottie)
    np.testing.assert_allclose(cr.grad(d1)(A), expected, rtol=1e-6)
    np.testing.assert_allclose(cr.jvp(d1, (A,), (np.float64(1.0),))[1], expected, rtol=1e-6)
    fwd = lambda a: cr.jvp(dottie, (a,), (np.float64(1.0),))[1]  # noqa: E731
    np.testing.assert_allclose(cr.jvp(fwd, (A,), (np.float64(1.0),))[1], expected, rtol=1e-6)
    np.testing.assert_allclose(cr.grad(fwd)(A), expected, rtol=1e-6)


def test_linear_fixed_point_gradients_are_exact():
    # x = M x + b: x = (I - M)^-1 b; d(c.x)/db = (I - M)^-T c, d/dM = outer(w, x)
    rng = np.random.default_rng(0)
    m = 0.2 * rng.standard_normal((3, 3))
    b = rng.standard_normal(3)
    c = np.array([1.0, -2.0, 0.5])

    def loss(m, b):
        return cnp.sum(c * fixed_point(lambda x, m, b: m @ x + b, cnp.zeros(3), m, b))

    x = np.linalg.solve(np.eye(3) - m, b)
    w = np.linalg.solve((np.eye(3) - m).T, c)
    g_m, g_b = cr.grad(loss, argnums=(0, 1))(m, b)
    np.testing.assert_allclose(g_b, w, rtol=1e-8)
    np.testing.assert_allclose(g_m, np.outer(w, x), rtol=1e-8, atol=1e-12)
    t_b = cr.jvp(lambda b: loss(m, b), (b,), (np.ones(3),))[1]
    np.testing.assert_allclose(t_b, w.sum(), rtol=1e-8)


def test_pytrees_closures_and_jit():
    def solve(params, scale):
        # x = {"u": 0.5 cos(u + v w), "v": 0.3 tanh(u) * scale}, scale closed over
        def f(x, p):
            return {"u": 0.5 * cnp.cos(x["u"] + x["v"] * p["w"]),
                    "v": 0.3 * cnp.tanh(x["u"]) * scale}
        x0 = {"u": np.float64(0.0), "v": np.float64(0.0)}
        out = fixed_point(f, x0, params)
        return out["u"] + 2.0 * out["v"]

    params = {"w": np.float64(1.5)}
    scale = np.float64(0.9)
    g_p, g_s = cr.grad(solve, argnums=(0, 1))(params, scale)

    def plain(w, s):
        return float(solve({"w": np.float64(w)}, np.float64(s)))

    eps = 1e-6
    np.testing.assert_allclose(g_p["w"], (plain(1.5 + eps, 0.9) - plain(1.5 - eps, 0.9))
                               / (2 * eps), rtol=1e-6)
    np.testing.assert_allclose(g_s, (plain(1.5, 0.9 + eps) - plain(1.5, 0.9 - eps)) / (2 * eps),
                               rtol=1e-6)
    run = cr.jit(cr.value_and_grad(solve))
    for w in (1.5, 0.5, -1.0):
        value, g = run({"w": np.float64(w)}, scale)
        np.testing.assert_allclose(value, plain(w, 0.9), rtol=1e-10)
        np.testing.assert_allclose(g["w"], (plain(w + eps, 0.9) - plain(w - eps, 0.9))
                                   / (2 * eps), rtol=1e-6)


def test_on_the_tape_with_arguments_and_closures():
    a = tape.tensor(A, requires_grad=True)
    fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), a).backward()
    np.testing.assert_allclose(a.grad, dottie_derivative(A), rtol=1e-8)
    a2 = tape.tensor(A, requires_grad=True)
    fixed_point(lambda x: cnp.cos(a2 * x), np.float64(0.5)).backward()
    np.testing.assert_allclose(a2.grad, dottie_derivative(A), rtol=1e-8)
    a3 = tape.tensor(A, requires_grad=True)
    x = fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), a3)
    (g,) = tape.graph.grad_tensors(x, [a3], create_graph=True)
    (h,) = tape.graph.grad_tensors(g, [a3])
    np.testing.assert_allclose(h, dottie_second(A), rtol=1e-6)


def test_the_compiled_solve_is_a_loop_with_a_check():
    source = cr.jit(dottie).source(A)
    assert "while" in source and "solver_check" in source


def test_non_convergence_names_iterations_and_residual():
    with pytest.raises(SolverError, match=r"no convergence in 40 iterations: the last step "
                                          r"changed x by [0-9.e+]+"):
        fixed_point(lambda x: 2.0 * x + 1.0, np.float64(0.5), max_iter=40)
    run = cr.jit(lambda x0: fixed_point(lambda x: 2.0 * x + 1.0, x0, max_iter=40))
    with pytest.raises(SolverError, match="no convergence in 40 iterations"):
        run(np.float64(0.5))
    with pytest.raises(SolverError, match="no convergence in 3 iterations"):
        cr.grad(lambda a: fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), a,
                                      max_iter=3))(A)
    with pytest.raises(SolverError, match="nan"):  # a NaN stops at once
        fixed_point(lambda x: x + np.nan, np.float64(0.5))


@pytest.mark.parametrize("call, words", [
    (lambda: fixed_point(lambda x: x[:1], np.ones(2)), r"shape \(1,\)"),
    (lambda: fixed_point(lambda x: (x, x), np.ones(2)), "structure"),
    (lambda: fixed_point(lambda x: x, np.array([1, 2])), "real floating point"),
    (lambda: fixed_point(lambda x: x, np.ones(2), tol=0.0), "tol"),
    (lambda: fixed_point(lambda x: x, np.ones(2), max_iter=0), "max_iter"),
    (lambda: fixed_point(lambda x, f: x, np.ones(2), print), "arrays or numbers"),
    (lambda: fixed_point(None, np.ones(2)), "callable"),
])
def test_fixed_point_argument_errors(call, words):
    with pytest.raises(SolverArgumentError, match=words):
        call()


# -- custom_root -------------------------------------------------------------------------------
def newton(f, x):
    """Newton's method, traceable: a fixed number of steps (quadratic convergence)."""
    def step(i, x):
        return x - f(x) / cr.jvp(f, (x,), (cnp.ones_like(x),))[1]
    return cr.fori_loop(0, 40, step, x)


def scalar_solve(g, y):
    return y / g(1.0)


def root_sqrt(a):
    return custom_root(lambda x: x * x - a, np.float64(1.0), newton, scalar_solve)


def test_newton_square_root_and_its_derivatives():
    a = np.float64(2.0)
    np.testing.assert_allclose(root_sqrt(a), np.sqrt(2.0), rtol=1e-15)
    np.testing.assert_allclose(cr.grad(root_sqrt)(a), 0.5 / np.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(cr.jvp(root_sqrt, (a,), (np.float64(1.0),))[1],
                               0.5 / np.sqrt(2.0), rtol=1e-12)
    second = -0.25 * 2.0 ** -1.5
    np.testing.assert_allclose(cr.grad(cr.grad(root_sqrt))(a), second, rtol=1e-10)
    np.testing.assert_allclose(cr.jvp(cr.grad(root_sqrt), (a,), (np.float64(1.0),))[1],
                               second, rtol=1e-10)
    run = cr.jit(cr.grad(root_sqrt))
    for v in (2.0, 9.0, 0.25):
        np.testing.assert_allclose(run(np.float64(v)), 0.5 / np.sqrt(v), rtol=1e-12)


def test_a_solve_that_is_not_differentiable_still_gives_derivatives():
    def bisect(f, x0):  # comparisons only: no derivative flows through it
        def body(state):
            lo, hi = state
            mid = 0.5 * (lo + hi)
            below = f(mid) < 0
            return cnp.where(below, mid, lo), cnp.where(below, hi, mid)
        lo, hi = cr.while_loop(lambda s: s[1] - s[0] > 1e-13, body, (x0 * 0.0, x0 * 0.0 + 4.0))
        return 0.5 * (lo + hi)

    def cube_root(a):
        return custom_root(lambda x: x ** 3 - a, np.float64(1.0), bisect, scalar_solve)

    np.testing.assert_allclose(cube_root(np.float64(8.0)), 2.0, rtol=1e-12)
    np.testing.assert_allclose(cr.grad(cube_root)(np.float64(8.0)), 1.0 / 12.0, rtol=1e-10)


def test_vector_root_with_a_dense_tangent_solve_and_aux():
    rng = np.random.default_rng(3)
    w = 0.5 * rng.standard_normal((3, 3))

    def dense_newton(f, x):
        def step(i, x):
            return x - cnp.linalg.solve(cr.jacfwd(f)(x), f(x))
        x = cr.fori_loop(0, 30, step, x)
        return x, cnp.max(cnp.abs(f(x)))

    def dense_solve(g, y):
        return cnp.linalg.solve(cr.jacfwd(g)(y), y)

    def loss(b):
        x, residual = custom_root(lambda x: x - cnp.tanh(w @ x + b), cnp.zeros(3),
                                  dense_newton, dense_solve, has_aux=True)
        return cnp.sum(x * np.array([1.0, 2.0, 3.0])), residual

    b = np.array([0.3, -0.2, 0.5])
    (value, residual) = loss(b)
    assert residual < 1e-12
    g = cr.grad(lambda b: loss(b)[0])(b)
    eps = 1e-6
    fd = [(float(loss(b + eps * e)[0]) - float(loss(b - eps * e)[0])) / (2 * eps)
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)
    t = cr.jvp(lambda b: loss(b)[0], (b,), (np.ones(3),))[1]
    np.testing.assert_allclose(t, np.sum(fd), rtol=1e-7)


def test_custom_root_on_the_tape_and_on_plain_arrays():
    a = tape.tensor(np.float64(2.0), requires_grad=True)
    custom_root(lambda x: x * x - a, np.float64(1.0), newton, scalar_solve).backward()
    np.testing.assert_allclose(a.grad, 0.5 / np.sqrt(2.0), rtol=1e-12)

    def python_newton(f, x):  # Python control flow: fine on arrays and on the tape
        while abs(f(x)) > 1e-14:
            x = x - f(x) / (2 * x)
        return x

    np.testing.assert_allclose(custom_root(lambda x: x * x - 3.0, 1.0, python_newton,
                                           scalar_solve), np.sqrt(3.0))
    a2 = tape.tensor(np.float64(3.0), requires_grad=True)
    custom_root(lambda x: x * x - a2, np.float64(1.0), python_newton, scalar_solve).backward()
    np.testing.assert_allclose(a2.grad, 0.5 / np.sqrt(3.0), rtol=1e-12)


def test_custom_root_errors():
    with pytest.raises(SolverArgumentError, match="tangent_solve must be callable"):
        custom_root(lambda x: x, 1.0, newton, None)
    with pytest.raises(SolverArgumentError, match=r"shape \(1,\)"):
        custom_root(lambda x: x[:1], np.ones(2), newton, scalar_solve)
    with pytest.raises(SolverArgumentError, match="solve must return"):
        cr.grad(lambda a: custom_root(lambda x: x * x - a, np.float64(1.0), newton,
                                      scalar_solve, has_aux=True))(np.float64(2.0))


def test_hessian_through_a_fixed_point_goes_through_forward_mode():
    # linearize cannot split the loop the implicit rule emits; hessian falls back to jvp
    def solution(a):
        return fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), a)

    a, h = 1.0, 1e-4
    d1 = cr.grad(solution)
    want = (d1(np.float64(a + h)) - d1(np.float64(a - h))) / (2 * h)
    assert float(cr.hessian(solution)(np.float64(a))) == pytest.approx(float(want), rel=1e-6)
    assert float(cr.jacfwd(d1)(np.float64(a))) == pytest.approx(float(want), rel=1e-6)
