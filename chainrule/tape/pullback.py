"""The pullback of one recorded graph structure, and the cache of them.

A ``Pullback`` is built from a laid-out graph by the ``gradient`` machinery
(``vjp_module``): the reverse sweep becomes a function ``backward(saved
forward values..., cotangent) -> leaf gradients``. A structure is first
backpropagated eagerly, rule by rule (``eager.py``), which costs far less than
building and compiling a pullback for a graph that may never come back (a
dynamic graph, a huge one-off tape); once it has been seen
``policy.sightings_before_codegen`` times (twice, for up to 10,000 ops), its
pullback is built, optimized and compiled to Python source once, and every later
backward of that structure runs the generated code. Derivatives of derivatives
(``create_graph=True``) run the pullback in the interpreter, recording.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict

from ..backend import policy
from ..backend.codegen.generate import compile_module
from ..backend.execution import KERNEL_ERRORS
from ..backend.interpret import Interpreter
from ..errors import GradientError
from ..ir.nodes import Call, Function, Module
from ..ir.visitor import free_vars
from ..transform.cleanup.optimize import optimize
from ..transform.reverse.gradient import vjp_module

STATS = {
    "eager_backwards": 0,  # first backwards of a structure, run by applying the rules
    "backward_compilations": 0,  # pullbacks built (gradient pass runs), one per structure
    "backward_codegen": 0,  # pullbacks optimized and compiled (structure seen again)
    "last_nodes": 0,
    "last_ops": Counter(),
}



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
            # a dynamic graph that changes every step must not grow the cache without bound
            while len(self._entries) > 1 and (
                    len(self._entries) > policy.PULLBACK_CACHE_ENTRIES
                    or self._nodes > policy.PULLBACK_CACHE_NODES):
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
        module = layout.module()
        main = module["main"]
        # the recorded inputs (arrays that do not require grad) are constants
        vm = vjp_module(module, "main", wrt=range(len(layout.leaves)))["main_vjp"]
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
        self._generated = None
        STATS["backward_compilations"] += 1

    # -- running ----------------------------------------------------------------------
    def compile(self) -> None:
        """Optimize the pullback and generate code for it (for a structure seen again)."""
        self.module = optimize(self.module)
        self._generated = compile_module(self.module, "backward")
        # the generated function itself: the tape passes arrays of the declared types
        self.compiled = self._generated.fn
        STATS["backward_codegen"] += 1

    def run(self, args: list):
        """Run the generated code (the tape compiles a pullback before it runs it without
        recording: ``graph._run``)."""
        try:
            return self.compiled(*args)
        except KERNEL_ERRORS as exc:
            raise self._generated.compiled.error("backward", exc) from exc

    def run_recording(self, args: list):
        """Run with op calls dispatched, so tape tensors record them (create_graph)."""
        return Interpreter(self.module, dispatch=True).call_function(
            self.module["backward"], args, {})
