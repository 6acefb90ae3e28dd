"""GradBench ``ba``: bundle adjustment's residuals and their sparse Jacobian (ADBench's BA).

n cameras (11 parameters each: Rodrigues rotation r, centre C, focal length f,
principal point x0, radial distortion k1 k2), m points X, p observations: observation i
sees point i mod m from camera i mod n, with weight w_i and feature feat_i. Its
residual is w_i (proj(cam, X) - feat_i), where proj rotates X - C by r, divides by the
depth, distorts radially by 1 + k1 r^2 + k2 r^4 and scales by f around x0; each weight
has the residual 1 - w_i^2.

``objective``: the 2p reprojection residuals and the p weight residuals; ``jacobian``:
the values of the sparse (3p) x (11n + 3m + p) Jacobian in GradBench's compressed-row
order (per observation two rows of 15: camera, point, weight; then one row per weight).
Its rows and columns depend on the observations only and are made with the inputs.
Inputs: ADBench's files (one camera, point, weight and feature, replicated, as the eval
does) from ``/work/shared/gradbench/data/ba`` or ``$GRADBENCH_DATA/ba``.
"""

from __future__ import annotations

import glob
import os

import numpy as np
from _harness import Check, close_to, linear_checks, unit_vectors

import chainrule as cr
import chainrule.numpy as cnp

NAME = "ba"
FUNCTIONS = ("objective", "jacobian")
SIZES = {"small": {"file": 1}, "medium": {"file": 3}}
DATA = os.path.join(os.environ.get("GRADBENCH_DATA", "/work/shared/gradbench/data"), "ba")
N_CAM = 11


def read_instance(path: str) -> dict:
    with open(path) as fh:
        lines = [line.split() for line in fh if line.strip()]
    n, m, p = (int(v) for v in lines[0])
    cam, x, w, feat = (np.array(line, dtype=np.float64) for line in lines[1:5])
    obs = np.stack([np.arange(p) % n, np.arange(p) % m], axis=1)
    return {"cams": np.tile(cam, (n, 1)), "X": np.tile(x, (m, 1)), "w": np.full(p, w[0]),
            "obs": obs, "feats": np.tile(feat, (p, 1))}


def sparsity(n: int, m: int, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row and column of each value of the Jacobian, in the values' order."""
    p = obs.shape[0]
    cols = np.concatenate([N_CAM * obs[:, :1] + np.arange(N_CAM),
                           N_CAM * n + 3 * obs[:, 1:] + np.arange(3),
                           (N_CAM * n + 3 * m + np.arange(p))[:, None]], axis=1)  # (p, 15)
    cols = np.concatenate([np.repeat(cols, 2, axis=0).ravel(), N_CAM * n + 3 * m + np.arange(p)])
    rows = np.concatenate([np.repeat(np.arange(2 * p), 15), 2 * p + np.arange(p)])
    return rows, cols


def inputs(size: str) -> dict:
    (path,) = glob.glob(os.path.join(DATA, f"ba{SIZES[size]['file']}_*.txt"))
    inp = read_instance(path)
    inp["rows"], inp["cols"] = sparsity(inp["cams"].shape[0], inp["X"].shape[0], inp["obs"])
    return inp


ARGS = ("cams", "X", "w", "obs", "feats")


# -- chainrule ----------------------------------------------------------------------------


def rotate(rot, X):
    """X rotated by the angle-axis vector rot (Rodrigues' formula; to first order when
    rot = 0, where the formula's axis is undefined)."""
    sq = cnp.sum(rot * rot)
    theta = cnp.sqrt(cnp.where(sq > 0, sq, 1.0))  # a finite derivative at rot = 0 too
    axis = rot / theta
    cos, sin = cnp.cos(theta), cnp.sin(theta)
    rodrigues = X * cos + cnp.cross(axis, X) * sin + axis * (cnp.dot(axis, X) * (1 - cos))
    return cnp.where(sq > 0, rodrigues, X + cnp.cross(rot, X))


def reprojection_error(cam, X, w, feat):
    Xcam = rotate(cam[0:3], X - cam[3:6])
    proj = Xcam[:2] / Xcam[2]
    rsq = cnp.sum(proj * proj)
    proj = proj * (1 + cam[9] * rsq + cam[10] * rsq * rsq)
    return w * (proj * cam[6] + cam[7:9] - feat)


def weight_error(w):
    return 1 - w * w


def ba_objective(cams, X, w, obs, feats):
    reproj = cr.vmap(reprojection_error)(cams[obs[:, 0]], X[obs[:, 1]], w, feats)
    return reproj, weight_error(w)


def ba_jacobian(cams, X, w, obs, feats):
    # one observation's residual is 2 numbers of 15 inputs: reverse mode, per observation
    d_cam, d_X, d_w = cr.vmap(cr.jacrev(reprojection_error, argnums=(0, 1, 2)))(
        cams[obs[:, 0]], X[obs[:, 1]], w, feats)
    blocks = cnp.concatenate([d_cam, d_X, d_w[:, :, None]], axis=2)  # (p, 2, 15)
    return cnp.concatenate([cnp.ravel(blocks), cr.vmap(cr.grad(weight_error))(w)])


def prepare_chainrule(inp: dict) -> dict:
    args = [inp[a] for a in ARGS]
    objective, jacobian = cr.jit(ba_objective), cr.jit(ba_jacobian)
    return {"objective": lambda: objective(*args), "jacobian": lambda: jacobian(*args)}


# -- the NumPy reference: every observation at once, formulas written out ---------------


def objective_numpy(cams, X, w, obs, feats) -> np.ndarray:
    """The 2p + p residuals, flat."""
    cam, pt = cams[obs[:, 0]], X[obs[:, 1]]
    r, d = cam[:, 0:3], pt - cam[:, 3:6]
    theta = np.sqrt(np.sum(r * r, axis=1, keepdims=True))
    k = r / theta
    Xcam = (d * np.cos(theta) + np.cross(k, d) * np.sin(theta)
            + k * np.sum(k * d, axis=1, keepdims=True) * (1 - np.cos(theta)))
    u = Xcam[:, :2] / Xcam[:, 2:3]
    rsq = np.sum(u * u, axis=1, keepdims=True)
    u = u * (1 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq**2)
    reproj = w[:, None] * (u * cam[:, 6:7] + cam[:, 7:9] - feats)
    return np.concatenate([reproj.ravel(), 1 - w * w])


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    cams, X, w, obs, feats = (inp[a] for a in ARGS)
    if not np.all(np.sum(cams[:, :3] ** 2, axis=1) > 0):
        raise ValueError("the NumPy reference assumes nonzero rotations")
    if function == "objective":
        return [close_to("NumPy residuals", objective_numpy(cams, X, w, obs, feats), 1e-10)]
    n_params = cams.size + X.size + w.size

    def F(flat):
        c = flat[:cams.size].reshape(cams.shape)
        x = flat[cams.size:cams.size + X.size].reshape(X.shape)
        return objective_numpy(c, x, flat[cams.size + X.size:], obs, feats)

    def apply(vals, v):  # the sparse J @ v
        out = np.zeros(3 * obs.shape[0])
        np.add.at(out, inp["rows"], vals * v[inp["cols"]])
        return out

    x0 = np.concatenate([cams.ravel(), X.ravel(), w])
    # a sample of columns: every column would be 11n + 3m + p evaluations
    vectors = unit_vectors(n_params, False, sample=24)
    vectors += [(f"camera 0 parameter {i}", np.eye(1, n_params, i).ravel()) for i in range(11)]
    return linear_checks(F, x0, apply, vectors)


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    def residual(cam, X, w, feat):
        rot, centre = cam[:3], cam[3:6]
        theta = jnp.linalg.norm(rot)
        k = rot / theta
        v = X - centre
        c, s = jnp.cos(theta), jnp.sin(theta)
        Xcam = v * c + jnp.cross(k, v) * s + k * jnp.dot(k, v) * (1 - c)
        u = Xcam[:2] / Xcam[2]
        r2 = u @ u
        u = u * (1 + cam[9] * r2 + cam[10] * r2**2)
        return w * (cam[6] * u + cam[7:9] - feat)

    @jax.jit
    def objective(cams, X, w, obs, feats):
        return jax.vmap(residual)(cams[obs[:, 0]], X[obs[:, 1]], w, feats), 1 - w**2

    @jax.jit
    def jacobian(cams, X, w, obs, feats):
        jc, jx, jw = jax.vmap(jax.jacrev(residual, argnums=(0, 1, 2)))(
            cams[obs[:, 0]], X[obs[:, 1]], w, feats)
        rows = jnp.concatenate([jc, jx, jw[..., None]], axis=-1).reshape(-1)
        return jnp.concatenate([rows, jax.vmap(jax.grad(lambda w: 1 - w**2))(w)])

    args = [jnp.asarray(inp[a]) for a in ARGS]
    return {"objective": lambda: objective(*args), "jacobian": lambda: jacobian(*args)}


def prepare_torch(inp: dict) -> dict:
    import torch
    from torch.func import jacrev, vmap

    def residual(cam, X, w, feat):
        rot = cam[:3]
        theta = torch.linalg.vector_norm(rot)
        axis = rot / theta
        v = X - cam[3:6]
        Xcam = (v * torch.cos(theta) + torch.linalg.cross(axis, v) * torch.sin(theta)
                + axis * torch.dot(axis, v) * (1 - torch.cos(theta)))
        u = Xcam[:2] / Xcam[2]
        r2 = torch.dot(u, u)
        return w * (cam[6] * u * (1 + cam[9] * r2 + cam[10] * r2 * r2) + cam[7:9] - feat)

    cams, X, w, feats = (torch.from_numpy(inp[a].copy()) for a in ("cams", "X", "w", "feats"))
    obs = torch.from_numpy(inp["obs"])
    jac = vmap(jacrev(residual, argnums=(0, 1, 2)))

    def objective():
        return vmap(residual)(cams[obs[:, 0]], X[obs[:, 1]], w, feats), 1 - w * w

    def jacobian():
        jc, jx, jw = jac(cams[obs[:, 0]], X[obs[:, 1]], w, feats)
        blocks = torch.cat([jc, jx, jw.unsqueeze(-1)], dim=-1)
        return torch.cat([blocks.reshape(-1), -2 * w])

    return {"objective": objective, "jacobian": jacobian}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def residuals(cam, pt, w, feats):
        """Every observation at once: cam (p, 11) and pt (p, 3) the gathered copies."""
        rot = cam[:, 0:3]
        theta = anp.sqrt(anp.sum(rot**2, axis=1))[:, None]
        axis = rot / theta
        v = pt - cam[:, 3:6]
        cross = anp.stack([axis[:, 1] * v[:, 2] - axis[:, 2] * v[:, 1],
                           axis[:, 2] * v[:, 0] - axis[:, 0] * v[:, 2],
                           axis[:, 0] * v[:, 1] - axis[:, 1] * v[:, 0]], axis=1)
        Xcam = (v * anp.cos(theta) + cross * anp.sin(theta)
                + axis * anp.sum(axis * v, axis=1)[:, None] * (1 - anp.cos(theta)))
        u = Xcam[:, :2] / Xcam[:, 2:3]
        r2 = anp.sum(u**2, axis=1)[:, None]
        u = u * (1 + cam[:, 9:10] * r2 + cam[:, 10:11] * r2**2)
        return w[:, None] * (u * cam[:, 6:7] + cam[:, 7:9] - feats)

    cams, X, w, obs, feats = (inp[a] for a in ARGS)
    # observation i depends on its own copies of camera, point and weight only: two
    # reverse passes (seeding the x and then the y residual of every observation) give
    # every block of the block-diagonal Jacobian in the gathered inputs
    row = [autograd.grad(lambda args, j=j: anp.sum(residuals(*args, feats)[:, j]))
           for j in range(2)]

    def jacobian():
        gathered = (cams[obs[:, 0]], X[obs[:, 1]], w)
        per_row = [np.concatenate([gc, gx, gw[:, None]], axis=1)
                   for gc, gx, gw in (r(gathered) for r in row)]
        blocks = np.stack(per_row, axis=1)  # (p, 2, 15)
        return np.concatenate([blocks.ravel(), autograd.elementwise_grad(lambda w: 1 - w**2)(w)])

    return {"objective": lambda: (residuals(cams[obs[:, 0]], X[obs[:, 1]], w, feats),
                                  1 - w**2),
            "jacobian": jacobian}
