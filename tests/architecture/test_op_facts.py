"""The facts of an op are fields of the ``Op``, checked where it is declared, and every
backend lowering is keyed by the op object: the array-API lowering of every built-in op
is declared (or its absence, with the reason), backend tables hold registered ops only,
and an elementwise op declared the way docs/architecture.md says ("How to add an op")
fuses, runs on numba and the array-API backends, batches under ``vmap`` and
differentiates, with nothing but its declaration and its rules.

The scalar forms (numba) are checked for completeness in
tests/backend/numba/test_fusion_numba.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from repo_paths import ROOT

from chainrule import ops
from chainrule.backend.array_api.kernels import GENERIC
from chainrule.backend.array_api.own_kernels import BY_NAMESPACE, DASK_WHOLE
from chainrule.backend.numba.source import FLOAT32_SIMD, VECMATH, VECMATH32
from chainrule.errors import ChainruleError
from chainrule.ir import OPS, NoLowering, Op, ScalarForm, TensorType
from chainrule.ir.nodes import Binding, Block, Call, Var
from chainrule.transform.vmap.control import safe_everywhere

BUILTIN = {op.name: op for op in ops.BUILTIN_OPS}


def _same(types, attrs):
    return types[0]


def _op(**facts):
    return Op("probe", _same, lambda *xs: xs[0], **facts)


BAD_FACTS = [
    dict(reduction="median"),
    dict(reduction="sum"),  # a reduction takes axis and keepdims
    dict(broadcast="yes"),
    dict(raises_on_values=1),
    dict(elementwise=None),
    dict(operands_in_result_dtype="some"),
    dict(operands_in_result_dtype=(1,)),  # one operand: position 1 does not exist
    dict(kernels={"torch": 3}),
    dict(array_api_name="a-b"),
    dict(scalar=3),
    dict(scalar="np.exp({0})"),  # not elementwise
    dict(elementwise=True, scalar="np.hypot({0}, {1})"),  # one operand
    dict(elementwise=True, scalar="{x}"),
    dict(elementwise=True, scalar=ScalarForm("np.sinc({0})", when={"n": 0})),  # no reason
    dict(elementwise=True, scalar=ScalarForm("{0}", floats_only=True, ints="{0}")),
]


@pytest.mark.parametrize("facts", BAD_FACTS, ids=[str(f) for f in BAD_FACTS])
def test_a_bad_fact_is_refused_naming_the_op(facts):
    with pytest.raises(ChainruleError, match="probe"):
        _op(**facts)


def test_a_lowering_declared_absent_says_why():
    with pytest.raises(ChainruleError, match="reason"):
        NoLowering("")


def test_facts_are_read_from_the_declarations():
    assert ops.sum.reduction == "sum" and ops.mean.reduction == "mean"
    assert ops.reduction.any.reduction is None  # logical and/or: no accumulator reads it
    assert ops.broadcast_to.broadcast and not ops.reshape.broadcast
    assert ops.cholesky.raises_on_values and not ops.exp.raises_on_values
    assert ops.less.operands_in_result_dtype == () and ops.where.converted_operands(3) == (1, 2)
    assert list(ops.add.converted_operands(2)) == [0, 1]
    assert ops.exp.scalar == ScalarForm("np.exp({0})") and ops.arccos.array_api_name == "acos"


def _array_api_lowering(op: Op) -> str:
    if op.array_api_name is not None:
        return f"xp.{op.array_api_name}"
    if op in GENERIC:
        return "GENERIC"
    return ", ".join(sorted(op.kernels))


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_op_has_an_array_api_lowering_or_says_why_not(name):
    """Its standard function, a kernel of its own (for one namespace or any), the
    backend's GENERIC one, or NoLowering(reason) in its declaration."""
    op = BUILTIN[name]
    assert _array_api_lowering(op), (
        f"{name}: declare array_api_name='...', kernels={{'array_api': ...}}, add it to "
        f"backend/array_api/kernels.GENERIC, or declare kernels={{'array_api': "
        f"NoLowering(reason)}}")
    if op.array_api_name is not None or op in GENERIC:
        assert not isinstance(op.kernels.get("array_api"), NoLowering), name


def test_array_api_names_are_the_standards():
    compat = pytest.importorskip("array_api_compat.numpy")
    missing = [op.name for op in ops.BUILTIN_OPS
               if op.array_api_name is not None and not hasattr(compat, op.array_api_name)]
    assert not missing


def test_backend_tables_hold_registered_ops():
    """Keyed by the op object: a renamed op keeps its entries (and a stale name cannot
    linger in a table, as "inv" and "matrix_power" did in vmap's string set)."""
    tables = {"GENERIC": GENERIC, "DASK_WHOLE": DASK_WHOLE, "VECMATH": VECMATH,
              "VECMATH32": VECMATH32, "FLOAT32_SIMD": FLOAT32_SIMD,
              **{f"BY_NAMESPACE[{k!r}]": v for k, v in BY_NAMESPACE.items()}}
    for table_name, table in tables.items():
        for op in table:
            assert isinstance(op, Op) and OPS.get(op.name) is op, (table_name, op)


@pytest.mark.parametrize("op", [op for op in ops.BUILTIN_OPS if isinstance(
    op.scalar, ScalarForm) and (op.scalar.floats_only or op.scalar.ints is not None)],
    ids=lambda op: op.name)
def test_integer_scalar_forms_restate_no_type_rule(op):
    """A form declared for floats only (or with an integer form) is of an op whose type
    rule gives integer results: for an op whose results are always floats, it would
    restate the type rule."""
    i64 = TensorType((3,), "i64")
    _, out = op.type_call([i64] * op.nargs, {})
    assert out.dtype.is_int, f"{op.name}: integer operands give {out.dtype}"


def test_ops_that_may_raise_run_only_in_their_lanes():
    x = Var("x", TensorType((2, 2), "f64"))

    def block(op):
        return Block([Binding(Var("y", TensorType((2, 2), "f64")), Call(op, [x], {}))], x)

    assert safe_everywhere([block(ops.exp)])
    assert not safe_everywhere([block(ops.cholesky)])


# -- a new op, declared as the docs say ----------------------------------------------------
def _how_to_block() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index("## How to add an op"):]
    return re.search(r"^```python\n(.*?)^```\n", section, re.M | re.S).group(1)


CHECKS = """
import json
from chainrule.backend import numba as nb
from chainrule.backend.array_api.namespaces import NAMESPACES, compile_for
from chainrule.backend.codegen.generate import compile_module
from chainrule.rules.batching import batching_rule_of, elementwise_batch
from chainrule.transform import fuse

x = np.array([0.3, -2.0, 1.5, 0.0])
g = lambda x: cnp.sum(cnp.tanh(softsign(x) * 2.0 + x))
want = np.sum(np.tanh(x / (1 + np.abs(x)) * 2.0 + x))
report = {}

# fused: one region computes it with its neighbours
m = cr.trace(g, x)
regions = [fn for name, fn in fuse(m).functions.items() if fn.attrs.get("fused")]
report["fused"] = len(regions) == 1 and "softsign(" in str(regions[0])

# numba: the region's loop, compiled, gives the interpreter's values
if nb.available():
    fast = nb.compile_fused(m, "main", block=True, min_ops=1)
    report["numba"] = ([k.state for k in nb.regions(fast)] == ["ready"]
                       and bool(np.allclose(fast(x), compile_module(m, "main")(x), rtol=1e-13)))

# the array-API backends (NumPy through array_api_compat too): its kernel runs there
for name in ("numpy", "torch", "dask"):
    ns = NAMESPACES[name]
    if ns.available():
        compiled = compile_for(m, ns)
        report[name] = ("_k_softsign(" in compiled.source
                        and bool(np.allclose(ns.to_numpy(compiled(ns.asarray(x))), want)))

# vmap: the elementwise rule (no loop over lanes), the values of each row
xs = np.stack([x, -x, 2 * x])
report["vmap"] = (batching_rule_of(softsign) is elementwise_batch
                  and bool(np.allclose(cr.vmap(g)(xs), [g(r) for r in xs])))

# its rules, in both modes
d = 1 / (1 + np.abs(x)) ** 2
y = x / (1 + np.abs(x))
dg = (1 - np.tanh(2 * y + x) ** 2) * (2 * d + 1)
report["grad"] = bool(np.allclose(cr.grad(g)(x), dg))
report["jvp"] = bool(np.allclose(cr.jvp(g, (x,), (np.ones(4),))[1], dg.sum()))
print(json.dumps(report))
"""


def test_an_op_declared_as_the_docs_say_needs_nothing_else(tmp_path):
    env = {**os.environ, "CHAINRULE_CACHE_DIR": str(tmp_path)}
    code = _how_to_block() + textwrap.dedent(CHECKS)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report.pop("fused") and report.pop("vmap") and report.pop("grad") \
        and report.pop("jvp"), report
    assert all(report.values()), report  # numba, NumPy's, PyTorch's and Dask's array API
