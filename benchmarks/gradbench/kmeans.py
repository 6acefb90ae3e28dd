"""GradBench ``kmeans``: a Newton direction for k-means.

cost(P, C) = sum_i min_j |C_j - P_i|^2 over n points P (n, d) and k centroids C (k, d).
``cost``: that number; ``dir``: J / H, J the gradient of the cost with respect to C and
H its Hessian, diagonal, so taken as the derivative of J along a vector of ones (forward
over reverse, as the spec describes). Inputs as the eval makes them: P uniform in
[0, 1), C its last k points (so that no cluster is empty); seeded here (the eval draws
unseeded). GradBench sizes: k = 10 to 1,000, n = 1,000 to 100,000, d = 8 and 16.
"""

from __future__ import annotations

import numpy as np
from _harness import Check, central, close_to, gradient_checks, rel_error

import chainrule as cr
import chainrule.numpy as cnp

NAME = "kmeans"
FUNCTIONS = ("cost", "dir")
SIZES = {"small": {"k": 10, "n": 1000, "d": 8}, "medium": {"k": 100, "n": 10_000, "d": 8}}


def inputs(size: str) -> dict:
    p = SIZES[size]
    points = np.random.default_rng(31337).random((p["n"], p["d"]))
    return {"points": points, "centroids": points[-p["k"]:].copy()}


# -- chainrule ----------------------------------------------------------------------------


def cost(points, centroids):
    # |p - c|^2 = |p|^2 + |c|^2 - 2 p.c: an (n, k) matrix instead of an (n, k, d) array
    sq = (cnp.sum(points**2, axis=1)[:, None] + cnp.sum(centroids**2, axis=1)
          - 2 * points @ centroids.T)
    return cnp.sum(cnp.min(sq, axis=1))


def newton_direction(points, centroids):
    J, H = cr.jvp(lambda c: cr.grad(cost, argnums=1)(points, c), (centroids,),
                  (cnp.ones_like(centroids),))
    return J / H


def prepare_chainrule(inp: dict) -> dict:
    P, C = inp["points"], inp["centroids"]
    f, direction = cr.jit(cost), cr.jit(newton_direction)
    return {"cost": lambda: f(P, C), "dir": lambda: direction(P, C)}


# -- the NumPy reference ------------------------------------------------------------------


def distances_numpy(P: np.ndarray, C: np.ndarray) -> np.ndarray:
    """|P_i - C_j|^2, (n, k), from the differences (a block of points at a time)."""
    return np.concatenate([np.sum((block[:, None, :] - C[None]) ** 2, axis=2)
                           for block in np.array_split(P, max(1, P.shape[0] // 1000))])


def cost_numpy(P: np.ndarray, C: np.ndarray) -> float:
    return float(np.sum(np.min(distances_numpy(P, C), axis=1)))


def nearest_numpy(P: np.ndarray, C: np.ndarray) -> np.ndarray:
    return np.argmin(distances_numpy(P, C), axis=1)


def gradient_numpy(P: np.ndarray, C: np.ndarray) -> np.ndarray:
    """2 (C_j - P_i) summed over the points i whose nearest centroid is j."""
    nearest = nearest_numpy(P, C)
    g = np.zeros_like(C)
    np.add.at(g, nearest, 2 * (C[nearest] - P))
    return g


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    P, C = inp["points"], inp["centroids"]
    if function == "cost":
        return [close_to("NumPy cost", cost_numpy(P, C), 1e-10)]
    # J: the NumPy gradient, itself checked by central differences of the cost; H: twice
    # the size of each cluster on the diagonal (the cost is quadratic in each centroid
    # between changes of assignment)
    J, nearest = gradient_numpy(P, C), nearest_numpy(P, C)
    H = 2.0 * np.bincount(nearest, minlength=C.shape[0])[:, None] * np.ones_like(C)
    # a short step: a longer one moves points between clusters, where the cost has kinks
    checks = gradient_checks(lambda c: cost_numpy(P, c.reshape(C.shape)), C.ravel(), full,
                             what="NumPy J", h=1e-6)
    # those judge the NumPy gradient: the output must equal J / H
    checks = [Check(c.name, lambda out, c=c: c.error(J.ravel()), c.tol) for c in checks]
    if full:  # H, checked by central differences of J along ones (a short step: kinks)
        H_fd = central(lambda c: gradient_numpy(P, c.reshape(C.shape)).ravel(), C.ravel(),
                       np.ones(C.size), h=1e-6)
        if rel_error(H.ravel(), H_fd) > 1e-6:
            raise ValueError("the diagonal Hessian disagrees with central differences of J")
    return [*checks, Check("dir = J / H", lambda out: rel_error(out, (J / H).ravel()), 1e-10)]


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    def cost_jax(points, centroids):
        d2 = (jnp.sum(points**2, axis=1, keepdims=True) - 2 * points @ centroids.T
              + jnp.sum(centroids**2, axis=1))
        return jnp.min(d2, axis=1).sum()

    @jax.jit
    def direction(points, centroids):
        grad_c = jax.grad(cost_jax, argnums=1)
        J, H = jax.jvp(lambda c: grad_c(points, c), (centroids,), (jnp.ones_like(centroids),))
        return J / H

    P, C = jnp.asarray(inp["points"]), jnp.asarray(inp["centroids"])
    f = jax.jit(cost_jax)
    return {"cost": lambda: f(P, C), "dir": lambda: direction(P, C)}


def prepare_torch(inp: dict) -> dict:
    import torch
    from torch.func import grad, jvp

    def cost_torch(points, centroids):
        # not torch.cdist: it has no forward-mode derivative (the H of dir needs one)
        d2 = ((points * points).sum(1, keepdim=True) - 2 * points @ centroids.T
              + (centroids * centroids).sum(1))
        return d2.min(dim=1).values.sum()

    def direction(points, centroids):
        J, H = jvp(lambda c: grad(cost_torch, argnums=1)(points, c), (centroids,),
                   (torch.ones_like(centroids),))
        return J / H

    P, C = torch.from_numpy(inp["points"].copy()), torch.from_numpy(inp["centroids"].copy())
    return {"cost": lambda: cost_torch(P, C), "dir": lambda: direction(P, C)}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def cost_ag(points, centroids):
        diff = points[:, None, :] - centroids[None, :, :]
        return anp.sum(anp.min(anp.sum(diff * diff, axis=2), axis=1))

    grad_c = autograd.grad(cost_ag, 1)

    def direction(points, centroids):
        J = grad_c(points, centroids)
        H = autograd.make_jvp(lambda c: grad_c(points, c))(centroids)(np.ones_like(centroids))[1]
        return J / H

    P, C = inp["points"], inp["centroids"]
    return {"cost": lambda: cost_ag(P, C), "dir": lambda: direction(P, C)}
