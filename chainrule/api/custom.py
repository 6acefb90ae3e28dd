"""``custom_vjp`` and ``custom_jvp``: user-defined derivatives, JAX's conventions.

A decorated function is called as JAX calls it: on plain arrays, the function
itself runs; on traced values or tape tensors, ``fwd`` (for ``custom_vjp``) or
the function (for ``custom_jvp``) is traced like any code, so its residuals
are ordinary values that carry derivatives, and its outputs then pass through
an op of their own whose rules are the user's: the VJP of a ``custom_vjp``
function is ``bwd`` (traced like any code, so it is differentiated again for
higher orders), the JVP of a ``custom_jvp`` function is the user's rule.
Given only one direction, the other is derived by transposition: the JVP of
a ``custom_vjp`` function transposes its (linear) ``bwd``, the VJP of a
``custom_jvp`` function transposes its (linear) tangent map. So forward mode
works through a ``custom_vjp`` function, which JAX does not allow.

Arguments may be pytrees; ``nondiff_argnums`` names arguments that are not
differentiated (Python values, or arrays treated as constants), passed to
``bwd`` first, as in JAX.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> @custom_vjp
... def clip_gradient(x):
...     return x
>>> clip_gradient.defvjp(lambda x: (x, ()), lambda res, g: (cnp.clip(g, -1.0, 1.0),))
>>> float(cr.grad(lambda x: cnp.sum(clip_gradient(x) * 10.0))(np.array([2.0]))[0])
1.0
"""

from __future__ import annotations

import functools
import inspect
import itertools

import numpy as np

from ..checks import check_callable
from ..emit.trace import TRACE_STACK
from ..errors import ChainruleError, GradientError, TransposeError, TypeInferenceError
from ..frontend.capture import sources
from ..ir.op import REQUIRED, is_dispatched
from ..ir.types import TupleType
from ..ops.common import define
from ..rules.registry import JVP, VJP, NoDerivative
from ..tree import flatten, unflatten
from . import custom_closure

_ids = itertools.count()


def _guard_rule_reads(rule) -> None:
    """Guard what a user's rule (``bwd``, a ``defjvp`` rule) reads from outside its
    arguments. The rule is traced when the program is differentiated, after the
    function's own trace, so the arrays and numbers it reads are baked into the
    derivative program: every trace that follows what it reads pins them (their values
    checked at every call; a change, in place or by rebinding, traces again)."""
    traces = [t for t in TRACE_STACK if t.sources is not None
              and id(rule) not in t.sources.guarded_rules]  # once per trace, not per call
    if not traces:
        return
    for t in traces:
        t.sources.guarded_rules.add(id(rule))
    originals = {k: x for t in traces for k, x in t.sources.stand_ins.items()}
    found = sources(rule, originals)
    for key, path in found.arrays.items():
        for t in traces:
            # reached through a stand-in: pinned where the trace found it (where it is put
            # back); the place the rule reached it through may keep the stand-in
            where = t.sources.arrays.get(key) if key in found.via_stand_in else path
            if where is not None:
                t.pinned.setdefault(key, (where, found.values[key].copy()))
    for t in traces:
        t.sources.numbers.extend(found.numbers)
        t.sources.layouts.extend(found.layouts)


def _shape_dtype(x):
    """(shape, dtype) of an array, traced value or tape tensor; None for others."""
    if is_dispatched(x) or isinstance(x, (np.ndarray, np.generic)):
        return tuple(x.shape), np.dtype(x.dtype)
    return None


def _key(value):
    """A hashable stand-in for a static value (so calls of one structure share it)."""
    try:
        hash(value)
        return ("value", type(value).__name__, value)
    except TypeError:
        if isinstance(value, np.ndarray) and value.size <= 64:
            return ("array", value.shape, value.dtype.str, value.tobytes())
        return ("id", id(value))


class _Structure:
    """One call structure of a custom function: the trees of its differentiable
    arguments, outputs and residuals, its non-differentiated arguments, and the
    residual leaves that are static (not arrays)."""

    def __init__(self, nondiff, in_tree, out_tree, res_tree, res_static, dyn, n_args, arg_avals,
                 closed=()):
        self.nondiff = nondiff
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.res_tree = res_tree
        self.res_static = res_static  # residual leaves, None where an operand goes
        self.dyn = dyn  # positions of the residual leaves passed as operands
        self.n_args = n_args
        self.arg_avals = arg_avals  # (shape, dtype) of each differentiable leaf
        self.n_out = out_tree.num_leaves
        # values the outputs read from outside the arguments: their names, and the IR
        # variables the rules' trace rebinds to the operands carrying them
        self.closed_names = tuple(custom_closure.closed_name(x) for x in closed)
        self.closed_vars = custom_closure.closed_vars(closed)
        self.n_closed = len(closed)


class _Custom:
    """Shared machinery: one op per decorated function, and its call structures."""

    kind = "custom"

    def __init__(self, fun, nondiff_argnums=()):
        check_callable(fun, self.kind)
        functools.update_wrapper(self, fun)
        self.fun = fun
        if isinstance(nondiff_argnums, int):
            nondiff_argnums = (nondiff_argnums,)
        self.nondiff_argnums = tuple(sorted(set(nondiff_argnums)))
        if not all(isinstance(i, int) and i >= 0 for i in self.nondiff_argnums):
            raise ChainruleError(f"{self.kind}: nondiff_argnums must be non-negative ints, "
                                 f"got {nondiff_argnums!r}")
        base = getattr(fun, "__name__", "f")
        base = base if base.isidentifier() and base != "<lambda>" else "f"
        self.name = base
        self.op = define(f"{self.kind}_{base}_{next(_ids)}", self._infer, self._kernel, None,
                         {"structure": REQUIRED}, emit=self._emit,
                         doc=f"the outputs of {base}, with {self.kind} derivatives")
        self.structures: list[_Structure] = []
        self._index: dict = {}
        self._in_fwd = 0

    # -- the op --------------------------------------------------------------------
    def _infer(self, types, attrs):
        s = self._structure_of(attrs)
        outs = list(types[-s.n_out:])
        return outs[0] if s.n_out == 1 and s.out_tree.kind is None else TupleType(outs)

    def _kernel(self, *operands, structure):
        s = self.structures[structure]
        outs = operands[-s.n_out:]
        return outs[0] if s.n_out == 1 and s.out_tree.kind is None else tuple(outs)

    def _emit(self, e):
        s = self._structure_of(e.attrs)
        outs = e.args[-s.n_out:]
        if s.n_out == 1 and s.out_tree.kind is None:
            return outs[0]
        return "(" + ", ".join(outs) + ("," if len(outs) == 1 else "") + ")"

    def _structure_of(self, attrs) -> _Structure:
        k = attrs.get("structure")
        if not isinstance(k, int) or not 0 <= k < len(self.structures):
            raise TypeInferenceError(f"{self.op.name}: unknown call structure {k!r}")
        return self.structures[k]

    def _register(self, structure: _Structure, key) -> int:
        k = self._index.get(key)
        if k is None:
            k = self._index[key] = len(self.structures)
            self.structures.append(structure)
        return k

    # -- calling -------------------------------------------------------------------------
    def _split_args(self, args, kwargs):
        if kwargs:
            try:
                bound = inspect.signature(self.fun).bind(*args, **kwargs)
            except TypeError as exc:
                raise ChainruleError(f"{self.name}: {exc}") from None
            bound.apply_defaults()
            args = bound.args
        for i in self.nondiff_argnums:
            if i >= len(args):
                raise ChainruleError(f"{self.name}: nondiff_argnums {self.nondiff_argnums} "
                                     f"but only {len(args)} argument(s)")
        nondiff = tuple(args[i] for i in self.nondiff_argnums)
        for i, v in zip(self.nondiff_argnums, nondiff):
            if any(is_dispatched(x) for x in flatten(v)[0]):
                raise ChainruleError(
                    f"{self.name}: argument {i} is in nondiff_argnums but is being "
                    f"differentiated (a traced value or tape tensor); make it a "
                    f"differentiable argument, or pass a constant")
        diff = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        return tuple(args), nondiff, diff

    def __call__(self, *args, **kwargs):
        args, nondiff, diff = self._split_args(args, kwargs)
        leaves, in_tree = flatten(diff)
        if self._in_fwd or not any(is_dispatched(x) for x in leaves):
            return self.fun(*args)  # on arrays: the function itself, as JAX
        return self._call_traced(args, nondiff, leaves, in_tree)

    def _apply(self, structure: _Structure, key, operands):
        k = self._register(structure, key)
        result = self.op(*operands, structure=k)
        outs = [result] if structure.n_out == 1 and structure.out_tree.kind is None else list(
            result)
        return unflatten(structure.out_tree, outs)

    def _closed(self, s: _Structure) -> tuple:
        """The rules' answer for the values the outputs read from outside the arguments."""
        return tuple(NoDerivative(custom_closure.refusal(self.name, self.kind, what))
                     for what in s.closed_names)

    def _rebound(self, s: _Structure, operands, start: int):
        """Run a rule with the closed-over values read as the operands from ``start``."""
        return custom_closure.rebound(self.name, self.kind, s.closed_vars,
                                      operands[start:start + s.n_closed])

    # -- checks ------------------------------------------------------------------------
    def _check_cotangents(self, s: _Structure, cts, what: str) -> list:
        """The leaves of ``cts`` (one per differentiable argument, as the primal
        arguments' trees), checked: None is a zero, anything else must have the
        argument's shape and dtype."""
        n_diff = len(s.in_tree.children) if s.in_tree.children is not None else 1
        if not isinstance(cts, (tuple, list)) or len(cts) != n_diff:
            raise GradientError(
                f"{self.name}: {what} must return a tuple with one entry per differentiable "
                f"argument ({n_diff}), got {type(cts).__name__}"
                + (f" of length {len(cts)}" if isinstance(cts, (tuple, list)) else ""))
        leaves = []
        for arg_tree, ct in zip(s.in_tree.children, cts):
            if ct is None:
                leaves.extend([None] * arg_tree.num_leaves)
                continue
            ct_leaves, ct_tree = flatten(ct)
            if ct_tree != arg_tree:
                raise GradientError(f"{self.name}: {what} returned {ct_tree!r} for an argument "
                                    f"of structure {arg_tree!r}")
            leaves.extend(ct_leaves)
        for i, (leaf, aval) in enumerate(zip(leaves, s.arg_avals)):
            if leaf is None:
                continue
            got = _shape_dtype(leaf)
            if got is None:
                got = (np.shape(leaf), np.asarray(leaf).dtype)
            if got[0] != aval[0]:
                raise GradientError(f"{self.name}: {what} returned shape {got[0]} for an "
                                    f"argument leaf of shape {aval[0]} (leaf {i})")
            if got[1] != aval[1] and aval[1].kind in "fc":
                raise GradientError(f"{self.name}: {what} returned dtype {got[1]} for an "
                                    f"argument leaf of dtype {aval[1]} (leaf {i})")
        return leaves


class custom_vjp(_Custom):  # noqa: N801 - JAX's name
    """``f = custom_vjp(f)``; ``f.defvjp(fwd, bwd)`` with ``fwd(*args) -> (out, res)``
    and ``bwd(*nondiff_args, res, g) -> (one cotangent per differentiable argument)``."""

    kind = "custom_vjp"

    def defvjp(self, fwd, bwd) -> None:
        check_callable(fwd, f"{self.name}.defvjp's fwd")
        check_callable(bwd, f"{self.name}.defvjp's bwd")
        self.fwd, self.bwd = fwd, bwd
        VJP[self.op] = self._vjp_rule
        JVP[self.op] = self._jvp_rule

    def _call_traced(self, args, nondiff, leaves, in_tree):
        if not hasattr(self, "fwd"):
            raise ChainruleError(f"{self.name}: call defvjp(fwd, bwd) before using it")
        _guard_rule_reads(self.bwd)
        start = custom_closure.mark(leaves)
        self._in_fwd += 1  # fwd may call the function itself (JAX's examples do): the primal
        try:
            pair = self.fwd(*args)
        finally:
            self._in_fwd -= 1
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ChainruleError(f"{self.name}: fwd must return (output, residuals)")
        out, res = pair
        out_leaves, out_tree = flatten(out)
        res_leaves, res_tree = flatten(res)
        dyn = tuple(i for i, r in enumerate(res_leaves) if _shape_dtype(r) is not None)
        static = [None if i in dyn else r for i, r in enumerate(res_leaves)]
        avals = [_shape_dtype(x) or (np.shape(x), np.asarray(x).dtype) for x in leaves]
        closed = custom_closure.closed_over(start, leaves, out_leaves)
        structure = _Structure(nondiff, in_tree, out_tree, res_tree, static, dyn, len(leaves),
                               avals, closed)
        key = (tuple(_key(v) for v in nondiff), in_tree, out_tree, res_tree,
               tuple(_key(v) for v in static), dyn, tuple((a[0], a[1].str) for a in avals),
               structure.closed_names, structure.closed_vars)
        operands = (list(leaves) + [res_leaves[i] for i in dyn] + closed + list(out_leaves))
        return self._apply(structure, key, operands)

    def _residuals(self, s: _Structure, dyn_values):
        leaves = list(s.res_static)
        for i, v in zip(s.dyn, dyn_values):
            leaves[i] = v
        return unflatten(s.res_tree, leaves)

    def _cotangents(self, s: _Structure, res, gs) -> list:
        cts = self.bwd(*s.nondiff, res, unflatten(s.out_tree, list(gs)))
        return self._check_cotangents(s, cts, "bwd")

    def _vjp_rule(self, z, g, *operands, structure):
        """z = f(x);  dx = bwd(res, g)  (the user's rule, on the residuals fwd computed,
        which carry derivatives: differentiating this rule again is exact)"""
        s = self.structures[structure]
        res = self._residuals(s, operands[s.n_args:s.n_args + len(s.dyn)])
        gs = list(g) if isinstance(g, tuple) else [g]
        with self._rebound(s, operands, s.n_args + len(s.dyn)):
            cts = self._cotangents(s, res, gs)
        return (tuple(cts) + (None,) * len(s.dyn)
                + self._closed(s) + (None,) * s.n_out)

    def _jvp_rule(self, z, *operands, structure):
        """z = f(x);  dz = the transpose of (g -> bwd(res, g)[i]) applied to dx_i"""
        from .. import ops
        from .forward import linear_transpose

        s = self.structures[structure]
        res = self._residuals(s, operands[s.n_args:s.n_args + len(s.dyn)])
        outs = operands[-s.n_out:]

        def contribution(i):
            def f(t):
                def bwd_leaf(*gs):
                    with self._rebound(s, operands, s.n_args + len(s.dyn)):
                        ct = self._cotangents(s, res, gs)[i]
                    return ct if ct is not None else ops.zeros_like(operands[i])

                try:
                    dout = linear_transpose(bwd_leaf, *outs)(t)
                except TransposeError as exc:
                    raise GradientError(
                        f"{self.name}: forward mode through a custom_vjp function transposes "
                        f"its bwd, which must then be linear in its cotangent ({exc}); give "
                        f"it a custom_jvp rule instead") from None
                return dout[0] if len(dout) == 1 else tuple(dout)

            return f

        return (tuple(contribution(i) for i in range(s.n_args)) + (None,) * len(s.dyn)
                + self._closed(s) + (None,) * s.n_out)


class custom_jvp(_Custom):  # noqa: N801 - JAX's name
    """``f = custom_jvp(f)`` then ``@f.defjvp`` a rule
    ``jvp(primals, tangents) -> (out, tangent_out)``, linear in the tangents
    (``primals`` and ``tangents`` hold the differentiable arguments; the
    ``nondiff_argnums`` ones come first, as in JAX)."""

    kind = "custom_jvp"

    def defjvp(self, rule):
        check_callable(rule, f"{self.name}.defjvp")
        self.rule = rule
        JVP[self.op] = self._jvp_rule
        VJP[self.op] = self._vjp_rule
        return rule

    def _call_traced(self, args, nondiff, leaves, in_tree):
        if not hasattr(self, "rule"):
            raise ChainruleError(f"{self.name}: define its rule with @{self.name}.defjvp "
                                 f"before using it")
        _guard_rule_reads(self.rule)
        start = custom_closure.mark(leaves)
        out = self.fun(*args)
        out_leaves, out_tree = flatten(out)
        closed = custom_closure.closed_over(start, leaves, out_leaves)
        avals = [_shape_dtype(x) or (np.shape(x), np.asarray(x).dtype) for x in leaves]
        structure = _Structure(nondiff, in_tree, out_tree, None, [], (), len(leaves), avals,
                               closed)
        key = (tuple(_key(v) for v in nondiff), in_tree, out_tree,
               tuple((a[0], a[1].str) for a in avals), structure.closed_names,
               structure.closed_vars)
        return self._apply(structure, key, list(leaves) + closed + list(out_leaves))

    def _tangent_map(self, s: _Structure, operands, i):
        """t -> the output tangent (leaves) for tangent t of argument leaf i alone."""
        from .. import ops

        args = operands[:s.n_args]

        def f(t):
            tangents = [t if j == i else ops.zeros_like(a) for j, a in enumerate(args)]
            primals = unflatten(s.in_tree, list(args))
            with self._rebound(s, operands, s.n_args):
                pair = self.rule(*s.nondiff, tuple(primals),
                                 tuple(unflatten(s.in_tree, tangents)))
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise GradientError(f"{self.name}: the jvp rule must return (output, "
                                    f"output tangent)")
            t_leaves, t_tree = flatten(pair[1])
            if t_tree != s.out_tree:
                raise GradientError(f"{self.name}: the jvp rule's tangent has structure "
                                    f"{t_tree!r}, the output {s.out_tree!r}")
            for k, (tl, out) in enumerate(zip(t_leaves, flatten(pair[0])[0])):
                if tuple(np.shape(tl)) != tuple(np.shape(out)):
                    raise GradientError(f"{self.name}: the jvp rule's tangent {k} has shape "
                                        f"{tuple(np.shape(tl))}, but the output has shape "
                                        f"{tuple(np.shape(out))}")
            return t_leaves[0] if len(t_leaves) == 1 else tuple(t_leaves)

        return f

    def _jvp_rule(self, z, *operands, structure):
        """z = f(x);  dz = the user's rule, one argument's tangent at a time"""
        s = self.structures[structure]
        return (tuple(self._tangent_map(s, operands, i) for i in range(s.n_args))
                + self._closed(s) + (None,) * s.n_out)

    def _vjp_rule(self, z, g, *operands, structure):
        """z = f(x);  dx_i = transpose(t -> rule(x, t)[1]) applied to g"""
        from .forward import linear_transpose

        s = self.structures[structure]
        args = operands[:s.n_args]
        gs = g if isinstance(g, tuple) else (g,)
        cts = tuple(linear_transpose(self._tangent_map(s, operands, i), args[i])(
            gs[0] if len(gs) == 1 else gs)[0] for i in range(s.n_args))
        return cts + self._closed(s) + (None,) * s.n_out
