"""Long bodies are parsed in slices (``ir/text_slices.py``): the same module as one
``ast.parse`` of the whole text, and the same errors, at the same line and column."""

from __future__ import annotations

import pytest

import chainrule as cr
from chainrule.errors import ParseError
from chainrule.ir import text_slices


@pytest.fixture
def small_slices(monkeypatch):
    monkeypatch.setattr(text_slices, "SLICE_STATEMENTS", 7)
    monkeypatch.setattr(text_slices, "MIN_SLICED_LINES", 20)


def unsliced(fn, *args):
    saved = text_slices.MIN_SLICED_LINES
    text_slices.MIN_SLICED_LINES = 10**9  # one ast.parse of the whole text
    try:
        return fn(*args)
    finally:
        text_slices.MIN_SLICED_LINES = saved


def program(groups: int, strings_every: int = 0) -> str:
    lines = ["def twice(v: f64[3]) -> f64[3]:", "    w = add(v, v)", "    return w", "",
             "def main(x: f64[3], n: i64, c: bool) -> tuple[f64, f64[3]]:", "    a0 = x"]
    for g in range(groups):
        a, b = f"a{g}", f"a{g + 1}"
        lines += [
            f"    t{g} = multiply({a}, 2.5)",
            f"    uu{g} = add(t{g}, -1e-05)",
            f"    k{g} = add(n, -3)",
            f"    e{g} = power(uu{g}, 2)",
            f"    s{g} = sum(e{g}, axis=(0,), keepdims=True)",
            f"    m{g} = maximum(e{g}, inf)",
            f"    f{g} = f32(2.0)",
            f"    p{g} = (e{g}, k{g})",
            f"    q{g} = p{g}[0]",
            "    if c:",
            f"        sq{g} = sin(q{g})",
            f"        r{g} = sq{g}",
            "    else:",
            f"        r{g} = q{g}",
            f"    d{g} = twice(r{g})",
            f"    def g{g}(v: f64[3]) -> f64[3]:",
            f"        h = multiply(v, d{g})",
            "        return h",
            f"    z{g} = g{g}(m{g})",
            f"    y{g} = subtract(",
            f"    z{g}, d{g})",  # a continued line at the body's indentation
            f"    {b} = minimum(y{g},",
            f"        s{g})",
        ]
        if strings_every and g % strings_every == 0:
            lines.append(f"    o{g} = astype({b}, dtype=f64)  # a comment: ast for this slice")
    lines += [f"    total = sum(a{groups})", f"    out = (total, a{groups})", "    return out"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("strings_every", [0, 3])
def test_same_module_as_the_whole_text_parse(small_slices, strings_every):
    text = program(12, strings_every)
    fast = cr.parse(text)
    slow = unsliced(cr.parse, text)
    assert cr.structural_equal(fast, slow)
    assert str(fast) == str(slow)
    cr.verify(fast)


@pytest.mark.parametrize("bad, message", [
    ("    bad = add(a3, nowhere)", "name 'nowhere' is not defined here"),
    ("    bad = add(a3, 9223372036854775808)", "does not fit in i64"),
    ("    bad = nosuchop(a3)", "unknown op or function"),
    ("    a2 = add(a3, a3)", "assigned twice"),
    ("    bad = matmul(a3, 2.0)", "matmul"),
    ("    sin = add(a3, a3)", "name of an op"),
    ("    bad = add(a3, lambda)", "invalid syntax"),
])
def test_same_errors_at_the_same_place(small_slices, bad, message):
    lines = program(12).split("\n")
    at = lines.index("    a4 = minimum(y3,")
    lines.insert(at, bad)
    text = "\n".join(lines)
    with pytest.raises(ParseError, match=message) as fast:
        cr.parse(text)
    with pytest.raises(ParseError) as slow:
        unsliced(cr.parse, text)
    assert str(fast.value) == str(slow.value)
    if "syntax" not in message:
        assert str(fast.value).startswith(f"line {at + 1}:")


def test_a_call_before_a_loop_is_its_initialisation(small_slices):
    lines = program(12).split("\n")
    at = lines.index("    a4 = minimum(y3,")
    lines[at:at] = ["    i0 = add(n, 1)", "    while True:", "        more = less(i0, 3)",
                    "        if not more:", "            break", "        i1 = add(i0, 1)",
                    "        i0 = i1", "    fin = i0"]
    text = "\n".join(lines)
    with pytest.raises(ParseError) as fast:
        cr.parse(text)
    with pytest.raises(ParseError) as slow:
        unsliced(cr.parse, text)
    assert str(fast.value) == str(slow.value)
