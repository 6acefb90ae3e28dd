"""The op registry is complete and enforced: every op chainrule declares has its
derivative rules (or is declared non-differentiable), a codegen path that
computes bit for bit what the interpreter computes, a way in from the user
namespace, and an entry in the op catalog whose finite-difference checks run
in every mode (tests/rules/test_rules_rev.py,
tests/transform/forward/test_forward.py)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from codegen_helpers import check
from op_catalog import CATALOG, FORWARD_ONLY, TEXT, extra_modules
from op_coverage import TYPE_CHECKED, traced_cases

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


COVERED_FD = set().union(*map(_ops_in, _traced(CATALOG).values()),
                         *map(_ops_in, traced_cases(grad=True)))
COVERED = COVERED_FD.union(*map(_ops_in, _traced(FORWARD_ONLY).values()),
                           *map(_ops_in, traced_cases(grad=False)),
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
    call: both are covered by the catalog (above) and
    tests/backend/codegen/test_codegen.py."""
    assert {op for op in BUILTIN.values() if op.emit is not None} <= COVERED
