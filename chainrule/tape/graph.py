"""From recorded nodes to IR, and backward on the tape.

``backward(loss)`` walks back from the loss (iteratively) to the nodes it
depends on — nothing recorded for other results is touched — and lays them
out as one IR function (a Wengert list): leaves requiring grad and other
array inputs become parameters. The ``gradient`` machinery turns it into a
pullback, cached per *structure* (ops, attributes, wiring, types) and reused
by every later backward of the same shape: interpreted the first time, code
generated when the structure comes back (pullback.py).
"""

from __future__ import annotations

import contextlib
import gc
import operator
from collections import Counter

import numpy as np

from ..backend import policy
from ..errors import ChainruleError, GradientError
from ..ir.builder import Builder
from ..ir.infer import type_call
from ..ir.nodes import Constant, Module, TupleGetItem
from ..ir.op import PYTHON_SCALARS, attrs_key, evaluate, weak_scalar_dtype
from ..ir.types import DType, TensorType, TupleType
from .eager import eager_gradients
from .pullback import STATS, Pullback, PullbackCache
from .tensor import MODE, Tensor, _split_tuple

FREED = ("freed",)  # a node's args after backward without retain_graph
_BACKWARD_CACHE = PullbackCache()


@contextlib.contextmanager
def _gc_paused():
    """No cyclic GC while a backward builds and runs its pullback: it allocates many
    long-lived objects (IR nodes), and each collection would walk all of them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _freed_error() -> ChainruleError:
    return ChainruleError("trying to backward through the graph a second time (its "
                          "intermediate values were freed); pass retain_graph=True to "
                          "the first backward")


def topological(root: Tensor, include=None, cut=None) -> list[Tensor]:
    """Recorded tensors ``root`` depends on (those ``include`` accepts, default: those
    requiring grad, minus the ids in ``cut``), operands first; no recursion.

    Recording order is a topological order, so this is a plain reachability walk
    sorted by each node's sequence number.
    """
    if include is None:
        if cut is None:
            include = _requires_grad
        else:
            def include(u):
                return u.requires_grad and id(u) not in cut
    if root.node is None or not include(root):
        return []
    seen = {id(root)}
    out = [root]
    stack = [root]
    pop, push, add, keep = stack.pop, stack.append, seen.add, out.append
    while stack:
        args = pop().node.args
        if args is FREED:
            raise _freed_error()
        for a in args:
            if type(a) is Tensor and a.node is not None and id(a) not in seen \
                    and include(a):
                add(id(a))
                push(a)
                keep(a)
    out.sort(key=_SEQ_OF)
    return out


_SEQ_OF = operator.attrgetter("node.seq")


def _requires_grad(u: Tensor) -> bool:
    return u.requires_grad


def _aval_of(x):
    if isinstance(x, Tensor):
        return x.aval()
    arr = np.asarray(x)
    return arr.shape, arr.dtype


def _ttype(aval) -> TensorType:
    return TensorType(aval[0], DType(aval[1]))


def infer_aval(t: Tensor):
    """Shape and dtype of a lazily recorded tensor (type rules only, no compute)."""
    for u in topological(t, lambda u: u._value is None and u._type is None):
        node = u.node
        if node.op is None:
            parent = node.args[0].aval()
            u._type = parent[node.attrs["index"]]
            continue
        types = []
        for a in node.args:
            if type(a) in PYTHON_SCALARS:
                strong = [_aval_of(b)[1] for b in node.args if type(b) not in PYTHON_SCALARS]
                types.append(TensorType((), DType(weak_scalar_dtype(a, strong))))
            else:
                types.append(_ttype(_aval_of(a)))
        attrs, out = type_call(node.op, types, node.attrs)
        node.attrs = dict(attrs)
        u._type = ([(f.shape, f.dtype.numpy) for f in out.fields]
                   if isinstance(out, TupleType) else (out.shape, out.dtype.numpy))
    return t._type


def force(t: Tensor) -> None:
    """Compute a lazily recorded tensor and what it needs, in order."""
    for u in topological(t, lambda u: u._value is None):
        node = u.node
        if node.op is None:
            u._value = node.args[0].value()[node.attrs["index"]]
            continue
        values = [a.value() if isinstance(a, Tensor) else a for a in node.args]
        u._value, node.attrs = evaluate(node.op, values, node.attrs, with_attrs=True)


class _Layout:
    """The recorded subgraph of a loss as an IR function, plus its structural key."""

    def __init__(self, loss: Tensor, wrt=None):
        self.cut = None if wrt is None else {id(t) for t in wrt}
        self.leaves: list[Tensor] = list(wrt or [])  # parameters: leaves, then inputs
        self.position: dict[int, tuple] = {id(t): ("leaf", i) for i, t in enumerate(self.leaves)}
        self.nodes = nodes = topological(loss, cut=self.cut)
        self.loss = loss
        self.inputs: list = []
        position = self.position
        get = position.get
        ref = self._ref
        # the structure, flat: per node a header (its Signature: op, attributes, operand
        # shapes and dtypes, which fix the number of operands that follow), then where
        # each operand comes from
        key = []
        push = key.append
        for k, t in enumerate(nodes):
            node = t.node
            args = node.args
            if node.sig is not None:
                push(node.sig)
            elif node.op is None:
                push(("item", node.attrs["index"]))
            else:  # recorded lazily: no signature yet
                ak = attrs_key(node.attrs) if node.attrs else ()
                push((node.op, len(args), object() if ak is None else ak))
            for a in args:
                push(get(id(a)) or ref(a))
            position[id(t)] = ("node", k)
        self.key = StructureKey((tuple(key), tuple([_aval_key(x) for x in self.leaves
                                                    + self.inputs]), self._ref(loss)))

    def _ref(self, a):
        position = self.position
        ref = position.get(id(a))
        if ref is not None and isinstance(a, Tensor):
            return ref
        ta = type(a)
        if ta in PYTHON_SCALARS:  # exact: 1, 1.0 and True differ, and so do -0.0 and 0.0
            return ("scalar", ta.__name__, a.hex() if ta is float else a)
        if ref is not None:
            return ref
        if isinstance(a, Tensor) and a.requires_grad and a.node is None and self.cut is None:
            ref = position[id(a)] = ("leaf", len(self.leaves))
            self.leaves.append(a)
            return ref
        ref = position[id(a)] = ("input", len(self.inputs))
        self.inputs.append(a)
        return ref

    def module(self) -> Module:
        b = Builder()
        params = [b.param(f"w{i}", _ttype(_aval_of(x))) for i, x in enumerate(self.leaves)]
        params += [b.param(f"in{i}", _ttype(_aval_of(x))) for i, x in enumerate(self.inputs)]
        self.param_vars = params
        n_leaves = len(self.leaves)
        position = self.position
        node_vars = []
        constants: dict = {}  # one Constant per scalar value and dtype context
        for t in self.nodes:
            node = t.node
            atoms = []
            strong = None
            for a in node.args:
                ref = position.get(id(a)) if type(a) not in PYTHON_SCALARS else None
                if ref is None:
                    if strong is None:
                        strong = tuple([_aval_of(x)[1] for x in node.args
                                        if type(x) not in PYTHON_SCALARS])
                    ckey = (type(a), a.hex() if type(a) is float else a, strong)
                    c = constants.get(ckey)
                    if c is None:
                        c = constants[ckey] = Constant(np.asarray(a, weak_scalar_dtype(a,
                                                                                   strong)))
                    atoms.append(c)
                elif ref[0] == "node":
                    atoms.append(node_vars[ref[1]])
                elif ref[0] == "leaf":
                    atoms.append(params[ref[1]])
                else:
                    atoms.append(params[n_leaves + ref[1]])
            if node.op is None:
                var = b.emit(TupleGetItem(atoms[0], node.attrs["index"]))
            else:
                var = b.call(node.op, atoms, node.attrs)
            node_vars.append(var)
        self.node_vars = node_vars
        ref = position.get(id(self.loss))
        if ref is None or ref[0] != "node":
            raise GradientError("backward: the tensor does not depend on anything that "
                                "requires grad")
        return b.finish_module("main", node_vars[ref[1]])

    def value_of(self, ref):
        kind, i = ref
        if kind == "node":
            return self.nodes[i]
        if kind == "leaf":
            return self.leaves[i]
        return self.inputs[i]


class StructureKey:
    """A recorded structure as a cache key: its parts, with their hash computed once
    (a tape's key has an entry per operand, and the cache hashes it more than once)."""

    __slots__ = ("parts", "hash")

    def __init__(self, parts: tuple):
        self.parts = parts
        self.hash = hash(parts)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other) -> bool:
        return (type(other) is StructureKey and self.hash == other.hash
                and self.parts == other.parts)


def _aval_key(x):
    shape, dtype = _aval_of(x)
    return (tuple(shape), dtype)  # the dtype object: str(dtype) is a slow Python call


def record_module(t: Tensor) -> Module:
    """The recorded computation of ``t`` as a Module (leaves ``w*``, inputs ``in*``)."""
    if t.node is None:
        raise ChainruleError("a leaf tensor has no recorded computation")
    try:
        return _Layout(t).module()
    except ChainruleError as exc:
        if "second time" in str(exc):
            raise ChainruleError("graph(): backward() already freed this graph; call graph() "
                                 "first or pass retain_graph=True to backward()") from None
        raise


def _seed(loss: Tensor, gradient):
    shape, dtype = loss.aval()
    if gradient is None:
        if shape != ():
            raise GradientError(f"grad can be implicitly created only for scalar outputs; "
                                f"this output has shape {shape}: pass backward(gradient=...)")
        return np.ones((), dtype)
    if isinstance(gradient, Tensor):
        seed = gradient
        got = gradient.aval()
    else:
        seed = gradient if type(gradient) in PYTHON_SCALARS else np.asarray(gradient)
        got = (np.shape(seed), np.asarray(seed).dtype)
    if tuple(got[0]) != tuple(shape):
        raise GradientError(f"backward: gradient of shape {tuple(got[0])} for an output "
                            f"of shape {tuple(shape)}")
    if type(seed) in PYTHON_SCALARS:
        return np.asarray(seed, dtype)
    if np.dtype(got[1]) != np.dtype(dtype):
        raise GradientError(f"backward: gradient of dtype {got[1]} for an output of dtype "
                            f"{np.dtype(dtype)} (chainrule does not cast it)")
    return seed


class _Seen:
    """A structure backpropagated eagerly so far: its pullback is built once it has been
    seen ``due`` times."""

    compiled = None

    def __init__(self, layout: _Layout):
        self.n_nodes = len(layout.nodes)
        self.count = 1
        self.due = policy.sightings_before_codegen(self.n_nodes)


def _run(layout: _Layout, seed, create_graph: bool):
    """Gradients for ``layout.leaves``: the first time a structure is seen, the VJP
    rules applied eagerly (eager.py); when it comes back, its pullback, built by the
    gradient pass and compiled to code once, then reused (pullback.py)."""
    force(layout.loss)
    pb = _BACKWARD_CACHE.get(layout.key)
    if (pb is None or type(pb) is _Seen) and not create_graph:
        if isinstance(seed, Tensor):
            seed = np.asarray(seed.value(), layout.loss.aval()[1])
        if pb is None or pb.count + 1 < pb.due:
            if pb is None:
                _BACKWARD_CACHE.put(layout.key, _Seen(layout))
            else:
                pb.count += 1
            STATS["eager_backwards"] += 1
            STATS["last_nodes"] = len(layout.nodes)
            STATS["last_ops"] = Counter(t.node.op.name for t in layout.nodes
                                        if t.node.op is not None)
            return _eagerly(layout, seed)
        pb = Pullback(layout)  # the structure came back: build and compile its pullback
        pb.compile()
        _BACKWARD_CACHE.put(layout.key, pb)
    elif pb is None or type(pb) is _Seen:
        pb = Pullback(layout)  # derivatives of derivatives: interpreted while recording
        _BACKWARD_CACHE.put(layout.key, pb)
    elif pb.compiled is None and not create_graph:
        pb.compile()  # the structure came back: generate code for it once
    STATS["last_nodes"] = len(layout.nodes)
    STATS["last_ops"] = pb.ops
    if create_graph:
        return pb.run_recording(_arguments(pb, layout, tensors=True) + [seed])
    if isinstance(seed, Tensor):
        seed = np.asarray(seed.value(), layout.loss.aval()[1])
    old = MODE.grad_enabled
    MODE.grad_enabled = False
    try:
        return pb.run(_arguments(pb, layout, tensors=False) + [seed])
    finally:
        MODE.grad_enabled = old


def _eagerly(layout: _Layout, seed) -> list:
    old = MODE.grad_enabled
    MODE.grad_enabled = False
    try:
        return eager_gradients(layout, seed)
    finally:
        MODE.grad_enabled = old


def _arguments(pb: Pullback, layout: _Layout, tensors: bool) -> list:
    """The pullback's arguments: the saved values it reads, from the recorded graph."""
    leaves, inputs, nodes, n_leaves = layout.leaves, layout.inputs, layout.nodes, pb.n_leaves
    out = []
    for kind, i in pb.sources:
        if kind == "node":
            x = nodes[i]
        else:
            x = leaves[i] if i < n_leaves else inputs[i - n_leaves]
        if isinstance(x, Tensor):
            if tensors:  # a tuple-valued op's result: a tuple of its recorded items
                out.append(_split_tuple(x) if isinstance(x._value, tuple) else x)
                continue
            x = x.value()
        out.append(x if type(x) is np.ndarray or type(x) is tuple else np.asarray(x))
    return out


def backward(loss: Tensor, gradient=None, retain_graph: bool = False,
             create_graph: bool = False) -> None:
    if not loss.requires_grad:
        raise GradientError("backward: the tensor does not require grad (no input it "
                            "depends on has requires_grad=True)")
    if loss.node is None:  # a leaf: its gradient is the seed
        seed = np.ones(loss.shape, loss.dtype) if gradient is None else np.asarray(gradient)
        _accumulate(loss, seed)
        return
    with _gc_paused():
        layout = _Layout(loss)
        grads = _run(layout, _seed(loss, gradient), create_graph)
    for leaf, g in zip(layout.leaves, grads):
        _accumulate(leaf, g)
    if not retain_graph and not create_graph:
        for t in layout.nodes:
            t.node.args = FREED


def depends_on_others(roots, wrt, level: int) -> bool:
    """Whether a recorded tensor among ``roots`` depends on a leaf that requires grad
    other than those in ``wrt``, made outside the tape transform at ``level`` and those
    nested in it: a user's tensor, or a value of an enclosing derivative (a closure of
    ``grad`` run on the tape inside another ``grad``), whose derivative must go on
    flowing, so the results that depend on it stay recorded. The leaves a nested
    transform made for itself are dead ends here."""
    cut = {id(t) for t in wrt}
    for root in roots:
        if type(root) is not Tensor or not root.requires_grad or id(root) in cut:
            continue
        if root.node is None:
            return root._level < level
        for t in topological(root, cut=cut):
            for a in t.node.args:
                if (type(a) is Tensor and a.requires_grad and a.node is None
                        and id(a) not in cut and a._level < level):
                    return True
    return False


def grad_tensors(out: Tensor, wrt, gradient=None, create_graph: bool = False) -> list:
    """d out / d t for each tensor t in ``wrt`` (any recorded tensors, not only
    leaves), without touching ``.grad`` (like ``torch.autograd.grad``)."""
    wrt = list(wrt)
    if not isinstance(out, Tensor) or not out.requires_grad:
        return [np.zeros(t.shape, t.dtype) for t in wrt]
    if any(out is t for t in wrt):
        seed = _seed(out, gradient)
        return [seed if out is t else np.zeros(t.shape, t.dtype) for t in wrt]
    with _gc_paused():
        layout = _Layout(out, wrt)
        if not layout.nodes:
            return [np.zeros(t.shape, t.dtype) for t in wrt]
        # the pullback also returns the adjoints of float inputs that are not in wrt
        return list(_run(layout, _seed(out, gradient), create_graph))[:len(wrt)]


def _accumulate(leaf: Tensor, g) -> None:
    if leaf.grad is None:
        leaf.grad = g if isinstance(g, Tensor) else np.array(g, copy=True)
    else:
        leaf.grad = leaf.grad + g
