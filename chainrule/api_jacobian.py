"""Jacobians and Hessians: ``jacfwd``, ``jacrev``, ``hessian`` with JAX's conventions.

For a function whose output is the pytree O and whose differentiated argument is
the pytree I, the Jacobian has O's structure, each leaf of which has I's
structure (a tuple of them for a tuple ``argnums``), each leaf of which is an
array of shape ``out_leaf.shape + in_leaf.shape``. ``hessian`` is
``jacfwd(jacrev(f))``, so its leaves have shape ``out + in + in``.

The Jacobian is one compiled program per input signature: ``jacfwd`` runs the
primal once and the linear tangent program (``linearize``) on every basis vector
of an input leaf, ``jacrev`` the forward sweep once and the pullback on every
basis vector of an output leaf, batched by the ``vmap`` pass (one copy of the
derivative program on the rows of an identity, as JAX does; ``api_vmap``). The
copy is restricted to its one nonzero leaf: by linearity, whatever depends only
on the other (zero) leaves is zero and is not computed, so a zero times an
infinite partial never makes a NaN. A program with random draws (whose primal
must run once) is unrolled, one copy per basis vector; a batch too large for
memory (``VMAP_ELEMENTS``) runs chunk by chunk.
Inside a trace (under ``jit``, ``grad``, another Jacobian) the same program is
emitted into the enclosing one, so the transforms nest to any order; a function
with Python control flow on values runs on the tape instead.

>>> import numpy as np, chainrule.numpy as cnp
>>> f = lambda p: {"y": p["w"] * p["b"], "s": cnp.sum(p["w"])}
>>> J = jacrev(f)({"w": np.array([1.0, 2.0]), "b": np.float64(3.0)})
>>> J["y"]["w"]
array([[3., 0.],
       [0., 3.]])
>>> J["y"]["b"], J["s"]["w"]
(array([1., 2.]), array([1., 1.]))
"""

from __future__ import annotations

import numpy as np

from . import numpy as cnp
from . import ops
from .api import (
    _Compiled,
    _leaf_ranges,
    _leaf_types,
    _reachable,
    _Transform,
    _unpack_atom,
    inline_into,
)
from .api_vmap import basis_jacobian_program, largest_array
from .checks import StaticArgs, check_argnums, check_argnums_form, check_callable, own
from .errors import CompiledHigherOrderError, GradientError
from .frontend.tracer import Trace, trace_function
from .ir.nodes import Call, Constant, Function, Module, Tuple, TupleGetItem, Var, While
from .ir.op import Op, is_dispatched
from .ir.types import TensorType, TupleType
from .ir.visitor import Mutator, nested_blocks, vars_used
from .transform.optimize import optimize
from .transform.vmap_types import BatchingError
from .tree import flatten, unflatten

# -- the checks (JAX's rules and wording) ---------------------------------------------


def _check_input(name: str, mode: str, holomorphic: bool, dtype, where: str) -> None:
    kind = np.dtype(dtype).kind
    if holomorphic:
        if kind != "c":
            raise GradientError(f"{name}(holomorphic=True): {where} has dtype {np.dtype(dtype)};"
                                f" a holomorphic derivative needs complex inputs")
    elif kind == "c" and mode == "fwd":
        raise GradientError(
            f"{name}: {where} is complex ({np.dtype(dtype)}); jacfwd needs real inputs: pass "
            f"holomorphic=True for the complex derivative f'(z), or use jacrev (the gradient "
            f"convention df/dx - i df/dy) or cr.jvp with tangents of your choice")
    elif kind not in "fc":
        raise GradientError(f"{name}: {where} has dtype {np.dtype(dtype)}; integer and bool "
                            f"inputs have no derivative (pass floats, or leave it out of "
                            f"argnums)")


def _check_output(name: str, mode: str, holomorphic: bool, dtype, fname: str) -> None:
    kind = np.dtype(dtype).kind
    if holomorphic:
        if kind != "c":
            raise GradientError(f"{name}(holomorphic=True) needs complex outputs, but "
                                f"{fname} returns {np.dtype(dtype)}")
    elif kind == "c" and mode == "rev":
        raise GradientError(
            f"{name} of a complex-valued function ({fname} returns {np.dtype(dtype)}): pass "
            f"holomorphic=True for the complex derivative f'(z), or differentiate a real "
            f"function (cnp.real, cnp.abs, ...); cr.vjp takes any cotangent")
    elif kind not in "fc":
        raise GradientError(f"{name}: {fname} returns a {np.dtype(dtype)} value, which has no "
                            f"derivative; return it as aux (has_aux=True), or use cr.vjp/jvp")


class _Plan:
    """What one specialization computes: the differentiated leaves and the outputs."""

    def __init__(self, name, mode, argnums, has_aux, holomorphic, args, nums, out_tree,
                 fname):
        self.name, self.mode, self.argnums = name, mode, argnums
        self.has_aux, self.holomorphic, self.nums = has_aux, holomorphic, nums
        ranges = _leaf_ranges(args)
        self.wanted = [i for a in nums for i in ranges[a]]
        self.arg_trees = [flatten(args[a])[1] for a in nums]
        self.arg_sizes = [len(ranges[a]) for a in nums]
        if has_aux:
            if out_tree.kind is not tuple or len(out_tree.children) != 2:
                raise GradientError(f"{name}(has_aux=True) needs the function to return a pair "
                                    f"(output, aux), but {fname} returns {out_tree!r}")
            self.target_tree, self.aux_tree = out_tree.children
        else:
            self.target_tree, self.aux_tree = out_tree, None
        self.n_target = self.target_tree.num_leaves
        self.fname = fname

    def check(self, in_dtypes, out_dtypes) -> None:
        where = [f"argument {a}" + (f" (leaf {k})" if size > 1 else "")
                 for a, size in zip(self.nums, self.arg_sizes) for k in range(size)]
        for dtype, place in zip(in_dtypes, where):
            _check_input(self.name, self.mode, self.holomorphic, dtype, place)
        for dtype in out_dtypes[:self.n_target]:
            _check_output(self.name, self.mode, self.holomorphic, dtype, self.fname)

    def assemble(self, blocks, aux_leaves):
        """The Jacobian's pytree from its blocks (output leaf by differentiated leaf)."""
        per_out, n_in = [], len(self.wanted)
        for o in range(self.n_target):
            row, k = [], 0
            for tree, size in zip(self.arg_trees, self.arg_sizes):
                row.append(unflatten(tree, blocks[o * n_in + k:o * n_in + k + size]))
                k += size
            per_out.append(row[0] if isinstance(self.argnums, (int, np.integer)) else tuple(row))
        jac = unflatten(self.target_tree, per_out)
        if self.has_aux:
            return jac, unflatten(self.aux_tree, list(aux_leaves))
        return jac


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


def _numel(t) -> int:
    return int(np.prod(t.shape, dtype=np.int64))


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

    def __init__(self, plan: _Plan, tf):
        from .transform.gradient import vjp_module
        from .transform.jvp import jvp
        from .transform.linearize import linearize

        self.plan, self.tf = plan, tf
        self.main = main = tf.module["main"]
        self.n_out = n_out = tf.out_tree.num_leaves
        self.out_types = _leaf_types(main.ret_type) if n_out != 1 else [main.ret_type]
        self.in_types = [main.params[i].type for i in plan.wanted]
        self.unzipped = True
        if plan.mode == "fwd":
            try:
                self.module = linearize(tf.module, "main", wrt=plan.wanted)
                self.copy_size = len(self.module["main_tangent"].body.bindings)
            except CompiledHigherOrderError:
                # forward over the reverse mode of loops and branches: the jvp program is
                # not unzipped, so each copy repeats the primal (merged where straight-line)
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

    def copies(self) -> int:
        """How many basis vectors (copies of the derivative program) there are."""
        types = self.in_types if self.plan.mode == "fwd" else self.out_types[:self.plan.n_target]
        return sum(_numel(t) for t in types)

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
        for root in roots:
            inputs = fixed + [None] * n_in
            inputs[n_res + j] = root
            linear = [False] * n_res + [True] * n_in
            zero = [False] * n_res + [i != j for i in range(n_in)]
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
            if self.n_out == 1:
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


# bindings of derivative code (copies times their size) one program may hold; past it,
# a program for a chunk of basis vectors is compiled once and run chunk by chunk
UNROLL_BUDGET = 4096
# The derivative program batched over every basis vector by the vmap pass (one copy,
# whole-batch array ops: faster than the unrolled copies at every size measured, and far
# quicker to compile; benchmarks/vmap.py) holds arrays up to copies times its largest
# value; past this many elements, chunks of basis vectors run one after the other instead
VMAP_ELEMENTS = 2**26


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
        from .backend.codegen import compile_module

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


# -- the transforms ---------------------------------------------------------------------


def _jacobian(f, argnums, has_aux: bool, holomorphic: bool, mode: str, name: str):
    check_callable(f, name)
    check_argnums_form(argnums, name)
    fname = getattr(f, "__name__", "f")

    def build(call, leaves):
        nums = check_argnums(argnums, call.n_pos, name)
        tf = trace_function(call.fn, call.args, capture=True)
        plan = _Plan(name, mode, argnums, has_aux, holomorphic, call.args, nums,
                     tf.out_tree, fname)
        main = tf.module["main"]
        n_out = tf.out_tree.num_leaves
        out_types = _leaf_types(main.ret_type) if n_out != 1 else [main.ret_type]
        for i in plan.wanted:
            if not isinstance(main.params[i].type, TensorType):
                raise GradientError(f"{name}: argument leaf {i} is not an array")
        plan.check([main.params[i].type.dtype.numpy for i in plan.wanted],
                   [t.dtype.numpy for t in out_types])
        pieces = _Pieces(plan, tf)
        copies = pieces.copies()
        entry = None
        if copies * largest_array(pieces.module) <= VMAP_ELEMENTS and not _has_effects(
                tf.module):
            try:
                entry = _Compiled(basis_jacobian_program(pieces), "main_jac", tf, None)
            except BatchingError:
                entry = None
        if entry is not None:
            pass
        elif (copies * pieces.copy_size <= UNROLL_BUDGET or tf.lifted_values
                or any(is_dispatched(x) for x in leaves) or _has_effects(tf.module)):
            entry = _Compiled(pieces.program(), "main_jac", tf, None)
        else:
            entry = _Chunked(pieces, tf, max(1, UNROLL_BUDGET // max(1, pieces.copy_size)))
        n_blocks = plan.n_target * len(plan.wanted)

        def finish(result, args):
            result = own(result if isinstance(result, tuple) else (result,), args)
            return plan.assemble(list(result[:n_blocks]), result[n_blocks:])

        entry.finish = finish
        return entry

    def on_tape(call):
        nums = check_argnums(argnums, call.n_pos, name)
        return _jacobian_eager(call, name, mode, argnums, nums, has_aux, holomorphic, fname)

    t = _Transform(f, build, name, on_tape, statics=StaticArgs(f, None, None, name),
                   diff=argnums)
    t.module = lambda *args, **kwargs: t.specialize(t.bind(args, kwargs))[0].module
    return t


def _dtype(x):
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _jacobian_eager(call, name, mode, argnums, nums, has_aux, holomorphic, fname):
    """The Jacobian computed call by call (on the tape when the function has Python
    control flow on values): one JVP per input element, or one pullback per output
    element, each with a single nonzero input (one leaf at a time)."""
    from .api import vjp
    from .api_forward import jvp

    args = call.args
    leaves, tree = flatten(args)
    ranges = _leaf_ranges(args)
    out = call.fn(*args)
    out_leaves, out_tree = flatten(out)
    plan = _Plan(name, mode, argnums, has_aux, holomorphic, args, nums, out_tree, fname)
    plan.check([_dtype(leaves[i]) for i in plan.wanted],
               [_dtype(x) for x in out_leaves])
    wanted = plan.wanted
    del ranges

    def only(j, o=None):
        """The function of differentiated leaf j alone (output leaf o alone)."""
        def g(w):
            full = list(leaves)
            full[wanted[j]] = w
            outs = flatten(call.fn(*unflatten(tree, full)))[0][:plan.n_target]
            return outs[o] if o is not None else tuple(outs)
        return g

    blocks = {}
    for j, i in enumerate(wanted):
        x = leaves[i]
        xs, xd = _shape(x), _dtype(x)
        if mode == "fwd":
            n = int(np.prod(xs, dtype=np.int64))
            cols = [jvp(only(j), (x,), (_basis(xs, xd, k),))[1] for k in range(n)]
            for o in range(plan.n_target):
                ol = out_leaves[o]
                blocks[o, j] = _stack_block([c[o] for c in cols], -1, _shape(ol) + xs,
                                            _dtype(ol))
        else:
            for o in range(plan.n_target):
                ol = out_leaves[o]
                os_, od = _shape(ol), _dtype(ol)
                _, pull = vjp(only(j, o), x)
                n = int(np.prod(os_, dtype=np.int64))
                rows = [pull(_basis(os_, od, k))[0] for k in range(n)]
                blocks[o, j] = _stack_block(rows, 0, os_ + xs, xd)
    result = [blocks[o, j] for o in range(plan.n_target) for j in range(len(wanted))]
    result = [x if is_dispatched(x) else np.asarray(x) for x in result]
    return plan.assemble(result, out_leaves[plan.n_target:])


def jacfwd(f, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian of ``f`` by forward mode (one tangent per input element), with
    JAX's output structure (see the module docstring). Inputs must be real unless
    ``holomorphic=True`` (then inputs and outputs are complex and the result is
    f'(z)); ``has_aux`` returns ``(jacobian, aux)``."""
    return _jacobian(f, argnums, has_aux, holomorphic, "fwd", "jacfwd")


def jacrev(f, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian of ``f`` by reverse mode (one cotangent per output element), with
    JAX's output structure. Outputs must be real unless ``holomorphic=True``; for a
    real function of complex inputs the rows follow the gradient's convention
    (df/dx - i df/dy)."""
    return _jacobian(f, argnums, has_aux, holomorphic, "rev", "jacrev")


def hessian(f, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """``jacfwd(jacrev(f))``: forward over reverse; for a scalar f of argument x, an
    array of shape ``x.shape + x.shape`` (pytrees nest as in JAX)."""
    check_callable(f, "hessian")
    check_argnums_form(argnums, "hessian")
    h = jacfwd(jacrev(f, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)
    h.__name__ = f"hessian({getattr(f, '__name__', 'f')})"
    return h
