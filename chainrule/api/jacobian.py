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
derivative program on the rows of an identity, as JAX does; ``api.vmap``). The
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

from ..checks import check_argnums, check_argnums_form, check_callable
from ..errors import GradientError
from ..frontend.polymorphic import specs_of
from ..frontend.tracer import trace_function
from ..ir.op import is_dispatched
from ..ir.types import TensorType
from ..ir.visitor import largest_array
from ..transform.vmap.types import BatchingError
from ..tree import flatten, unflatten
from .arguments import StaticArgs
from .grad_program import _leaf_ranges
from .jacobian_program import _basis, _Chunked, _has_effects, _Pieces, _stack_block, has_loop
from .results import own
from .reverse import _leaf_types
from .specialization import _Compiled
from .transformed import Transformed
from .vmap import basis_jacobian_program

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


# bindings of derivative code (copies times their size) one program may hold; past it,
# a program for a chunk of basis vectors is compiled once and run chunk by chunk
UNROLL_BUDGET = 4096
# The derivative program batched over every basis vector by the vmap pass (one copy,
# whole-batch array ops: faster than the unrolled copies at every size measured, and far
# quicker to compile; benchmarks/vmap.py) holds arrays up to copies times its largest
# value; past this many elements, chunks of basis vectors run one after the other instead
VMAP_ELEMENTS = 2**26


# -- the transforms ---------------------------------------------------------------------


def _jacobian(f, argnums, has_aux: bool, holomorphic: bool, mode: str, name: str,
              polymorphic_shapes=None):
    check_callable(f, name)
    check_argnums_form(argnums, name)
    fname = getattr(f, "__name__", "f")

    def build(call, leaves):
        nums = check_argnums(argnums, call.n_pos, name)
        tf = trace_function(call.fn, call.args, capture=True, leaf_types=t.leaf_types(call))
        plan = _Plan(name, mode, argnums, has_aux, holomorphic, call.args, nums,
                     tf.out_tree, fname)
        main = tf.module["main"]
        out_types = _leaf_types(main.ret_type)
        for i in plan.wanted:
            if not isinstance(main.params[i].type, TensorType):
                raise GradientError(f"{name}: argument leaf {i} is not an array")
        plan.check([main.params[i].type.dtype.numpy for i in plan.wanted],
                   [t.dtype.numpy for t in out_types])
        # forward mode through loops batches the jvp program (JAX's jacfwd): linearized,
        # a loop would push its residuals on stacks for a second loop to read (saddle's
        # fr took 33 ms so, 0.22 so); unrolled copies take the linearized program
        batch_jvp = mode == "fwd" and has_loop(tf.module) and not _has_effects(tf.module)
        pieces = _Pieces(plan, tf, unzip=not batch_jvp)
        copies = pieces.copies()
        entry = None
        if copies is None or copies * largest_array(pieces.module) <= VMAP_ELEMENTS and not (
                _has_effects(tf.module)):
            try:
                entry = _Compiled(basis_jacobian_program(pieces), "main_jac", tf, None)
            except BatchingError:
                if copies is None and not batch_jvp:  # only it serves every size
                    raise
        if entry is None and batch_jvp:
            pieces = _Pieces(plan, tf)
            if copies is None:
                entry = _Compiled(basis_jacobian_program(pieces), "main_jac", tf, None)
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

    t = Transformed(f, build, name, on_tape, statics=StaticArgs(f, None, None, name),
                   diff=argnums)
    t.poly = specs_of(f, polymorphic_shapes, name)
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
    from .forward import jvp
    from .reverse import vjp

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


def jacfwd(f, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           polymorphic_shapes=None):
    """The Jacobian of ``f`` by forward mode (one tangent per input element), with
    JAX's output structure (see the module docstring). Inputs must be real unless
    ``holomorphic=True`` (then inputs and outputs are complex and the result is
    f'(z)); ``has_aux`` returns ``(jacobian, aux)``. ``polymorphic_shapes`` as on
    ``jit`` (one program for every size; a differentiated leaf is then static or of
    one symbolic dimension, ``f64[n]``: n basis vectors)."""
    return _jacobian(f, argnums, has_aux, holomorphic, "fwd", "jacfwd", polymorphic_shapes)


def jacrev(f, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           polymorphic_shapes=None):
    """The Jacobian of ``f`` by reverse mode (one cotangent per output element), with
    JAX's output structure. Outputs must be real unless ``holomorphic=True``; for a
    real function of complex inputs the rows follow the gradient's convention
    (df/dx - i df/dy). ``polymorphic_shapes`` as on ``jacfwd`` (for the outputs)."""
    return _jacobian(f, argnums, has_aux, holomorphic, "rev", "jacrev", polymorphic_shapes)


def hessian(f, argnums=0, has_aux: bool = False, holomorphic: bool = False,
            polymorphic_shapes=None):
    """``jacfwd(jacrev(f))``: forward over reverse; for a scalar f of argument x, an
    array of shape ``x.shape + x.shape`` (pytrees nest as in JAX)."""
    check_callable(f, "hessian")
    check_argnums_form(argnums, "hessian")
    h = jacfwd(jacrev(f, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic,
               polymorphic_shapes)
    h.__name__ = f"hessian({getattr(f, '__name__', 'f')})"
    return h
