"""odeint: values against closed forms and SciPy, derivatives (adjoint ODE in reverse
mode, tangent ODE in forward mode) against closed forms and central differences at
orders 1 and 2, pytrees, closures, jit, the tape, a neural ODE fit, errors, and the
SciPy-order wrapper."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_grad

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.solvers import SolverArgumentError, SolverError, odeint

TS = np.array([0.0, 0.4, 1.1, 2.0])
WEIGHTS = np.array([0.5, -1.0, 2.0, 1.5])


def decay(y, t, k):
    return -k * y


# -- values ------------------------------------------------------------------------------
def test_exponential_decay_matches_the_closed_form():
    y0 = np.array([1.0, -2.0, 3.0])
    ys = odeint(decay, y0, TS, 0.7)
    assert ys.shape == (4, 3) and ys.dtype == np.float64
    np.testing.assert_allclose(ys, y0 * np.exp(-0.7 * TS)[:, None], rtol=1e-7, atol=1e-9)


def test_harmonic_oscillator_over_many_periods():
    ts = np.linspace(0.0, 20.0, 41)
    ys = odeint(lambda y, t: cnp.stack([y[1], -y[0]]), np.array([1.0, 0.0]), ts)
    np.testing.assert_allclose(ys[:, 0], np.cos(ts), atol=1e-6)
    np.testing.assert_allclose(ys[:, 1], -np.sin(ts), atol=1e-6)


def lotka_volterra(y, t, a, b, c, d):
    prey, predator = y[0], y[1]
    return cnp.stack([a * prey - b * prey * predator, -c * predator + d * prey * predator])


def test_lotka_volterra_matches_solve_ivp():
    solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp
    params = (1.1, 0.4, 0.4, 0.1)
    ts = np.linspace(0.0, 15.0, 16)
    y0 = np.array([10.0, 5.0])
    ref = solve_ivp(lambda t, y: np.asarray(lotka_volterra(y, t, *params)), (0.0, 15.0), y0,
                    t_eval=ts, method="DOP853", rtol=1e-12, atol=1e-12).y.T
    ys = odeint(lotka_volterra, y0, ts, *params, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ys, ref, rtol=1e-7)
    loose = odeint(lotka_volterra, y0, ts, *params, rtol=1e-5, atol=1e-5)
    assert 1e-9 < np.max(np.abs(loose - ref) / np.abs(ref)) < 1e-2  # tolerances matter


def test_pytree_state_of_several_shapes_and_dtypes():
    y0 = {"x": np.float64(1.0), "v": np.zeros(1), "m": np.eye(2, dtype=np.float32)}

    def f(s, t):
        return {"x": s["v"][0], "v": cnp.reshape(-s["x"], (1,)), "m": -s["m"]}

    ys = odeint(f, y0, TS)
    assert ys["x"].shape == (4,) and ys["v"].shape == (4, 1) and ys["m"].shape == (4, 2, 2)
    assert ys["m"].dtype == np.float32 and ys["x"].dtype == np.float64
    np.testing.assert_allclose(ys["x"], np.cos(TS), atol=1e-7)
    np.testing.assert_allclose(ys["m"][:, 0, 0], np.exp(-TS), rtol=1e-6)


def test_float32_and_a_single_time():
    y0 = np.array([1.0, 2.0], np.float32)
    ys = odeint(decay, y0, TS.astype(np.float32), np.float32(0.5), rtol=1e-5, atol=1e-6)
    assert ys.dtype == np.float32
    np.testing.assert_allclose(ys, y0 * np.exp(-0.5 * TS)[:, None], rtol=1e-4)
    np.testing.assert_array_equal(odeint(decay, y0, np.array([3.0]), 1.0), y0[None])


def test_time_dependent_dynamics_and_hmax():
    # y' = cos(t) y: y = exp(sin t); hmax keeps steps short without changing the answer
    ys = odeint(lambda y, t: cnp.cos(t) * y, np.float64(1.0), TS, hmax=0.05)
    np.testing.assert_allclose(ys, np.exp(np.sin(TS)), rtol=1e-8)


# -- first derivatives -------------------------------------------------------------------
def decay_loss(y0, ts, k):
    return cnp.sum(odeint(decay, y0, ts, k) * WEIGHTS[:, None])


def decay_exact(y0, ts, k):
    return np.sum(y0[None] * np.exp(-k * (ts - ts[0]))[:, None] * WEIGHTS[:, None])


Y0 = np.array([1.0, 2.0])
K = np.float64(0.7)


def test_reverse_mode_against_the_closed_form():
    g_y0, g_ts, g_k = cr.grad(decay_loss, argnums=(0, 1, 2))(Y0, TS, K)
    decays = np.exp(-K * TS)
    np.testing.assert_allclose(g_y0, np.sum(WEIGHTS * decays), rtol=1e-7)
    # d/dt_i: w_i * (-k) y0 e^{-k t_i}, except t_0 shifts the whole solution
    expected_ts = WEIGHTS * (-K) * Y0.sum() * decays
    expected_ts[0] = -np.sum(expected_ts[1:])
    np.testing.assert_allclose(g_ts, expected_ts, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_k, np.sum(-TS * decays * WEIGHTS) * Y0.sum(), rtol=1e-6)


def _with(i, x):
    """(Y0, TS, K) with entry i replaced by x."""
    args = [Y0, TS, K]
    args[i] = x
    return args


def test_forward_mode_against_central_differences():
    for i, (arg, tangent) in enumerate([(Y0, np.array([1.0, -0.5])),
                                        (TS, np.array([0.3, -1.0, 0.5, 2.0])),
                                        (K, np.float64(1.0))]):
        _, tout = cr.jvp(lambda x, i=i: decay_loss(*_with(i, x)), (arg,), (tangent,))
        fd = np.sum(fd_grad(lambda x, i=i: decay_exact(*_with(i, x)), (arg,)) * tangent)
        np.testing.assert_allclose(tout, fd, rtol=1e-6, atol=1e-8)


def test_vjp_of_the_whole_trajectory():
    ys, pull = cr.vjp(lambda y0, k: odeint(decay, y0, TS, k), Y0, K)
    ct = np.ones_like(ys)
    g_y0, g_k = pull(ct)
    np.testing.assert_allclose(g_y0, np.sum(np.exp(-K * TS)), rtol=1e-7)
    np.testing.assert_allclose(g_k, -np.sum(TS * np.exp(-K * TS)) * Y0.sum(), rtol=1e-6)


def test_lotka_volterra_gradients_against_central_differences():
    params = np.array([1.1, 0.4, 0.4, 0.1])
    y0 = np.array([10.0, 5.0])
    ts = np.linspace(0.0, 3.0, 4)

    def loss(y0, p):
        ys = odeint(lotka_volterra, y0, ts, p[0], p[1], p[2], p[3], rtol=1e-10, atol=1e-10)
        return cnp.sum(ys[1:] ** 2) / 100.0

    def plain(y0, p):
        return float(loss(y0, p))

    g_y0, g_p = cr.grad(loss, argnums=(0, 1))(y0, params)
    np.testing.assert_allclose(g_y0, fd_grad(lambda v: plain(v, params), (y0,)), rtol=1e-6)
    np.testing.assert_allclose(g_p, fd_grad(lambda v: plain(y0, v), (params,)), rtol=1e-6)
    t_p = cr.jvp(lambda p: loss(y0, p), (params,), (np.ones(4),))[1]
    np.testing.assert_allclose(t_p, np.sum(g_p), rtol=1e-6)


def test_integer_arguments_have_no_derivative_but_are_allowed():
    def loss(k, power):
        return cnp.sum(odeint(lambda y, t, k, p: -k * y ** p, np.float64(1.0), TS, k, power))

    g = cr.grad(loss)(K, np.int64(1))
    np.testing.assert_allclose(g, -np.sum(TS * np.exp(-K * TS)), rtol=1e-6)


def test_pytree_state_gradient():
    def loss(p):
        s0 = {"x": p["x"], "v": np.float64(0.0)}
        ys = odeint(lambda s, t, w: {"x": s["v"] * w, "v": -s["x"] * w}, s0, TS, p["w"])
        return cnp.sum(ys["x"] * WEIGHTS)

    g = cr.grad(loss)({"x": np.float64(1.0), "w": np.float64(2.0)})
    exact = lambda x, w: np.sum(x * np.cos(w * TS) * WEIGHTS)  # noqa: E731
    np.testing.assert_allclose(g["x"], exact(1.0, 2.0), rtol=1e-7)
    np.testing.assert_allclose(g["w"], np.sum(-TS * np.sin(2.0 * TS) * WEIGHTS), rtol=1e-6)


# -- second derivatives ----------------------------------------------------------------
def logistic_loss(y0, k):
    # y' = -k y^2: y = y0 / (1 + k y0 t), nonlinear so second derivatives are not trivial
    ys = odeint(lambda y, t, k: -k * y * y, y0, TS, k)
    return cnp.sum(ys * WEIGHTS[:, None])


def logistic_hessian(y0, k):
    """The diagonal of d2/dy0^2 of sum_i w_i y0 / (1 + k y0 t_i)."""
    den = 1 + k * y0[None] * TS[:, None]
    return np.sum(WEIGHTS[:, None] * (-2 * k * TS[:, None]) / den ** 3, axis=0)


def test_second_order_every_route_agrees_with_the_closed_form():
    y0 = np.array([1.0, 2.0])
    d2 = logistic_hessian(y0, K)
    g = cr.grad(logistic_loss)
    rev_rev = cr.grad(lambda y: cnp.sum(g(y, K) * np.array([1.0, 0.0])))(y0)
    np.testing.assert_allclose(rev_rev, [d2[0], 0.0], rtol=1e-6, atol=1e-9)
    fwd_rev = cr.jvp(lambda y: g(y, K), (y0,), (np.array([0.0, 1.0]),))[1]
    np.testing.assert_allclose(fwd_rev, [0.0, d2[1]], rtol=1e-6, atol=1e-9)
    first = lambda y: cr.jvp(lambda v: logistic_loss(v, K), (y,), (np.array([1.0, 0.0]),))[1]  # noqa: E731
    fwd_fwd = cr.jvp(first, (y0,), (np.array([1.0, 0.0]),))[1]
    np.testing.assert_allclose(fwd_fwd, d2[0], rtol=1e-6)
    rev_fwd = cr.grad(first)(y0)
    np.testing.assert_allclose(rev_fwd, [d2[0], 0.0], rtol=1e-6, atol=1e-9)


def test_mixed_second_derivative_in_the_parameter_and_the_times():
    y0 = np.array([1.0, 2.0])

    def dk(y, ts):
        return cr.grad(lambda k: cnp.sum(odeint(lambda v, t, k: -k * v * v, y, ts, k)))(K)

    def exact_dk(y, ts):
        dt = (ts - ts[0])[:, None]
        return float(np.sum(-dt * y[None] ** 2 / (1 + K * y[None] * dt) ** 2))

    g_y, g_ts = cr.grad(dk, argnums=(0, 1))(y0, TS)
    np.testing.assert_allclose(g_y, fd_grad(lambda v: exact_dk(v, TS), (y0,)), rtol=1e-6)
    np.testing.assert_allclose(g_ts, fd_grad(lambda v: exact_dk(y0, v), (TS,)), rtol=1e-5,
                               atol=1e-8)


def test_hessian_and_jacfwd():
    y0 = np.array([1.0, 2.0])
    d2 = logistic_hessian(y0, K)
    h = cr.hessian(lambda y: logistic_loss(y, K))(y0)
    np.testing.assert_allclose(h, np.diag(d2), rtol=1e-6, atol=1e-9)


def test_grad_of_grad_on_the_tape():
    y0 = tape.tensor(np.array([1.0, 2.0]), requires_grad=True)
    loss = logistic_loss(y0, K)
    (g,) = tape.graph.grad_tensors(loss, [y0], create_graph=True)
    (h,) = tape.graph.grad_tensors(g[0], [y0])
    d2 = logistic_hessian(np.array([1.0, 2.0]), K)
    np.testing.assert_allclose(h, [d2[0], 0.0], rtol=1e-6, atol=1e-9)


# -- closures, jit, the tape -----------------------------------------------------------------
def test_values_the_function_closes_over_are_differentiated():
    def loss(y0, k):
        return cnp.sum(odeint(lambda y, t: -k * y, y0, TS) * WEIGHTS[:, None])

    g_y0, g_k = cr.grad(loss, argnums=(0, 1))(Y0, K)
    ref_y0, _, ref_k = cr.grad(decay_loss, argnums=(0, 1, 2))(Y0, TS, K)
    np.testing.assert_allclose(g_y0, ref_y0, rtol=1e-12)
    np.testing.assert_allclose(g_k, ref_k, rtol=1e-12)
    t_k = cr.jvp(lambda k: loss(Y0, k), (K,), (np.float64(1.0),))[1]
    np.testing.assert_allclose(t_k, ref_k, rtol=1e-6)


def test_jit_compiles_once_and_sees_changed_inputs_and_captured_arrays():
    rate = np.array([0.7])
    calls = []

    def f(y, t):
        calls.append(1)
        return -rate * y

    run = cr.jit(lambda y0, ts: odeint(f, y0, ts))
    source = run.source(Y0, TS)
    assert "while" in source and "solver_check" in source
    traced = len(calls)
    for scale in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(run(Y0 * scale, TS * scale),
                                   scale * Y0 * np.exp(-0.7 * scale * TS)[:, None], rtol=1e-7)
    rate[:] = 0.2  # read again at each call, not baked in
    np.testing.assert_allclose(run(Y0, TS), Y0 * np.exp(-0.2 * TS)[:, None], rtol=1e-7)
    assert len(calls) == traced  # never traced again
    grad = cr.jit(cr.grad(lambda y0, ts: cnp.sum(odeint(f, y0, ts))))
    for scale in (1.0, 2.0):
        np.testing.assert_allclose(grad(Y0, TS * scale), np.sum(np.exp(-0.2 * TS * scale)),
                                   rtol=1e-7)


def test_tape_tensors_in_arguments_and_closures():
    k = tape.tensor(K, requires_grad=True)
    y0 = tape.tensor(Y0, requires_grad=True)
    loss = cnp.sum(odeint(lambda y, t: -k * y, y0, TS) * WEIGHTS[:, None])
    loss.backward()
    ref_y0, _, ref_k = cr.grad(decay_loss, argnums=(0, 1, 2))(Y0, TS, K)
    np.testing.assert_allclose(y0.grad, ref_y0, rtol=1e-12)
    np.testing.assert_allclose(k.grad, ref_k, rtol=1e-12)
    # a closed-over tensor with plain arguments is still seen
    k2 = tape.tensor(K, requires_grad=True)
    cnp.sum(odeint(lambda y, t: -k2 * y, Y0, TS) * WEIGHTS[:, None]).backward()
    np.testing.assert_allclose(k2.grad, ref_k, rtol=1e-12)


def test_neural_ode_fit_reduces_the_loss():
    rng = np.random.default_rng(0)
    ts = np.linspace(0.0, 1.0, 5)
    y0 = np.array([1.0, 0.0])
    target = odeint(lambda y, t: cnp.stack([y[1], -y[0]]), y0, ts)
    params = [0.3 * rng.standard_normal((2, 8)), np.zeros(8), 0.3 * rng.standard_normal((8, 2))]

    def dynamics(y, t, w1, b1, w2):
        return cnp.tanh(y @ w1 + b1) @ w2

    def loss(params):
        ys = odeint(dynamics, y0, ts, *params, rtol=1e-6, atol=1e-6)
        return cnp.mean((ys - target) ** 2)

    step = cr.jit(cr.value_and_grad(loss))
    history = []
    for _ in range(8):
        value, grads = step(params)
        history.append(float(value))
        params = [p - 0.5 * g for p, g in zip(params, grads)]
    assert history[-1] < 0.6 * history[0]
    assert all(b <= a * 1.001 for a, b in zip(history, history[1:]))


# -- errors ------------------------------------------------------------------------------
def test_mxstep_exceeded_is_an_error_eager_and_compiled():
    f = lambda y, t: cnp.stack([y[1], -y[0]])  # noqa: E731
    with pytest.raises(SolverError, match=r"mxstep=3 steps .* without reaching t=10"):
        odeint(f, np.array([1.0, 0.0]), np.array([0.0, 10.0]), mxstep=3)
    run = cr.jit(lambda y0: odeint(f, y0, np.array([0.0, 10.0]), mxstep=3))
    with pytest.raises(SolverError, match=r"mxstep=3"):
        run(np.array([1.0, 0.0]))
    with pytest.raises(SolverError, match=r"mxstep=3"):
        cr.grad(lambda y0: cnp.sum(odeint(f, y0, np.array([0.0, 10.0]), mxstep=3)))(
            np.array([1.0, 0.0]))


def test_blow_up_stops_with_an_error_naming_the_time():
    # y' = y^2, y(0) = 1 blows up at t = 1
    with pytest.raises(SolverError, match=r"step size fell to .* at t=(0\.99|1\.00)"):
        odeint(lambda y, t: y * y, np.float64(1.0), np.array([0.0, 2.0]))
    with pytest.raises(SolverError, match=r"hmin=0\.1"):
        odeint(lambda y, t: y * y, np.float64(1.0), np.array([0.0, 2.0]), hmin=0.1)


@pytest.mark.parametrize("call, words", [
    (lambda: odeint(decay, Y0, np.array([0.0, 1.0, 1.0]), K), "strictly increasing"),
    (lambda: odeint(decay, Y0, np.array([[0.0, 1.0]]), K), "1-D"),
    (lambda: odeint(lambda y, t: y[:1], Y0, TS), r"shape \(1,\) for the state leaf 0"),
    (lambda: odeint(lambda y, t: {"a": y}, Y0, TS), "structure"),
    (lambda: odeint(decay, np.array([1, 2]), TS, K), "real floating point"),
    (lambda: odeint(decay, Y0 + 0j, TS, K), "complex"),
    (lambda: odeint(decay, Y0, TS, K, rtol=-1.0), "rtol must be >= 0"),
    (lambda: odeint(decay, Y0, TS, K, rtol=0.0, atol=0.0), "both be 0"),
    (lambda: odeint(decay, Y0, TS, K, mxstep=2.5), "mxstep"),
    (lambda: odeint(decay, Y0, TS, K, rtol=np.ones(2)), "rtol must be a Python number"),
    (lambda: odeint(decay, Y0, TS, print), "arrays or numbers"),
    (lambda: odeint(3.0, Y0, TS), "callable"),
])
def test_argument_errors(call, words):
    with pytest.raises(SolverArgumentError, match=words):
        call()


def test_traced_times_are_checked_when_the_program_runs():
    run = cr.jit(lambda ts: odeint(decay, Y0, ts, K))
    run(TS)
    with pytest.raises(SolverError, match="strictly increasing"):
        run(TS[::-1].copy())


# -- the SciPy-order wrapper ------------------------------------------------------------------
def test_scipy_signature_matches_scipy():
    si = pytest.importorskip("scipy.integrate")
    from chainrule.scipy.integrate import odeint as sp_odeint

    def fn(y, t, a, b):
        return np.array([a * y[0] - b * y[0] * y[1], -y[1] + y[0] * y[1]])

    y0, ts, args = np.array([1.0, 0.5]), np.linspace(0.0, 5.0, 6), (1.0, 0.5)
    for t in (ts, ts[::-1], np.array([0.0, 1.0, 1.0, 2.0])):
        ref = si.odeint(fn, y0, t, args=args, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sp_odeint(fn, y0, t, args=args), ref, rtol=1e-6, atol=1e-8)
    ref = si.odeint(fn, y0, ts, args=args, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sp_odeint(lambda t, y, a, b: fn(y, t, a, b), y0, ts, args,
                                         tfirst=True, h0=0.01, hmax=0.5), ref, rtol=1e-6)
    single = sp_odeint(lambda y, t, k: -k * y, 2.0, [0.0, 1.0], args=0.5)
    assert single.shape == (2, 1)
    with pytest.raises(SolverArgumentError, match="full_output"):
        sp_odeint(fn, y0, ts, args=args, full_output=1)
    with pytest.raises(SolverError, match="mxstep=2"):
        sp_odeint(fn, y0, ts, args=args, mxstep=2)


def test_an_autograd_program_runs_unchanged():
    from chainrule.scipy.integrate import odeint as sp_odeint

    # autograd's own example: odeint(func, y0, t, func_args) with func(y, t, *args)
    def func(y, t, arg1, arg2):
        return -cnp.sqrt(t) - y + arg1 - cnp.mean((y + arg2) ** 2)

    y0 = np.random.default_rng(1).standard_normal(4)
    ts = np.linspace(0.1, 2.0, 5)
    a1, a2 = np.float64(0.3), np.float64(-0.2)

    def loss(y0, ts, a1, a2):
        return cnp.sum(sp_odeint(func, y0, ts, (a1, a2)) ** 2)

    grads = cr.grad(loss, argnums=(0, 1, 2, 3))(y0, ts, a1, a2)
    args = (y0, ts, a1, a2)
    for i in range(len(args)):
        fd = fd_grad(lambda *a: float(loss(*a)), args, i)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-5, atol=1e-7)
