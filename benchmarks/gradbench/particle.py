"""GradBench ``particle``: a charged particle steered through the origin (nested AD).

A particle starts at (0, 8) with velocity (0.75, 0) in the field of two unit charges at
(10, 10 - w) and (10, 0): its acceleration is -grad_x p(x; w), p(x; w) = sum over the
charges of 1 / |x - charge|. Euler steps of 0.1 follow it until the next step would take
it below the x axis; from the last point above, a straight line along its velocity meets
the axis at x_f; the objective is x_f[0]^2. The control w is found by the gradient
descent of ``_descent`` from w0: an argmin whose objective contains a gradient (and an
unbounded while loop), AD inside AD.

Four functions, one result (the final w): ``rr``, ``rf``, ``fr``, ``ff``, the first
letter the mode of the argmin's gradient (reverse or forward), the second that of the
Euler step's gradient of p. Inputs: w0 = 0 (the eval's; GradBench expects
0.2071918746486116) at ``small``, and w0 = 0.1 at ``medium`` (the same work, from
elsewhere: there is no size to this problem).
"""

from __future__ import annotations

import numpy as np
from _descent import (
    argmin_chainrule,
    argmin_jax,
    argmin_python,
    numpy_norm,
)
from _harness import Check, central, close_to, rel_error

import chainrule as cr
import chainrule.numpy as cnp

NAME = "particle"
FUNCTIONS = ("rr", "rf", "fr", "ff")
SIZES = {"small": {"w0": 0.0}, "medium": {"w0": 0.1}}
AGREE_RTOL = 1e-6  # the argmin stops within 1e-5 of where rounding may send it
GRADBENCH_EXPECTS = {0.0: 0.2071918746486116}  # the output the eval checks for w0 = 0
DELTA_T = 0.1
X0, XDOT0 = np.array([0.0, 8.0]), np.array([0.75, 0.0])


def inputs(size: str) -> dict:
    return {"w0": np.array([SIZES[size]["w0"]])}


# -- chainrule ----------------------------------------------------------------------------


def potential(x, w):
    moving_charge = np.array([10.0, 10.0]) - w * np.array([0.0, 1.0])
    return (1 / cnp.linalg.norm(x - moving_charge)
            + 1 / cnp.linalg.norm(x - np.array([10.0, 0.0])))


def miss_distance(w, grad_x):
    """x_f[0]^2 for the control w; ``grad_x`` takes the gradient of p in x."""

    def euler_step(state):
        x, xdot, _ = state
        xddot = -grad_x(lambda x: potential(x, w))(x)
        x_new = x + DELTA_T * xdot
        return cr.cond(x_new[1] > 0, lambda: (x_new, xdot + DELTA_T * xddot, True),
                       lambda: (x, xdot, False))

    x, xdot, _ = cr.while_loop(lambda state: state[2], euler_step, (X0, XDOT0, True))
    x_f = x + (-x[1] / xdot[1]) * xdot
    return x_f[0] ** 2


def particle(w0, grad_w, grad_x):
    return argmin_chainrule(lambda w: miss_distance(w[0], grad_x), grad_w, w0)


def prepare_chainrule(inp: dict) -> dict:
    modes = {"r": cr.grad, "f": cr.jacfwd}
    w0 = inp["w0"]
    out = {}
    for name in FUNCTIONS:
        fn = cr.jit(lambda w0, a=modes[name[0]], b=modes[name[1]]: particle(w0, a, b))
        out[name] = lambda fn=fn: fn(w0)
    return out


# -- the NumPy reference: derivatives by hand, the w-derivative carried along the path ------


def miss_distance_and_derivative(w: float) -> tuple[float, float]:
    """x_f[0]^2 and its derivative in w, the derivative propagated forward by hand:
    d(grad_x 1/|r|) = -dr/|r|^3 + 3 r (r . dr)/|r|^5 with r = x - charge."""
    charges = [(np.array([10.0, 10.0 - w]), np.array([0.0, -1.0])),
               (np.array([10.0, 0.0]), np.zeros(2))]
    x, dx, xdot, dxdot = X0.copy(), np.zeros(2), XDOT0.copy(), np.zeros(2)
    while True:
        acc, dacc = np.zeros(2), np.zeros(2)
        for c, dc in charges:
            r, dr = x - c, dx - dc
            n = np.linalg.norm(r)
            acc += r / n**3  # -grad_x (1 / |r|)
            dacc += dr / n**3 - 3 * r * np.dot(r, dr) / n**5
        x_new, dx_new = x + DELTA_T * xdot, dx + DELTA_T * dxdot
        if not x_new[1] > 0:
            break
        x, dx = x_new, dx_new
        xdot, dxdot = xdot + DELTA_T * acc, dxdot + DELTA_T * dacc
    t_f = -x[1] / xdot[1]
    dt_f = -(dx[1] * xdot[1] - x[1] * dxdot[1]) / xdot[1] ** 2
    x_f0 = x[0] + t_f * xdot[0]
    dx_f0 = dx[0] + dt_f * xdot[0] + t_f * dxdot[0]
    return x_f0**2, 2 * x_f0 * dx_f0


def particle_numpy(w0: np.ndarray) -> np.ndarray:
    f = lambda w: miss_distance_and_derivative(float(w[0]))[0]
    grad = lambda f: lambda w: np.array([miss_distance_and_derivative(float(w[0]))[1]])
    return argmin_python(f, grad, w0, numpy_norm)


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    # the derivative by hand, itself checked by central differences of the objective
    w0 = inp["w0"]
    by_hand = miss_distance_and_derivative(float(w0[0]))[1]
    by_differences = central(lambda w: miss_distance_and_derivative(float(w[0]))[0], w0,
                             np.ones(1), h=1e-4)
    if rel_error(by_hand, by_differences) > 1e-6:
        raise ValueError(f"derivative by hand {by_hand} != central differences "
                         f"{by_differences}")
    checks = [close_to("NumPy descent, derivatives by hand", particle_numpy(w0), 1e-6)]
    expected = GRADBENCH_EXPECTS.get(float(inp["w0"][0]))
    if expected is not None:
        checks.append(close_to("GradBench's expected w", expected, 1e-6))
    return checks


# -- peers --------------------------------------------------------------------------------

# JAX's reverse mode needs the Euler loop bounded: it takes about 350 steps here (a NaN
# result would say the bound was too small)
EULER_STEPS = 600


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def p(x, w):
        return (1 / jnp.linalg.norm(x - jnp.array([10.0, 10.0 - w]))
                + 1 / jnp.linalg.norm(x - jnp.array([10.0, 0.0])))

    def naive_euler(w, grad_x, bounded):
        def step(s):
            x, xdot, _ = s
            x_new = x + DELTA_T * xdot
            xdot_new = xdot - DELTA_T * grad_x(lambda x: p(x, w))(x)
            return lax.cond(x_new[1] > 0, lambda: (x_new, xdot_new, True),
                            lambda: (x, xdot, False))

        init = (jnp.asarray(X0), jnp.asarray(XDOT0), True)
        if bounded:
            x, xdot, go = lax.fori_loop(0, EULER_STEPS,
                                        lambda _, s: lax.cond(s[2], step, lambda s: s, s), init)
        else:
            x, xdot, go = lax.while_loop(lambda s: s[2], step, init)
        x_f = x - x[1] / xdot[1] * xdot
        return jnp.where(go, jnp.nan, x_f[0] ** 2)

    modes = {"r": jax.grad, "f": jax.jacfwd}
    w0 = jnp.asarray(inp["w0"])
    out = {}
    for name in FUNCTIONS:
        # reverse mode over the Euler loop needs it bounded
        bounded = name[0] == "r"

        def run(w0, outer=modes[name[0]], inner=modes[name[1]], bounded=bounded):
            objective = lambda w: naive_euler(w[0], inner, bounded)
            return argmin_jax(objective, outer, w0)

        fn = jax.jit(run)
        out[name] = lambda fn=fn: fn(w0)
    return out


def prepare_torch(inp: dict) -> dict:
    import torch
    from torch.func import grad as reverse
    from torch.func import jvp

    def forward(f):
        """The gradient by forward mode, one jvp per coordinate (torch.func.jacfwd would
        vmap, which cannot follow the data-dependent loop)."""
        def g(x):
            return torch.stack([jvp(f, (x,), (e,))[1] for e in torch.eye(x.numel(),
                                                                         dtype=x.dtype)])
        return g

    fixed = torch.tensor([10.0, 0.0], dtype=torch.float64)

    def p(x, w):
        moving = torch.stack([torch.full_like(w, 10.0), 10.0 - w])
        return 1 / torch.linalg.vector_norm(x - moving) + 1 / torch.linalg.vector_norm(x - fixed)

    def naive_euler(w, grad_x):
        x = torch.tensor(X0)
        xdot = torch.tensor(XDOT0)
        while True:
            xddot = -grad_x(lambda x: p(x, w))(x)
            x_new = x + DELTA_T * xdot
            if not x_new[1] > 0:
                break
            x, xdot = x_new, xdot + DELTA_T * xddot
        x_f = x + (-x[1] / xdot[1]) * xdot
        return x_f[0] ** 2

    modes = {"r": reverse, "f": forward}
    w0 = torch.from_numpy(inp["w0"].copy())
    norm = lambda v: float(torch.linalg.vector_norm(v))
    return {name: lambda a=modes[name[0]], b=modes[name[1]]:
            argmin_python(lambda w: naive_euler(w[0], b), a, w0, norm) for name in FUNCTIONS}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def forward(f):
        def g(x):
            push = autograd.make_jvp(f)(x)
            return anp.array([push(e)[1] for e in np.eye(x.size)])
        return g

    def p(x, w):
        d1 = x - anp.array([10.0, 10.0 - w])
        d2 = x - np.array([10.0, 0.0])
        return 1 / anp.sqrt(anp.dot(d1, d1)) + 1 / anp.sqrt(anp.dot(d2, d2))

    def naive_euler(w, grad_x):
        x, xdot = X0, XDOT0
        while True:
            xddot = -grad_x(lambda x: p(x, w))(x)
            x_new = x + DELTA_T * xdot
            if not x_new[1] > 0:
                break
            x, xdot = x_new, xdot + DELTA_T * xddot
        x_f = x + (-x[1] / xdot[1]) * xdot
        return x_f[0] ** 2

    modes = {"r": autograd.grad, "f": forward}
    w0 = inp["w0"]
    return {name: lambda a=modes[name[0]], b=modes[name[1]]:
            argmin_python(lambda w: naive_euler(w[0], b), a, w0, numpy_norm)
            for name in FUNCTIONS}
