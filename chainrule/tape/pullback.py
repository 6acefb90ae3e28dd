"""The pullback of one recorded graph structure, and the cache of them.

A ``Pullback`` is built from a laid-out graph by the ``gradient`` machinery
(``vjp_module``): the reverse sweep becomes a function ``backward(saved
forward values..., cotangent) -> leaf gradients``. The first time a
structure is seen its pullback is interpreted straight away (with values
freed after their last use), which costs far less than optimizing and
generating code for a graph that may never come back (a dynamic graph, a
huge one-off tape). When the same structure comes back, the pullback is
optimized and compiled to Python source once, and every later backward of
that structure runs the generated code.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict

from ..errors import GradientError, InterpretError
from ..ir.nodes import Call, Constant, Function, Module, Tuple, TupleGetItem, Var
from ..ir.op import Op
from ..ir.visitor import free_vars

STATS = {
    "backward_compilations": 0,  # pullbacks built (gradient pass runs), one per structure
    "backward_codegen": 0,  # pullbacks optimized and compiled (structure seen again)
    "last_nodes": 0,
    "last_ops": Counter(),
}

# Cached structures: at most CACHE_ENTRIES pullbacks and CACHE_NODES recorded ops in
# all, least recently used dropped first (a dynamic graph that changes every step
# must not grow the cache without bound).
CACHE_ENTRIES = 128
CACHE_NODES = 2_000_000


class PullbackCache:
    """Structure key -> Pullback, least recently used first out."""

    def __init__(self):
        self._entries: OrderedDict = OrderedDict()
        self._nodes = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            pb = self._entries.get(key)
            if pb is not None:
                self._entries.move_to_end(key)
            return pb

    def put(self, key, pb: Pullback) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._nodes -= old.n_nodes
            self._entries[key] = pb
            self._nodes += pb.n_nodes
            while len(self._entries) > 1 and (len(self._entries) > CACHE_ENTRIES
                                              or self._nodes > CACHE_NODES):
                _, dropped = self._entries.popitem(last=False)
                self._nodes -= dropped.n_nodes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._nodes = 0

    def __len__(self) -> int:
        return len(self._entries)


class Pullback:
    """``run(values..., cotangent) -> leaf grads`` for one graph structure.

    ``sources`` say where each argument comes from: ``("param", i)`` (the i-th
    parameter of the recorded function: leaves, then inputs) or ``("node", i)``
    (the value of the i-th recorded node).
    """

    def __init__(self, layout):
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
        captured = free_vars(pullback)
        self.sources = [where[v] for v in captured]
        # the closure becomes a function of the values it captures (the variables are
        # the forward copy's; nothing else refers to them once ``vm`` is gone)
        fn = Function(list(captured) + list(pullback.params), pullback.body,
                      pullback.ret_type)
        self.module = Module({"backward": fn})
        self.n_leaves = len(layout.leaves)
        self.n_nodes = len(main.body.bindings)
        self.ops = Counter(b.value.callee.name for b in main.body.bindings
                           if isinstance(b.value, Call))
        self.compiled = None  # the generated function, once the structure came back
        self._plan = None
        STATS["backward_compilations"] += 1

    # -- running ----------------------------------------------------------------------
    def compile(self) -> None:
        """Optimize the pullback and generate code for it (for a structure seen again)."""
        from ..api import compile_function, optimize

        self.module = optimize(self.module)
        compiled = compile_function(self.module, "backward")
        # the generated function itself: the tape passes arrays of the declared types
        self.compiled = getattr(compiled, "fn", compiled)
        self._plan = None
        STATS["backward_codegen"] += 1

    def run(self, args: list):
        if self.compiled is not None:
            try:
                return self.compiled(*args)
            except (ArithmeticError, IndexError, ValueError, TypeError) as exc:
                raise InterpretError(f"backward (compiled) failed: {exc}") from exc
        plan = self._plan
        if plan is None:
            plan = self._plan = _plan(self.module["backward"])
        if plan is False:  # not straight-line code: the reference interpreter
            from ..backend.interpret import Interpreter

            return Interpreter(self.module).call_function(self.module["backward"], args, {})
        return _run_plan(plan, args)

    def run_recording(self, args: list):
        """Run with op calls dispatched, so tape tensors record them (create_graph)."""
        from ..backend.interpret import Interpreter

        return Interpreter(self.module, dispatch=True).call_function(
            self.module["backward"], args, {})


# -- straight-line interpretation, freeing values after their last use ----------------
_CALL, _GETITEM, _COPY = 0, 1, 2


def _plan(fn: Function):
    """Steps ``(kind, var, payload, dead)`` for a body of op calls, tuple fields and
    atoms (what a recorded graph's pullback is), or False for anything else."""

    def atom_ok(x):
        if type(x) is Tuple:
            return all(atom_ok(f) for f in x.fields)
        return type(x) in (Var, Constant)

    last: dict = {}
    bindings = fn.body.bindings
    steps = []
    for i, b in enumerate(bindings):
        v = b.value
        if type(v) is Call and isinstance(v.callee, Op) and all(atom_ok(a) for a in v.args):
            steps.append([_CALL, b.var, (v.callee, v.args, v.attrs), None])
            used = v.args
        elif type(v) is TupleGetItem and atom_ok(v.tuple_value):
            steps.append([_GETITEM, b.var, (v.tuple_value, v.index), None])
            used = (v.tuple_value,)
        elif atom_ok(v):
            steps.append([_COPY, b.var, v, None])
            used = (v,)
        else:
            return False
        for x in _flat(used):
            last[x] = i
    keep = set(_flat((fn.body.result,)))
    dead: list = [[] for _ in steps]
    for x, i in last.items():
        if x not in keep:
            dead[i].append(x)
    for i, step in enumerate(steps):
        if step[1] not in last and step[1] not in keep:
            dead[i].append(step[1])  # never used: freed at once
    for step, d in zip(steps, dead):
        step[3] = tuple(d)
    return (fn.params, steps, fn.body.result)


def _flat(atoms):
    out = []
    for x in atoms:
        if type(x) is Tuple:
            out.extend(_flat(x.fields))
        elif type(x) is Var:
            out.append(x)
    return out


def _value(x, env):
    if type(x) is Var:
        return env[x]
    if type(x) is Constant:
        return x.data
    return tuple(_value(f, env) for f in x.fields)


def _run_plan(plan, args):
    params, steps, result = plan
    if len(args) != len(params):
        raise InterpretError(f"backward takes {len(params)} arguments, got {len(args)}")
    env = dict(zip(params, args))
    for kind, var, payload, dead in steps:
        if kind == _CALL:
            op, atoms, attrs = payload
            values = [env[a] if type(a) is Var else _value(a, env) for a in atoms]
            try:
                env[var] = op.kernel(*values, **attrs)
            except (ArithmeticError, IndexError, ValueError, TypeError) as exc:
                raise InterpretError(f"{op.name} (binding {var.name}) failed: {exc}") from None
        elif kind == _GETITEM:
            env[var] = _value(payload[0], env)[payload[1]]
        else:
            env[var] = _value(payload, env)
        for x in dead:
            del env[x]
    return _value(result, env)
