"""GradBench ``llsq``: a linear least-squares objective (cmpad's ``llsq_obj``).

y(x) = 1/2 sum_i (s_i - sum_j x_j t_i^j)^2 with t_i = -1 + 2 i / (n - 1), s_i = sign(t_i),
i < n, j < m. ``primal``: y(x); ``gradient``: its gradient. Inputs as the eval makes
them: ``x`` (m = 128) uniform in [0, 1) from NumPy's legacy generator seeded 31337,
``n`` given (GradBench sizes: n = 16 to 16,392).
"""

from __future__ import annotations

import numpy as np
from _harness import Check, close_to, gradient_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "llsq"
FUNCTIONS = ("primal", "gradient")
SIZES = {"small": {"n": 256, "m": 128}, "medium": {"n": 4096, "m": 128}}


def inputs(size: str) -> dict:
    p = SIZES[size]
    return {"x": np.random.RandomState(31337).rand(p["m"]), "n": p["n"]}


# -- chainrule ----------------------------------------------------------------------------


def llsq(x, n: int):
    t = cnp.linspace(-1.0, 1.0, n)
    powers = t[:, None] ** cnp.arange(x.shape[0])  # t_i^j, (n, m)
    r = cnp.sign(t) - powers @ x
    return 0.5 * cnp.sum(r * r)


def prepare_chainrule(inp: dict) -> dict:
    x, n = inp["x"], inp["n"]
    primal, gradient = cr.jit(llsq), cr.grad(llsq)  # n, a Python int, is static
    return {"primal": lambda: primal(x, n), "gradient": lambda: gradient(x, n)}


# -- the NumPy reference: the polynomial by Horner's rule -----------------------------------


def llsq_numpy(x: np.ndarray, n: int) -> float:
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    inner = np.sign(t) - np.polynomial.polynomial.polyval(t, x)  # sum_j x_j t^j by Horner
    return float(np.sum(inner * inner) / 2.0)


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    x, n = inp["x"], inp["n"]
    if function == "primal":
        return [close_to("NumPy objective", llsq_numpy(x, n), 1e-10)]
    return gradient_checks(lambda x: llsq_numpy(x, n), x, full)


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    n = inp["n"]

    def objective(x):
        t = jnp.linspace(-1.0, 1.0, n)
        # the columns t^j, built by jnp.vander (highest power first, hence the flip)
        A = jnp.flip(jnp.vander(t, x.shape[0]), axis=1)
        return 0.5 * jnp.sum((jnp.sign(t) - A @ x) ** 2)

    x = jnp.asarray(inp["x"])
    primal, gradient = jax.jit(objective), jax.jit(jax.grad(objective))
    return {"primal": lambda: primal(x), "gradient": lambda: gradient(x)}


def prepare_torch(inp: dict) -> dict:
    import torch

    n = inp["n"]

    def objective(x):
        t = torch.linspace(-1.0, 1.0, n, dtype=torch.float64)
        A = t[:, None] ** torch.arange(x.shape[0], dtype=torch.float64)
        residual = torch.sign(t) - A @ x
        return 0.5 * torch.dot(residual, residual)

    x = torch.from_numpy(inp["x"].copy())
    xg = x.clone().requires_grad_(True)

    def gradient():
        (g,) = torch.autograd.grad(objective(xg), xg)
        return g

    return {"primal": lambda: objective(x), "gradient": gradient}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    n = inp["n"]

    def objective(x):
        t = anp.linspace(-1.0, 1.0, n)
        A = anp.power(t[:, None], anp.arange(x.shape[0])[None, :])
        residual = anp.sign(t) - anp.dot(A, x)
        return 0.5 * anp.sum(residual**2)

    x = inp["x"]
    gradient = autograd.grad(objective)
    return {"primal": lambda: objective(x), "gradient": lambda: gradient(x)}
