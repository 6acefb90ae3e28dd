"""``vmap`` of every public function, checked against a Python loop over the lanes.

Table-driven over the same cases as ``tests/numpy/test_namespace.py``
(``tests/cases_*.py``), so every op is batched here through the functions that use it:
each case's first argument set is made a batch of 3 lanes (float arrays scaled a
little per lane, so the lanes differ; integer arrays, often indices, repeated) and
mapped over every array argument at once (axis 0, and the last axis), and over each
array argument alone (the others shared). The batched result must equal the lanes
computed one by one: shapes, dtypes and values. ``test_every_op_batches`` fails when a
new op has no batching rule (or a declared reason to run lane by lane).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from namespace_cases import collect

import chainrule as cr
from chainrule import ops
from chainrule.ir.op import OPS
from chainrule.rules.batching import BATCH, LANE_LOOP, batching_rule_of
from chainrule.tree import flatten

CASES = collect()
LANES = 3


def lane_value(a, k: int):
    """Lane ``k`` of a batched argument made from ``a``."""
    a = np.asarray(a)
    if a.dtype.kind in "fc":
        return (a * (1 + 0.03 * k)).astype(a.dtype)
    return a


def batched_args(args, mask, axis: int):
    out = []
    for a, m in zip(args, mask):
        if m:
            out.append(np.stack([lane_value(a, k) for k in range(LANES)], axis=axis))
        else:
            out.append(a)
    return out


def variants(args):
    """(mask of mapped arguments, axis) pairs: all arrays at axis 0 and at the last axis,
    then each array alone when there are several."""
    arrays = [isinstance(a, np.ndarray) for a in args]
    if not any(arrays):
        return []
    out = [(tuple(arrays), 0), (tuple(arrays), -1)]
    if sum(arrays) > 1:
        out += [(tuple(j == i for j in range(len(args))), 0)
                for i, is_array in enumerate(arrays) if is_array]
    return out


def check_case(c, args, mask, axis):
    axes = tuple(axis if m else None for m in mask)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = cr.vmap(c.fn, in_axes=axes)(*batched_args(args, mask, axis))
        # the lanes compiled too: on arrays some functions call NumPy directly, whose
        # integer dtypes may differ from the compiled program's (lstsq's rank: int32)
        one = cr.jit(c.fn) if c.jit else c.fn
        lanes = [one(*[lane_value(a, k) if m else a for a, m in zip(args, mask)])
                 for k in range(LANES)]
    got_leaves, got_tree = flatten(got)
    lane_leaves = [flatten(r) for r in lanes]
    assert got_tree == lane_leaves[0][1], f"{c.id}: the batched result's structure"
    for i, g in enumerate(got_leaves):
        want = np.stack([np.asarray(leaves[i]) for leaves, _ in lane_leaves])
        g = np.asarray(g)
        what = f"{c.id}, in_axes={axes}, result leaf {i}"
        assert g.shape == want.shape, f"{what}: shape {g.shape}, want {want.shape}"
        assert g.dtype == want.dtype, f"{what}: dtype {g.dtype}, want {want.dtype}"
        # single precision: a batched reduction may sum in another order than one lane's
        rtol = max(c.rtol, 1e-5 if g.dtype in (np.float32, np.complex64) else 1e-7)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=max(c.atol, 1e-9),
                                   equal_nan=True, err_msg=what)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_vmap_equals_loop(c):
    args = c.args[0]
    for mask, axis in variants(args):
        check_case(c, args, mask, axis)


def test_every_op_batches():
    """Every built-in op has a batching rule (elementwise ops share one), takes no
    operands (nothing to batch), or is declared to run lane by lane with a reason.
    User ops (custom_vjp / custom_jvp, ops users declare) run lane by lane unless they
    register a rule: their derivative rules are written for one lane."""
    import chainrule.solvers  # noqa: F401  (declares solver_check)

    builtin = [*ops.BUILTIN_OPS, OPS["solver_check"]]
    missing = [op.name for op in builtin
               if batching_rule_of(op) is None and op.nargs != 0 and op not in LANE_LOOP]
    assert not missing, f"ops without a batching rule: {missing}"
    assert not set(BATCH) & set(LANE_LOOP)
    assert all(isinstance(reason, str) and reason for reason in LANE_LOOP.values())


def test_rules_do_not_fall_back_to_lanes():
    """Where a rule applies, no loop over lanes is emitted (the table above would pass
    with loops too: they are right, only slow)."""
    import chainrule.numpy as cnp

    x = np.ones((4, 3, 2))
    fns = [lambda x: cnp.sum(cnp.tanh(x) @ x.T, axis=0), lambda x: cnp.sort(x, axis=0)[::-1],
           lambda x: cnp.linalg.solve(x.T @ x + cnp.eye(2), x[0]),
           lambda x: cnp.cumsum(x.reshape(-1))[1:4] * x[:, 0].max(),
           lambda x: cnp.concatenate([x, -x], axis=1)[:, [0, 2]]]
    for f in fns:
        text = str(cr.vmap(f).module(x))
        assert "lane" not in text, text
