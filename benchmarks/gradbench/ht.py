"""GradBench ``ht``: hand tracking's residuals and their Jacobian (ADBench's hand model).

A skinned hand of 22 bones posed by 26 parameters theta: a global rotation (angle-axis)
and translation, and 20 finger angles (per finger: two at the base joint, one at each of
the two next joints). Each bone's rest transform is rotated by its Euler angles (Rz Ry
Rx), chained from parent to child and applied to the 544 vertices with the model's
skinning weights; the global rotation and translation follow. The residuals compare
measured points with model points: with ``us`` empty ("simple"), the vertex each point
corresponds to; otherwise ("complicated", sizes ``-us``) the point (u0, u1) on the
triangle it corresponds to, u0 v0 + u1 v1 + (1 - u0 - u1) v2.

``objective``: the 3 npts residuals (point by point); ``jacobian``: their Jacobian, 3 npts
rows by the 26 theta columns, preceded for the complicated inputs by two columns, the
derivatives with respect to each point's own u0 and u1 (a residual depends on its point's
us only). Inputs: ADBench's model and hand files (read as GradBench reads them) from
``/work/shared/gradbench/data/ht`` or ``$GRADBENCH_DATA/ht``.
"""

from __future__ import annotations

import os

import numpy as np
from _harness import Check, close_to, linear_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "ht"
FUNCTIONS = ("objective", "jacobian")
SIZES = {"small": {"hand": 1, "us": False}, "medium": {"hand": 2, "us": False},
         "small-us": {"hand": 1, "us": True}, "medium-us": {"hand": 2, "us": True}}
DATA = os.path.join(os.environ.get("GRADBENCH_DATA", "/work/shared/gradbench/data"), "ht")
MODEL = ("base_relatives", "inverse_base_absolutes", "base_positions", "weights")


def read_model(path: str) -> dict:
    bones = [line.strip().split(":") for line in open(os.path.join(path, "bones.txt"))]
    n_bones = len(bones)
    vertices = [line.strip().split(":") for line in open(os.path.join(path, "vertices.txt"))]
    positions = np.array([[float(v) for v in atoms[:3]] for atoms in vertices])
    weights = np.zeros((len(vertices), n_bones))
    for i, atoms in enumerate(vertices):
        for j in range(int(atoms[8])):
            weights[i, int(atoms[9 + 2 * j])] = float(atoms[10 + 2 * j])
    return {
        "parents": tuple(int(b[1]) for b in bones),
        "base_relatives": np.array([[float(v) for v in b[2:18]] for b in bones]).reshape(-1, 4, 4),
        "inverse_base_absolutes": np.array([[float(v) for v in b[18:34]]
                                            for b in bones]).reshape(-1, 4, 4),
        "base_positions": np.concatenate([positions, np.ones((len(positions), 1))], axis=1),
        "weights": weights,
        "triangles": np.loadtxt(os.path.join(path, "triangles.txt"), dtype=np.int64,
                                delimiter=":"),
        "is_mirrored": False,  # as GradBench's reader sets it
    }


def read_hand(path: str, with_us: bool) -> dict:
    with open(path) as fh:
        lines = [line.split() for line in fh if line.strip()]
    npts, ntheta = (int(v) for v in lines[0])
    body = lines[1:1 + npts]
    out = {"correspondences": np.array([int(b[0]) for b in body]),
           "points": np.array([[float(v) for v in b[1:]] for b in body])}
    row = 1 + npts
    if with_us:
        out["us"] = np.array(lines[row:row + npts], dtype=np.float64)
        row += npts
    out["theta"] = np.array([float(b[0]) for b in lines[row:row + ntheta]])
    return out


def inputs(size: str) -> dict:
    p = SIZES[size]
    folder = "complicated_small" if p["us"] else "simple_small"
    (name,) = [f for f in os.listdir(os.path.join(DATA, folder))
               if f.startswith(f"hand{p['hand']}_")]
    inp = read_model(os.path.join(DATA, "model"))
    inp.update(read_hand(os.path.join(DATA, folder, name), p["us"]))
    return inp


def pose_layout(n_bones: int) -> np.ndarray:
    """(n_bones, 3) indices into [0, theta...]: where bone b's Euler angle r comes from
    (0, a zero, for angles theta does not set). Per finger, theta sets angles 0 and 1 of
    its first bone and angle 0 of the next two; bones 0 and 1 and each fingertip stay."""
    layout = np.zeros((n_bones, 3), dtype=np.int64)
    i_theta = 6
    for finger in range(5):
        first = 2 + 4 * finger
        for joint in range(3):
            layout[first + joint, 0] = 1 + i_theta
            i_theta += 1
            if joint == 0:
                layout[first, 1] = 1 + i_theta
                i_theta += 1
    return layout


def us_seeds(npts: int) -> np.ndarray:
    """The tangents of the two us columns: every point's u0, then every point's u1."""
    return np.stack([np.tile([1.0, 0.0], (npts, 1)), np.tile([0.0, 1.0], (npts, 1))])


# -- chainrule ----------------------------------------------------------------------------


def euler_rotations(angles):
    """(n, 3, 3) rotation matrices Rz Ry Rx from angles (n, 3) = (x, z, y)."""
    zero, one = cnp.zeros_like(angles[:, 0]), cnp.ones_like(angles[:, 0])
    cx, sx = cnp.cos(angles[:, 0]), cnp.sin(angles[:, 0])
    cz, sz = cnp.cos(angles[:, 1]), cnp.sin(angles[:, 1])
    cy, sy = cnp.cos(angles[:, 2]), cnp.sin(angles[:, 2])

    def matrix(*entries):
        return cnp.stack(entries, axis=1).reshape(-1, 3, 3)

    Rx = matrix(one, zero, zero, zero, cx, -sx, zero, sx, cx)
    Ry = matrix(cy, zero, sy, zero, one, zero, -sy, zero, cy)
    Rz = matrix(cz, -sz, zero, sz, cz, zero, zero, zero, one)
    return Rz @ Ry @ Rx


def angle_axis_rotation(aa):
    """The rotation by angle |aa| about aa / |aa| (the identity for |aa| < 1e-4)."""
    sq = cnp.sum(aa * aa)
    norm = cnp.sqrt(cnp.where(sq < 1e-8, 1.0, sq))  # finite derivatives near 0 too
    x, y, z = aa[0] / norm, aa[1] / norm, aa[2] / norm
    c, s = cnp.cos(norm), cnp.sin(norm)
    R = cnp.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
                   x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                   x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]
                  ).reshape(3, 3)
    return cnp.where(sq < 1e-8, np.eye(3), R)


def vertex_positions(theta, model: dict):
    """The posed model's vertices, (n_verts, 3)."""
    parents = model["parents"]
    n_bones = len(parents)
    angles = cnp.concatenate([cnp.zeros_like(theta[:1]), theta])[pose_layout(n_bones)]
    # each bone's rest transform, rotated by its Euler angles: base @ [[R, 0], [0, 1]]
    base = model["base_relatives"]
    relatives = cnp.concatenate([base[:, :, :3] @ euler_rotations(angles), base[:, :, 3:]],
                                axis=2)
    absolutes = []
    for i, parent in enumerate(parents):  # parents come before their children
        absolutes.append(relatives[i] if parent < 0 else absolutes[parent] @ relatives[i])
    transforms = cnp.stack(absolutes) @ model["inverse_base_absolutes"]
    # skinning: each vertex moves by its weighted blend of the bones' transforms
    blended = cnp.einsum("vb,bij->vij", model["weights"], transforms[:, :3, :])
    positions = cnp.einsum("vij,vj->vi", blended, model["base_positions"])
    if model["is_mirrored"]:
        positions = positions * np.array([-1.0, 1.0, 1.0])
    return positions @ angle_axis_rotation(theta[:3]).T + theta[3:6]


def ht_objective(theta, us, data: dict):
    positions = vertex_positions(theta, data)
    if us is None:
        model_points = positions[data["correspondences"]]
    else:
        corners = data["triangles"][data["correspondences"]]  # (npts, 3) vertex indices
        u0, u1 = us[:, :1], us[:, 1:]
        model_points = (u0 * positions[corners[:, 0]] + u1 * positions[corners[:, 1]]
                        + (1 - u0 - u1) * positions[corners[:, 2]])
    return cnp.ravel(data["points"] - model_points)


def ht_jacobian_us(theta, us, data: dict):
    """The Jacobian [d/du0, d/du1, d/dtheta]: one forward pass per column, batched; a us
    column seeds every point's u0 (or u1) at once."""
    n = theta.shape[0]
    seeds_theta = np.concatenate([np.zeros((2, n)), np.eye(n)])
    seeds_us = np.concatenate([us_seeds(us.shape[0]), np.zeros((n, *us.shape))])
    column = lambda dt, du: cr.jvp(lambda t, u: ht_objective(t, u, data), (theta, us),
                                   (dt, du))[1]
    return cr.vmap(column)(seeds_theta, seeds_us).T


def prepare_chainrule(inp: dict) -> dict:
    data, theta, us = inp, inp["theta"], inp.get("us")
    if us is None:
        objective = cr.jit(lambda t: ht_objective(t, None, data))
        jacobian = cr.jacfwd(lambda t: ht_objective(t, None, data))
        return {"objective": lambda: objective(theta), "jacobian": lambda: jacobian(theta)}
    objective = cr.jit(lambda t, u: ht_objective(t, u, data))
    jacobian = cr.jit(lambda t, u: ht_jacobian_us(t, u, data))
    return {"objective": lambda: objective(theta, us), "jacobian": lambda: jacobian(theta, us)}


# -- the NumPy reference: ADBench's loops, bone by bone and point by point ------------------


def objective_numpy(theta: np.ndarray, us: np.ndarray | None, inp: dict) -> np.ndarray:
    n_bones = len(inp["parents"])
    pose = np.zeros((3, n_bones + 3))  # ADBench's pose_params, column by column
    pose[:, 0], pose[:, 1], pose[:, 2] = theta[0:3], 1.0, theta[3:6]
    i_theta, col = 6, 5
    for _ in range(5):
        for joint in range(3):
            pose[0, col] = theta[i_theta]
            i_theta += 1
            if joint == 0:
                pose[1, col] = theta[i_theta]
                i_theta += 1
            col += 1
        col += 1
    absolutes = []
    for b in range(n_bones):
        tx, tz, ty = pose[:, b + 3]
        Rx = np.array([[1, 0, 0], [0, np.cos(tx), -np.sin(tx)], [0, np.sin(tx), np.cos(tx)]])
        Ry = np.array([[np.cos(ty), 0, np.sin(ty)], [0, 1, 0], [-np.sin(ty), 0, np.cos(ty)]])
        Rz = np.array([[np.cos(tz), -np.sin(tz), 0], [np.sin(tz), np.cos(tz), 0], [0, 0, 1]])
        tr = np.eye(4)
        tr[:3, :3] = Rz @ Ry @ Rx
        relative = inp["base_relatives"][b] @ tr
        parent = inp["parents"][b]
        absolutes.append(relative if parent == -1 else absolutes[parent] @ relative)
    positions = np.zeros((3, inp["base_positions"].shape[0]))
    for b in range(n_bones):
        moved = absolutes[b] @ inp["inverse_base_absolutes"][b] @ inp["base_positions"].T
        positions += moved[:3] * inp["weights"][:, b]
    if inp["is_mirrored"]:
        positions[0] *= -1
    aa = theta[0:3]
    norm = np.linalg.norm(aa)
    if norm < 1e-4:
        R = np.eye(3)
    else:
        k = aa / norm
        K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        R = np.eye(3) + np.sin(norm) * K + (1 - np.cos(norm)) * K @ K  # Rodrigues
    positions = R @ positions + theta[3:6, None]
    err = np.empty((len(inp["correspondences"]), 3))
    for i, c in enumerate(inp["correspondences"]):
        if us is None:
            model_point = positions[:, c]
        else:
            v0, v1, v2 = inp["triangles"][c]
            u0, u1 = us[i]
            model_point = (u0 * positions[:, v0] + u1 * positions[:, v1]
                           + (1 - u0 - u1) * positions[:, v2])
        err[i] = inp["points"][i] - model_point
    return err.ravel()


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    theta, us = inp["theta"], inp.get("us")
    if function == "objective":
        return [close_to("NumPy residuals", objective_numpy(theta, us, inp), 1e-10)]
    if us is None:
        return linear_checks(lambda t: objective_numpy(t, None, inp), theta,
                             lambda out, v: out.reshape(-1, theta.size) @ v,
                             [(f"theta {i}", np.eye(1, theta.size, i).ravel())
                              for i in range(theta.size)])
    # columns in the space of (us, theta): the us columns along their seeds
    x0 = np.concatenate([us.ravel(), theta])

    def F(x):
        return objective_numpy(x[us.size:], x[:us.size].reshape(us.shape), inp)

    seeds = [(f"u{j} of every point", np.concatenate([s.ravel(), np.zeros(theta.size)]))
             for j, s in enumerate(us_seeds(us.shape[0]))]
    seeds += [(f"theta {i}", np.eye(1, x0.size, us.size + i).ravel()) for i in range(theta.size)]
    return linear_checks(F, x0, lambda out, v: _column(out, seeds, v), seeds)


def _column(out: np.ndarray, seeds: list, v: np.ndarray) -> np.ndarray:
    """The column of the (3 npts, 28) output that belongs to the seed ``v``."""
    j = next(i for i, (_, s) in enumerate(seeds) if s is v)
    return out.reshape(-1, len(seeds))[:, j]


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    parents = inp["parents"]
    n_bones = len(parents)
    layout = jnp.asarray(pose_layout(n_bones))
    base_rel = jnp.asarray(inp["base_relatives"])
    inv_abs = jnp.asarray(inp["inverse_base_absolutes"])
    rest, weights = jnp.asarray(inp["base_positions"]), jnp.asarray(inp["weights"])
    points = jnp.asarray(inp["points"])
    corr, triangles = jnp.asarray(inp["correspondences"]), jnp.asarray(inp["triangles"])

    def rot(axis, a):
        c, s = jnp.cos(a), jnp.sin(a)
        i, j = [(1, 2), (0, 2), (0, 1)][axis]
        sign = -1.0 if axis == 1 else 1.0  # Ry has its sine the other way round
        R = jnp.eye(3).at[i, i].set(c).at[j, j].set(c)
        return R.at[i, j].set(-sign * s).at[j, i].set(sign * s)

    def model_vertices(theta):
        angles = jnp.concatenate([jnp.zeros(1), theta])[layout]
        R = jax.vmap(lambda a: rot(2, a[1]) @ rot(1, a[2]) @ rot(0, a[0]))(angles)
        local = base_rel.at[:, :, :3].set(base_rel[:, :, :3] @ R)
        absolute = []
        for b, p in enumerate(parents):
            absolute.append(local[b] if p == -1 else absolute[p] @ local[b])
        bone = (jnp.stack(absolute) @ inv_abs)[:, :3, :]
        verts = jnp.einsum("vb,bij,vj->vi", weights, bone, rest)
        if inp["is_mirrored"]:
            verts = verts.at[:, 0].multiply(-1)
        aa = theta[:3]
        angle = jnp.linalg.norm(aa)
        k = aa / angle
        K = jnp.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        G = jnp.eye(3) + jnp.sin(angle) * K + (1 - jnp.cos(angle)) * (K @ K)
        G = jnp.where(angle < 1e-4, jnp.eye(3), G)
        return verts @ G.T + theta[3:6]

    def simple(theta):
        return (points - model_vertices(theta)[corr]).reshape(-1)

    def complicated(theta, us):
        v = model_vertices(theta)[triangles[corr]]  # (npts, 3 corners, 3)
        w = jnp.concatenate([us, 1 - us.sum(1, keepdims=True)], axis=1)
        return (points - jnp.einsum("pc,pci->pi", w, v)).reshape(-1)

    theta = jnp.asarray(inp["theta"])
    if inp.get("us") is None:
        f, J = jax.jit(simple), jax.jit(jax.jacfwd(simple))
        return {"objective": lambda: f(theta), "jacobian": lambda: J(theta)}
    us = jnp.asarray(inp["us"])
    n = theta.size
    seeds = (jnp.concatenate([jnp.zeros((2, n)), jnp.eye(n)]),
             jnp.concatenate([jnp.asarray(us_seeds(us.shape[0])), jnp.zeros((n, *us.shape))]))

    @jax.jit
    def jacobian(theta, us):
        push = lambda dt, du: jax.jvp(complicated, (theta, us), (dt, du))[1]
        return jax.vmap(push)(*seeds).T

    f = jax.jit(complicated)
    return {"objective": lambda: f(theta, us), "jacobian": lambda: jacobian(theta, us)}


def prepare_torch(inp: dict) -> dict:
    import torch
    from torch.func import jacfwd, jvp, vmap

    parents = inp["parents"]
    n_bones = len(parents)
    t = {k: torch.from_numpy(np.asarray(inp[k]).copy()) for k in
         (*MODEL, "points", "correspondences", "triangles", "theta")}
    layout = torch.from_numpy(pose_layout(n_bones))

    def rotations(a):
        """Rz Ry Rx for angles (n, 3) = (x, z, y)."""
        c, s = torch.cos(a), torch.sin(a)
        one, zero = torch.ones_like(a[:, 0]), torch.zeros_like(a[:, 0])
        Rx = torch.stack([one, zero, zero, zero, c[:, 0], -s[:, 0], zero, s[:, 0], c[:, 0]], 1)
        Ry = torch.stack([c[:, 2], zero, s[:, 2], zero, one, zero, -s[:, 2], zero, c[:, 2]], 1)
        Rz = torch.stack([c[:, 1], -s[:, 1], zero, s[:, 1], c[:, 1], zero, zero, zero, one], 1)
        return Rz.view(-1, 3, 3) @ Ry.view(-1, 3, 3) @ Rx.view(-1, 3, 3)

    def vertices(theta):
        angles = torch.cat([torch.zeros(1, dtype=theta.dtype), theta])[layout]
        base = t["base_relatives"]
        local = torch.cat([base[:, :, :3] @ rotations(angles), base[:, :, 3:]], dim=2)
        absolute = []
        for b, p in enumerate(parents):
            absolute.append(local[b] if p == -1 else absolute[p] @ local[b])
        bone = (torch.stack(absolute) @ t["inverse_base_absolutes"])[:, :3, :]
        verts = torch.einsum("vb,bij,vj->vi", t["weights"], bone, t["base_positions"])
        if inp["is_mirrored"]:
            verts = verts * torch.tensor([-1.0, 1.0, 1.0], dtype=verts.dtype)
        angle = torch.linalg.vector_norm(theta[:3])
        k = theta[:3] / angle
        zero = torch.zeros_like(angle)
        K = torch.stack([zero, -k[2], k[1], k[2], zero, -k[0], -k[1], k[0], zero]).view(3, 3)
        G = torch.eye(3, dtype=theta.dtype) + torch.sin(angle) * K \
            + (1 - torch.cos(angle)) * (K @ K)
        return verts @ G.T + theta[3:6]  # the data's global rotations are far from 0

    def simple(theta):
        return (t["points"] - vertices(theta)[t["correspondences"]]).reshape(-1)

    def complicated(theta, us):
        v = vertices(theta)[t["triangles"][t["correspondences"]]]
        w = torch.cat([us, 1 - us.sum(1, keepdim=True)], dim=1)
        return (t["points"] - torch.einsum("pc,pci->pi", w, v)).reshape(-1)

    theta = t["theta"]
    if inp.get("us") is None:
        J = jacfwd(simple)
        return {"objective": lambda: simple(theta), "jacobian": lambda: J(theta)}
    us = torch.from_numpy(inp["us"].copy())
    n = theta.numel()
    seeds = (torch.cat([torch.zeros(2, n, dtype=us.dtype), torch.eye(n, dtype=us.dtype)]),
             torch.cat([torch.from_numpy(us_seeds(us.shape[0])),
                        torch.zeros(n, *us.shape, dtype=us.dtype)]))
    push = vmap(lambda dt, du: jvp(complicated, (theta, us), (dt, du))[1])
    return {"objective": lambda: complicated(theta, us),
            "jacobian": lambda: push(*seeds).T}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    parents = inp["parents"]
    n_bones = len(parents)
    layout = pose_layout(n_bones)
    base, inv_abs = inp["base_relatives"], inp["inverse_base_absolutes"]
    rest, weights, points = inp["base_positions"], inp["weights"], inp["points"]
    corr, triangles = inp["correspondences"], inp["triangles"]

    def bone_rotation(a):
        (cx, cz, cy), (sx, sz, sy) = anp.cos(a), anp.sin(a)
        Rx = anp.array([[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]])
        Ry = anp.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]])
        Rz = anp.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]])
        return anp.dot(Rz, anp.dot(Ry, Rx))

    def vertices(theta):
        angles = anp.concatenate([anp.zeros(1), theta])[layout]
        absolute = []
        for b, p in enumerate(parents):
            local = anp.concatenate([anp.dot(base[b, :, :3], bone_rotation(angles[b])),
                                     base[b, :, 3:]], axis=1)
            absolute.append(local if p == -1 else anp.dot(absolute[p], local))
        bone = anp.matmul(anp.stack(absolute), inv_abs)[:, :3, :]
        verts = anp.einsum("vb,bij,vj->vi", weights, bone, rest)
        if inp["is_mirrored"]:
            verts = verts * np.array([-1.0, 1.0, 1.0])
        aa = theta[:3]
        angle = anp.sqrt(anp.sum(aa**2))
        k = aa / angle
        K = anp.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
        G = np.eye(3) + anp.sin(angle) * K + (1 - anp.cos(angle)) * anp.dot(K, K)
        return anp.dot(verts, G.T) + theta[3:6]

    def simple(theta):
        return anp.ravel(points - vertices(theta)[corr])

    def complicated(theta, us):
        v = vertices(theta)[triangles[corr]]
        w = anp.concatenate([us, 1 - anp.sum(us, axis=1, keepdims=True)], axis=1)
        return anp.ravel(points - anp.einsum("pc,pci->pi", w, v))

    theta = inp["theta"]
    n = theta.size
    eye = np.eye(n)
    # forward mode, one pass per column: n passes instead of 3 npts reverse ones
    if inp.get("us") is None:
        def jacobian():
            push = autograd.make_jvp(simple)(theta)
            return np.stack([push(e)[1] for e in eye], axis=1)

        return {"objective": lambda: simple(theta), "jacobian": jacobian}
    us = inp["us"]

    def jacobian_us():
        by_theta = autograd.make_jvp(lambda t: complicated(t, us))(theta)
        by_us = autograd.make_jvp(lambda u: complicated(theta, u))(us)
        columns = [by_us(s)[1] for s in us_seeds(us.shape[0])]
        columns += [by_theta(e)[1] for e in eye]
        return np.stack(columns, axis=1)

    return {"objective": lambda: complicated(theta, us), "jacobian": jacobian_us}
