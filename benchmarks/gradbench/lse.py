"""GradBench ``lse``: LogSumExp of a vector and its gradient.

``primal``: LSE(x) = a + log(sum(exp(x - a))) with a = max(x), written from its
primitive operations (a maximum and a sum, no library logsumexp), as the spec asks;
``gradient``: its gradient. Inputs as the eval makes them: ``x`` uniform in [0, 1) from
NumPy's legacy generator seeded 31337 (GradBench sizes: n = 2,500 to 1,280,000).
"""

from __future__ import annotations

import numpy as np
from _harness import Check, close_to, gradient_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "lse"
FUNCTIONS = ("primal", "gradient")
SIZES = {"small": {"n": 2_500}, "medium": {"n": 160_000}}


def inputs(size: str) -> dict:
    return {"x": np.random.RandomState(31337).rand(SIZES[size]["n"])}


# -- chainrule ----------------------------------------------------------------------------


def lse(x):
    a = cnp.max(x)
    return a + cnp.log(cnp.sum(cnp.exp(x - a)))


def prepare_chainrule(inp: dict) -> dict:
    x = inp["x"]
    primal, gradient = cr.jit(lse), cr.grad(lse)
    return {"primal": lambda: primal(x), "gradient": lambda: gradient(x)}


# -- the NumPy reference ------------------------------------------------------------------


def lse_numpy(x: np.ndarray) -> float:
    a = np.max(x)
    return float(a + np.log(np.sum(np.exp(x - a))))


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    x = inp["x"]
    if function == "primal":
        return [close_to("NumPy objective", lse_numpy(x), 1e-12)]
    # the softmax, written out, beside central differences of the objective (entries of
    # about 1/n: a long step keeps the rounding error of the differences below them)
    e = np.exp(x - x.max())
    return [close_to("softmax", e / e.sum(), 1e-10),
            *gradient_checks(lse_numpy, x, full, h=1e-3)]


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    def f(x):
        m = jnp.max(x)
        return m + jnp.log(jnp.exp(x - m).sum())

    x = jnp.asarray(inp["x"])
    primal, gradient = jax.jit(f), jax.jit(jax.grad(f))
    return {"primal": lambda: primal(x), "gradient": lambda: gradient(x)}


def prepare_torch(inp: dict) -> dict:
    import torch

    def f(x):
        m = torch.max(x)
        return m + torch.log(torch.sum(torch.exp(x - m)))

    x = torch.from_numpy(inp["x"].copy())
    xg = x.clone().requires_grad_(True)

    def gradient():
        (g,) = torch.autograd.grad(f(xg), xg)
        return g

    return {"primal": lambda: f(x), "gradient": gradient}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def f(x):
        top = anp.max(x)
        return top + anp.log(anp.sum(anp.exp(x - top)))

    x = inp["x"]
    gradient = autograd.grad(f)
    return {"primal": lambda: f(x), "gradient": lambda: gradient(x)}
