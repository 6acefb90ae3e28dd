"""GradBench ``saddle``: a saddle point by nested gradient descent (nested AD).

f(x, y) = (x_1^2 + x_2^2) - (y_1^2 + y_2^2) on R^2 x R^2. From a start s: the x that
minimises max_y f(x, y), the inner max an argmax by gradient descent from s (so the
outer gradient differentiates through the inner descent loop); then, x fixed, the y that
maximises f(x, y). Both descents are those of ``_descent``.

Four functions, one result (x and y, 4 numbers): ``rr``, ``rf``, ``fr``, ``ff``, the
first letter the mode of the outer argmin's gradient (and of the final argmax's), the
second that of the inner argmax's. Inputs: s = (1, 1) (the eval's; GradBench expects
8.246324826140356e-06 in all four places) at ``small``, s = (-0.5, 2) at ``medium`` (the
same work from elsewhere: there is no size to this problem).
"""

from __future__ import annotations

import numpy as np
from _descent import (
    argmax_chainrule,
    argmax_jax,
    argmax_python,
    argmin_chainrule,
    argmin_jax,
    argmin_python,
    numpy_norm,
)
from _harness import Check, central

import chainrule as cr
import chainrule.numpy as cnp

NAME = "saddle"
FUNCTIONS = ("rr", "rf", "fr", "ff")
SIZES = {"small": {"start": (1.0, 1.0)}, "medium": {"start": (-0.5, 2.0)}}
GRADBENCH_EXPECTS = {(1.0, 1.0): [8.246324826140356e-06] * 4}
# the descents stop within 1e-5 of the saddle at 0: results are judged on that scale,
# absolutely (relative differences of numbers near 0 mean little)
ABS_TOL = 1e-7
AGREE_RTOL = 1e-2


def inputs(size: str) -> dict:
    return {"start": np.array(SIZES[size]["start"])}


# -- chainrule ----------------------------------------------------------------------------


def f(x, y):
    return (x[0] ** 2 + x[1] ** 2) - (y[0] ** 2 + y[1] ** 2)


def saddle(start, grad_outer, grad_inner):
    def worst_case(x):  # max_y f(x, y), by an inner descent that the outer one differentiates
        y = argmax_chainrule(lambda y: f(x, y), grad_inner, start)
        return f(x, y)

    x = argmin_chainrule(worst_case, grad_outer, start)
    y = argmax_chainrule(lambda y: f(x, y), grad_outer, start)
    return cnp.concatenate([x, y])


def prepare_chainrule(inp: dict) -> dict:
    modes = {"r": cr.grad, "f": cr.jacfwd}
    start = inp["start"]
    out = {}
    for name in FUNCTIONS:
        fn = cr.jit(lambda s, a=modes[name[0]], b=modes[name[1]]: saddle(s, a, b))
        out[name] = lambda fn=fn: fn(start)
    return out


# -- the NumPy reference: the gradients written out -----------------------------------------


def saddle_numpy(start: np.ndarray) -> np.ndarray:
    """An argmax descends -f, whose gradient in y is 2y whatever x: the inner argmax does
    not move with x, so the outer gradient of max_y f(x, y) is 2x."""
    def worst_case(x):
        y = argmax_python(lambda y: f(x, y), lambda g: lambda y: 2 * y, start, numpy_norm)
        return f(x, y)

    x = argmin_python(worst_case, lambda g: lambda x: 2 * x, start, numpy_norm)
    y = argmax_python(lambda y: f(x, y), lambda g: lambda y: 2 * y, start, numpy_norm)
    return np.concatenate([x, y])


def absolute(name: str, want, tol: float) -> Check:
    want = np.asarray(want, dtype=np.float64)
    return Check(name, lambda out: float(np.max(np.abs(out - want)))
                 if out.shape == want.shape else float("inf"), tol)


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    start = inp["start"]
    # the outer gradient 2x the reference assumes, checked by central differences of
    # max_y f(x, y) computed by the descent (the inner argmax does not depend on x)
    x = start + 0.25
    worst_case = lambda x: f(x, argmax_python(lambda y: f(x, y), lambda g: lambda y: 2 * y,
                                               start, numpy_norm))
    by_differences = [float(central(worst_case, x, e)) for e in np.eye(2)]
    if not np.allclose(by_differences, 2 * x, rtol=1e-6):
        raise ValueError(f"central differences {by_differences} != 2x = {2 * x}")
    checks = [absolute("NumPy descent, gradients by hand (absolute)", saddle_numpy(start),
                       ABS_TOL)]
    expected = GRADBENCH_EXPECTS.get(tuple(start))
    if expected is not None:
        checks.append(absolute("GradBench's expected output (absolute)", expected, ABS_TOL))
    checks.append(Check("close to the saddle (0, 0, 0, 0)",
                        lambda out: float(np.max(np.abs(out))), 1e-4))
    return checks


# -- peers --------------------------------------------------------------------------------

# JAX's reverse mode over the inner descent needs it bounded: it takes about 160 steps
# here (a NaN result would say the bound was too small)
DESCENT_STEPS = 400


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    def run(start, grad_outer, grad_inner, bounded):
        steps = DESCENT_STEPS if bounded else None

        def worst_case(x):
            y = argmax_jax(lambda y: f(x, y), grad_inner, start, steps)
            return f(x, y)

        x = argmin_jax(worst_case, grad_outer, start)
        y = argmax_jax(lambda y: f(x, y), grad_outer, start)
        return jnp.concatenate([x, y])

    modes = {"r": jax.grad, "f": jax.jacfwd}
    start = jnp.asarray(inp["start"])
    out = {}
    for name in FUNCTIONS:
        fn = jax.jit(lambda s, a=modes[name[0]], b=modes[name[1]], r=name[0] == "r":
                     run(s, a, b, r))
        out[name] = lambda fn=fn: fn(start)
    return out


def prepare_torch(inp: dict) -> dict:
    import torch
    from torch.func import grad as reverse
    from torch.func import jvp

    def forward(g):
        """The gradient by forward mode, one jvp per coordinate (torch.func.jacfwd would
        vmap, which cannot follow the data-dependent loop)."""
        def d(x):
            return torch.stack([jvp(g, (x,), (e,))[1]
                                for e in torch.eye(x.numel(), dtype=x.dtype)])
        return d

    def run(start, grad_outer, grad_inner):
        norm = lambda v: float(torch.linalg.vector_norm(v))

        def worst_case(x):
            y = argmax_python(lambda y: f(x, y), grad_inner, start, norm)
            return f(x, y)

        x = argmin_python(worst_case, grad_outer, start, norm)
        y = argmax_python(lambda y: f(x, y), grad_outer, start, norm)
        return torch.cat([x, y])

    modes = {"r": reverse, "f": forward}
    start = torch.from_numpy(inp["start"].copy())
    return {name: lambda a=modes[name[0]], b=modes[name[1]]: run(start, a, b)
            for name in FUNCTIONS}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def forward(g):
        def d(x):
            push = autograd.make_jvp(g)(x)
            return anp.array([push(e)[1] for e in np.eye(x.size)])
        return d

    def norm(v):
        return float(np.sqrt(np.sum(autograd.tracer.getval(v) ** 2)))

    def run(start, grad_outer, grad_inner):
        def worst_case(x):
            y = argmax_python(lambda y: f(x, y), grad_inner, start, norm)
            return f(x, y)

        x = argmin_python(worst_case, grad_outer, start, norm)
        y = argmax_python(lambda y: f(x, y), grad_outer, start, norm)
        return anp.concatenate([x, y])

    modes = {"r": autograd.grad, "f": forward}
    start = inp["start"]
    return {name: lambda a=modes[name[0]], b=modes[name[1]]: run(start, a, b)
            for name in FUNCTIONS}
