"""GradBench ``gmm``: the log posterior of a Gaussian mixture model (ADBench's GMM).

K components in D dimensions with weights softmax(alpha), means mu (K, D) and precision
matrices Q_k^T Q_k, where Q_k is lower triangular with diagonal exp(q_k) (K, D) and the
entries below it from l_k (K, D(D-1)/2, column by column); N points x (N, D); a Wishart
prior (gamma, m) on the precisions:

    objective = sum_i log sum_k exp(alpha_k - lse(alpha) + sum_j q_kj
                                    - |Q_k (x_i - mu_k)|^2 / 2) - N D log(2 pi) / 2
                + sum_k (-gamma^2 |Q_k|_F^2 / 2 + m sum_j q_kj) + K C(D, gamma, m)

``objective``: that number; ``jacobian``: its gradient with respect to (alpha, mu, q, l).
Inputs as the eval makes them (NumPy's ``default_rng(31337)``: x normal, mu uniform, q,
l and alpha normal, in that order; gamma = 1, m = 0). GradBench sizes: D = 2 to 64,
K = 5 to 100, N = 1,000.
"""

from __future__ import annotations

import math

import numpy as np
from _harness import Check, close_to, gradient_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "gmm"
FUNCTIONS = ("objective", "jacobian")
SIZES = {"small": {"d": 2, "k": 5, "n": 1000}, "medium": {"d": 10, "k": 25, "n": 1000}}
PARAMS = ("alpha", "mu", "q", "l")


def inputs(size: str) -> dict:
    p = SIZES[size]
    d, k, n = p["d"], p["k"], p["n"]
    rng = np.random.default_rng(31337)
    x = rng.normal(size=(n, d))
    mu = rng.uniform(size=(k, d))
    q = rng.normal(size=(k, d))
    l = rng.normal(size=(k, d * (d - 1) // 2))
    alpha = rng.normal(size=k)
    return {"alpha": alpha, "mu": mu, "q": q, "l": l, "x": x, "gamma": 1.0, "m": 0}


def log_wishart_constant(d: int, gamma: float, m: int) -> float:
    """C: the part of a component's log Wishart density that depends on no parameter."""
    dof = d + m + 1
    log_multigamma = d * (d - 1) / 4 * math.log(math.pi) + sum(
        math.lgamma(dof / 2 + (1 - j) / 2) for j in range(1, d + 1))
    return dof * d * (math.log(gamma) - math.log(2) / 2) - log_multigamma


def below_diagonal(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the entries below the diagonal in the order l lists them:
    column by column, top to bottom."""
    cols, rows = np.triu_indices(d, 1)
    return rows, cols


# -- chainrule ----------------------------------------------------------------------------


def cholesky_factors(q, l):
    """Q_k, (K, D, D): exp(q_k) on the diagonal, l_k below it."""
    k, d = q.shape
    rows, cols = below_diagonal(d)
    # where each entry of Q_k comes from in [0, l_k]: 0 (a zero) on and above the diagonal
    source = np.zeros((d, d), dtype=np.int64)
    source[rows, cols] = 1 + np.arange(rows.size)
    strictly_lower = cnp.concatenate([cnp.zeros_like(l[:, :1]), l], axis=1)[:, source]
    return strictly_lower + np.eye(d) * cnp.exp(q)[:, None, :]


def gmm_objective(alpha, mu, q, l, x, gamma: float, m: int):
    n, d = x.shape
    k = alpha.shape[0]
    Q = cholesky_factors(q, l)
    centered = x[:, None, :] - mu  # (N, K, D)
    Qx = cnp.einsum("kij,nkj->nki", Q, centered)
    log_terms = alpha + cnp.sum(q, axis=1) - 0.5 * cnp.sum(Qx * Qx, axis=2)  # (N, K)
    likelihood = cnp.sum(cnp.logsumexp(log_terms, axis=1)) - n * cnp.logsumexp(alpha)
    frobenius = cnp.sum(cnp.exp(2 * q)) + cnp.sum(l * l)
    prior = -0.5 * gamma**2 * frobenius + m * cnp.sum(q)
    constant = -n * d / 2 * math.log(2 * math.pi) + k * log_wishart_constant(d, gamma, m)
    return likelihood + prior + constant


def prepare_chainrule(inp: dict) -> dict:
    args = [inp[p] for p in PARAMS] + [inp["x"], inp["gamma"], inp["m"]]
    # gamma (a Python float) enters math.log: static, as it would be for jax.jit
    objective = cr.jit(gmm_objective, static_argnums=(5,))
    jacobian = cr.grad(gmm_objective, argnums=(0, 1, 2, 3), static_argnums=(5,))
    return {"objective": lambda: objective(*args), "jacobian": lambda: jacobian(*args)}


# -- the NumPy reference: log densities from their textbook definitions ---------------------


def log_posterior_numpy(alpha, mu, q, l, x, gamma, m) -> float:
    n, d = x.shape
    k = alpha.size
    rows, cols = below_diagonal(d)
    log_weights = np.log(np.exp(alpha) / np.sum(np.exp(alpha)))
    total = 0.0
    log_components = np.empty((n, k))
    for c in range(k):
        Q = np.diag(np.exp(q[c]))
        Q[rows, cols] = l[c]
        precision = Q.T @ Q
        diff = x - mu[c]
        _, logdet = np.linalg.slogdet(precision)
        log_components[:, c] = (log_weights[c] - d / 2 * np.log(2 * np.pi) + logdet / 2
                                - 0.5 * np.einsum("ni,ij,nj->n", diff, precision, diff))
        # Wishart(precision | V = I / gamma^2, dof = d + m + 1)
        dof = d + m + 1
        V = np.eye(d) / gamma**2
        log_multigamma = d * (d - 1) / 4 * np.log(np.pi) + sum(
            math.lgamma(dof / 2 + (1 - j) / 2) for j in range(1, d + 1))
        total += ((dof - d - 1) / 2 * logdet - np.trace(np.linalg.inv(V) @ precision) / 2
                  - dof * d / 2 * np.log(2) - dof / 2 * np.linalg.slogdet(V)[1]
                  - log_multigamma)
    top = log_components.max(axis=1, keepdims=True)
    total += np.sum(top[:, 0] + np.log(np.sum(np.exp(log_components - top), axis=1)))
    return float(total)


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    params = [inp[p] for p in PARAMS]
    rest = (inp["x"], inp["gamma"], inp["m"])
    if function == "objective":
        return [close_to("NumPy log posterior", log_posterior_numpy(*params, *rest), 1e-10)]
    sizes = np.cumsum([p.size for p in params])[:-1]

    def f(flat):
        parts = [a.reshape(p.shape) for a, p in zip(np.split(flat, sizes), params)]
        return log_posterior_numpy(*parts, *rest)

    return gradient_checks(f, np.concatenate([p.ravel() for p in params]), full)


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    n, d = inp["x"].shape
    k = inp["alpha"].size
    gamma, m = inp["gamma"], inp["m"]
    rows, cols = below_diagonal(d)
    constant = -n * d / 2 * math.log(2 * math.pi) + k * log_wishart_constant(d, gamma, m)

    def objective(alpha, mu, q, l, x):
        Q = jnp.zeros((k, d, d)).at[:, rows, cols].set(l)
        Q = Q + jax.vmap(jnp.diag)(jnp.exp(q))
        z = jnp.einsum("kij,nkj->nki", Q, x[:, None, :] - mu[None])
        inner = alpha + q.sum(axis=1) - 0.5 * jnp.sum(z**2, axis=-1)
        return (logsumexp(inner, axis=1).sum() - n * logsumexp(alpha)
                - 0.5 * gamma**2 * (jnp.sum(jnp.exp(q) ** 2) + jnp.sum(l**2))
                + m * q.sum() + constant)

    args = [jnp.asarray(inp[p]) for p in PARAMS] + [jnp.asarray(inp["x"])]
    f = jax.jit(objective)
    g = jax.jit(jax.grad(objective, argnums=(0, 1, 2, 3)))
    return {"objective": lambda: f(*args), "jacobian": lambda: g(*args)}


def prepare_torch(inp: dict) -> dict:
    import torch

    n, d = inp["x"].shape
    k = inp["alpha"].size
    gamma, m = inp["gamma"], inp["m"]
    rows, cols = (torch.from_numpy(a) for a in below_diagonal(d))
    constant = -n * d / 2 * math.log(2 * math.pi) + k * log_wishart_constant(d, gamma, m)

    def objective(alpha, mu, q, l, x):
        L = torch.zeros(k, d, d, dtype=x.dtype)
        L[:, rows, cols] = l
        Q = L + torch.diag_embed(torch.exp(q))
        z = torch.einsum("kij,nkj->nki", Q, x[:, None, :] - mu[None])
        inner = alpha + q.sum(1) - 0.5 * (z * z).sum(-1)
        return (torch.logsumexp(inner, 1).sum() - n * torch.logsumexp(alpha, 0)
                - 0.5 * gamma**2 * (torch.exp(2 * q).sum() + (l * l).sum())
                + m * q.sum() + constant)

    params = [torch.from_numpy(inp[p].copy()) for p in PARAMS]
    x = torch.from_numpy(inp["x"].copy())
    leaves = [p.clone().requires_grad_(True) for p in params]

    def jacobian():
        return torch.autograd.grad(objective(*leaves, x), leaves)

    return {"objective": lambda: objective(*params, x), "jacobian": jacobian}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    n, d = inp["x"].shape
    k = inp["alpha"].size
    gamma, m = inp["gamma"], inp["m"]
    rows, cols = below_diagonal(d)
    # autograd has no index assignment: Q_k = diag(exp(q_k)) + sum_e l_ke E_e, with E_e
    # the unit matrix of the e-th entry below the diagonal
    units = np.zeros((rows.size, d, d))
    units[np.arange(rows.size), rows, cols] = 1.0
    constant = -n * d / 2 * math.log(2 * math.pi) + k * log_wishart_constant(d, gamma, m)

    def objective(alpha, mu, q, l, x):
        Q = anp.exp(q)[:, :, None] * np.eye(d) + anp.tensordot(l, units, axes=1)
        z = anp.einsum("kij,nkj->nki", Q, x[:, None, :] - mu[None, :, :])
        inner = alpha + anp.sum(q, axis=1) - 0.5 * anp.sum(z**2, axis=2)
        return (anp.sum(logsumexp(inner, axis=1)) - n * logsumexp(alpha)
                - 0.5 * gamma**2 * (anp.sum(anp.exp(2 * q)) + anp.sum(l**2))
                + m * anp.sum(q) + constant)

    params, x = tuple(inp[p] for p in PARAMS), inp["x"]
    # one reverse pass for the four parameters: autograd differentiates a tuple argument
    grad_all = autograd.grad(lambda params, x: objective(*params, x))
    return {"objective": lambda: objective(*params, x), "jacobian": lambda: grad_all(params, x)}
