"""Very large generated functions are written and compiled in pieces
(``backend/codegen/split.py``): the same statements in the same order, so the
results are the same bit for bit; errors and tracebacks name the right line."""

from __future__ import annotations

import linecache
import traceback

import numpy as np
import pytest

import chainrule as cr
from chainrule.backend.array_api.codegen import NamespaceModule
from chainrule.backend.array_api.namespaces import get_namespace
from chainrule.backend.codegen import split as codegen_split
from chainrule.backend.codegen.generate import CompiledFunction, CompiledModule
from chainrule.errors import InterpretError


def program(n: int) -> str:
    """``n`` groups of bindings of every kind a top-level block holds: op calls (some
    written in place), a transpose folded into a matmul, a branch, a loop, a closure,
    a tuple, a call of another module function, values read far from where they are
    made, a parameter never read, and a symbolic dimension named by a shape."""
    lines = ["def twice(v: f64[k, 3]) -> f64[k, 3]:", "    w = add(v, v)", "    return w", "",
             "def main(x: f64[k, 3], y: f64[k, 3], W: f64[3, 3], unused: f64[2], c: bool, "
             "i: i64[2]) -> tuple[f64, f64[k, 3]]:",
             "    a0 = multiply(x, y)"]
    for g in range(n):
        a, b = f"a{g}", f"a{g + 1}"
        lines += [
            f"    t{g} = tanh({a})",
            f"    s{g} = sin(t{g})",
            f"    Wt{g} = permute_dims(W, axes=(1, 0))",
            f"    m{g} = matmul(s{g}, Wt{g})",
            "    if c:",
            f"        p{g} = multiply(m{g}, 0.5)",
            f"        q{g} = p{g}",
            "    else:",
            f"        q{g} = m{g}",
            f"    j{g}, r{g} = 0, q{g}",
            "    while True:",
            f"        more{g} = less(j{g}, 2)",
            f"        if not more{g}:",
            "            break",
            f"        r{g}_1 = add(r{g}, y)",
            f"        j{g}_1 = add(j{g}, 1)",
            f"        j{g}, r{g} = j{g}_1, r{g}_1",
            f"    st{g} = (j{g}, r{g})",
            f"    l{g} = st{g}[1]",
            f"    def f{g}(v: f64[k, 3]) -> f64[k, 3]:",
            f"        u = multiply(v, t{g})",  # reads a value of this group
            "        return u",
            f"    h{g} = f{g}(l{g})",
            f"    z{g} = twice(h{g})",
            f"    e{g} = broadcast_to(x, shape=(k, 3))",
            f"    {b} = add(z{g}, e{g})",
        ]
    far = " ".join(f"t{g}" for g in range(0, n, 3))  # read again at the end
    lines += [f"    o0 = {far.split()[0]}"]
    for k, t in enumerate(far.split()[1:]):
        lines.append(f"    o{k + 1} = add(o{k}, {t})")
    lines += ["    gi = x[i]", "    g = sum(gi)", f"    s = sum(a{n})",
              f"    res = add(o{len(far.split()) - 1}, g)", "    out = (s, res)", "    return out"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def small_pieces(monkeypatch):
    """Split at a few dozen bindings, compile a few dozen lines at a time."""
    monkeypatch.setattr(codegen_split, "SPLIT_BINDINGS", 40)
    monkeypatch.setattr(codegen_split, "PIECE_BINDINGS", 13)
    monkeypatch.setattr(codegen_split, "CHUNK_LINES", 50)


def unsplit(module, func="main"):
    old = codegen_split.SPLIT_BINDINGS
    codegen_split.SPLIT_BINDINGS = 10**9
    try:
        return CompiledFunction(module, func, CompiledModule(module))
    finally:
        codegen_split.SPLIT_BINDINGS = old


def args(k=2, c=True):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(k, 3)), rng.normal(size=(k, 3)), rng.normal(size=(3, 3)),
            np.zeros(2), c, np.array([0, k - 1]))


@pytest.mark.parametrize("c", [True, False])
def test_split_results_equal_bit_for_bit(small_pieces, c):
    m = cr.parse(program(8))
    split = CompiledFunction(m, "main", CompiledModule(m))
    whole = unsplit(m)
    assert "def main_part1(live):" in split.source
    assert "def main_part" not in whole.source
    for k in (2, 3):
        got, want = split(*args(k, c)), whole(*args(k, c))
        assert got[0].tobytes() == want[0].tobytes()
        assert got[1].tobytes() == want[1].tobytes()
        np.testing.assert_allclose(got[1], cr.run(m, *args(k, c))[1], rtol=1e-12)


def test_split_source_is_the_same_statements(small_pieces):
    m = cr.parse(program(8))
    split, whole = CompiledModule(m).source, unsplit(m).source
    head = split[split.index("def main("):split.index("def main_part1")]
    assert "live = dict(x=x, y=y, W=W, c=c, i=i, k=k)" in head  # `unused` is not carried
    assert "main_part1(live)" in head and "return main_part" in head

    def statements(text):  # all but the pieces' plumbing and the dels
        body = text[text.index("def main("):]
        return [line.strip() for line in body.splitlines()
                if line.strip() and "live" not in line
                and not line.strip().startswith(("def main", "k = ", "del "))]

    assert statements(split) == statements(whole)


def test_values_cross_pieces_and_leave_the_dict(small_pieces):
    """A piece pops what dies in it, so the dict never keeps a dead value."""
    m = cr.parse(program(8))
    src = CompiledModule(m).source
    pops = [line.strip().split(" = ")[0] for line in src.splitlines() if ".pop(" in line]
    assert len(pops) == len(set(pops))  # each crossing value is taken out once
    assert "t0" in pops  # read at the very end: carried through every piece


def test_errors_name_the_binding_in_a_piece(small_pieces):
    m = cr.parse(program(8))
    f = CompiledFunction(m, "main", CompiledModule(m))
    bad = list(args())
    bad[5] = np.array([0, 7])
    with pytest.raises(InterpretError, match=r"index \(binding gi of main\)") as info:
        f(*bad)
    # the innermost generated frame's line is the failing statement of the source
    frames = [fr for fr in traceback.extract_tb(info.value.__cause__.__traceback__)
              if fr.filename == f.compiled.filename]
    assert frames[-1].name.startswith("main_part")
    assert frames[-1].line == "gi = np.take(x, i, axis=0)"  # a gather: np.take
    assert linecache.getline(f.compiled.filename, frames[-1].lineno).strip() == frames[-1].line


def test_namespace_backend_splits_too(small_pieces):
    pytest.importorskip("array_api_compat", reason="pip install array-api-compat")
    m = cr.parse(program(6))
    ns = NamespaceModule(m, get_namespace("numpy"))
    assert "def main_part1(live):" in ns.source
    got = ns.function("main")(*args())
    want = unsplit(m)(*args())
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_small_functions_are_not_split():
    m = cr.parse(program(3))
    assert "main_part" not in CompiledModule(m).source


def test_chunked_compile_keeps_line_numbers(monkeypatch):
    monkeypatch.setattr(codegen_split, "CHUNK_LINES", 3)
    src = "".join(f"def f{k}(a):\n    b = a + {k}\n    return b\n\n" for k in range(20))
    src += "def g(a):\n    def inner():\n        return a[5]\n    return inner()\n"
    ns: dict = {}
    codegen_split.exec_in_chunks(src, "<chunks>", ns)
    assert [ns[f"f{k}"].__code__.co_firstlineno for k in (0, 7, 19)] == [1, 29, 77]
    with pytest.raises(IndexError) as info:
        ns["g"]([1])
    assert traceback.extract_tb(info.value.__traceback__)[-1].lineno == 83


def test_grad_of_a_program_above_the_split_threshold():
    """The real thresholds: a gradient program of several thousand bindings compiles in
    pieces and gives the same gradient as the interpreter, bit for bit."""
    import chainrule.numpy as cnp

    def chain(x, y):
        for _ in range(700):
            x = cnp.sin(cnp.tanh(x * y) + y)
        return cnp.sum(x)

    x, y = np.linspace(-1, 1, 5), np.full(5, 0.5)
    compiled = cr.grad(chain, argnums=(0, 1), eager_compile=True)
    interpreted = cr.grad(chain, argnums=(0, 1), eager_compile=False)
    for a, b in zip(compiled(x, y), interpreted(x, y)):
        assert a.tobytes() == b.tobytes()
