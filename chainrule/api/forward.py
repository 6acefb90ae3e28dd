"""Forward mode and its compositions: jvp, linearize, linear_transpose, hvp (JAX's
calling conventions); jacfwd, jacrev and hessian live in ``api.jacobian``."""

from __future__ import annotations

import weakref

import numpy as np

from .. import numpy as cnp
from ..checks import check_callable, check_tuple, like
from ..emit.trace import Traced
from ..errors import CompiledHigherOrderError, ConcretizationError, GradientError
from ..frontend.capture import Stale
from ..frontend.tracer import trace_function
from ..ir.collector import collector_paused
from ..ir.nodes import Binding, Block, Function, Module, Tuple, TupleGetItem, Var
from ..ir.types import TensorType, has_float
from ..transform.cleanup.optimize import optimize
from ..tree import flatten, unflatten
from .arguments import fast_key, leaf_signature
from .grad_program import _leaf_ranges, _rebuild_of
from .polymorphic import run_cached, symbolic_types
from .reverse import grad, vjp
from .specialization import _Compiled, _outer_trace


def _float_positions(fn, n):
    return [i for i, p in enumerate(fn.params[:n]) if has_float(p.type)]


def jvp(f, primals, tangents, polymorphic_shapes=None):
    """``(f(*primals), J @ tangents)``: forward mode, one pass. ``polymorphic_shapes``
    (as on ``jit``, of the primals) traces and compiles once for every size of the
    named dimensions (``api.polymorphic``).

    >>> import numpy as np, chainrule.numpy as cnp
    >>> y, t = jvp(cnp.sin, (np.float64(0.0),), (np.float64(2.0),))
    >>> float(y), float(t)
    (0.0, 2.0)
    """
    check_callable(f, "jvp")
    primals = check_tuple(primals, "jvp", "primals")
    tangents = check_tuple(tangents, "jvp", "tangents")
    leaves, t_leaves = _matching_leaves(primals, tangents, "jvp")
    if any(getattr(x, "requires_grad", False) for x in leaves + t_leaves):
        return _jvp_on_tape(f, primals, tangents)
    types = symbolic_types(f, polymorphic_shapes, "jvp", primals)
    try:
        return run_cached(f, "jvp", primals, types,
                          lambda: _JvpPlan(f, primals, leaf_types=types),
                          lambda plan: plan.run(leaves, t_leaves))
    except (ConcretizationError, CompiledHigherOrderError):
        if any(isinstance(x, Traced) for x in leaves + t_leaves):
            raise
        return _jvp_on_tape(f, primals, tangents)


def jvp_via_vjp(f, primals, tangents):
    """``(f(*primals), J @ tangents)`` by two VJPs (MindSpore's ``Jvp``): the pullback
    ``ct -> J^T ct`` is linear in ``ct``, so its own VJP, at any ``ct``, maps ``t``
    to ``J t``. It needs reverse-mode rules only, and runs compiled.

    >>> import numpy as np, chainrule.numpy as cnp
    >>> y, t = jvp_via_vjp(cnp.sin, (np.float64(0.0),), (np.float64(2.0),))
    >>> float(y), float(t)
    (0.0, 2.0)
    """
    check_callable(f, "jvp_via_vjp")
    primals = check_tuple(primals, "jvp_via_vjp", "primals")
    tangents = check_tuple(tangents, "jvp_via_vjp", "tangents")
    _matching_leaves(primals, tangents, "jvp_via_vjp")
    out, pullback = vjp(f, *primals)
    start = _zeros_tree(out)
    _, pullback2 = vjp(pullback, start)
    (tangent_out,) = pullback2(tangents)
    return out, tangent_out


def _matching_leaves(primals, tangents, what: str):
    """The leaves of primals and tangents, which must have the same tree structure."""
    leaves, in_tree = flatten(primals)
    t_leaves, t_tree = flatten(tangents)
    if t_tree != in_tree:
        raise GradientError(f"{what}: tangents have structure {t_tree!r} but primals have "
                            f"{in_tree!r}")
    return leaves, t_leaves


def _jvp_on_tape(f, primals, tangents):
    """Forward mode on the tape (``tape.functional.jvp_on_tape``)."""
    from ..tape.functional import jvp_on_tape
    from ..tape.tensor import Tensor

    leaves = flatten(tuple(primals))[0]
    wanted = {i for i, x in enumerate(leaves)
              if np.issubdtype(np.dtype(x.dtype) if isinstance(x, Tensor)
                               else np.asarray(x).dtype, np.inexact)}
    return jvp_on_tape(f, primals, tangents, wanted)


class _JvpPlan:
    """``f`` traced at the primals' types, its jvp program optimized and ready to run."""

    @collector_paused
    def __init__(self, f, primals, tangent_only: bool = False, eager: bool | None = None,
                 leaf_types=None):
        from ..transform.forward.jvp import jvp as jvp_pass

        self.tf = tf = trace_function(f, primals, capture=True, leaf_types=leaf_types)
        self.lifted = bool(tf.lifted_values)
        self.main = main = tf.module["main"]
        n = len(flatten(tuple(primals))[0])
        # tangents for the arguments; lifted and hidden inputs are constants here
        module = jvp_pass(tf.module, "main", wrt=range(n))
        self.tangent_only = tangent_only
        if tangent_only:  # drop the primal output, and with it the work only it needs
            module = _tangent_output_only(module, "main_jvp")
        self.floats = _float_positions(main, n)
        # interpreted first, optimized and compiled when called again (backend.tiered)
        self.entry = _Compiled(module, "main_jvp", tf, None, prepare=optimize, eager=eager)
        out_tree = tf.out_tree
        self.rebuild = None if out_tree.kind is None else _rebuild_of(out_tree)

    def exact_for(self, leaves) -> bool:
        """Whether NumPy arrays ``leaves`` (and tangents of their shapes and dtypes) are
        exactly the compiled program's parameter types, so ``run_exact`` may run them
        without coercion or checks (as ``_Compiled.exact_for`` does for ``jit``)."""
        compiled = self.entry.tiers.compiled
        if compiled is None or self.lifted or not self.tangent_only:
            return False
        params = self.main.params  # the leaves', then the hidden inputs'
        return len(params) == len(leaves) + len(self.entry.guards.captures) and all(
            type(x) is np.ndarray and isinstance(p.type, TensorType)
            and x.dtype == p.type.dtype.numpy and x.shape == p.type.shape
            for x, p in zip(leaves, params))

    def run_exact(self, leaves, t_leaves):
        """The tangent output of ``run`` for arguments ``exact_for`` accepted (tangents of
        the primals' shapes and dtypes): the compiled program called directly. Raises
        ``Stale`` when what ``f`` reads from outside its arguments changed."""
        guards = self.entry.guards
        hidden = guards.inputs() if guards else ()
        floats = self.floats
        tout = self.entry.tiers.compiled.call_unchecked(*leaves, *hidden,
                                                        *[t_leaves[i] for i in floats])
        return tout if self.rebuild is None else self.rebuild(list(tout))

    def run(self, leaves, t_leaves):
        tf, main = self.tf, self.main
        hidden = self.entry.guards.inputs()  # raises Stale: the caller traces again
        all_args = list(leaves) + list(tf.lifted_values) + hidden
        tail = []
        for i in self.floats:
            t = main.params[i].type
            tail.append(like(t_leaves[i], np.shape(leaves[i]), t.dtype.numpy, "jvp",
                             f"tangent {i}"))
        args = all_args + tail
        if self.tangent_only:
            out, tout = None, self.entry.run_all(args)
        else:
            out, tout = self.entry.run_all(args)
        if tf.out_tree.kind is None:
            return out, tout
        return (None if out is None else unflatten(tf.out_tree, list(out)),
                unflatten(tf.out_tree, list(tout)))


def _tangent_output_only(module: Module, name: str) -> Module:
    """``module`` with function ``name`` returning only the second field of its result
    (the tangent of a jvp function); the primal ``main`` is left out."""
    fn = module[name]
    body = fn.body
    res = body.result
    bindings = list(body.bindings)
    if isinstance(res, Tuple) and len(res.fields) == 2:
        tangent = res.fields[1]
    else:
        tangent = Var("tangent", fn.ret_type.fields[1])
        bindings.append(Binding(tangent, TupleGetItem(res, 1)))
    new = Function(fn.params, Block(bindings, tangent), fn.ret_type.fields[1])
    others = {k: v for k, v in module.functions.items() if k not in ("main", name)}
    return Module({name: new, **others}, module.meta)


class _LinearPlan:
    """``f`` traced at the primals' (symbolic) types, unzipped into its primal program
    (which also returns the residuals) and its tangent program, both ready to run."""

    def __init__(self, f, primals, leaf_types=None):
        from ..transform.forward.linearize import linearize as linearize_pass

        leaves = flatten(tuple(primals))[0]
        self.tf = tf = trace_function(f, primals, capture=True, leaf_types=leaf_types)
        self.lifted = bool(tf.lifted_values)
        self.outer = self.lifted or _outer_trace(leaves) is not None
        if self.outer:
            return
        self.main = main = tf.module["main"]
        self.module = optimize(linearize_pass(tf.module, "main", wrt=range(len(leaves))))
        self.primal = _Compiled(self.module, "main_primal", tf, None)
        self.tangent = _Compiled(self.module, "main_tangent", tf, None, hidden=False)
        self.floats = _float_positions(main, len(leaves))


def linearize(f, *primals, polymorphic_shapes=None):
    """``(f(*primals), f_lin)`` where ``f_lin(*tangents)`` is the linear map J,
    compiled once: the primal work runs now, f_lin runs only the tangent program.
    ``polymorphic_shapes`` (as on ``jit``) makes both programs serve every size of the
    named dimensions (``api.polymorphic``)."""
    leaves, in_tree = flatten(tuple(primals))

    def by_jvp():
        out = jvp(f, primals, tuple(_zeros_tree(p) for p in primals))[0]
        return out, lambda *tangents: jvp(f, primals, tangents)[1]

    if any(getattr(x, "requires_grad", False) for x in leaves):
        return by_jvp()
    types = symbolic_types(f, polymorphic_shapes, "linearize", primals)
    try:
        plan, ran = run_cached(f, "linearize", primals, types,
                               lambda: _LinearPlan(f, primals, types),
                               lambda p: (p, None if p.outer else p.primal.run(leaves)))
    except ConcretizationError:
        return by_jvp()  # value-dependent control flow: jvp runs it on the tape
    except CompiledHigherOrderError:
        return by_jvp()
    if plan.outer:
        return by_jvp()
    tf, main, floats = plan.tf, plan.main, plan.floats
    out, residuals = ran

    def f_lin(*tangents):
        t_leaves, t_tree = flatten(tuple(tangents))
        if t_tree != in_tree:
            raise GradientError(f"f_lin: tangents have structure {t_tree!r}, expected "
                                f"{in_tree!r}")
        ts = [like(t_leaves[i], np.shape(leaves[i]), main.params[i].type.dtype.numpy,
                   "f_lin", f"tangent {i}") for i in floats]
        tout = plan.tangent.run(list(residuals), tail=ts)
        return tout if tf.out_tree.kind is None else unflatten(tf.out_tree, list(tout))

    if tf.out_tree.kind is not None:
        out = unflatten(tf.out_tree, list(out))
    # what linear_transpose needs to transpose the tangent program itself (its
    # residuals may hold stacks of loop values, which cannot become IR constants)
    f_lin.linearized = (plan.module, tf, list(residuals), floats, primals)
    return out, f_lin


def _cotangents(entry, tf, primals, floats, fixed):
    """``f_t(ct)``: run a transposed program (``fixed`` arguments, then the
    cotangent) and put its cotangents back in the shape of ``primals``."""
    leaves, _ = flatten(tuple(primals))
    ranges = _leaf_ranges(primals)

    def f_t(ct):
        ct_leaves, _ = flatten(ct)
        ct_arg = ct_leaves[0] if tf.out_tree.kind is None else tuple(ct_leaves)
        cts = entry.run(fixed, tail=[ct_arg])
        flat = [None] * len(leaves)
        for i, c in zip(floats, cts):
            flat[i] = c
        return tuple(unflatten(flatten(p)[1], flat[r.start:r.stop])
                     for p, r in zip(primals, ranges))

    return f_t


def _transpose_linearized(f_lin):
    from ..transform.transpose.transpose import transpose

    module, tf, residuals, floats, primals = f_lin.linearized
    tangent = module["main_tangent"]
    n_res = len(residuals)
    names = [p.name for p in tangent.params[n_res:]]
    tmod = optimize(transpose(module, "main_tangent", linear=names))
    entry = _Compiled(tmod, "main_tangent_transpose", tf, None, hidden=False)
    return _cotangents(entry, tf, primals, floats, residuals)


def linear_transpose(f_lin, *primals):
    """The transpose of a linear function: ``f_T(ct)`` returns one cotangent per
    primal (primals give the input shapes and dtypes)."""
    from ..transform.transpose.transpose import transpose

    if getattr(f_lin, "linearized", None) is not None:
        return _transpose_linearized(f_lin)
    tf = trace_function(f_lin, primals, capture=True)
    leaves, _ = flatten(tuple(primals))
    main = tf.module["main"]
    floats = _float_positions(main, len(leaves))
    module = optimize(transpose(tf.module, "main",
                                linear=[main.params[i].name for i in floats]))
    others = [x for i, x in enumerate(leaves) if i not in floats]
    entry = _Compiled(module, "main_transpose", tf, None)
    return _cotangents(entry, tf, primals, floats, others)


def _zeros_tree(tree):
    leaves, td = flatten(tree)
    return unflatten(td, [cnp.zeros_like(x) if isinstance(x, Traced) else
                          np.zeros_like(np.asarray(x)) for x in leaves])


# f -> {primal signature: _JvpPlan of grad(f)}; entries go with f
_HVP_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def hvp(f, primals, tangents, eager_compile: bool | None = None):
    """Hessian-vector product by forward over reverse: ``jvp(grad(f), primals, tangents)[1]``.

    On arrays, the program is traced once per function and primal signature (like
    ``grad``), later calls only run it: interpreted at first, compiled when called
    often enough (``eager_compile=True``: at once; ``chainrule.backend.tiered``)."""
    check_callable(f, "hvp")
    primals = check_tuple(primals, "hvp", "primals")
    tangents = check_tuple(tangents, "hvp", "tangents")
    done = _hvp_exact(f, primals, tangents)
    if done is not None:
        return done
    leaves, t_leaves = _matching_leaves(primals, tangents, "hvp")
    if any(isinstance(x, Traced) for x in leaves) or any(
            isinstance(t, Traced) for t in t_leaves):
        return _JvpPlan(grad(f), primals, tangent_only=True).run(leaves, t_leaves)[1]
    if any(getattr(x, "requires_grad", False) for x in leaves + t_leaves):
        return jvp(grad(f), primals, tangents)[1]
    try:
        per_f = _HVP_CACHE.setdefault(f, {})
    except TypeError:  # not weakly referenceable: no cache
        per_f = {}
    key = (flatten(primals)[1], tuple(leaf_signature(x) for x in leaves))
    plan = per_f.get(key)
    result = None
    if plan is not None:
        try:
            result = plan.run(leaves, t_leaves)[1]
        except Stale:  # what f reads from outside its arguments changed: trace again
            del per_f[key]
            plan = None
    if plan is None:
        try:
            plan = _JvpPlan(grad(f), primals, tangent_only=True, eager=eager_compile)
        except (ConcretizationError, CompiledHigherOrderError):
            return jvp(grad(f), primals, tangents)[1]
        if not plan.tf.lifted_values:
            per_f[key] = plan
        result = plan.run(leaves, t_leaves)[1]
    exact, t_exact = fast_key(primals), fast_key(tangents)
    if (exact is not None and t_exact is not None and t_exact[0] == exact[0]
            and plan.exact_for(exact[1])):
        try:
            _HVP_EXACT.setdefault(f, {})[exact[0]] = plan  # later calls of these types
        except TypeError:  # not weakly referenceable: no cache
            pass
    return result


# f -> {fast_key of primals: plan}: the compiled plans whose arguments of exactly their
# types may skip the general path (``_hvp_exact``); entries go with f
_HVP_EXACT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hvp_exact(f, primals: tuple, tangents: tuple):
    """``hvp`` without its general checks, flattening and coercions, when the plan for
    these primals was compiled and they are NumPy arrays (in plain tuples or lists) of
    exactly its parameters' types, with tangents of the same shapes and dtypes (what
    the general path checks, keyed by ``fast_key``). None otherwise: the general path."""
    try:
        per_f = _HVP_EXACT.get(f)
    except TypeError:  # not weakly referenceable: no cache
        return None
    if not per_f:
        return None
    key = fast_key(primals)
    if key is None:
        return None
    plan = per_f.get(key[0])
    if plan is None:
        return None
    t_key = fast_key(tangents)
    if t_key is None or t_key[0] != key[0]:
        return None
    try:
        return plan.run_exact(key[1], t_key[1])
    except Stale:  # traced again by the general path
        del per_f[key[0]]
        return None



__all__ = ["jvp", "jvp_via_vjp", "linearize", "linear_transpose", "hvp"]
