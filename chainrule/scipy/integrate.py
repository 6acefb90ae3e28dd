"""SciPy's ``scipy.integrate.odeint`` signature (and autograd's), differentiable: a
migration aid over ``chainrule.solvers.odeint`` (JAX's conventions).

The argument order is SciPy's: ``func(y, t, *args)`` with ``args`` a tuple
keyword (``func(t, y, *args)`` with ``tfirst=True``), ``y0`` a vector (or a
number), ``t`` monotonic in either direction, repeated times allowed when ``t``
is concrete. The result is ``(len(t), len(y0))``, as SciPy's. autograd's
``odeint(func, y0, t, func_args)`` passes ``func_args`` as SciPy's ``args``,
so autograd programs run unchanged.

The solver is not LSODA but the explicit Dormand–Prince 5(4) method of
``chainrule.solvers.odeint`` (with its adjoint derivatives): ``rtol``,
``atol``, ``h0``, ``hmax``, ``hmin`` and ``mxstep`` keep their meaning
(``mxstep=0`` is SciPy's default of 500 steps per output interval,
``hmax=0`` no limit); LSODA's Jacobian and method hints (``Dfun``,
``col_deriv``, ``ml``, ``mu``, ``mxordn``, ``mxords``) and its printing
options (``ixpr``, ``mxhnil``, ``printmessg``) have no use here and are
ignored; ``full_output`` (LSODA's diagnostics), per-component tolerances and
``tcrit`` are refused with an error. A stiff problem needs many small steps
here (``mxstep``), where LSODA would switch to an implicit method.

>>> import numpy as np
>>> ys = odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0, 2.0]), args=(0.5,))
>>> ys.shape, bool(np.allclose(ys[:, 0], np.exp(-0.5 * np.array([0.0, 1.0, 2.0]))))
((3, 1), True)
"""

from __future__ import annotations

import numpy as np

from .. import numpy as _cnp
from ..checks import aval as _aval

_OWN = ["odeint"]


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None,  # noqa: N803
           mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0,
           mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    """The solution of ``dy/dt = func(y, t, *args)`` at the times ``t``, SciPy's
    signature and argument order (see the module docstring for what differs).

    >>> import numpy as np
    >>> ys = odeint(lambda y, t: np.array([y[1], -y[0]]), [1.0, 0.0], [0.0, np.pi])
    >>> bool(np.allclose(ys[-1], [-1.0, 0.0], atol=1e-7))
    True
    """
    from ..solvers.ode import odeint as solve
    from ..solvers.runtime import SolverArgumentError, is_traced, plain

    if full_output:
        raise SolverArgumentError("odeint: full_output (LSODA's diagnostics) is not "
                                  "available; this odeint is an explicit Dormand-Prince solver")
    if tcrit is not None:
        raise SolverArgumentError("odeint: tcrit is not supported; split the integration at "
                                  "the critical points instead")
    rtol = 1.49012e-8 if rtol is None else rtol
    atol = 1.49012e-8 if atol is None else atol
    for name, v in (("rtol", rtol), ("atol", atol)):
        if np.ndim(v) != 0:
            raise SolverArgumentError(f"odeint: per-component {name} is not supported; give "
                                      f"one number")
    if not isinstance(args, tuple):
        args = (args,)
    shape, dtype = _aval(y0)
    if dtype.kind in "iub":
        dtype = np.dtype(np.float64)
    y_vec = _cnp.reshape(_cnp.asarray(y0) if is_traced(y0) else y0, (-1,))
    if not is_traced(y_vec) and not hasattr(y_vec, "_cr_value"):
        y_vec = np.asarray(y_vec, dtype)
    elif _aval(y_vec)[1] != dtype:
        y_vec = y_vec.astype(dtype)
    n = y_vec.shape[0]
    t_arr = t if is_traced(t) or hasattr(t, "_cr_value") else np.asarray(t, dtype=float)
    if len(_aval(t_arr)[0]) != 1:
        raise SolverArgumentError(f"odeint: t must be a 1-D sequence of times, got shape "
                                  f"{tuple(_aval(t_arr)[0])}")
    keep, where = None, None
    if is_traced(t_arr):
        # the direction is an integer argument: it carries no derivative (d/dsign of
        # func(y, sign * s) would otherwise be computed, and be infinite where func's
        # time derivative is)
        sign = _cnp.where(t_arr[-1] < t_arr[0], np.int64(-1), np.int64(1))
    else:
        values = np.asarray(plain(t_arr))
        sign = np.int64(-1 if values.size > 1 and values[-1] < values[0] else 1)
        steps = np.diff(values) * sign
        if np.any(steps < 0) or not np.all(np.isfinite(values)):
            raise SolverArgumentError(f"odeint: t must be monotonic, got {values!r:.80}")
        if np.any(steps == 0):  # repeated times: solve at the distinct ones, then repeat
            keep = np.concatenate([[0], np.flatnonzero(steps) + 1])
            where = np.cumsum(np.concatenate([[0], steps != 0]))
    s = sign * (t_arr if keep is None else t_arr[keep])

    def forward(y, s, sign, *args):
        tt = sign * s
        out = func(tt, y, *args) if tfirst else func(y, tt, *args)
        out = _cnp.reshape(out if is_traced(out) or hasattr(out, "_cr_value")
                           else np.asarray(out), (-1,))
        if out.shape != (n,):
            raise SolverArgumentError(f"odeint: func returned {out.shape[0]} values for a "
                                      f"state of {n}")
        return sign * out

    mx = 500 if mxstep == 0 else int(mxstep)
    ys = solve(forward, y_vec, s, sign, *args, rtol=float(rtol), atol=float(atol), mxstep=mx,
               hmax=float(hmax) if hmax else float("inf"), hmin=float(hmin),
               first_step=float(h0) if h0 else None)
    return ys if where is None else ys[where]


__all__ = ["odeint"]
