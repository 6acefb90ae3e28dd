"""Reverse mode: grad, value_and_grad, vjp.

Each transformed function traces the Python function once per input
signature (tree structure, shapes, dtypes), runs the AD pass and the
clean-up passes on the IR, and caches the compiled result. Called on
traced values (inside another ``trace``/``grad``), it emits its IR into the
enclosing trace instead, so transformations compose to any order.
"""

from __future__ import annotations

import functools

import numpy as np

from ..backend.interpret import Interpreter
from ..checks import check_argnums_form, check_callable, like
from ..emit.trace import Traced
from ..errors import (
    CompiledHigherOrderError,
    ConcretizationError,
    GradientError,
)
from ..frontend.polymorphic import specs_of as _polymorphic
from ..frontend.tracer import trace_function
from ..ir.collector import paused
from ..ir.nodes import Module
from ..ir.op import is_dispatched
from ..ir.types import TensorType, has_float
from ..transform.cleanup.optimize import optimize
from ..tree import flatten, unflatten
from .arguments import StaticArgs
from .grad_program import _argnums_tuple, _build_grad, _grads_tree, _leaf_ranges
from .polymorphic import run_cached, symbolic_types
from .results import own
from .specialization import _Compiled, _outer_trace
from .transformed import Transformed

# -- grad / value_and_grad -----------------------------------------------------------


def value_and_grad(f, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   static_argnums=None, static_argnames=None, polymorphic_shapes=None,
                   eager_compile: bool | None = None):
    """``f -> (lambda *args: (f(*args), gradient))`` with JAX's conventions:
    with ``has_aux`` the value is ``(value, aux)``; with a tuple ``argnums``
    the gradient is a tuple, one per argument. For a real-valued f of complex z
    the gradient is df/dx - i df/dy (JAX's convention); a complex-valued f needs
    ``holomorphic=True`` and then gives f'(z).

    Python ints, bools and strings in arguments that are not differentiated are
    static, as autograd runs the function on them (part of the cache key: a new value
    traces again, so they may pick branches, shapes and slices), as are the arguments
    ``static_argnums`` / ``static_argnames`` name (hashable, immutable values);
    keyword arguments are never differentiated.

    ``polymorphic_shapes`` (JAX's, one string per positional argument such as
    ``"(b, 3)"``) compiles one program for every size of the named dimensions
    (see ``docs/symbolic_shapes.md``); an ``@script`` function annotated
    ``"f64[n, 3]"`` gets it from its annotations.

    A new signature's first calls run the gradient program in the interpreter; it is
    optimized and compiled when called often enough to pay that back
    (``chainrule.backend.tiered``). ``eager_compile=True`` compiles before the first
    call (for benchmarks; ``CHAINRULE_EAGER_COMPILE=1`` sets the default).

    >>> import numpy as np, chainrule.numpy as cnp
    >>> loss = lambda w, i, scale=1.0: cnp.sum(w[i % 2:] ** 2) * scale
    >>> value, g = value_and_grad(loss)(np.array([1.0, 2.0]), 3, scale=2.0)
    >>> float(value), g
    (8.0, array([0., 8.]))
    """
    check_callable(f, "value_and_grad")
    check_argnums_form(argnums, "value_and_grad")
    statics = StaticArgs(f, static_argnums, static_argnames, "value_and_grad")

    def build(call, leaves):
        entry = _build_grad(f, argnums, has_aux, call, leaves, holomorphic,
                            transform.leaf_types(call), eager_compile)

        def finish(result, args):
            value, grads = own(result, args)
            gtrees = _grads_tree(entry, grads, args)
            g = gtrees[0] if isinstance(argnums, (int, np.integer)) else tuple(gtrees)
            if has_aux:
                vals = value if isinstance(value, tuple) else (value,)
                value = unflatten(entry.out_tree, list(vals))
                return value, g
            return value, g

        entry.finish = finish
        return entry

    def on_tape(call):
        from ..tape.functional import value_and_grad_on_tape

        args = call.args
        nums = _argnums_tuple(argnums, call.n_pos)
        ranges = _leaf_ranges(args)
        wanted = {i for a in nums for i in ranges[a]}
        value, aux, grads = value_and_grad_on_tape(call.fn, args, wanted, has_aux, holomorphic)
        gtrees, k = [], 0
        for a in nums:
            n = len(ranges[a])
            gtrees.append(unflatten(flatten(args[a])[1], list(grads[k:k + n])))
            k += n
        g = gtrees[0] if isinstance(argnums, (int, np.integer)) else tuple(gtrees)
        return ((value, aux) if has_aux else value), g

    transform = Transformed(f, build, "value_and_grad", on_tape, statics=statics, diff=argnums)
    transform.poly = _polymorphic(f, polymorphic_shapes, "value_and_grad")
    return transform


def grad(f, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         static_argnums=None, static_argnames=None, polymorphic_shapes=None,
         eager_compile: bool | None = None):
    """``f -> gradient of f`` w.r.t. argument ``argnums`` (JAX's conventions; with
    ``has_aux`` returns ``(gradient, aux)``; static arguments, ``polymorphic_shapes`` and
    ``eager_compile`` as ``value_and_grad``)."""
    check_callable(f, "grad")
    check_argnums_form(argnums, "grad")
    vg = value_and_grad(f, argnums, has_aux, holomorphic, static_argnums, static_argnames,
                        polymorphic_shapes, eager_compile)

    def g(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        if has_aux:
            return grads, value[1]
        return grads

    functools.update_wrapper(g, f, updated=())
    g.__name__ = f"grad({getattr(f, '__name__', 'f')})"
    return g


# -- vjp --------------------------------------------------------------------------------


def vjp(f, *primals, has_aux: bool = False, eager_compile: bool | None = None,
        polymorphic_shapes=None):
    """``(out, pullback)`` with ``pullback(cotangent)`` a tuple, one per primal.

    On arrays, the pullback is a compiled closure over the forward values (no
    recomputation). Inside a trace, the pullback re-emits the adjoint program
    and CSE merges its copy of the forward computation with the first one.
    Each call traces ``f`` again, so the program runs in the interpreter unless
    ``eager_compile=True`` (``chainrule.backend.tiered``), or ``polymorphic_shapes`` (as
    on ``jit``) keeps one program for every size of the named dimensions.
    """
    from ..transform.reverse.gradient import gradient

    check_callable(f, "vjp")
    leaves, _ = flatten(tuple(primals))
    if any(getattr(x, "requires_grad", False) for x in leaves):
        return _vjp_on_tape(f, primals, has_aux)
    types = symbolic_types(f, polymorphic_shapes, "vjp", primals)
    try:
        with paused():
            program, ran = run_cached(
                f, "vjp", primals, types, lambda: _vjp_program(f, primals, types, eager_compile),
                lambda p: (p, None if p.entry is None else p.entry.run(leaves)))
    except ConcretizationError:
        if any(isinstance(x, Traced) for x in leaves):
            raise
        return _vjp_on_tape(f, primals, has_aux)
    except CompiledHigherOrderError:
        return _vjp_on_tape(f, primals, has_aux)
    tf = program.tf
    main = tf.module["main"]
    out_tree = tf.out_tree
    if has_aux and (out_tree.kind is not tuple or len(out_tree.children) != 2):
        raise GradientError("vjp(has_aux=True) needs f to return (output, aux)")
    floats = [i for i, p in enumerate(main.params[:len(leaves)]) if has_float(p.type)]
    adjoint = []  # the adjoint program, made when a cotangent is itself traced or recorded
    hidden = tf.guards.inputs()  # the values the forward read, for the pullback too

    def pull_symbolic(ct):
        """The pullback on a traced cotangent (emitted into its trace) or a tape tensor
        (recorded on its tape): the adjoint program, run on the forward's inputs."""
        if not adjoint:
            adjoint.append(optimize(gradient(tf.module, "main", sens=True,
                                             require_grads=[main.params[i] for i in floats])))
        args = list(leaves) + list(tf.lifted_values) + hidden + [ct]
        entry = _Compiled(adjoint[0], "main_adjoint", tf, None, hidden=False)
        if _outer_trace(flatten(args)[0]) is not None:
            return entry.run_all(args)[1]
        interp = Interpreter(adjoint[0], dispatch=True)  # tape tensors record each op
        return interp.call_function(adjoint[0]["main_adjoint"], args, {})[1]

    if program.entry is not None:
        out, pull_compiled = ran

        def pull(ct):
            if any(is_dispatched(c) for c in flatten(ct)[0]):
                return pull_symbolic(ct)
            return own(pull_compiled(ct), primals)
    else:
        out = _Compiled(tf.module, "main", tf, None).run(leaves)
        pull = pull_symbolic

    out_values = list(out) if out_tree.kind is not None else [out]
    out_py = unflatten(out_tree, out_values)
    aux = None
    if has_aux:
        out_py, aux = out_py
    ranges = _leaf_ranges(primals)

    def pullback(cotangent):
        ct_full = (cotangent, _zeros_like_tree(aux)) if has_aux else cotangent
        ct_leaves, ct_tree = flatten(ct_full)
        if ct_tree != out_tree:
            raise GradientError(f"pullback: the cotangent has structure {ct_tree!r} but the "
                                f"output has structure {out_tree!r}")
        ct_leaves = [like(c, np.shape(o), t.dtype.numpy, "pullback", "the cotangent")
                     for c, o, t in zip(ct_leaves, out_values, _leaf_types(main.ret_type))]
        ct_arg = ct_leaves[0] if out_tree.kind is None else tuple(ct_leaves)
        grads = pull(ct_arg)
        flat = [None] * len(leaves)
        for i, g in zip(floats, grads):
            flat[i] = g
        return tuple(unflatten(flatten(p)[1], flat[r.start:r.stop])
                     for p, r in zip(primals, ranges))

    if has_aux:
        return out_py, pullback, aux
    return out_py, pullback


def _vjp_program(f, primals, types, eager):
    """``f`` traced for ``vjp`` and, on arrays, its program of the forward values and
    the compiled pullback (``entry``; None inside an enclosing trace)."""
    from types import SimpleNamespace

    from ..transform.reverse.gradient import vjp_module

    leaves = flatten(tuple(primals))[0]
    tf = trace_function(f, primals, capture=True, leaf_types=types)
    entry = None
    if (_outer_trace(leaves) or _outer_trace(tf.lifted_values)) is None:
        # the captured arrays (hidden parameters after the leaves) are constants
        module = vjp_module(tf.module, "main", wrt=range(len(leaves)))
        entry = _Compiled(module, "main_vjp", tf, None, prepare=optimize, eager=eager)
    return SimpleNamespace(tf=tf, entry=entry, lifted=bool(tf.lifted_values))


def _vjp_on_tape(f, primals, has_aux):
    from ..tape.functional import vjp_on_tape

    leaves, _ = flatten(tuple(primals))
    wanted = {i for i, x in enumerate(leaves)
              if np.issubdtype(np.dtype(x.dtype) if hasattr(x, "_cr_value")
                               else np.asarray(x).dtype, np.inexact)}
    g = (lambda *a: f(*a)[0]) if has_aux else f
    out, pull = vjp_on_tape(g, primals, wanted)
    ranges = _leaf_ranges(primals)

    def pullback(ct):
        grads = iter(pull(ct))
        flat = [next(grads) if i in wanted else None for i in range(len(leaves))]
        return tuple(unflatten(flatten(p)[1], flat[r.start:r.stop])
                     for p, r in zip(primals, ranges))

    if has_aux:
        return out, pullback, f(*primals)[1]
    return out, pullback


def _leaf_types(t):
    if isinstance(t, TensorType):
        return [t]
    out = []
    for f in t.fields:
        out.extend(_leaf_types(f))
    return out


def _zeros_like_tree(tree):
    leaves, td = flatten(tree)
    return unflatten(td, [np.zeros_like(np.asarray(x)) for x in leaves])


def trace_grad_module(f, *args, argnums=0) -> Module:
    """The optimized gradient module of ``f`` at these argument types (for printing)."""
    vg = value_and_grad(f, argnums)
    entry, _ = vg.specialize(args)
    return entry.module


__all__ = ["grad", "value_and_grad", "vjp", "trace_grad_module"]
