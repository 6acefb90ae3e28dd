"""SciPy's ``scipy.signal``, differentiable: ops that declare ``"scipy.signal.<name>"`` in
their ``namespace`` appear here, next to the functions written below.

``convolve`` and ``correlate`` (n-D, modes 'full', 'same', 'valid') and their 2-D
forms compute what ``scipy.signal`` computes with ``method="direct"`` (any
``method`` gives the direct sum here), as the ``correlate_valid`` op applied to a
zero-padded window of ``in1``: differentiable in both inputs at every order (the
derivative of a correlation is a correlation with the cotangent). Cost: a
multiply-add per output element and kernel element, and as much again per
derivative; no FFT.
"""

from __future__ import annotations

import numpy as _np

from ..errors import ChainruleError, InvalidValueError
from ..ir.op import is_dispatched as _is_dispatched
from ..numpy._assemble import assemble as _assemble
from ..numpy._reductions import correlate_nd as _correlate_nd

# the functions written here (besides the ops that declare "scipy.signal.<name>")
_OWN: list[str] = ["convolve", "convolve2d", "correlate", "correlate2d"]


def _asarray(x):
    return x if _is_dispatched(x) else _np.asarray(x)


def _method(method):
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Acceptable method flags are 'auto', 'direct', or 'fft', "
                         f"got {method!r}")


def _real(who, *xs):
    if any(_np.dtype(x.dtype).kind == "c" for x in xs):
        raise ChainruleError(f"{who}: complex inputs are not supported")


def convolve(in1, in2, mode="full", method="auto", *, axes=None, dot_axes=((), ())):
    """``scipy.signal.convolve``: z[k] = sum_j in1[k - j] in2[j] over every dimension,
    'full', 'same' (in1's shape, centred) or 'valid'; computed directly whatever
    ``method`` says. Differentiable in both inputs.

    With ``axes`` or ``dot_axes`` (keywords), autograd's generalized tensor convolution
    (``autograd.scipy.signal.convolve``; there the third positional argument is
    ``axes``, here it is SciPy's ``mode``): ``axes=(axes of in1, axes of in2)`` are
    convolved in pairs, as above along each; ``dot_axes`` are contracted (summed
    products, as ``tensordot``); the result's axes are in1's other axes, then in2's
    other axes, then the convolved ones. A convnet layer is
    ``convolve(images, filters, axes=([2, 3], [2, 3]), dot_axes=([1], [0]),
    mode="valid")``.

    >>> import numpy as np
    >>> a, b = np.arange(6.0).reshape(2, 3), np.array([[1.0, -1.0], [2.0, 0.5]])
    >>> convolve(a, b, axes=([1], [1]), dot_axes=([0], [0]), mode="valid")
    array([10.5, 13. ])
    """
    _method(method)
    in1, in2 = _asarray(in1), _asarray(in2)
    _real("convolve", in1, in2)
    if axes is None and tuple(map(tuple, dot_axes)) == ((), ()):
        return _correlate_nd(in1, in2, mode, True)
    return _tensor_convolve(in1, in2, axes, dot_axes, mode)


def _axis_list(axes, ndim: int, who: str) -> list:
    out = []
    for a in axes:
        if not isinstance(a, (int, _np.integer)) or not -ndim <= a < ndim:
            raise InvalidValueError(f"convolve: {who} axis {a!r} is out of range for an "
                                    f"array with {ndim} dimensions")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise InvalidValueError(f"convolve: {who} axes {list(axes)} repeat an axis")
    return out


def _tensor_convolve(a, b, axes, dot_axes, mode):
    """autograd's generalized convolution, from ops: along each convolved axis of ``a``
    a constant-index ``take`` of ``a`` zero-padded by m - 1 gives the windows
    ``W[k, j] = a[k + start - j]``, and one ``einsum`` sums them against ``b`` and the
    ``dot_axes`` (so the derivatives are those of take, pad and einsum, at any order)."""
    from .. import numpy as cnp

    if mode not in ("full", "same", "valid"):
        raise InvalidValueError(f"convolve: mode {mode!r}; use 'full', 'same' or 'valid'")
    dot_a, dot_b = (_axis_list(d, x.ndim, "dot") for d, x in zip(dot_axes, (a, b)))
    if axes is None:  # every other axis, paired in order
        axes = ([i for i in range(a.ndim) if i not in dot_a],
                [i for i in range(b.ndim) if i not in dot_b])
    conv_a, conv_b = _axis_list(axes[0], a.ndim, "convolved"), \
        _axis_list(axes[1], b.ndim, "convolved")
    if len(conv_a) != len(conv_b) or len(dot_a) != len(dot_b):
        raise InvalidValueError(f"convolve: axes {axes!r} and dot_axes {dot_axes!r} must "
                                f"pair as many axes of in1 as of in2")
    if set(conv_a) & set(dot_a) or set(conv_b) & set(dot_b):
        raise InvalidValueError("convolve: an axis cannot be both convolved and dotted")
    for i, j in zip(dot_a, dot_b):
        if a.shape[i] != b.shape[j]:
            raise InvalidValueError(f"convolve: dot axes {i} of in1 ({a.shape[i]}) and {j} "
                                    f"of in2 ({b.shape[j]}) differ in length")
    sizes = [(a.shape[i], b.shape[j]) for i, j in zip(conv_a, conv_b)]
    if mode == "valid" and not (all(n >= m for n, m in sizes)
                                or all(m >= n for n, m in sizes)):
        raise InvalidValueError("convolve: for 'valid' mode, one array must be at least as "
                                "large as the other along every convolved axis")
    ignore_a = [i for i in range(a.ndim) if i not in conv_a and i not in dot_a]
    ignore_b = [i for i in range(b.ndim) if i not in conv_b and i not in dot_b]
    a = cnp.transpose(a, ignore_a + dot_a + conv_a)
    b = cnp.transpose(b, ignore_b + dot_b + conv_b)
    base = len(ignore_a) + len(dot_a)
    for k, (n, m) in enumerate(sizes):
        if mode == "full":
            start, length = 0, n + m - 1
        elif mode == "same":
            start, length = (m - 1) // 2, n
        else:
            start, length = min(n, m) - 1, abs(n - m) + 1
        axis = base + 2 * k  # each convolved axis before it became two: (k, j)
        pad = [(0, 0)] * a.ndim
        pad[axis] = (m - 1, m - 1)
        index = (_np.arange(length)[:, None] + (start + m - 1) - _np.arange(m)[None, :])
        a = cnp.take(cnp.pad(a, pad), index, axis=axis)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ia, ib, dots = ([next(letters) for _ in group] for group in (ignore_a, ignore_b, dot_a))
    ks, js = [next(letters) for _ in sizes], [next(letters) for _ in sizes]
    windows = "".join(ia + dots + [c for kj in zip(ks, js) for c in kj])
    spec = f"{windows},{''.join(ib + dots + js)}->{''.join(ia + ib + ks)}"
    return cnp.einsum(spec, a, b)


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate`` of real arrays: z[k] = sum_j in1[k + j - (M - 1)] in2[j]
    in 'full' coordinates, modes 'full', 'same' (in1's shape, centred) and 'valid'.
    Differentiable in both inputs."""
    _method(method)
    in1, in2 = _asarray(in1), _asarray(in2)
    _real("correlate", in1, in2)
    return _correlate_nd(in1, in2, mode, False)


def _two_d(who, in1, in2, boundary, fillvalue):
    in1, in2 = _asarray(in1), _asarray(in2)
    if in1.ndim != 2 or in2.ndim != 2:
        raise ValueError(f"{who} inputs must both be 2-D arrays")
    if boundary not in ("fill", "fillvalue") or fillvalue != 0:
        raise ChainruleError(f"{who}: only boundary='fill' with fillvalue=0 is supported")
    _real(who, in1, in2)
    return in1, in2


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.convolve2d`` with zero fill (``boundary='fill'``, ``fillvalue=0``)."""
    in1, in2 = _two_d("convolve2d", in1, in2, boundary, fillvalue)
    return _correlate_nd(in1, in2, mode, True)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.correlate2d`` with zero fill (``boundary='fill'``, ``fillvalue=0``)."""
    in1, in2 = _two_d("correlate2d", in1, in2, boundary, fillvalue)
    # scipy centres 'same' differently here than in correlate: at M // 2, not (M - 1) // 2
    return _correlate_nd(in1, in2, mode, False, (tuple(m // 2 for m in in2.shape), in1.shape))


__all__ = _assemble(globals(), "scipy.signal.", _OWN)
