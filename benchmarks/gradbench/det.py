"""GradBench ``det``: the determinant by expansion by minors (cmpad's ``det_by_minor``).

``primal``: det(A) of an ell x ell matrix by expansion along the first row, recursively,
O(ell!) operations; ``gradient``: its gradient with respect to A (row-major, ell^2
values). Inputs as the eval makes them: A uniform in [0, 1) from NumPy's legacy
generator seeded 31337 (GradBench sizes: ell = 5 to 11).

The array tools expand all minors of one order at once: the k x k minors still to
expand form one batch, and a step takes every one of them to its k sub-minors (row 0 and
column j removed, for each j). The arithmetic is that of the recursion (the spec's
commentary suggests restructuring of this kind for array libraries); the batch of 1 x 1
minors holds ell! numbers.
"""

from __future__ import annotations

import itertools

import numpy as np
from _harness import Check, close_to, gradient_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "det"
FUNCTIONS = ("primal", "gradient")
SIZES = {"small": {"ell": 6}, "medium": {"ell": 9}}


def inputs(size: str) -> dict:
    ell = SIZES[size]["ell"]
    return {"A": np.random.RandomState(31337).rand(ell * ell).reshape(ell, ell)}


def other_columns(k: int) -> np.ndarray:
    """(k, k - 1) indices: row j lists the columns of a k x k matrix but j."""
    return np.array([[c for c in range(k) if c != j] for j in range(k)], dtype=np.int64)


# -- chainrule ----------------------------------------------------------------------------


def det_by_minors(M):
    """The determinants of a batch of k x k minors, M of shape (..., k, k)."""
    k = M.shape[-1]
    if k == 1:
        return M[..., 0, 0]
    # sub[..., j, :, :] is M without row 0 and column j: (..., k, k - 1, k - 1)
    sub = cnp.swapaxes(M[..., 1:, :][..., other_columns(k)], -3, -2)
    signs = (-1.0) ** np.arange(k)
    return cnp.sum(signs * M[..., 0, :] * det_by_minors(sub), axis=-1)


def prepare_chainrule(inp: dict) -> dict:
    A = inp["A"]
    primal, gradient = cr.jit(det_by_minors), cr.grad(det_by_minors)
    return {"primal": lambda: primal(A), "gradient": lambda: gradient(A)}


# -- the NumPy reference ------------------------------------------------------------------


def det_recursive(A: np.ndarray) -> float:
    """Expansion by minors, one scalar product at a time (small matrices only)."""
    n = A.shape[0]
    if n == 1:
        return float(A[0, 0])
    return sum((-1) ** j * A[0, j] * det_recursive(np.delete(A[1:], j, axis=1))
               for j in range(n))


def det_leibniz(A: np.ndarray) -> float:
    """Leibniz's formula: the sum over permutations, by a path independent of the above."""
    n = A.shape[0]
    total = 0.0
    for p in itertools.permutations(range(n)):
        inversions = sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n))
        total += (-1) ** inversions * np.prod(A[np.arange(n), p])
    return total


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    A = inp["A"]
    exact = det_recursive if full else lambda A: float(np.linalg.det(A))
    if function == "primal":
        checks = [close_to("LU determinant", np.linalg.det(A), 1e-9)]
        if full:
            checks += [close_to("recursive expansion", det_recursive(A), 1e-12),
                       close_to("Leibniz formula", det_leibniz(A), 1e-12)]
        return checks
    # d det / dA = det(A) A^{-T}, beside central differences of a determinant
    cofactors = np.linalg.det(A) * np.linalg.inv(A).T
    return [close_to("det(A) inv(A)^T", cofactors, 1e-8),
            *gradient_checks(lambda a: exact(a.reshape(A.shape)), A.ravel(), full)]


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    ell = inp["A"].shape[0]

    def det(A):
        # top-down: every path of the expansion carries the product of the signed entries
        # of the first rows it removed, and ends on a 1 x 1 minor
        minors, weight = A[None], jnp.ones(1)
        for k in range(ell, 1, -1):
            signs = jnp.array([(-1.0) ** j for j in range(k)])
            weight = (weight[:, None] * signs * minors[:, 0, :]).reshape(-1)
            rest = jnp.take(minors[:, 1:, :], jnp.asarray(other_columns(k)), axis=2)
            minors = jnp.moveaxis(rest, 2, 1).reshape(-1, k - 1, k - 1)
        return jnp.sum(weight * minors[:, 0, 0])

    A = jnp.asarray(inp["A"])
    primal, gradient = jax.jit(det), jax.jit(jax.grad(det))
    return {"primal": lambda: primal(A), "gradient": lambda: gradient(A)}


def prepare_torch(inp: dict) -> dict:
    import torch

    keep = {k: torch.from_numpy(other_columns(k)) for k in range(2, inp["A"].shape[0] + 1)}

    def det(M):
        k = M.shape[-1]
        if k == 1:
            return M[..., 0, 0]
        sub = M[..., 1:, :][..., keep[k]].transpose(-3, -2)
        signs = torch.tensor([(-1.0) ** j for j in range(k)], dtype=M.dtype)
        return (signs * M[..., 0, :] * det(sub)).sum(-1)

    A = torch.from_numpy(inp["A"].copy())
    Ag = A.clone().requires_grad_(True)

    def gradient():
        (g,) = torch.autograd.grad(det(Ag), Ag)
        return g

    return {"primal": lambda: det(A), "gradient": gradient}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def det(M):
        k = M.shape[-1]
        if k == 1:
            return M[..., 0, 0]
        sub = anp.swapaxes(M[..., 1:, :][..., other_columns(k)], -3, -2)
        signs = anp.array([(-1.0) ** j for j in range(k)])
        return anp.sum(signs * M[..., 0, :] * det(sub), axis=-1)

    A = inp["A"]
    gradient = autograd.grad(det)
    return {"primal": lambda: det(A), "gradient": lambda: gradient(A)}
