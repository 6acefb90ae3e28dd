"""``jit``: a function traced once per input signature, optimized and run as generated
code (or the reference interpreter, or on another array library)."""

from __future__ import annotations

from ..backend.array_api.namespaces import OnBackend, get_namespace
from ..backend.interpret import Interpreter
from ..checks import check_callable
from ..errors import (
    ArgumentError,
    RecordedValueError,
)
from ..frontend.capture import Unrepeatable
from ..frontend.polymorphic import specs_of as _polymorphic
from ..frontend.tracer import trace_function
from ..transform.cleanup.optimize import optimize
from ..tree import unflatten
from .arguments import StaticArgs
from .results import own
from .specialization import _Compiled
from .transformed import Transformed


def jit(f, backend: str = "codegen", static_argnums=None, static_argnames=None,
        polymorphic_shapes=None, eager_compile: bool | None = None):
    """Trace ``f`` once per input signature, optimize, and run the generated code
    (``backend="interpret"`` runs the reference interpreter instead). Python ints,
    bools and strings, and the arguments ``static_argnums`` / ``static_argnames``
    name, are static: baked into the program, which is traced again for a new value.

    ``polymorphic_shapes`` (JAX's: one specification per positional argument, e.g.
    ``("(b, 3)", None)``) makes the named dimensions symbols: one program serves
    every size of them (see ``docs/symbolic_shapes.md``).

    A new signature's first calls run the traced program in the interpreter; it is
    optimized and compiled when called often enough to pay that back
    (``chainrule.backend.tiered``); ``eager_compile=True`` compiles before the first
    call (for benchmarks; ``CHAINRULE_EAGER_COMPILE=1`` sets the default).

    >>> import numpy as np, chainrule.numpy as cnp
    >>> f = jit(lambda x: cnp.mean(x, axis=0), polymorphic_shapes=["(b, 3)"])
    >>> f(np.ones((2, 3))), f(np.ones((7, 3)))[0]
    (array([1., 1., 1.]), np.float64(1.0))
    >>> print(f.module(np.ones((5, 3))))
    def main(x: f64[b, 3]) -> f64[3]:
        lv0 = mean(x, axis=(0,))
        return lv0
    <BLANKLINE>
    """
    check_callable(f, "jit")
    if backend in ("numpy", "torch", "cupy", "dask"):  # arrays moved to that library
        return OnBackend(jit(f, "codegen", static_argnums, static_argnames),
                         get_namespace(backend))
    if backend not in ("codegen", "interpret"):
        raise ArgumentError(f"jit: unknown backend {backend!r}; use 'codegen', 'interpret', "
                            f"'numpy', 'torch', 'cupy' or 'dask'")
    statics = StaticArgs(f, static_argnums, static_argnames, "jit")

    def build(call, leaves):
        tf = trace_function(call.fn, call.args, capture=True, leaf_types=t.leaf_types(call))
        entry = _Compiled(tf.module, "main", tf, None, prepare=optimize, eager=eager_compile)
        if backend == "interpret":
            module = entry.module
            interp = Interpreter(module)
            entry._callable = lambda *a: interp.call_function(module["main"], list(a), {})

        def finish(result, args):
            result = own(result, args)
            if tf.out_tree.kind is None:
                return result
            return unflatten(tf.out_tree, list(result))

        entry.finish = finish
        return entry

    def uncompiled(call):  # random draws compiled code cannot repeat: run f itself
        return call.fn(*call.args)

    t = Transformed(f, build, "jit", uncompiled, fallback_for=(Unrepeatable, RecordedValueError),
                   statics=statics)
    t.poly = _polymorphic(f, polymorphic_shapes, "jit")
    t.module = lambda *args, **kwargs: t.specialize(t.bind(args, kwargs))[0].module
    t.source = lambda *args, **kwargs: _source_of(t.specialize(t.bind(args, kwargs))[0])
    return t


def _source_of(entry) -> str:
    return entry.tiers.compile().source
