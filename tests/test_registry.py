"""The op registry is complete and enforced: every op chainrule declares has its
derivative rules (or is declared non-differentiable), a codegen path that
computes bit for bit what the interpreter computes, a way in from the user
namespace, and an entry in the op catalog whose finite-difference checks run
in every mode (tests/test_rules_rev.py, tests/test_forward.py)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from namespace_cases import collect
from op_catalog import CATALOG, FORWARD_ONLY, TEXT, extra_modules
from test_codegen import check

import chainrule as cr
from chainrule import ops
from chainrule.ir import Call, Op
from chainrule.ir.visitor import nested_blocks
from chainrule.numpy._core import EXPOSED
from chainrule.rules import JVP, VJP
from chainrule.transform.forward.closures import STACK_FORWARD

BUILTIN = {op.name: op for op in ops.BUILTIN_OPS}


def _ops_in(module) -> set:
    found, stack = set(), [fn.body for fn in module.functions.values()]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            if isinstance(b.value, Call) and isinstance(b.value.callee, Op):
                found.add(b.value.callee)
            stack.extend(nested_blocks(b.value))
    return found


def _traced(catalog) -> dict:
    return {name: cr.trace(fn, *args) for name, (fn, args) in catalog.items()}


def _traced_cases(grad: bool, with_args: bool = False) -> list:
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
    for m, args in _traced_cases(grad=False, with_args=True):
        out |= _type_checked_run(m, args)
    return out


TYPE_CHECKED = _type_checked()


COVERED_FD = set().union(*map(_ops_in, _traced(CATALOG).values()),
                         *map(_ops_in, _traced_cases(grad=True)))
COVERED = COVERED_FD.union(*map(_ops_in, _traced(FORWARD_ONLY).values()),
                           *map(_ops_in, _traced_cases(grad=False)),
                           *(_ops_in(cr.parse(t)) for t in TEXT.values()),
                           *map(_ops_in, extra_modules()))


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_op_has_its_rules(name):
    op = BUILTIN[name]
    if op.internal:
        assert op in STACK_FORWARD, f"{name}: internal ops are handled by the passes' tables"
        return
    if op.differentiable:
        assert op in VJP, f"{name}: no VJP rule (declare differentiable=False if none)"
        assert op in JVP, f"{name}: no JVP rule"
        assert VJP[op].__doc__ and JVP[op].__doc__, f"{name}: a rule without its math"
    else:
        assert op.linear is None, f"{name}: a linear op is differentiable"
    if op.linear is not None:
        assert op in VJP, f"{name}: linear, so its VJP rule is its transpose"


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_op_is_reachable_from_the_namespace(name):
    op = BUILTIN[name]
    if op.internal:
        return
    names = list(op.namespace) + EXPOSED.get(op, [])
    assert names, f"{name}: no chainrule.numpy function applies it"
    for qualified in op.namespace:
        head, _, n = qualified.rpartition(".")
        module = importlib.import_module("chainrule.scipy." + head[6:] if head.startswith(
            "scipy.") else "chainrule.numpy" + ("." + head if head else ""))
        assert getattr(module, n).op is op, qualified
        assert n in module.__all__, qualified


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_op_is_in_the_catalog(name):
    op = BUILTIN[name]
    assert op in COVERED, f"{name}: no entry of tests/op_catalog.py exercises it"
    if op.differentiable and not op.internal:
        assert op in COVERED_FD, (f"{name}: differentiable but no CATALOG entry checks its "
                                  f"rules against finite differences")


@pytest.mark.parametrize("name", sorted(FORWARD_ONLY))
def test_codegen_matches_interpreter_forward_only(name):
    fn, args = FORWARD_ONLY[name]
    for dtype in (np.float64, np.float32):
        cast = [a.astype(dtype) for a in args]
        check(cr.trace(fn, *cast), *cast)


@pytest.mark.parametrize("name", sorted(TEXT))
def test_codegen_matches_interpreter_text(name):
    check(cr.parse(TEXT[name]), np.array([0.5, -1.0, 2.0]))


def test_type_rules_predict_kernels():
    """Every namespace case's program, run binding by binding (checked when the module
    is imported: TYPE_CHECKED holds the ops whose kernels matched their type rules)."""
    assert TYPE_CHECKED


def test_every_op_emitted_by_codegen_is_checked():
    """Ops with a template are checked through it; the others through their kernel
    call: both are covered by the catalog (above) and tests/test_codegen.py."""
    assert {op for op in BUILTIN.values() if op.emit is not None} <= COVERED
