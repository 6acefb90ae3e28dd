"""The compiled Jacobian program of ``api.jacobian``: the derivative program restricted
to one nonzero input leaf, its copies over basis vectors (``_Pieces``), and the chunked
form for Jacobians too large for one program (``_Chunked``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import numpy as cnp
from .. import ops
from ..emit.trace import Trace
from ..errors import CompiledHigherOrderError
from ..ir.nodes import Call, Constant, Function, Module, Tuple, TupleGetItem, Var, While
from ..ir.op import Op
from ..ir.types import TensorType, TupleType
from ..ir.visitor import Mutator, all_bindings, nested_blocks, vars_used
from ..transform.cleanup.optimize import optimize
from .grad_program import _reachable
from .reverse import _leaf_types
from .specialization import _unpack_atom, inline_into

if TYPE_CHECKING:
    from .jacobian import _Plan


def _basis(shape, dtype, k: int) -> np.ndarray:
    e = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype)
    e[k] = 1
    return e.reshape(shape)


# -- the compiled program ---------------------------------------------------------------


class _Restricted(Mutator):
    """Inlines a program that is linear in some of its parameters, with one of them
    nonzero and the others (``zero``) zero. A binding whose operands that depend on
    the linear parameters are all zero is zero by linearity (an op of a tangent or
    pullback program is linear in its tangent operands) and is not emitted; zeros
    are made where a kept binding reads one. What may depend on the linear
    parameters is everything bound inside the program (``inner``: loop variables and
    closure parameters included) that was not found to read only residuals."""

    def __init__(self, module, builder, zero: set, inner: set, fields=None):
        super().__init__(module)
        self.builder = builder
        self.zero = zero
        self.inner = inner
        self.residual: set = set()  # inner variables that read no linear input
        self.fields = fields  # tuple parameter -> its fields (an atom, or None for a zero)

    def atom(self, x):
        if isinstance(x, Var) and x in self.zero:
            return self.zeros(x.type)
        return super().atom(x)

    def zeros(self, t):
        if isinstance(t, TupleType):
            return Tuple(self.zeros(f) for f in t.fields)
        if int(np.prod(t.shape, dtype=np.int64)) <= 16:
            return Constant(np.zeros(t.shape, t.dtype.numpy))
        return self.builder.call(ops.zeros, [], {"shape": tuple(t.shape), "dtype": t.dtype})

    def rewrite(self, binding):
        v = binding.value
        if (self.fields is not None and isinstance(v, TupleGetItem)
                and v.tuple_value in self.fields):
            field = self.fields[v.tuple_value][v.index]
            if field is None:
                self.zero.add(binding.var)
                return None
            return field
        dependent = [u for u in vars_used(v) if u in self.inner and u not in self.residual]
        if not dependent:
            self.residual.add(binding.var)
        elif all(u in self.zero for u in dependent) and (
                isinstance(v, (TupleGetItem, Tuple, Var))
                or isinstance(v, Call) and type(v.callee) is Op):
            self.zero.add(binding.var)
            return None
        return self.value(v)


def _bound_inside(fn) -> set:
    """Every variable bound in ``fn``'s body, at any depth."""
    out, stack = set(), [fn.body]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            out.add(b.var)
            if isinstance(b.value, While):
                out.update(b.value.loop_vars)
            elif isinstance(b.value, Function):
                out.update(b.value.params)
            stack.extend(nested_blocks(b.value))
    return out


def _numel(t) -> int | None:
    """The number of elements of ``t``; None when a dimension is a symbol."""
    return int(np.prod(t.shape, dtype=np.int64)) if t.is_static else None


def _fields(tr, atom, n: int) -> list:
    """The leaf atoms of a result atom (one leaf, or a tuple of them)."""
    if isinstance(atom, Tuple):
        return list(atom.fields)
    if isinstance(atom.type, TupleType):
        return [tr.builder.emit(TupleGetItem(atom, i)) for i in range(len(atom.type.fields))]
    return [atom]


def _inline_restricted(tr, module, fn, inputs, linear, zero_inputs, fields=None):
    """Emit ``fn``'s body into ``tr`` with ``inputs`` for its parameters; ``fn`` is
    linear in the parameters flagged in ``linear``, those flagged in ``zero_inputs``
    are zero (a parameter holding a tuple may instead be given ``fields``: its
    fields, None where zero)."""
    zero = {p for p, z in zip(fn.params, zero_inputs) if z}
    inner = _bound_inside(fn) | {p for p, lin in zip(fn.params, linear) if lin}
    m = _Restricted(module, tr.builder, zero, inner, fields)
    for p, a in zip(fn.params, inputs):
        if p in (fields or {}):  # used whole: the tuple, zeros included
            m.subst[p] = Tuple(m.zeros(t) if f is None else f
                               for f, t in zip(fields[p], p.type.fields))
        elif p not in zero:
            m.subst[p] = a
    m.emit_bindings(fn.body.bindings)
    return m.atom(fn.body.result)


def _stack_block(parts, axis: int, shape, dtype):
    """One block of the Jacobian from its rows (axis 0) or columns (axis -1)."""
    if not parts:
        return np.zeros(shape, dtype)
    return cnp.reshape(cnp.stack(parts, axis=axis), shape)


class _Pieces:
    """The derivative program of one specialization and how to emit its parts: the
    primal (or forward sweep) once, then one restricted copy of the tangent program
    (or pullback) per basis vector."""

    def __init__(self, plan: _Plan, tf, unzip: bool = True):
        from ..transform.forward.jvp import jvp
        from ..transform.forward.linearize import linearize
        from ..transform.reverse.gradient import vjp_module

        self.plan, self.tf = plan, tf
        self.main = main = tf.module["main"]
        self.n_out = tf.out_tree.num_leaves
        self.out_types = _leaf_types(main.ret_type)
        self.in_types = [main.params[i].type for i in plan.wanted]
        # the tangent program takes the tangents in parameter order, whatever the order
        # of argnums: the tangent slot of differentiated leaf j
        order = sorted(plan.wanted)
        self.slots = [order.index(i) for i in plan.wanted]
        self.unzipped = True
        if plan.mode == "fwd":
            try:
                if not unzip:
                    raise CompiledHigherOrderError("asked for the jvp program")
                self.module = linearize(tf.module, "main", wrt=plan.wanted)
                self.copy_size = len(self.module["main_tangent"].body.bindings)
            except CompiledHigherOrderError:
                # not unzipped (asked for, or forward over the reverse mode of loops and
                # branches): unrolled, each copy repeats the primal (merged where
                # straight-line); batched by vmap, the primal stays unbatched: once
                if _has_effects(tf.module):
                    raise  # the primal draws random numbers: it must run once (the tape)
                self.unzipped = False
                self.module = jvp(tf.module, "main", wrt=plan.wanted)
                self.copy_size = 2 * len(self.module["main_jvp"].body.bindings)
        else:
            self.module = vjp_module(tf.module, "main", wrt=plan.wanted)
            body = self.module["main_vjp"].body
            closure = next(b.value for b in body.bindings if b.var is body.result.fields[1])
            self.copy_size = len(closure.body.bindings)

    def copies(self) -> int | None:
        """How many basis vectors (copies of the derivative program) there are; None
        when that depends on a symbolic dimension."""
        types = self.in_types if self.plan.mode == "fwd" else self.out_types[:self.plan.n_target]
        counts = [_numel(t) for t in types]
        return None if None in counts else sum(counts)

    def start(self, tr):
        """Emit the parameters and the primal work; returns the output leaf atoms."""
        params = [tr.builder.param(p.name, p.type) for p in self.main.params]
        if self.plan.mode == "fwd" and not self.unzipped:
            self.params = params
            result = inline_into(tr, self.module, "main", params)
        elif self.plan.mode == "fwd":
            result, residuals = inline_into(tr, self.module, "main_primal", params).fields
            self.residuals = list(residuals.fields)
        else:
            result, pullback = inline_into(tr, self.module, "main_vjp", params).fields
            self.closure = next(b.value for b in reversed(tr.builder.bindings)
                                if b.var is pullback)
        return _fields(tr, result, self.n_out)

    def columns(self, tr, j: int, roots) -> list[list]:
        """Forward mode: for each root (a tangent of differentiated leaf j), the
        output tangents; returned per target output leaf."""
        fixed = self.residuals if self.unzipped else self.params
        tangent = self.module["main_tangent" if self.unzipped else "main_jvp"]
        n_res, n_in = len(fixed), len(self.in_types)
        cols = [[] for _ in range(self.plan.n_target)]
        slot = self.slots[j]
        for root in roots:
            inputs = fixed + [None] * n_in
            inputs[n_res + slot] = root
            linear = [False] * n_res + [True] * n_in
            zero = [False] * n_res + [i != slot for i in range(n_in)]
            tout = _inline_restricted(tr, self.module, tangent, inputs, linear, zero)
            if not self.unzipped:  # (primal, tangent): the tangent
                tout = tout.fields[1] if isinstance(tout, Tuple) else tr.builder.emit(
                    TupleGetItem(tout, 1))
            tout = _fields(tr, tout, self.n_out)
            for o in range(self.plan.n_target):
                cols[o].append(_unpack_atom(tr, tout[o]))
        return cols

    def rows(self, tr, o: int, roots) -> list[list]:
        """Reverse mode: for each root (a cotangent of output leaf o), the cotangents
        of the differentiated leaves; returned per differentiated leaf."""
        rows = [[] for _ in self.in_types]
        ct = self.closure.params[0]
        for root in roots:
            if not isinstance(ct.type, TupleType):  # one output array (not in a tuple)
                grads = _inline_restricted(tr, self.module, self.closure, [root], [True],
                                           [False])
            else:
                fields = {ct: [root if i == o else None for i in range(self.n_out)]}
                grads = _inline_restricted(tr, self.module, self.closure, [None], [True],
                                           [False], fields)
            for j, g in enumerate(_fields(tr, grads, len(self.in_types))):
                rows[j].append(_unpack_atom(tr, g))
        return rows

    @staticmethod
    def basis(t, k: int) -> Constant:
        return Constant(_basis(t.shape, t.dtype.numpy, k))

    def others(self) -> dict:
        """The functions of the derivative module that the entry functions call."""
        return {k: v for k, v in self.module.functions.items()
                if k not in ("main", "main_primal", "main_tangent", "main_vjp", "main_jvp")}

    def finish(self, tr, results, outs, extra=None) -> Module:
        atoms = [tr.atom(x) for x in results] + list(outs[self.plan.n_target:])
        fn = tr.builder.finish_function(Tuple(atoms))
        others = {**self.others(), **(extra or {})}
        return _reachable(optimize(Module({"main_jac": fn, **others}, self.module.meta)),
                          "main_jac")

    def program(self) -> Module:
        """``main_jac(params) -> (blocks..., aux leaves...)``: every basis vector."""
        plan, blocks = self.plan, {}
        with Trace("main_jac") as tr:
            outs = self.start(tr)
            if plan.mode == "fwd":
                for j, t in enumerate(self.in_types):
                    cols = self.columns(tr, j, [self.basis(t, k) for k in range(_numel(t))])
                    for o in range(plan.n_target):
                        ot = self.out_types[o]
                        blocks[o, j] = _stack_block(cols[o], -1, ot.shape + t.shape,
                                                    ot.dtype.numpy)
            else:
                for o in range(plan.n_target):
                    ot = self.out_types[o]
                    rows = self.rows(tr, o, [self.basis(ot, k) for k in range(_numel(ot))])
                    for j, t in enumerate(self.in_types):
                        blocks[o, j] = _stack_block(rows[j], 0, ot.shape + t.shape,
                                                    t.dtype.numpy)
            results = [blocks[o, j] for o in range(plan.n_target)
                       for j in range(len(self.in_types))]
            return self.finish(tr, results, outs)

    def chunk_program(self, index: int, size: int) -> Module:
        """``main_jac(params, basis) -> (stacked results..., aux leaves...)`` for ``size``
        basis vectors of differentiated leaf ``index`` (forward mode) or of output leaf
        ``index`` (reverse mode), given at run time as the rows of ``basis``."""
        fwd = self.plan.mode == "fwd"
        t = self.in_types[index] if fwd else self.out_types[index]
        with Trace("main_jac") as tr:
            outs = self.start(tr)
            basis = tr.wrap(tr.builder.param("basis", TensorType((size,) + t.shape, t.dtype)))
            roots = [tr.atom(basis[c]) for c in range(size)]
            parts = self.columns(tr, index, roots) if fwd else self.rows(tr, index, roots)
            return self.finish(tr, [cnp.stack(p, axis=0) for p in parts], outs)


def _has_effects(module: Module) -> bool:
    """Whether a program draws random numbers (its primal must then run only once)."""
    stack = [fn.body for fn in module.functions.values()]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            if isinstance(v, Call) and type(v.callee) is Op and v.callee.effects:
                return True
            stack.extend(nested_blocks(v))
    return False




class _Chunked:
    """A Jacobian too large for one unrolled program, on arrays: for each
    differentiated leaf (forward mode) or output leaf (reverse mode), a program of
    ``chunk`` basis vectors, compiled once and run over the identity chunk by chunk
    (each run repeats the primal work: a fraction 1/chunk of the total)."""

    def __init__(self, pieces: _Pieces, tf, chunk: int):
        self.pieces, self.traced, self.chunk = pieces, tf, chunk
        self.guards = tf.guards
        self.programs: dict = {}

    def exact_for(self, leaves) -> bool:
        return False  # no unchecked fast path: the work of a call dwarfs the checks

    def run(self, leaves):
        from ..backend.codegen.generate import compile_module

        pieces, plan = self.pieces, self.pieces.plan
        args = [np.asarray(x) for x in leaves] + self.guards.inputs()
        fwd = plan.mode == "fwd"
        n_parts = plan.n_target if fwd else len(pieces.in_types)
        blocks, aux = {}, None
        for index, t in enumerate(pieces.in_types if fwd else pieces.out_types[:plan.n_target]):
            n = _numel(t)
            size = min(n, self.chunk)
            if size == 0:
                continue
            if index not in self.programs:
                self.programs[index] = compile_module(pieces.chunk_program(index, size),
                                                      "main_jac")
            eye = np.eye(n, dtype=t.dtype.numpy)
            chunks: list = [[] for _ in range(n_parts)]
            for start in range(0, n, size):
                rows = eye[start:start + size]
                if len(rows) < size:  # the last chunk, padded with zero rows
                    rows = np.concatenate([rows, np.zeros((size - len(rows), n), rows.dtype)])
                out = self.programs[index](*args, rows.reshape((size,) + t.shape))
                out = out if isinstance(out, tuple) else (out,)
                aux = out[n_parts:]
                for m in range(n_parts):
                    chunks[m].append(np.asarray(out[m])[:min(size, n - start)])
            for m, parts in enumerate(chunks):
                stacked = np.concatenate(parts)
                if fwd:  # (n,) + out shape -> out shape + in shape
                    ot = pieces.out_types[m]
                    blocks[m, index] = np.moveaxis(stacked, 0, -1).reshape(ot.shape + t.shape)
                else:
                    blocks[index, m] = stacked.reshape(t.shape + pieces.in_types[m].shape)
        for o in range(plan.n_target):  # blocks of empty leaves
            for j, t in enumerate(pieces.in_types):
                if (o, j) not in blocks:
                    ot = pieces.out_types[o]
                    dtype = ot.dtype.numpy if fwd else t.dtype.numpy
                    blocks[o, j] = np.zeros(ot.shape + t.shape, dtype)
        if aux is None:
            out = compile_module(pieces.tf.module, "main")(*args)
            aux = (out if isinstance(out, tuple) else (out,))[plan.n_target:]
        return tuple(blocks[o, j] for o in range(plan.n_target)
                     for j in range(len(pieces.in_types))) + tuple(aux)


def has_loop(module: Module) -> bool:
    """Whether a function of ``module`` has a ``while`` loop (at any depth)."""
    return any(type(b.value) is While
               for b in all_bindings(fn.body for fn in module.functions.values()))
