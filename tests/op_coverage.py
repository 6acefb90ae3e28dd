"""What the namespace cases (tests/cases_*.py) exercise of the op registry, shared by the
registry's completeness tests (tests/architecture/test_registry.py) and the op tests
(tests/ops/test_ops.py): the cases' traced programs, and ``TYPE_CHECKED``, the ops whose
kernels gave what their type rules said when the cases' programs ran binding by binding
(checked when this module is imported)."""

from __future__ import annotations

import numpy as np
from namespace_cases import collect

import chainrule as cr
from chainrule.ir import Call, Op


def traced_cases(grad: bool, with_args: bool = False) -> list:
    out = []
    for c in collect():
        if c.grad == grad or not grad:
            for args in c.args[:c.grad_sets if grad else None]:
                try:
                    m = cr.trace(c.fn, *args)
                except cr.ChainruleError:
                    continue  # a case whose function takes no array (creation functions)
                out.append((m, args) if with_args else m)
    return out


def _type_checked_run(module, args) -> set:
    """Run a straight-line traced module binding by binding, checking that every op's
    kernel returns what its type rule said (shape and dtype); the ops checked."""
    from chainrule.tree import flatten as _flatten

    fn = module["main"]
    env = dict(zip(fn.params, _flatten(tuple(args))[0]))

    def value(a):
        if isinstance(a, cr.ir.Var):
            return env[a]
        if isinstance(a, cr.ir.Tuple):
            return tuple(value(f) for f in a.fields)
        return a.data

    checked = set()
    for b in fn.body.bindings:
        v = b.value
        if isinstance(v, Call) and isinstance(v.callee, Op):
            with np.errstate(all="ignore"):
                out = v.callee.kernel(*[value(a) for a in v.args], **v.attrs)
            types = b.var.type.fields if isinstance(b.var.type, cr.ir.TupleType) else (
                b.var.type,)
            outs = out if isinstance(b.var.type, cr.ir.TupleType) else (out,)
            for o, t in zip(outs, types):
                o = np.asarray(o)
                assert o.shape == tuple(t.shape) and o.dtype == t.dtype.numpy, (
                    f"{v.callee.name}: kernel gives {o.dtype}{o.shape}, type rule {t!r}")
            checked.add(v.callee)
            env[b.var] = out
        elif isinstance(v, cr.ir.TupleGetItem):
            env[b.var] = value(v.tuple_value)[v.index]
        elif isinstance(v, (cr.ir.Var, cr.ir.Constant, cr.ir.Tuple)):
            env[b.var] = value(v)
        else:
            return checked  # control flow: checked elsewhere
    return checked


def _type_checked() -> set:
    out = set()
    for m, args in traced_cases(grad=False, with_args=True):
        out |= _type_checked_run(m, args)
    return out


TYPE_CHECKED = _type_checked()
