"""Pytrees in and out of every Jacobian and Hessian transform, as JAX gives them.

For ``argnums`` an int, ``jacfwd(f)(x)`` is the output's tree with, at each
output leaf, the input's tree of blocks ``out_shape + in_shape``; for a tuple
``argnums`` each output leaf holds a tuple, one input tree per argument. The
blocks are checked against central differences, the structure against JAX's
when JAX is installed; each case also runs on the tape path (Python control
flow on a value)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.tree import flatten, unflatten

V = np.array([0.3, -0.7])
W = np.array([[0.5, 0.2], [-0.1, 0.4]])

INPUTS = {
    "array": V,
    "tuple": (V, W),
    "list": [V, 0.5 * V],
    "dict": {"x": V, "w": W},
    "nested": {"a": (V, [W]), "b": {"c": 0.5 * V}},
}


def _total(tree):
    """A scalar of every leaf (nonlinear, so Hessians have structure)."""
    return sum(cnp.sum(cnp.sin(leaf) * leaf) for leaf in flatten(tree)[0])


def _vector(tree):
    leaves = flatten(tree)[0]
    return cnp.sin(leaves[0]) * cnp.sum(leaves[-1] ** 2)


OUTPUTS = {
    "array": lambda t: _vector(t),
    "tuple": lambda t: (_vector(t), _total(t)),
    "dict": lambda t: {"y": _vector(t), "s": _total(t)},
    "nested": lambda t: {"y": [_vector(t), (_total(t),)]},
}


def _fd_jacobian(f, args, nums, has_aux=False):
    """JAX's tree of blocks by central differences, built leaf by leaf."""
    def out_leaves(*a):
        out = f(*a)
        return flatten(out[0] if has_aux else out)

    base_leaves, out_tree = out_leaves(*args)
    per_arg = []
    for a in nums:
        leaves, tree = flatten(args[a])
        blocks = [[] for _ in base_leaves]
        for k, leaf in enumerate(leaves):
            leaf = np.asarray(leaf, float)
            cols = [np.zeros(np.shape(o) + leaf.shape) for o in base_leaves]
            for idx in np.ndindex(leaf.shape):
                def shifted(h, idx=idx, k=k, a=a, leaves=leaves, tree=tree):
                    new = [np.array(x, float, copy=True) for x in leaves]
                    new[k][idx] += h
                    args2 = list(args)
                    args2[a] = unflatten(tree, new)
                    return out_leaves(*args2)[0]
                plus, minus = shifted(1e-6), shifted(-1e-6)
                for o in range(len(base_leaves)):
                    cols[o][(...,) + idx] = (np.asarray(plus[o]) - np.asarray(minus[o])) / 2e-6
            for o in range(len(base_leaves)):
                blocks[o].append(cols[o])
        per_arg.append([unflatten(tree, blocks[o]) for o in range(len(base_leaves))])
    if len(nums) == 1 and not isinstance(nums, tuple):
        return unflatten(out_tree, per_arg[0])
    return unflatten(out_tree, [tuple(p[o] for p in per_arg) for o in range(len(base_leaves))])


def _same(got, want, rtol=1e-5, atol=1e-6):
    gl, gt = flatten(got)
    wl, wt = flatten(want)
    assert gt == wt, (gt, wt)
    for g, w in zip(gl, wl):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _tape(f):
    """The same function on the tape path (Python control flow on a value)."""
    def g(*args):
        out = f(*args)
        first = flatten(args)[0][0]
        return out if cnp.sum(first) < 100 else out
    return g


@pytest.mark.parametrize("path", ["compiled", "tape"])
@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("out", sorted(OUTPUTS))
@pytest.mark.parametrize("inp", sorted(INPUTS))
def test_jacobian_trees(inp, out, transform, path):
    f = OUTPUTS[out]
    g = f if path == "compiled" else _tape(f)
    got = getattr(cr, transform)(g)(INPUTS[inp])
    _same(got, _fd_jacobian(f, (INPUTS[inp],), [0]))


@pytest.mark.parametrize("path", ["compiled", "tape"])
@pytest.mark.parametrize("inp", sorted(INPUTS))
def test_hessian_trees(inp, path):
    g = _total if path == "compiled" else _tape(_total)
    got = cr.hessian(g)(INPUTS[inp])
    want = _fd_jacobian(cr.grad(_total), (INPUTS[inp],), [0])
    _same(got, want, rtol=1e-4, atol=1e-5)


ARGNUMS = [0, 1, (0,), (1, 0), (0, 2), -1]


def _two_args(a, b, c):
    return {"p": _vector((a, b["w"])), "q": [_total((b, c))]}


@pytest.mark.parametrize("argnums", ARGNUMS, ids=str)
@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian"])
def test_argnums_forms(transform, argnums):
    args = (V, {"w": W}, [0.5 * V])
    if transform == "hessian":
        f = lambda a, b, c: _total((a, b, c))  # noqa: E731
        reference = lambda *a: _fd_jacobian(cr.grad(f, argnums=argnums), a,  # noqa: E731
                                            _nums(argnums))
    else:
        f = _two_args
        reference = lambda *a: _fd_jacobian(f, a, _nums(argnums))  # noqa: E731
    got = getattr(cr, transform)(f, argnums=argnums)(*args)
    _same(got, reference(*args), rtol=1e-4, atol=1e-5)


def _nums(argnums):
    if isinstance(argnums, tuple):
        return tuple(a % 3 for a in argnums)
    return [argnums % 3]


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian"])
def test_has_aux_trees(transform):
    def f(d):
        value = _total(d) if transform == "hessian" else _vector(d)
        return value, {"aux": [d["x"] * 2, (cnp.sum(d["w"]),)]}

    jac, aux = getattr(cr, transform)(f, has_aux=True)(INPUTS["dict"])
    assert np.allclose(aux["aux"][0], 2 * V) and np.isclose(aux["aux"][1][0], np.sum(W))
    inner = (lambda d: f(d)[0]) if transform != "hessian" else cr.grad(lambda d: f(d)[0])
    _same(jac, _fd_jacobian(inner, (INPUTS["dict"],), [0]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian"])
@pytest.mark.parametrize("inp", ["dict", "nested", "tuple"])
def test_structure_matches_jax(transform, inp):
    jax = pytest.importorskip("jax", reason="pip install jax (for the comparison)")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def ours(t):
        return _total(t) if transform == "hessian" else {"y": _vector(t), "s": _total(t)}

    def theirs(t):
        leaves = jax.tree_util.tree_leaves(t)
        total = sum(jnp.sum(jnp.sin(leaf) * leaf) for leaf in leaves)
        if transform == "hessian":
            return total
        return {"y": jnp.sin(leaves[0]) * jnp.sum(leaves[-1] ** 2), "s": total}

    got = getattr(cr, transform)(ours)(INPUTS[inp])
    want = getattr(jax, transform)(theirs)(INPUTS[inp])
    gl, gt = jax.tree_util.tree_flatten(got)
    wl, wt = jax.tree_util.tree_flatten(want)
    assert gt == wt
    for g, w in zip(gl, wl):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-10, atol=1e-12)
