"""Functional derivatives on the tape: what ``grad``/``value_and_grad``/``vjp``/``jvp``
fall back to when a function's Python control flow depends on values
(``if x.sum() > 0:``, ``while err > tol:``), as HIPS autograd does.

Each runs the function on fresh leaf tensors (``watch``) one level deeper than the
tape transform that called it, if any. A result that depends on a leaf made
outside that level (a user's tensor, or a leaf of an enclosing derivative the
function closes over) stays recorded, so the enclosing derivative flows through
it; anything else comes back as plain arrays.
"""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from ..errors import OutputTypeError
from ..tree import flatten, unflatten
from .graph import depends_on_others, grad_tensors
from .tensor import MODE, Tensor, strict


def _plain(tree, keep_tensors: bool):
    if keep_tensors:
        return tree
    leaves, td = flatten(tree)
    return unflatten(td, [x.value() if isinstance(x, Tensor) else x for x in leaves])


class Watched:
    """A function's arguments with the leaves to differentiate as leaf tensors.

    ``args``: the arguments to call the function with; ``wrt``: the leaf tensors;
    ``nested``: some were already tensors requiring grad (of an enclosing derivative,
    used as they are, so nested derivatives record); ``level``: how deeply this
    transform is nested among tape transforms (its own leaves carry it)."""

    def __init__(self, args, wanted_leaves: set[int]):
        self.level = MODE.level + 1
        leaves, tree = flatten(tuple(args))
        self.wrt, self.nested, out = [], False, []
        for i, x in enumerate(leaves):
            if i in wanted_leaves:
                if isinstance(x, Tensor) and x.requires_grad:
                    self.nested = True
                    t = x
                else:
                    t = self.leaf(x.value() if isinstance(x, Tensor) else x)
                self.wrt.append(t)
                out.append(t)
            else:
                out.append(x)
        self.args = unflatten(tree, out)

    def leaf(self, value) -> Tensor:
        """A new leaf tensor requiring grad, of this transform."""
        arr = np.array(value)
        if not np.issubdtype(arr.dtype, np.inexact):
            arr = arr.astype(np.float64)
        t = Tensor(arr, requires_grad=True)
        t._level = self.level
        return t

    def call(self, f):
        """``f`` on the watched arguments, at this transform's level, refusing Python
        numbers made from the values being differentiated."""
        old = MODE.level
        MODE.level = self.level
        try:
            with strict():
                return f(*self.args)
        finally:
            MODE.level = old

    def recording(self, results) -> bool:
        """Whether results must stay recorded: watched through an enclosing derivative,
        or depending on tensors from outside this transform."""
        return self.nested or depends_on_others(flatten(results)[0], self.wrt, self.level)


def value_and_grad_on_tape(f, args, wanted_leaves: set[int], has_aux: bool,
                           holomorphic: bool = False):
    w = Watched(args, wanted_leaves)
    out = w.call(f)
    value, aux = out if has_aux else (out, None)
    dtype = value.dtype if isinstance(value, Tensor) else np.asarray(value).dtype
    if np.dtype(dtype).kind == "c" and not holomorphic:
        raise OutputTypeError("grad of a complex-valued function: pass holomorphic=True for the "
                              "complex derivative f'(z), or differentiate a real loss")
    nested = w.recording((value, aux))
    grads = grad_tensors(value, w.wrt, create_graph=nested)
    value = value if nested or not isinstance(value, Tensor) else value.value()
    return value, _plain(aux, nested), _plain(grads, nested)


def vjp_on_tape(f, primals, wanted_leaves: set[int]):
    w = Watched(primals, wanted_leaves)
    out = w.call(f)
    nested = w.recording(out)

    def pullback(ct_tree):
        out_leaves, _ = flatten(out)
        ct_leaves, _ = flatten(ct_tree)
        total = None
        for o, c in zip(out_leaves, ct_leaves):
            if isinstance(o, Tensor) and o.requires_grad:
                term = cnp.sum(o * c)
                total = term if total is None else total + term
        if total is None:
            return [np.zeros(t.shape, t.dtype) for t in w.wrt]
        recording = nested or any(isinstance(c, Tensor) and c.requires_grad
                                  for c in ct_leaves)
        return _plain(grad_tensors(total, w.wrt, create_graph=recording), recording)

    return _plain(out, nested), pullback


def jvp_on_tape(f, primals, tangents, wanted_leaves: set[int]):
    """Forward mode as the VJP of the (linear) VJP (MindSpore's route): ``grads =
    J^T ct`` is linear in ``ct``, so ``d<grads, t>/d ct = J t``. For value-dependent
    control flow, and for forward mode over the reverse mode of compiled loops and
    branches (closures the jvp pass does not differentiate)."""
    w = Watched(primals, wanted_leaves)
    out = w.call(f)
    out_leaves, out_tree = flatten(out)
    cts = [w.leaf(np.zeros(o.shape, o.dtype)) for o in out_leaves]
    total = None
    for o, c in zip(out_leaves, cts):
        if isinstance(o, Tensor) and o.requires_grad:
            term = cnp.sum(o * c)
            total = term if total is None else total + term
    t_leaves = flatten(tuple(tangents))[0]
    # on tensors of an enclosing derivative (or recorded tangents), the results record
    nested = w.recording(out_leaves) or any(getattr(t, "requires_grad", False)
                                            for t in t_leaves)
    if total is None:
        touts = [np.zeros(o.shape, o.dtype) for o in out_leaves]
    else:
        grads = grad_tensors(total, w.wrt, create_graph=True)
        inner = None
        for g, k in zip(grads, sorted(wanted_leaves)):
            if isinstance(g, Tensor) and g.requires_grad:
                term = cnp.sum(g * t_leaves[k])
                inner = term if inner is None else inner + term
        touts = ([np.zeros(o.shape, o.dtype) for o in out_leaves] if inner is None
                 else grad_tensors(inner, cts, create_graph=nested))
    outs, touts = _plain(out_leaves, nested), _plain(list(touts), nested)
    if out_tree.kind is None:
        return outs[0], touts[0]
    return unflatten(out_tree, outs), unflatten(out_tree, touts)
