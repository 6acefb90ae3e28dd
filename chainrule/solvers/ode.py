"""``odeint``: an adaptive Dormand–Prince solver whose derivatives come from
ODEs of their own, in JAX's ``jax.experimental.ode.odeint`` conventions.

Reverse mode solves the adjoint ODE backwards in time (Pontryagin; Chen et al.,
"Neural Ordinary Differential Equations", 2018): between two output times the
augmented state ``(y, a, a_args)`` follows

    y' = f(y, t, args),  a' = -a^T df/dy,  a_args' = -a^T df/dargs,

integrated from ``t_i`` down to ``t_(i-1)`` starting from the forward solution
at ``t_i`` (so nothing of the forward solve is stored but its outputs), the
cotangent of each output added to ``a`` at its time. The cotangent of the
output time ``t_i`` is ``g_i . f(y_i, t_i)`` and that of ``t_0`` is
``-a(t_0) . f(y_0, t_0)``. Forward mode solves the tangent (variational) ODE
``dy' = df/dy dy + df/dargs dargs`` next to ``y``. Both are solved by
``odeint`` itself, with the same tolerances (the error control covers the
augmented state), so their derivatives are again derivatives of ``odeint``:
every order, both modes. The products with ``df/dy`` are ``vjp``/``jvp`` of
``func``, so ``func`` must be traceable (no Python control flow on the values
of ``y``; use ``cnp.where`` or ``cr.cond``).

``func`` may read values that are being differentiated from outside its
arguments (a closure over the parameters of a neural ODE, under ``grad``,
``jit`` or on the tape): they are found by tracing ``func`` once and passed as
extra arguments, so their derivatives are right too (JAX requires them in
``args``; both work here).

>>> import numpy as np, chainrule as cr
>>> ts = np.array([0.0, 1.0])
>>> float(odeint(lambda y, t, k: -k * y, np.float64(1.0), ts, 2.0)[1].round(7))   # exp(-2)
0.1353353
>>> g = cr.grad(lambda k: odeint(lambda y, t, k: -k * y, np.float64(1.0), ts, k)[1])
>>> float(g(np.float64(2.0)).round(7))   # d/dk exp(-k) = -exp(-k)
-0.1353353
"""

from __future__ import annotations

import math

import numpy as np

from .. import numpy as cnp
from ..checks import aval
from ..frontend.control import scan
from ..tree import flatten, unflatten
from .dopri import Options, solve
from .runtime import (
    SolverArgumentError,
    SolverFunction,
    check,
    constant,
    convert_closure,
    differentiating,
    is_traced,
    plain,
    reads_recorded,
    untaped,
)


# -- the public function -------------------------------------------------------------
def odeint(func, y0, t, *args, rtol: float = 1.4e-8, atol: float = 1.4e-8,
           mxstep: float = math.inf, hmax: float = math.inf, hmin: float = 0.0,
           first_step: float | None = None):
    """The solution of ``dy/dt = func(y, t, *args)``, ``y(t[0]) = y0``, at every time
    of ``t`` (JAX's argument order: ``func(y, t, *args)``, ``args`` positional).

    ``y0`` is a pytree of floating arrays; the result has its structure, each leaf
    stacked on a new axis 0 of length ``len(t)``. ``t`` is 1-D and strictly
    increasing. ``rtol``/``atol`` bound the local error of each step (as an RMS
    norm over the whole state); ``mxstep`` is the most steps (accepted or
    rejected) between two consecutive output times, ``hmax`` the largest step,
    ``hmin`` the smallest (a smaller one needed is an error), ``first_step`` the
    size of the first step (by default estimated; both are extensions to JAX's
    signature, for ``chainrule.scipy.integrate.odeint``'s ``hmin`` and ``h0``).
    A solve that cannot reach an output time raises ``SolverError`` (JAX would
    return what it had). Differentiable with respect to ``y0``, ``t`` and the
    floating leaves of ``args`` (and the values ``func`` closes over) in both
    modes, to any order, compiled and on the tape.

    >>> import numpy as np
    >>> ys = odeint(lambda y, t: {"x": y["v"], "v": -y["x"]},
    ...             {"x": np.float64(1.0), "v": np.float64(0.0)}, np.linspace(0.0, 3.0, 4))
    >>> bool(np.allclose(ys["x"], np.cos(np.linspace(0.0, 3.0, 4)), atol=1e-7))
    True
    """
    if not callable(func):
        raise SolverArgumentError(f"odeint: func must be callable, got {type(func).__name__}")
    _check_options(rtol, atol, mxstep, hmax, hmin, first_step)
    y_leaves, y_tree = flatten(y0)
    avals = [_state_aval(x, i) for i, x in enumerate(y_leaves)]
    if not avals:
        raise SolverArgumentError("odeint: y0 has no arrays")
    dtype = np.result_type(*[d for _, d in avals])
    ts = _times(t, dtype)
    for x in flatten(args)[0]:
        _arg_aval(x)
    xp = cnp if is_traced(y0, t, args) else np
    flat_func = _FlatFunction(func, y_tree, avals, dtype)
    y_flat = _ravel(xp, y_leaves, dtype)
    if differentiating(y0, t, args) or reads_recorded(flat_func, (y_flat, ts[0], *args)):
        flat_func, closed = convert_closure(flat_func, (y_flat, np.zeros((), dtype), *args),
                                            "odeint")
        args = (*args, *closed)
    options = Options(float(rtol), float(atol), mxstep, float(hmax), float(hmin),
                      None if first_step is None else float(first_step))
    ys = _odeint(flat_func, options, y_flat, ts, *args)
    return _unravel_stacked(ys, y_tree, avals)


def _check_options(rtol, atol, mxstep, hmax, hmin, first_step) -> None:
    for name, v in (("rtol", rtol), ("atol", atol), ("hmax", hmax), ("hmin", hmin),
                    ("first_step", 1.0 if first_step is None else first_step)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise SolverArgumentError(f"odeint: {name} must be a Python number (a static "
                                      f"option, as in JAX), got {type(v).__name__}")
        if not v >= 0:
            raise SolverArgumentError(f"odeint: {name} must be >= 0, got {v!r}")
    if rtol == 0 and atol == 0:
        raise SolverArgumentError("odeint: rtol and atol cannot both be 0")
    if not hmax > 0:
        raise SolverArgumentError(f"odeint: hmax must be > 0, got {hmax!r}")
    if first_step is not None and not first_step > 0:
        raise SolverArgumentError(f"odeint: first_step must be > 0, got {first_step!r}")
    if not (isinstance(mxstep, (int, np.integer)) and not isinstance(mxstep, bool)
            and mxstep >= 1) and mxstep != math.inf:
        raise SolverArgumentError(f"odeint: mxstep must be a positive integer or inf, got "
                                  f"{mxstep!r}")


def _state_aval(x, i):
    shape, dtype = aval(x)
    if dtype.kind != "f":
        raise SolverArgumentError(
            f"odeint: y0 leaf {i} has dtype {dtype}; the state must be real floating point"
            + (" (complex states are not supported)" if dtype.kind == "c" else
               " (convert it, e.g. y0.astype(float))"))
    return tuple(shape), dtype


def _arg_aval(x):
    if callable(x) and not hasattr(x, "shape"):
        raise SolverArgumentError(f"odeint: the contents of *args must be arrays or numbers, "
                                  f"got {type(x).__name__} {x!r:.40}; pass functions and other "
                                  f"static values through a closure")
    try:
        shape, dtype = aval(x)
    except Exception:  # noqa: BLE001 - any conversion failure is a user error
        raise SolverArgumentError(f"odeint: the contents of *args must be arrays or numbers, "
                                  f"got {type(x).__name__}") from None
    if dtype.kind == "c":
        raise SolverArgumentError("odeint: complex arguments are not supported")
    if dtype.kind == "O":
        raise SolverArgumentError(f"odeint: the contents of *args must be arrays or numbers, "
                                  f"got {type(x).__name__}")
    return shape, dtype


def _times(t, dtype):
    shape, t_dtype = aval(t)
    if len(shape) != 1 or shape[0] < 1:
        raise SolverArgumentError(f"odeint: t must be a 1-D array of at least one time, got "
                                  f"shape {tuple(shape)}")
    if t_dtype.kind not in "fiu":
        raise SolverArgumentError(f"odeint: t must be real, got dtype {t_dtype}")
    if is_traced(t):
        ts = t.astype(dtype) if t_dtype != dtype else t
        if shape[0] > 1:
            check(cnp.all(ts[1:] > ts[:-1]), message="odeint: t must be strictly increasing")
        return ts
    values = np.asarray(plain(t))
    if shape[0] > 1 and not np.all(values[1:] > values[:-1]):
        raise SolverArgumentError(f"odeint: t must be strictly increasing, got {values!r:.80}")
    if type(t) is np.ndarray or not hasattr(t, "astype"):
        return np.asarray(t, dtype)
    return t.astype(dtype) if t_dtype != dtype else t


# -- pytrees of states as one vector ---------------------------------------------------
def _ravel(xp, leaves, dtype):
    parts = [xp.reshape(x, (-1,)) for x in leaves]
    parts = [p if aval(p)[1] == dtype else p.astype(dtype) for p in parts]
    return parts[0] if len(parts) == 1 else xp.concatenate(parts)


def _unravel(y, tree, avals, lead=()):
    """The pytree of ``y`` (a vector, or ``lead + (n,)`` stacked vectors)."""
    leaves, start = [], 0
    for shape, dtype in avals:
        size = int(np.prod(shape, dtype=np.int64))
        part = y[..., start:start + size] if len(avals) > 1 else y
        part = part.reshape(tuple(lead) + tuple(shape))
        leaves.append(part if aval(part)[1] == dtype else part.astype(dtype))
        start += size
    return unflatten(tree, leaves)


def _unravel_stacked(ys, tree, avals):
    return _unravel(ys, tree, avals, (ys.shape[0],))


class _FlatFunction:
    """``func`` on the state as one vector: unravel, call, check, ravel."""

    def __init__(self, func, tree, avals, dtype):
        self.func, self.tree, self.avals, self.dtype = func, tree, avals, dtype
        self.__name__ = getattr(func, "__name__", "func")

    def _identity(self):
        return (self.func, self.tree, tuple((s, d.str) for s, d in self.avals), self.dtype.str)

    def __eq__(self, other) -> bool:  # one compiled structure for repeated calls
        return type(other) is _FlatFunction and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __call__(self, y, t, *args):
        out = self.func(_unravel(y, self.tree, self.avals), t, *args)
        leaves, tree = flatten(out)
        if tree != self.tree:
            raise SolverArgumentError(f"odeint: func returned a value of structure {tree!r} "
                                      f"for a state of structure {self.tree!r}")
        for i, (x, (shape, _)) in enumerate(zip(leaves, self.avals)):
            got = tuple(aval(x)[0])
            if got != shape:
                raise SolverArgumentError(f"odeint: func returned shape {got} for the state "
                                          f"leaf {i} of shape {shape}; dy/dt must have the "
                                          f"shape of y")
        xp = cnp if is_traced(leaves) else np
        return _ravel(xp, leaves, self.dtype)


# -- the solve and its rules -----------------------------------------------------------
def _solve(func, options, y0, ts, args):
    """The forward solve: IR on traced values, NumPy on arrays and tape tensors (whose
    values are used without recording: the derivative is the rules' business)."""
    if is_traced(y0, ts, args):
        # the derivatives are the rules' (on the op's operands and result): the steps
        # compute from constants, so no pass differentiates through them
        y0, ts, args = constant((y0, ts, args))
        return solve(lambda y, t: func(y, t, *args), y0, ts, options, cnp)
    with untaped():
        values = [plain(a) for a in args]
        y0, ts = np.asarray(plain(y0)), np.asarray(plain(ts))
        return solve(lambda y, t: np.asarray(plain(func(y, t, *values))), y0, ts, options,
                     np)


def _odeint_vjp(nondiff, args, ys, g):
    """ys = odeint(f, y0, ts, args);  (y0, ts, args) cotangents by the adjoint ODE"""
    func, options = nondiff
    y0, ts, *fargs = args
    y0_bar, ts_bar, args_bar = _adjoint(func, options, ys, ts, fargs, g)
    return (y0_bar, ts_bar, *args_bar)


def _odeint_jvp(nondiff, args, ys):
    """ys = odeint(f, y0, ts, args);  dys by the tangent ODE, one operand at a time"""
    func, options = nondiff
    y0, ts, *fargs = args
    arg_leaves = flatten(tuple(fargs))[0]

    def for_y0(dy0):
        return _tangent(func, options, y0, ts, fargs, dy0, None)

    def for_ts(dts):
        return _time_tangent(func, options, ys, y0, ts, fargs, dts)

    def for_arg(k):
        return lambda darg: _tangent(func, options, y0, ts, fargs, cnp.zeros_like(y0),
                                     (k, darg))

    return [for_y0, for_ts] + [for_arg(k) if aval(x)[1].kind == "f" else None
                               for k, x in enumerate(arg_leaves)]


def _odeint_solve(func, options, y0, ts, *args):
    return _solve(func, options, y0, ts, args)


_odeint = SolverFunction(_odeint_solve, (0, 1), _odeint_vjp, _odeint_jvp)


# -- reverse mode: the adjoint ODE -----------------------------------------------------
def _float_leaves(args):
    leaves, tree = flatten(tuple(args))
    return leaves, tree, [i for i, x in enumerate(leaves) if aval(x)[1].kind == "f"]


def _adjoint(func, options, ys, ts, args, g):
    """(y0_bar, ts_bar, args_bar) for the output cotangent ``g`` (like ``ys``)."""
    from ..api.reverse import vjp

    options = options.derived()
    leaves, tree, floats = _float_leaves(args)
    n = ys.shape[1]
    dtype = aval(ys)[1]
    sizes = [int(np.prod(aval(leaves[i])[0], dtype=np.int64)) for i in floats]

    def on_leaves(y, t, *arg_leaves):
        return func(y, t, *unflatten(tree, list(arg_leaves)))

    def aug_dynamics(state, s, *arg_leaves):
        """d/ds of (y, a, a_args) in reversed time s = -t."""
        y, a = state[:n], state[n:2 * n]
        y_dot, pull = vjp(on_leaves, y, -s, *arg_leaves)
        cts = pull(a)  # one per leaf: None for the integer ones
        parts = [-y_dot, cts[0]] + [_as_vector(cts[2 + i], leaves[i], dtype) for i in floats]
        return cnp.concatenate(parts)

    def interval(carry, x):
        a, a_args = carry
        y_i, t_i, t_prev, g_i = x
        a = a + g_i
        t_bar = cnp.sum(func(y_i, t_i, *args) * g_i)
        state = cnp.concatenate([y_i, a, a_args]) if sizes else cnp.concatenate([y_i, a])
        pair = cnp.stack([-t_i, -t_prev])
        out = _odeint(aug_dynamics, options, state, pair, *leaves)[1]
        return (out[n:2 * n], out[2 * n:]), t_bar

    a_args0 = cnp.zeros((sum(sizes),), dtype)
    if ys.shape[0] > 1:
        xs = (ys[1:], ts[1:], ts[:-1], g[1:])
        (a, a_args), t_bars = scan(interval, (cnp.zeros_like(ys[0]), a_args0), xs,
                                   reverse=True)
    else:
        a, a_args, t_bars = cnp.zeros_like(ys[0]), a_args0, cnp.zeros((0,), dtype)
    t0_bar = -cnp.sum(a * func(ys[0], ts[0], *args))
    ts_bar = cnp.concatenate([cnp.reshape(t0_bar, (1,)), t_bars])
    y0_bar = a + g[0]
    arg_bars, start = [None] * len(leaves), 0
    for i, size in zip(floats, sizes):
        shape, leaf_dtype = aval(leaves[i])
        part = cnp.reshape(a_args[start:start + size], shape)
        arg_bars[i] = part if leaf_dtype == dtype else part.astype(leaf_dtype)
        start += size
    for i, x in enumerate(leaves):
        if arg_bars[i] is None:  # an integer leaf: no derivative (a zero placeholder)
            arg_bars[i] = np.zeros(*aval(x))
    per_arg = unflatten(tree, arg_bars)
    return y0_bar, ts_bar, tuple(
        None if not any(aval(x)[1].kind == "f" for x in flatten(a)[0]) else ct
        for a, ct in zip(args, per_arg))


def _as_vector(ct, like, dtype):
    if ct is None:
        ct = cnp.zeros_like(like)
    v = cnp.reshape(ct, (-1,))
    return v if aval(v)[1] == dtype else v.astype(dtype)


# -- forward mode: the tangent ODE ------------------------------------------------------
def _tangent(func, options, y0, ts, args, dy0, darg):
    """The tangent of the solution for an initial tangent ``dy0`` and, with
    ``darg = (k, t)``, the tangent ``t`` of the floating argument leaf ``k``."""
    from ..api.forward import jvp

    options = options.derived()
    n = aval(y0)[0][0]
    leaves, tree = flatten(tuple(args))
    extra = () if darg is None else (darg[1],)

    def aug_dynamics(state, t, *all_args):
        arg_leaves = flatten(tuple(all_args[:len(args)]))[0]
        tangents = [cnp.zeros_like(x) for x in arg_leaves]
        if darg is not None:
            tangents[darg[0]] = all_args[-1]
        y, dy = state[:n], state[n:]
        primals = (y, t, *unflatten(tree, arg_leaves))
        tans = (dy, cnp.zeros_like(t), *unflatten(tree, tangents))
        y_dot, dy_dot = jvp(func, primals, tans)
        return cnp.concatenate([y_dot, dy_dot])

    state = cnp.concatenate([y0, dy0])
    out = _odeint(aug_dynamics, options, state, ts, *args, *extra)
    return out[:, n:]


def _time_tangent(func, options, ys, y0, ts, args, dts):
    """The tangent of the solution for tangents ``dts`` of the output times: each output
    moves along its slope, and a moved start shifts the whole solution."""
    slopes = scan(lambda c, x: (c, func(x[0], x[1], *args)), 0.0, (ys, ts))[1]
    moved = slopes * cnp.reshape(dts, (-1, 1))
    shift = _tangent(func, options, y0, ts, args, -slopes[0] * dts[0], None)
    return moved + shift
