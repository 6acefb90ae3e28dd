"""The Dormand–Prince 5(4) method with adaptive steps and dense output.

``solve(func, y0, ts, ...)`` integrates ``y' = func(y, t)`` for a flat state
``y`` (a 1-D array) from ``ts[0]`` and returns the solution at every time of
``ts`` (strictly increasing), stacked on axis 0. It is written once against an
array namespace ``xp``: with ``numpy`` it computes, with ``chainrule.numpy``
on traced values it emits IR, the step loop a ``While`` nested in a ``scan``
over the output times, so the whole solve compiles.

The method is the one SciPy's ``RK45`` and JAX's ``odeint`` use: the
Dormand–Prince tableau (first same as last: six evaluations of ``func`` per
step), the error of the embedded 4th-order solution measured as an RMS norm
against ``atol + rtol * max(|y0|, |y1|)``, step sizes from the usual
controller (safety 0.9, growth at most x10, shrink at most x0.2), the first
step from Hairer, Nørsett & Wanner's heuristic, and dense output by the
4th-order polynomial through ``y0``, the midpoint and ``y1`` with the end
slopes (Shampine, "Some practical Runge-Kutta formulas", 1986). No step goes
past the last output time (``func`` is never evaluated beyond it, as in
SciPy's ``solve_ivp``; JAX's steps overshoot it).

A solve that cannot go on raises ``SolverError`` (when the program runs, for a
compiled solve): ``mxstep`` steps taken in one output interval, or a step size
that vanished or became NaN (a stiff problem, or ``func`` returning a
non-finite value). JAX returns whatever it had in those cases.

>>> import numpy as np
>>> ys = solve(lambda y, t: -y, np.array([1.0]), np.array([0.0, 1.0]),
...            Options(1e-10, 1e-10, np.inf), np)
>>> bool(abs(ys[1, 0] - np.exp(-1.0)) < 1e-9)
True
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..frontend.control import scan, while_loop
from .runtime import check

ALPHA = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
BETA = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
C_SOL = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
C_ERR = (35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
         -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0)
C_MID = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2,
         -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
         -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)
ORDER = 5.0
SAFETY, MAX_FACTOR, MIN_FACTOR = 0.9, 10.0, 0.2

class Options(NamedTuple):
    """A solve's static options (hashable: they key the compiled solve)."""

    rtol: float
    atol: float
    mxstep: float  # most steps between two output times (math.inf: no limit)
    hmax: float = math.inf  # largest step
    hmin: float = 0.0  # smallest step: a smaller one needed is an error
    first_step: float | None = None  # None: Hairer, Nørsett & Wanner's estimate

    def derived(self) -> Options:
        """The options of a solve derived from this one (adjoint, tangent): the same
        tolerances and limits, its own first step."""
        return self._replace(first_step=None)


# failure codes carried through the solve (the first failure is kept)
OK, TOO_MANY_STEPS, STEP_VANISHED = 0, 1, 2


def _combine(coefficients, ks):
    """sum_i c_i k_i over the non-zero coefficients."""
    out = None
    for c, k in zip(coefficients, ks):
        if c != 0.0:
            out = c * k if out is None else out + c * k
    return out


def _rms(xp, x):
    return xp.sqrt(xp.mean(x * x))


def rk_step(func, y0, f0, t0, dt):
    """One Dormand–Prince step: ``(y1, f1, error estimate, stages)``."""
    ks = [f0]
    for alpha, beta in zip(ALPHA, BETA):
        ks.append(func(y0 + dt * _combine(beta, ks), t0 + dt * alpha))
    y1 = y0 + dt * _combine(C_SOL, ks)
    error = dt * _combine(C_ERR, ks)
    return y1, ks[-1], error, ks


def interp_coefficients(xp, y0, y1, ks, dt):
    """The coefficients (highest power first) of the quartic p(s), s in [0, 1], with
    p(0) = y0, p(1) = y1, p(1/2) = the Dormand–Prince midpoint, p'(0) = dt f0 and
    p'(1) = dt f1."""
    y_mid = y0 + dt * _combine(C_MID, ks)
    dy0, dy1 = dt * ks[0], dt * ks[-1]
    a = -2.0 * dy0 + 2.0 * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dy0 - 3.0 * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dy0 + dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return xp.stack([a, b, c, dy0, y0])


def _polyval(coefficients, s):
    out = coefficients[0]
    for k in range(1, 5):
        out = out * s + coefficients[k]
    return out


def _error_ratio(xp, error, y0, y1, rtol, atol):
    tolerance = atol + rtol * xp.maximum(xp.abs(y0), xp.abs(y1))
    return _rms(xp, error / tolerance)


def _next_step(xp, dt, ratio):
    """The controller: dt * clip(0.9 ratio^(-1/5), 0.2 (or 1 after an accepted step), 10)."""
    floor = xp.where(ratio < 1.0, 1.0, MIN_FACTOR)
    growth = xp.where(ratio == 0.0, 1.0, ratio) ** (-1.0 / ORDER)
    factor = xp.minimum(MAX_FACTOR, xp.maximum(SAFETY * growth, floor))
    return xp.where(ratio == 0.0, dt * MAX_FACTOR, dt * factor)


def initial_step(xp, func, t0, y0, f0, rtol, atol):
    """Hairer, Nørsett & Wanner's estimate of a first step of order 4's accuracy."""
    scale = atol + xp.abs(y0) * rtol
    d0, d1 = _rms(xp, y0 / scale), _rms(xp, f0 / scale)
    tiny = xp.logical_or(d0 < 1e-5, d1 < 1e-5)
    h0 = xp.where(tiny, 1e-6, 0.01 * d0 / xp.where(d1 == 0.0, 1.0, d1))
    f1 = func(y0 + h0 * f0, t0 + h0)
    d2 = _rms(xp, (f1 - f0) / scale) / h0
    big = xp.maximum(d1, d2)
    h1 = xp.where(big <= 1e-15, xp.maximum(1e-6, h0 * 1e-3),
                  (0.01 / xp.where(big <= 1e-15, 1.0, big)) ** (1.0 / ORDER))
    return xp.minimum(100.0 * h0, h1)


def _usable(xp, t, dt, hmin: float):
    """A step that moves t (and is at least hmin); False for NaN."""
    moves = t + dt > t
    return moves if hmin == 0.0 else xp.logical_and(moves, dt >= hmin)


def _clip_step(xp, dt, hmax):
    dt = xp.maximum(dt, 0.0)
    return dt if math.isinf(hmax) else xp.minimum(dt, hmax)


def solve(func, y0, ts, options: Options, xp):
    """The solution of ``y' = func(y, t)``, ``y(ts[0]) = y0``, at the times ``ts``:
    an array ``(len(ts), len(y0))``. ``ts`` has ``y0``'s dtype."""
    rtol, atol, mxstep, hmax, hmin, first_step = options
    n_times = ts.shape[0]
    if n_times == 1:
        return xp.reshape(y0, (1, y0.shape[0]))
    limited = not math.isinf(mxstep)
    f0 = func(y0, ts[0])
    if first_step is None:
        dt = _clip_step(xp, initial_step(xp, func, ts[0], y0, f0, rtol, atol), hmax)
    else:
        dt = ts[0] * 0.0 + min(first_step, hmax)
    coeffs = xp.stack([y0 * 0.0] * 4 + [y0])
    zero_t = ts[0] * 0.0
    code0 = np.int64(OK)

    def interval(carry, target):
        y, f, t, dt, last_t, coeffs, code, fail_t, fail_target, fail_steps, fail_dt = carry

        def keep_going(state):
            i, _, _, t, dt, _, _ = state
            go = xp.logical_and(t < target, _usable(xp, t, dt, hmin))
            return xp.logical_and(go, i < mxstep) if limited else go

        def step(state):
            i, y, f, t, dt, last_t, coeffs = state
            # never past the last output time: func need not be defined beyond it
            last = dt >= t_end - t
            h = xp.where(last, t_end - t, dt)
            y1, f1, error, ks = rk_step(func, y, f, t, h)
            ratio = _error_ratio(xp, error, y, y1, rtol, atol)
            new_coeffs = interp_coefficients(xp, y, y1, ks, h)
            next_dt = _clip_step(xp, _next_step(xp, h, ratio), hmax)
            accept = ratio <= 1.0
            t1 = xp.where(last, t_end, t + h)
            return (i + 1, xp.where(accept, y1, y), xp.where(accept, f1, f),
                    xp.where(accept, t1, t), next_dt, xp.where(accept, t, last_t),
                    xp.where(accept, new_coeffs, coeffs))

        steps, y, f, t, dt, last_t, coeffs = while_loop(
            keep_going, step, (np.int64(0), y, f, t, dt, last_t, coeffs))
        # the first failure is kept: the interval's target was not reached
        failed = xp.logical_and(code == OK, t < target)
        why = xp.where(_usable(xp, t, dt, hmin), TOO_MANY_STEPS, STEP_VANISHED)
        code = xp.where(failed, why, code)
        fail_t = xp.where(failed, t, fail_t)
        fail_target = xp.where(failed, target, fail_target)
        fail_steps = xp.where(failed, steps, fail_steps)
        fail_dt = xp.where(failed, dt, fail_dt)
        span = t - last_t
        s = (target - last_t) / xp.where(span == 0.0, 1.0, span)
        y_target = _polyval(coeffs, s)
        return ((y, f, t, dt, last_t, coeffs, code, fail_t, fail_target, fail_steps, fail_dt),
                y_target)

    t_end = ts[n_times - 1]
    init = (y0, f0, ts[0], dt, ts[0], coeffs, code0, zero_t, zero_t, np.int64(0), zero_t)
    carry, ys = scan(interval, init, ts[1:])
    code, fail_t, fail_target, fail_steps, fail_dt = carry[6:]
    check(code != TOO_MANY_STEPS, fail_steps, fail_t, fail_target,
          message="odeint: mxstep={0} steps were taken in one output interval without "
                  "reaching t={2:.17g} (stopped at t={1:.17g}); raise mxstep, or loosen "
                  "rtol/atol if the problem is stiff")
    check(code != STEP_VANISHED, fail_t, fail_dt, fail_target,
          message="odeint: the step size fell to {1!r} at t={0:.17g} before reaching "
                  "t={2:.17g}" + (f" (hmin={hmin!r})" if hmin else "") + ": the problem is too "
                  "stiff for rtol/atol, or func returns non-finite values there")
    return xp.concatenate([xp.reshape(y0, (1, y0.shape[0])), ys], axis=0)
