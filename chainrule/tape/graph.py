"""From recorded nodes to IR, and backward on the tape.

``backward(loss)`` walks back from the loss (iteratively) to the nodes it
depends on — nothing recorded for other results is touched — and lays them
out as one IR function (a Wengert list): leaves requiring grad and other
array inputs become parameters. The ``gradient`` machinery turns it into a
pullback; the pullback is compiled once per *structure* (ops, attributes,
wiring, types) and reused by every later backward of the same shape.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..errors import ChainruleError, GradientError
from ..ir.builder import Builder
from ..ir.nodes import Call, Constant, Function, Module, TupleGetItem, Var
from ..ir.types import DType, TensorType, TupleType
from ..ir.visitor import free_vars
from ..ops.common import PYTHON_SCALARS, evaluate, weak_scalar_dtype
from .tensor import MODE, Node, Tensor

FREED = ("freed",)  # a node's args after backward without retain_graph
STATS = {"backward_compilations": 0, "last_nodes": 0, "last_ops": Counter()}
_BACKWARD_CACHE: dict = {}


def _parents(node: Node):
    if node.args is FREED:
        raise ChainruleError("trying to backward through the graph a second time (its "
                             "intermediate values were freed); pass retain_graph=True to "
                             "the first backward")
    for a in node.args:
        if isinstance(a, Tensor):
            yield a


def topological(root: Tensor, include) -> list[Tensor]:
    """Recorded tensors ``root`` depends on, operands first; no recursion."""
    order, state = [], {}
    stack = [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if id(t) in state or t.node is None or not include(t):
            continue
        state[id(t)] = True
        stack.append((t, True))
        for p in _parents(t.node):
            if id(p) not in state:
                stack.append((p, False))
    return order


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
        attrs, out = node.op.type_call(types, node.attrs)
        node.attrs = attrs
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
        cut = self.cut
        include = (lambda u: u.requires_grad) if cut is None else (
            lambda u: u.requires_grad and id(u) not in cut)
        self.nodes = sorted(topological(loss, include), key=lambda u: u.node.seq)
        self.loss = loss
        self.inputs: list = []
        key = []
        for t in self.nodes:
            node = t.node
            refs = []
            for a in node.args:
                refs.append(self._ref(a))
            if node.op is None:
                key.append(("item", refs[0], node.attrs["index"]))
            else:
                key.append((node.op.name, tuple(refs), _attrs_key(node.attrs)))
            self.position[id(t)] = ("node", len(key) - 1)
        self.key = (tuple(key), tuple(_aval_key(x) for x in self.leaves + self.inputs),
                    self._ref(loss))

    def _ref(self, a):
        if isinstance(a, Tensor) and id(a) in self.position:
            return self.position[id(a)]
        if type(a) in PYTHON_SCALARS:
            return ("scalar", type(a).__name__, a)
        if isinstance(a, Tensor) and a.requires_grad and a.node is None and self.cut is None:
            self.position[id(a)] = ("leaf", len(self.leaves))
            self.leaves.append(a)
            return self.position[id(a)]
        self.position[id(a)] = ("input", len(self.inputs))
        self.inputs.append(a)
        return self.position[id(a)]

    def module(self) -> Module:
        b = Builder()
        params = [b.param(f"w{i}", _ttype(_aval_of(x))) for i, x in enumerate(self.leaves)]
        params += [b.param(f"in{i}", _ttype(_aval_of(x))) for i, x in enumerate(self.inputs)]
        self.param_vars = params
        env = {}
        node_vars = []
        for t in self.nodes:
            node = t.node
            atoms = []
            for a in node.args:
                ref = self.position.get(id(a)) if type(a) not in PYTHON_SCALARS else None
                if ref is None:
                    strong = [_aval_of(x)[1] for x in node.args if type(x) not in PYTHON_SCALARS]
                    atoms.append(Constant(np.asarray(a, weak_scalar_dtype(a, strong))))
                elif ref[0] == "node":
                    atoms.append(node_vars[ref[1]])
                elif ref[0] == "leaf":
                    atoms.append(params[ref[1]])
                else:
                    atoms.append(params[len(self.leaves) + ref[1]])
            if node.op is None:
                var = b.emit(TupleGetItem(atoms[0], node.attrs["index"]))
            else:
                var = b.call(node.op, atoms, node.attrs)
            node_vars.append(var)
            env[id(t)] = var
        self.node_vars = node_vars
        result = env.get(id(self.loss))
        if result is None:
            raise GradientError("backward: the tensor does not depend on anything that "
                                "requires grad")
        return b.finish_module("main", result)

    def value_of(self, ref):
        kind, i = ref
        if kind == "node":
            return self.nodes[i]
        if kind == "leaf":
            return self.leaves[i]
        return self.inputs[i]


def _attrs_key(attrs):
    return tuple(sorted((k, _hashable(v)) for k, v in attrs.items()))


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(e) for e in v)
    return v


def _aval_key(x):
    shape, dtype = _aval_of(x)
    return (tuple(shape), str(dtype))


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


class _CompiledBackward:
    """A pullback for one graph structure: ``run(values..., cotangent) -> leaf grads``."""

    def __init__(self, layout: _Layout):
        from ..api import compile_function, optimize
        from ..transform.gradient import vjp_module

        module = layout.module()
        main = module["main"]
        vm = vjp_module(module, "main")["main_vjp"]
        forward = vm.body.bindings[:-1]
        pullback: Function = vm.body.bindings[-1].value
        if len(forward) != len(main.body.bindings):
            raise GradientError("internal: the tape's forward copy is not one-to-one")
        where = {p: ("param", i) for i, p in enumerate(vm.params)}
        for i, b in enumerate(forward):
            where[b.var] = ("node", i)
        self.sources = [where[v] for v in free_vars(pullback)]
        n_leaves = len(layout.leaves)
        self.n_leaves = n_leaves
        params = [Var(v.name, v.type) for v in free_vars(pullback)]
        from ..ir.visitor import Mutator

        m = Mutator(Module())
        m.builder = Builder()
        for old, new in zip(free_vars(pullback), params):
            m.subst[old] = new
        ct = m.copy_var(pullback.params[0])
        m.builder.params = params + [ct]
        m.emit_bindings(pullback.body.bindings)
        result = m.atom(pullback.body.result)
        fn = m.builder.finish_function(result)
        self.module = optimize(Module({"backward": fn}))
        self.ops = Counter(b.value.callee.name for b in main.body.bindings
                           if isinstance(b.value, Call))
        self.fn = compile_function(self.module, "backward")
        STATS["backward_compilations"] += 1

    def arguments(self, layout: _Layout, tensors: bool):
        out = []
        for kind, i in self.sources:
            if kind == "param":
                x = layout.leaves[i] if i < self.n_leaves else layout.inputs[i - self.n_leaves]
            else:
                x = layout.nodes[i]
            if tensors:
                out.append(x if isinstance(x, Tensor) else np.asarray(x))
            else:
                out.append(x.value() if isinstance(x, Tensor) else np.asarray(x))
        return out


def _seed(loss: Tensor, gradient):
    shape, dtype = loss.aval()
    if gradient is None:
        if shape != ():
            raise GradientError(f"grad can be implicitly created only for scalar outputs; "
                                f"this output has shape {shape}: pass backward(gradient=...)")
        return np.ones((), dtype)
    seed = gradient if isinstance(gradient, Tensor) else np.asarray(gradient, dtype)
    if tuple(np.shape(seed)) != tuple(shape):
        raise GradientError(f"backward: gradient of shape {np.shape(seed)} for an output "
                            f"of shape {shape}")
    return seed


def _run(layout: _Layout, seed, create_graph: bool):
    """Gradients for ``layout.leaves``, from the cached compiled pullback."""
    force(layout.loss)
    compiled = _BACKWARD_CACHE.get(layout.key)
    if compiled is None:
        compiled = _CompiledBackward(layout)
        _BACKWARD_CACHE[layout.key] = compiled
    STATS["last_nodes"] = len(layout.nodes)
    STATS["last_ops"] = compiled.ops
    if create_graph:
        from ..backend.interpret import Interpreter

        args = compiled.arguments(layout, tensors=True) + [seed]
        return Interpreter(compiled.module, dispatch=True).call_function(
            compiled.module["backward"], args, {})
    old = MODE.grad_enabled
    MODE.grad_enabled = False
    try:
        return compiled.fn(*compiled.arguments(layout, tensors=False),
                           seed.value() if isinstance(seed, Tensor) else seed)
    finally:
        MODE.grad_enabled = old


def backward(loss: Tensor, gradient=None, retain_graph: bool = False,
             create_graph: bool = False) -> None:
    if not loss.requires_grad:
        raise GradientError("backward: the tensor does not require grad (no input it "
                            "depends on has requires_grad=True)")
    if loss.node is None:  # a leaf: its gradient is the seed
        seed = np.ones(loss.shape, loss.dtype) if gradient is None else np.asarray(gradient)
        _accumulate(loss, seed)
        return
    layout = _Layout(loss)
    grads = _run(layout, _seed(loss, gradient), create_graph)
    for leaf, g in zip(layout.leaves, grads):
        _accumulate(leaf, g)
    if not retain_graph and not create_graph:
        for t in layout.nodes:
            t.node.args = FREED


def grad_tensors(out: Tensor, wrt, gradient=None, create_graph: bool = False) -> list:
    """d out / d t for each tensor t in ``wrt`` (any recorded tensors, not only
    leaves), without touching ``.grad`` (like ``torch.autograd.grad``)."""
    wrt = list(wrt)
    if not isinstance(out, Tensor) or not out.requires_grad:
        return [np.zeros(t.shape, t.dtype) for t in wrt]
    if any(out is t for t in wrt):
        seed = _seed(out, gradient)
        return [seed if out is t else np.zeros(t.shape, t.dtype) for t in wrt]
    layout = _Layout(out, wrt)
    if not layout.nodes:
        return [np.zeros(t.shape, t.dtype) for t in wrt]
    return list(_run(layout, _seed(out, gradient), create_graph))


def _accumulate(leaf: Tensor, g) -> None:
    if leaf.grad is None:
        leaf.grad = g if isinstance(g, Tensor) else np.array(g, copy=True)
    else:
        leaf.grad = leaf.grad + g
