"""Central finite differences, shared by the tests that check derivatives entry by entry
(``chainrule.testing.check_grads`` checks them through random projections instead).

Complex values follow JAX's (= autograd's) convention: for a real loss L of complex
z = x + iy, the gradient is dL/dx - i dL/dy.
"""

from __future__ import annotations

import numpy as np

import chainrule.numpy as cnp


def _work_array(x) -> np.ndarray:
    """x as an array to shift: its own float or complex dtype, float64 otherwise."""
    x = np.asarray(x)
    return x if np.issubdtype(x.dtype, np.inexact) else x.astype(np.float64)


def fd_grad(f, args, i=0, eps=1e-6):
    """The gradient of a real scalar ``f(*args)`` with respect to ``args[i]`` (the others
    held fixed), shaped as ``args[i]``: each entry shifted by +-eps in turn; a complex
    entry along the real and along the imaginary direction (dL/dx - i dL/dy)."""
    args = tuple(args)
    x = _work_array(args[i])
    directions = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    out = np.zeros(x.shape, x.dtype)
    for idx in np.ndindex(x.shape):
        for d in directions:
            e = np.zeros(x.shape, x.dtype)
            e[idx] = d * eps
            plus = f(*args[:i], x + e, *args[i + 1:])
            minus = f(*args[:i], x - e, *args[i + 1:])
            der = (plus - minus) / (2 * eps)
            out[idx] += der if d == 1.0 else -1j * der
    return out


def fd_jacobian(f, x, eps=1e-6):
    """d f / d x of an array function of one array: shape ``f(x).shape + x.shape``."""
    x = _work_array(x)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size, x.dtype)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    out_shape = cols[0].shape if cols else np.shape(f(x))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def fd_directional(f, args, tangents, eps=1e-6):
    """The derivative of ``f`` at ``args`` along ``tangents`` (one per argument):
    ``(f(args + eps t) - f(args - eps t)) / 2 eps``."""
    plus = f(*[a + eps * t for a, t in zip(args, tangents)])
    minus = f(*[a - eps * t for a, t in zip(args, tangents)])
    return (plus - minus) / (2 * eps)


def real_loss(f, w):
    """A real scalar loss of f's output, to check complex derivatives with: ``sum(Re(f(...)
    * w))`` for complex weights ``w``, ``sum(f(...) * w)`` for real ones."""
    weights_complex = np.iscomplexobj(w)  # decided here: inside, w is a traced capture

    def loss(*args):
        out = f(*args)
        return cnp.sum(cnp.real(out * w)) if weights_complex else cnp.sum(out * w)

    return loss
