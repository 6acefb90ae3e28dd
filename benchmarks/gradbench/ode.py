"""GradBench ``ode``: an ODE solved by Runge-Kutta (cmpad's ``an_ode``).

y_0' = x_0, y_i' = x_i y_{i-1} (i > 0), y(0) = 0, solved on [0, 2] by s steps of the
classical fourth-order Runge-Kutta method. ``primal``: y(2) (n values); ``gradient``:
the gradient of its last element with respect to x. Inputs as the eval makes them: ``x``
uniform in [0, 1) from NumPy's legacy generator seeded 31337, ``s`` given (GradBench
sizes: n = 1,000 to 100,000, s = 1 to 100).

A step of RK4 moves the nonzero part of y four places along (y starts at 0), so after s
steps y_i = 0 exactly for i >= 4s: at every GradBench size the last element, and its
gradient, are 0 (the work is done all the same). ``medium`` is a GradBench size; ``small``
(n = 4s) is one where the last element depends on every x_i, so that its checks mean
something.
"""

from __future__ import annotations

import numpy as np
from _harness import Check, close_to, gradient_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "ode"
FUNCTIONS = ("primal", "gradient")
SIZES = {"small": {"n": 64, "s": 16}, "medium": {"n": 10_000, "s": 100}}
T_FINAL = 2.0


def inputs(size: str) -> dict:
    p = SIZES[size]
    return {"x": np.random.RandomState(31337).rand(p["n"]), "s": p["s"]}


# -- chainrule ----------------------------------------------------------------------------


def rhs(x, y):
    return cnp.concatenate([x[:1], x[1:] * y[:-1]])


def solve(x, s: int):
    h = T_FINAL / s

    def rk4_step(_, y):
        k1 = rhs(x, y)
        k2 = rhs(x, y + h / 2 * k1)
        k3 = rhs(x, y + h / 2 * k2)
        k4 = rhs(x, y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return cr.fori_loop(0, s, rk4_step, cnp.zeros_like(x))


def last(x, s: int):
    return solve(x, s)[-1]


def prepare_chainrule(inp: dict) -> dict:
    x, s = inp["x"], inp["s"]
    primal, gradient = cr.jit(solve), cr.grad(last)
    return {"primal": lambda: primal(x, s), "gradient": lambda: gradient(x, s)}


# -- the NumPy reference: the C-style loops of the spec ------------------------------------


def solve_numpy(x: np.ndarray, s: int) -> np.ndarray:
    def f(y):
        z = np.empty_like(y)
        z[0] = x[0]
        z[1:] = x[1:] * y[:-1]
        return z

    h = T_FINAL / s
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = f(y)
        k2 = f(y + h * k1 / 2)
        k3 = f(y + h * k2 / 2)
        k4 = f(y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    x, s = inp["x"], inp["s"]
    if function == "primal":
        return [close_to("NumPy solution", solve_numpy(x, s), 1e-12)]
    return gradient_checks(lambda x: solve_numpy(x, s)[-1], x, full)


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    s = inp["s"]
    h = T_FINAL / s

    def primal(x):
        def f(y):
            return jnp.concatenate([x[:1], x[1:] * y[:-1]])

        def step(y, _):
            k1 = f(y)
            k2 = f(y + 0.5 * h * k1)
            k3 = f(y + 0.5 * h * k2)
            k4 = f(y + h * k3)
            return y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4), None

        y, _ = jax.lax.scan(step, jnp.zeros_like(x), None, length=s)
        return y

    x = jnp.asarray(inp["x"])
    p, g = jax.jit(primal), jax.jit(jax.grad(lambda x: primal(x)[-1]))
    return {"primal": lambda: p(x), "gradient": lambda: g(x)}


def prepare_torch(inp: dict) -> dict:
    import torch

    s = inp["s"]
    h = T_FINAL / s

    def primal(x):
        def f(y):
            return torch.cat([x[:1], x[1:] * y[:-1]])

        y = torch.zeros_like(x)
        for _ in range(s):
            k1 = f(y)
            k2 = f(y + 0.5 * h * k1)
            k3 = f(y + 0.5 * h * k2)
            k4 = f(y + h * k3)
            y = y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    x = torch.from_numpy(inp["x"].copy())
    xg = x.clone().requires_grad_(True)

    def gradient():
        (g,) = torch.autograd.grad(primal(xg)[-1], xg)
        return g

    return {"primal": lambda: primal(x), "gradient": gradient}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    s = inp["s"]
    h = T_FINAL / s

    def primal(x):
        def f(y):
            return anp.concatenate([x[:1], x[1:] * y[:-1]])

        y = anp.zeros(x.shape)
        for _ in range(s):
            k1 = f(y)
            k2 = f(y + 0.5 * h * k1)
            k3 = f(y + 0.5 * h * k2)
            k4 = f(y + h * k3)
            y = y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    x = inp["x"]
    gradient = autograd.grad(lambda x: primal(x)[-1])
    return {"primal": lambda: primal(x), "gradient": lambda: gradient(x)}
