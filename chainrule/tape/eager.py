"""The first backward of a new tape structure, run eagerly: the VJP rules applied
to the recorded values, newest node first, as HIPS autograd does.

Building a structure's pullback (the ``gradient`` pass, then code generation)
pays off only when the structure comes back; the first time, calling each op's
VJP rule on arrays costs about as much as recording did. The rules are the
same ones the gradient pass uses (written with ops, so on arrays they
compute), and their results are fitted to each operand as the pass fits them:
summed over broadcast dimensions, cast to the operand's dtype (a complex
cotangent of a real operand keeps its real part).
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, NoRuleError
from ..ir.op import PYTHON_SCALARS, weak_scalar_dtype
from ..rules.registry import VJP, NoDerivative
from .tensor import Tensor


def _sum_to(g: np.ndarray, shape: tuple) -> np.ndarray:
    """``g`` summed over the dimensions broadcasting added to ``shape``."""
    extra = g.ndim - len(shape)
    if extra < 0:
        return np.broadcast_to(g, shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, d in enumerate(shape)
                                       if d == 1 and g.shape[i + extra] != 1)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    return out.reshape(shape) if extra or axes else out


def _fit(g, shape: tuple, dtype: np.dtype, op) -> np.ndarray:
    if isinstance(g, Tensor):  # the rule read a tensor itself, not an operand's value
        raise GradientError(
            f"backward through {op.name}: its VJP rule computed with a tape tensor that "
            f"requires grad (a custom_vjp / custom_jvp function that closes over one: its "
            f"rules read the tensor, not a value the tape gives them); pass it in as an "
            f"argument, or .detach() it")
    g = np.asarray(g)
    if g.shape != shape:
        try:
            joint = np.broadcast_shapes(g.shape, shape)
        except ValueError:
            raise GradientError(f"backward through {op.name}: its VJP rule returned shape "
                                f"{g.shape} for an operand of shape {shape}") from None
        g = _sum_to(g, shape) if joint == g.shape else np.broadcast_to(g, shape)
    if g.dtype != dtype:
        if g.dtype.kind == "c" and dtype.kind != "c":
            g = g.real
        g = g.astype(dtype)
    return g


def _operands(node) -> list:
    """The recorded operands as the rules see them in a program: arrays, and Python
    numbers as 0-d arrays of the dtype they take next to the others (weak scalars)."""
    values = [a.value() if isinstance(a, Tensor) else a for a in node.args]
    if node.sig is not None:  # recorded eagerly: the scalars' dtypes are known
        return node.sig.operands(values)
    if not any(type(v) in PYTHON_SCALARS for v in values):
        return values
    strong = tuple(np.asarray(v).dtype for v in values if type(v) not in PYTHON_SCALARS)
    return [np.asarray(v, weak_scalar_dtype(v, strong)) if type(v) in PYTHON_SCALARS else v
            for v in values]


def _needing(layout) -> set[int] | None:
    """The ids of the leaves and of the nodes a leaf reaches through differentiable ops:
    the values a gradient flows to (floor(x) and the like stop it, as in the pass).
    None when that is every node (all ops differentiable, no ``wrt`` cut): every
    recorded node requires grad, so it reaches a leaf."""
    if layout.cut is None:
        for t in layout.nodes:
            op = t.node.op
            if op is not None and not op.differentiable:
                break
        else:
            return None
    needs = {id(t) for t in layout.leaves}
    for t in layout.nodes:
        node = t.node
        if node.op is not None and not node.op.differentiable:
            continue
        if any(id(a) in needs for a in node.args if isinstance(a, Tensor)):
            needs.add(id(t))
    return needs


def eager_gradients(layout, seed) -> list:
    """The gradients of ``layout.loss`` (seeded with ``seed``) for ``layout.leaves``
    (zeros where nothing flows), by applying the VJP rules to the recorded values."""
    position = layout.position
    needs = _needing(layout)
    adjoints: dict[int, object] = {id(layout.loss): seed}
    leaf_grads: list = [None] * len(layout.leaves)
    pop = adjoints.pop
    nodes = layout.nodes
    for k in range(len(nodes) - 1, -1, -1):
        t = nodes[k]
        g = pop(id(t), None)
        if g is None or (needs is not None and id(t) not in needs):
            continue
        node = t.node
        op = node.op
        if op is None:  # an item of a tuple-valued op: the tuple's cotangent slot
            parent, index = node.args[0], node.attrs["index"]
            slots = adjoints.get(id(parent))
            if slots is None:
                slots = adjoints[id(parent)] = [None] * len(parent.value())
            slots[index] = g if slots[index] is None else slots[index] + g
            continue
        if not op.differentiable:
            continue
        out = t.value()
        if type(out) is tuple:  # missing slots are zeros, as the pass materializes them
            g = tuple(np.zeros_like(o) if s is None else s for o, s in zip(out, g))
        rule = VJP.get(op)
        if rule is None:
            raise NoRuleError(f"no VJP rule for: {op.name} (register one with "
                              f"chainrule.rules.register_vjp)")
        args = node.args
        cts = rule(out, g, *_operands(node), **node.attrs)
        for i, (a, ct) in enumerate(zip(args, cts)):
            if ct is None or (needs is not None and id(a) not in needs):
                continue
            ref = position.get(id(a))
            if ref is None or ref[0] == "input":
                continue
            if type(ct) is NoDerivative:
                raise NoRuleError(f"{op.name}(...): no derivative with respect to operand "
                                  f"{i}: {ct.reason}")
            shape, dtype = a.aval()
            if type(ct) is not _ndarray or ct.shape != shape or ct.dtype != dtype:
                ct = _fit(ct, tuple(shape), np.dtype(dtype), op)
            if ref[0] == "leaf":  # a fresh array: the caller keeps it as .grad
                old = leaf_grads[ref[1]]
                leaf_grads[ref[1]] = np.array(ct, copy=True) if old is None else old + ct
                continue
            old = adjoints.get(id(a))
            adjoints[id(a)] = ct if old is None else old + ct
    return [np.zeros(*leaf.aval()) if g is None else g
            for leaf, g in zip(layout.leaves, leaf_grads)]


_ndarray = np.ndarray
