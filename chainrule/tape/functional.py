"""Functional reverse mode on the tape: what ``grad``/``value_and_grad``/``vjp``
fall back to when a function's Python control flow depends on values
(``if x.sum() > 0:``, ``while err > tol:``), as HIPS autograd does."""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from ..errors import OutputTypeError
from ..tree import flatten, unflatten
from .graph import depends_on_others, grad_tensors
from .tensor import Tensor, strict


def _plain(tree, keep_tensors: bool):
    if keep_tensors:
        return tree
    leaves, td = flatten(tree)
    return unflatten(td, [x.value() if isinstance(x, Tensor) else x for x in leaves])


def watch(args, wanted_leaves: set[int]):
    """Leaves to differentiate become tensors requiring grad (tensors of an outer
    tape are used as they are, so nested derivatives record)."""
    leaves, tree = flatten(tuple(args))
    wrt, nested, out = [], False, []
    for i, x in enumerate(leaves):
        if i in wanted_leaves:
            if isinstance(x, Tensor):
                nested = nested or x.requires_grad
                t = x if x.requires_grad else Tensor(x.value(), requires_grad=True)
            else:
                arr = np.array(x)
                if not np.issubdtype(arr.dtype, np.inexact):
                    arr = arr.astype(np.float64)
                t = Tensor(arr, requires_grad=True)
            wrt.append(t)
            out.append(t)
        else:
            out.append(x)
    return unflatten(tree, out), wrt, nested


def value_and_grad_on_tape(f, args, wanted_leaves: set[int], has_aux: bool,
                           holomorphic: bool = False):
    targs, wrt, nested = watch(args, wanted_leaves)
    with strict():
        out = f(*targs)
    value, aux = out if has_aux else (out, None)
    dtype = value.dtype if isinstance(value, Tensor) else np.asarray(value).dtype
    if np.dtype(dtype).kind == "c" and not holomorphic:
        raise OutputTypeError("grad of a complex-valued function: pass holomorphic=True for the "
                            "complex derivative f'(z), or differentiate a real loss")
    # a function of tensors of an enclosing derivative (closed over, or passed in):
    # its results stay recorded, so that derivative flows through them
    nested = nested or depends_on_others(flatten((value, aux))[0], wrt)
    grads = grad_tensors(value, wrt, create_graph=nested)
    value = value if nested or not isinstance(value, Tensor) else value.value()
    return value, _plain(aux, nested), _plain(grads, nested)


def vjp_on_tape(f, primals, wanted_leaves: set[int]):
    targs, wrt, nested = watch(primals, wanted_leaves)
    with strict():
        out = f(*targs)
    nested = nested or depends_on_others(flatten(out)[0], wrt)

    def pullback(ct_tree):
        out_leaves, _ = flatten(out)
        ct_leaves, _ = flatten(ct_tree)
        total = None
        for o, c in zip(out_leaves, ct_leaves):
            if isinstance(o, Tensor) and o.requires_grad:
                term = cnp.sum(o * c)
                total = term if total is None else total + term
        if total is None:
            return [np.zeros(t.shape, t.dtype) for t in wrt]
        recording = nested or any(isinstance(c, Tensor) and c.requires_grad
                                  for c in ct_leaves)
        return _plain(grad_tensors(total, wrt, create_graph=recording), recording)

    return _plain(out, nested), pullback
