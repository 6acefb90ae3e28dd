"""``fixed_point`` and ``custom_root``: solutions differentiated by the implicit
function theorem, never through the iterations that found them.

``x* = fixed_point(f, x0, *params)`` iterates ``x <- f(x, *params)`` until a
step moves ``x`` by at most ``tol`` (relative to ``max(1, |x|)``, in the max
norm). At the fixed point ``x* = f(x*, p)``, so with ``A = df/dx`` and
``B = df/dp`` at ``(x*, p)``:

    dx* = (I - A)^-1 B dp            (forward mode)
    p_bar = B^T w,  w = x_bar + A^T w   (reverse mode)

Both linear systems are solved by the same iteration, as fixed points
themselves (``d <- A d + B dp`` and ``w <- x_bar + A^T w``, with products by
``A`` from ``jvp``/``vjp`` of ``f``): they converge whenever the forward
iteration does (the spectral radius of ``A`` is below 1 at an attracting fixed
point), at its rate, in memory proportional to ``x``, for any size of ``x``. A
dense solve would need ``len(x)`` products with ``A`` to form it; when that is
cheaper, ``custom_root`` takes any ``tangent_solve``. Being fixed points
again, the derivatives are differentiated the same way (any order, both modes).
``x0`` gets no derivative: at an attracting fixed point ``x*`` does not depend
on it. This is autograd's ``fixed_point`` rule, with a parameter list in place
of its ``f(a)(x)`` currying and with forward mode.

``x* = custom_root(f, x0, solve, tangent_solve)`` is JAX's ``lax.custom_root``:
``solve(f, x0)`` finds a root of ``f`` (any method: Newton, bisection, a
library), and derivatives with respect to the values ``f`` closes over follow
from ``f(x*, p) = 0``: ``dx* = -J^-1 (df/dp dp)`` with ``J = df/dx``, and
``p_bar = -(df/dp)^T w`` with ``J^T w = x_bar``; ``tangent_solve(g, y)`` solves
``g(x) = y`` for a linear ``g`` (``J``'s product, or in reverse mode ``J^T``'s).

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> x = fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), np.float64(1.0))
>>> float(x.round(8))            # the Dottie number
0.73908513
>>> g = cr.grad(lambda a: fixed_point(lambda x, a: cnp.cos(a * x), np.float64(0.5), a))
>>> float(g(np.float64(1.0)).round(6))   # -x sin(x) / (1 + sin(x))
-0.297474
"""

from __future__ import annotations

import numpy as np

from .. import numpy as cnp
from ..checks import aval
from ..frontend.control import while_loop
from ..tree import flatten, unflatten
from .runtime import (
    SolverArgumentError,
    SolverFunction,
    check,
    constant,
    convert_closure,
    differentiating,
    is_traced,
    plain,
    plain_tree,
    reads_recorded,
    untaped,
)


# -- fixed_point -----------------------------------------------------------------------
def fixed_point(f, x0, *params, tol: float | None = None, max_iter: int = 1000):
    """``x*`` with ``x* = f(x*, *params)``, found by iterating ``x <- f(x, *params)``
    from ``x0`` (a pytree of floating arrays; ``f`` returns the same structure).

    The iteration stops when a step changes ``x`` by at most
    ``tol * max(1, |x|)`` in the max norm over every leaf (``tol=None``:
    ``0.01 * sqrt(eps)`` of ``x``'s dtype, 1.5e-10 in float64); after
    ``max_iter`` evaluations of ``f`` without that, ``SolverError`` says how far
    the last step went. Derivatives with respect to ``params`` (and values ``f``
    closes over) by the implicit function theorem, solved by the same iteration
    (module docstring); ``x0`` has none.

    >>> import numpy as np
    >>> float(fixed_point(lambda x, a: 0.5 * (x + a / x), np.float64(1.0), 2.0).round(12))
    1.414213562373
    """
    if not callable(f):
        raise SolverArgumentError(f"fixed_point: f must be callable, got {type(f).__name__}")
    avals = _state_avals(x0, "fixed_point", "x0")
    dtype = np.result_type(*[d for _, d in avals])
    tol = _tolerance(tol, dtype)
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or (
            max_iter < 1):
        raise SolverArgumentError(f"fixed_point: max_iter must be a positive integer, got "
                                  f"{max_iter!r}")
    for x in flatten(params)[0]:
        _param_aval(x, "fixed_point")
    checked = _Checked(f, x0, "fixed_point", "f(x, *params)")
    if not differentiating(x0, params) and not reads_recorded(checked, (x0, *params)):
        return _fixed_point_solve(checked, tol, int(max_iter), "fixed_point", x0, *params)
    g, closed = convert_closure(checked, (x0, *params), "fixed_point")
    return _fixed_point(g, tol, int(max_iter), "fixed_point", x0, *params, *closed)


def _tolerance(tol, dtype) -> float:
    if tol is None:
        return float(0.01 * np.sqrt(np.finfo(dtype).eps))
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) or (
            not tol > 0):
        raise SolverArgumentError(f"fixed_point: tol must be a positive number, got {tol!r}")
    return float(tol)


def _state_avals(x0, who: str, name: str):
    leaves = flatten(x0)[0]
    if not leaves:
        raise SolverArgumentError(f"{who}: {name} has no arrays")
    avals = []
    for i, x in enumerate(leaves):
        try:
            shape, dtype = aval(x)
        except Exception:  # noqa: BLE001 - any conversion failure is a user error
            raise SolverArgumentError(f"{who}: {name} leaf {i} is a {type(x).__name__}, not "
                                      f"an array") from None
        if dtype.kind != "f":
            raise SolverArgumentError(f"{who}: {name} leaf {i} has dtype {dtype}; the "
                                      f"unknown must be real floating point")
        avals.append((tuple(shape), dtype))
    return avals


def _param_aval(x, who: str):
    if callable(x) and not hasattr(x, "shape"):
        raise SolverArgumentError(f"{who}: params must be arrays or numbers, got "
                                  f"{type(x).__name__}; pass functions through a closure")
    try:
        return aval(x)
    except Exception:  # noqa: BLE001 - any conversion failure is a user error
        raise SolverArgumentError(f"{who}: params must be arrays or numbers, got "
                                  f"{type(x).__name__}") from None


class _Checked:
    """The user's function, its result checked against the unknown's structure."""

    def __init__(self, f, x0, who: str, call: str):
        self.f, self.who, self.call = f, who, call
        self.leaves_tree = flatten(x0)[1]
        self.avals = [(tuple(aval(x)[0]), aval(x)[1]) for x in flatten(x0)[0]]
        self.__name__ = getattr(f, "__name__", "f")

    def _identity(self):
        return (self.f, self.who, self.leaves_tree, tuple((s, d.str) for s, d in self.avals))

    def __eq__(self, other) -> bool:  # one compiled structure for repeated calls
        return type(other) is _Checked and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __call__(self, x, *args):
        out = self.f(x, *args)
        leaves, tree = flatten(out)
        if tree != self.leaves_tree:
            raise SolverArgumentError(f"{self.who}: {self.call} returned a value of structure "
                                      f"{tree!r} for an unknown of structure "
                                      f"{self.leaves_tree!r}")
        fixed = []
        for i, (v, (shape, dtype)) in enumerate(zip(leaves, self.avals)):
            got_shape, got_dtype = aval(v)
            if tuple(got_shape) != shape:
                raise SolverArgumentError(f"{self.who}: {self.call} returned shape "
                                          f"{tuple(got_shape)} for the unknown's leaf {i} of "
                                          f"shape {shape}")
            fixed.append(v if got_dtype == dtype else cnp.asarray(v).astype(dtype)
                         if is_traced(v) else np.asarray(plain(v), dtype))
        return unflatten(tree, fixed)


def _distance(xp, new, old):
    """(max |new - old|, max(1, max |new|)) over every leaf."""
    steps, sizes = [], []
    for a, b in zip(flatten(new)[0], flatten(old)[0]):
        if aval(a)[0] and 0 in tuple(aval(a)[0]):
            continue
        steps.append(xp.max(xp.abs(a - b)))
        sizes.append(xp.max(xp.abs(a)))
    if not steps:
        return 0.0, 1.0
    step = steps[0] if len(steps) == 1 else xp.max(xp.stack(steps))
    size = sizes[0] if len(sizes) == 1 else xp.max(xp.stack(sizes))
    return step, xp.maximum(size, 1.0)


def _iterate(f, x0, params, tol: float, max_iter: int, what: str, xp):
    """Iterate ``x <- f(x, *params)`` until converged (the check raises otherwise)."""
    x1 = f(x0, *params)
    step, size = _distance(xp, x1, x0)

    def going(state):
        i, _, step, size = state
        return xp.logical_and(step > tol * size, i < max_iter)

    def body(state):
        i, x, _, _ = state
        new = f(x, *params)
        step, size = _distance(xp, new, x)
        return i + 1, new, step, size

    count, x, step, size = while_loop(going, body, (np.int64(1), x1, step, size))
    check(step <= tol * size, count, step, size,
          message=f"{what}: no convergence in {{0}} iterations: the last step changed x by "
                  f"{{1:.3g}}, more than tol * max(1, |x|) = {tol:.3g} * {{2:.3g}}; raise "
                  f"max_iter, or f is not a contraction near the fixed point")
    return x


def _fixed_point_solve(f, tol, max_iter, what, x0, *params):
    if is_traced(x0, params):
        x0, params = constant((x0, params))
        return _iterate(f, x0, params, tol, max_iter, what, cnp)
    with untaped():
        values = plain_tree(params)
        return _iterate(lambda x, *p: plain_tree(f(x, *p)), plain_tree(x0), values, tol,
                        max_iter, what, np)


def _fixed_point_vjp(nondiff, args, x_star, x_bar):
    """x* = f(x*, p);  p_bar = B^T w with w = x_bar + A^T w (a fixed point itself)"""
    from ..api.reverse import vjp

    f, tol, max_iter, what = nondiff
    _, *params = args

    def adjoint_step(w, x_star, x_bar, *params):
        _, pull = vjp(lambda x: f(x, *params), x_star)
        return _tree_add(x_bar, pull(w)[0])

    w = _fixed_point(adjoint_step, tol, max_iter, f"{what} (reverse mode: the adjoint "
                     f"fixed point)", _zeros_tree(x_bar), x_star, x_bar, *params)
    return (None, *_param_cotangents(f, x_star, params, w))


def _fixed_point_jvp(nondiff, args, x_star):
    """x* = f(x*, p);  dx* = A dx* + B dp (a fixed point itself)"""
    from ..api.forward import jvp

    f, tol, max_iter, what = nondiff
    x0, *params = args
    p_leaves, p_tree = flatten(tuple(params))

    def for_leaf(k):
        def tangent_step(d, x_star, dp, *params):
            leaves = flatten(tuple(params))[0]
            tangents = [cnp.zeros_like(v) for v in leaves]
            tangents[k] = dp
            return jvp(f, (x_star, *params), (d, *unflatten(p_tree, tangents)))[1]

        def apply(dp):
            return _fixed_point(tangent_step, tol, max_iter, f"{what} (forward mode: the "
                                f"tangent fixed point)", _zeros_tree(x_star), x_star, dp,
                                *params)
        return apply

    maps = [None] * len(flatten(x0)[0])
    maps += [for_leaf(k) if aval(v)[1].kind == "f" else None for k, v in enumerate(p_leaves)]
    return maps


_fixed_point = SolverFunction(_fixed_point_solve, (0, 1, 2, 3), _fixed_point_vjp,
                              _fixed_point_jvp)


# -- custom_root -----------------------------------------------------------------------
def custom_root(f, initial_guess, solve, tangent_solve, has_aux: bool = False):
    """``solve(f, initial_guess)``, a root of ``f``, differentiated by the implicit
    function theorem (JAX's ``lax.custom_root``).

    ``f(x)`` returns a pytree of ``x``'s structure; the values it closes over are
    the parameters the root is differentiated with respect to. ``solve(f, x0)``
    returns ``x*`` with ``f(x*) = 0`` (with ``has_aux``, ``(x*, aux)``; ``aux``
    gets no derivative). ``tangent_solve(g, y)`` returns ``x`` with ``g(x) = y``
    for a linear function ``g`` of ``x``'s structure: ``lambda g, y: y / g(1.0)``
    for a scalar, ``lambda g, y: cnp.linalg.solve(cr.jacfwd(g)(y), y)`` for a
    small vector. Under ``jit``/``grad`` both ``solve`` and ``tangent_solve`` are
    traced (use ``cr.while_loop`` for iterations, as in JAX).

    >>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
    >>> def newton(f, x):
    ...     step = lambda x: x - f(x) / cr.jvp(f, (x,), (cnp.ones_like(x),))[1]
    ...     return cr.fori_loop(0, 30, lambda i, x: step(x), x)
    >>> sqrt = lambda a: custom_root(lambda x: x * x - a, np.float64(1.0), newton,
    ...                              lambda g, y: y / g(1.0))
    >>> float(sqrt(np.float64(2.0)).round(12)), float(cr.grad(sqrt)(np.float64(4.0)))
    (1.414213562373, 0.25)
    """
    for name, fn in (("f", f), ("solve", solve), ("tangent_solve", tangent_solve)):
        if not callable(fn):
            raise SolverArgumentError(f"custom_root: {name} must be callable, got "
                                      f"{type(fn).__name__}")
    _state_avals(initial_guess, "custom_root", "initial_guess")
    checked = _Checked(f, initial_guess, "custom_root", "f(x)")
    has_aux = bool(has_aux)
    if not differentiating(initial_guess) and not reads_recorded(checked, (initial_guess,)):
        return _root_solve(checked, solve, tangent_solve, has_aux, initial_guess)
    g, closed = convert_closure(checked, (initial_guess,), "custom_root")
    return _root(g, solve, tangent_solve, has_aux, initial_guess, *closed)


def _root_solve(f, solve, tangent_solve, has_aux, x0, *closed):
    if is_traced(x0, closed):
        x0, closed = constant((x0, closed))
        out = solve(lambda x: f(x, *closed), x0)
    else:
        with untaped():
            values = plain_tree(closed)
            out = plain_tree(solve(lambda x: plain_tree(f(x, *values)), plain_tree(x0)))
    if has_aux and not (isinstance(out, tuple) and len(out) == 2):
        raise SolverArgumentError("custom_root(has_aux=True): solve must return (x, aux)")
    x = out[0] if has_aux else out
    _Checked(lambda v: v, x0, "custom_root", "solve(f, initial_guess)")(x)
    return out


def _root_vjp(nondiff, args, out, g):
    """f(x*, p) = 0;  p_bar = -(df/dp)^T w with J^T w = x_bar (tangent_solve)"""
    from ..api.reverse import vjp

    f, _, tangent_solve, has_aux = nondiff
    _, *closed = args
    x_star, x_bar = (out[0], g[0]) if has_aux else (out, g)
    _, pull_x = vjp(lambda x: f(x, *closed), x_star)
    w = tangent_solve(lambda v: pull_x(v)[0], x_bar)
    return (None, *_param_cotangents(f, x_star, closed, _tree_neg(w)))


def _root_jvp(nondiff, args, out):
    """f(x*, p) = 0;  dx* = -J^-1 (df/dp dp) (tangent_solve)"""
    from ..api.forward import jvp

    f, _, tangent_solve, has_aux = nondiff
    x0, *closed = args
    x_star = out[0] if has_aux else out

    def linear(v):
        return jvp(lambda x: f(x, *closed), (x_star,), (v,))[1]

    def for_leaf(k):
        def apply(dp):
            tangents = [cnp.zeros_like(v) for v in closed]
            tangents[k] = dp
            rhs = jvp(lambda *p: f(x_star, *p), tuple(closed), tuple(tangents))[1]
            dx = _tree_neg(tangent_solve(linear, rhs))
            return (dx, _zeros_tree(out[1])) if has_aux else dx
        return apply

    maps = [None] * len(flatten(x0)[0])
    return maps + [for_leaf(k) if aval(v)[1].kind == "f" else None
                   for k, v in enumerate(closed)]


_root = SolverFunction(_root_solve, (0, 1, 2, 3), _root_vjp, _root_jvp)


# -- pytree arithmetic -------------------------------------------------------------------
def _tree_add(a, b):
    la, ta = flatten(a)
    return unflatten(ta, [x if y is None else x + y for x, y in zip(la, flatten(b)[0])])


def _tree_neg(a):
    la, ta = flatten(a)
    return unflatten(ta, [-x for x in la])


def _zeros_tree(a):
    la, ta = flatten(a)
    return unflatten(ta, [cnp.zeros_like(x) for x in la])


def _param_cotangents(f, x_star, params, w):
    """(df/dp at (x*, p))^T w, one pytree per parameter (None for a parameter without a
    floating leaf; zeros at its integer leaves)."""
    from ..api.reverse import vjp

    leaves, tree = flatten(tuple(params))
    _, pull = vjp(lambda *p: f(x_star, *unflatten(tree, list(p))), *leaves)
    cts = pull(w)  # one per leaf, None for the integer ones
    full = [c if c is not None else np.zeros(*aval(x)) for c, x in zip(cts, leaves)]
    out = []
    for p, ct in zip(params, unflatten(tree, full)):
        has_float = any(aval(x)[1].kind == "f" for x in flatten(p)[0])
        out.append(ct if has_float else None)
    return out
