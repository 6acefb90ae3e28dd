"""One program for every size, for the transforms called once per use (``vjp``, ``jvp``,
``linearize``): with ``polymorphic_shapes`` their program is traced at symbolic types
and kept per function, so a later call at another size of the named dimensions
only runs it (``jit``, ``grad``, ``vmap`` and the Jacobians keep theirs in their
``Transformed``). Without ``polymorphic_shapes`` the program is kept per signature, so
a later call at the same shapes only runs it.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> calls = []
>>> def f(x):
...     calls.append(1)
...     return cnp.sin(x) * 2.0
>>> for n in (1, 7, 1000):
...     y, t = cr.jvp(f, (np.zeros(n),), (np.ones(n),), polymorphic_shapes=["(n,)"])
>>> len(calls), t.shape
(1, (1000,))
"""

from __future__ import annotations

import weakref

from ..backend import policy
from ..frontend.capture import Stale
from ..frontend.polymorphic import leaf_types, specs_of
from ..ir.op import is_dispatched
from ..tree import flatten
from .arguments import leaf_signature

# f -> {(transform, argument structure, symbolic signature): program}; entries go with f
_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def symbolic_types(f, polymorphic_shapes, name: str, args) -> list | None:
    """One symbolic type (or None: the actual type) per leaf of ``args`` under ``f``'s
    ``polymorphic_shapes`` (an ``@script`` function's annotations by default); None
    without them, or on traced values and tape tensors (whose sizes are the trace's)."""
    specs = specs_of(f, polymorphic_shapes, name)
    if specs is None:
        return None
    leaves = flatten(tuple(args))[0]
    if any(is_dispatched(x) or getattr(x, "requires_grad", False) for x in leaves):
        return None
    types = leaf_types(specs, tuple(args))
    return types + [None] * (len(leaves) - len(types))


def run_cached(f, name: str, args, types, build, run):
    """``run(program)`` with the program of ``f`` for these argument types, ``build()``
    once per signature (the symbolic ``types`` where given, the leaves' shapes and
    dtypes otherwise) and kept with ``f``, as ``grad`` keeps its specializations: a
    ``jvp``/``vjp``/``linearize`` of the same function called in a loop traces it once.
    Not kept: a program built on traced values or tape tensors (the enclosing trace or
    tape holds it), or one that read values of an enclosing trace. A program whose
    captured values changed (``Stale``) is built again."""
    leaves, tree = flatten(tuple(args))
    if any(is_dispatched(x) or getattr(x, "requires_grad", False) for x in leaves):
        return run(build())
    if types is None:
        types = [None] * len(leaves)
    key = (name, tree, tuple(leaf_signature(x) if t is None else t
                             for x, t in zip(leaves, types)))
    try:
        per_f = _PROGRAMS.setdefault(f, {})
    except TypeError:  # not weakly referenceable: no cache
        per_f = {}
    program = per_f.get(key)
    if program is not None:
        try:
            return run(program)
        except Stale:  # what f reads from outside its arguments changed: trace again
            del per_f[key]
    program = build()
    if not getattr(program, "lifted", False) and not getattr(program, "outer", False):
        if len(per_f) >= policy.MAX_PROGRAMS:
            del per_f[next(iter(per_f))]
        per_f[key] = program
    return run(program)


__all__ = ["run_cached", "symbolic_types"]
