"""Long function bodies are parsed in slices (chainrule/ir/text_slices.py): the module
is the one a whole-text parse gives, and errors keep their line and column."""

from __future__ import annotations

import ast

import pytest

import chainrule as cr
import chainrule.ir.text_slices as text_slices
from chainrule.errors import ParseError

# Every construct spanning several statements: a loop (three statements at the body's
# level), an if/else, nested and decorated functions, a docstring, comments, a multi-line
# binding that a cut cannot split, a module-level constant between functions.
CONSTRUCTS = '''
@checkpoint
def g(x: f64) -> f64:
    """A docstring."""
    y = sin(x)
    # a comment at the body's level
    w = exp(y)
    return w

c0 = f64([1.0, 2.0])

def main(x: f64, flag: bool) -> tuple[f64, f64[2]]:
    x1 = x
    while True:
        c = less(x1, 100.0)
        if not c:
            break
        x2 = multiply(x1, 2.0)
        x1 = x2
    w = x1
    if flag:
        r1 = sin(w)
        r = r1
    else:
        r2 = cos(w)
        r = r2
    def inner(a: f64) -> f64:
        b = g(a)
        return b
    v = inner(r)
    k = add(c0,
        v)
    u = (v, k)
    return u
'''


def _whole(text: str):
    """The module as the whole-text parse reads it."""
    old = text_slices.MIN_SLICED_LINES
    text_slices.MIN_SLICED_LINES = 10**12
    try:
        return cr.parse(text)
    finally:
        text_slices.MIN_SLICED_LINES = old


@pytest.fixture
def tiny_slices(monkeypatch):
    """Slice every body into slices of ``n`` statements."""
    def set_size(n: int) -> None:
        monkeypatch.setattr(text_slices, "SLICE_STATEMENTS", n)
        monkeypatch.setattr(text_slices, "MIN_SLICED_LINES", 1)
    return set_size


@pytest.mark.parametrize("per_slice", [1, 2, 3, 5])
def test_slices_parse_to_the_whole_text_module(tiny_slices, per_slice):
    whole = _whole(CONSTRUCTS)
    tiny_slices(per_slice)
    split = text_slices.split_module(CONSTRUCTS)
    assert split is not None and any(len(b.cuts) > 2 for b in split.bodies.values())
    m = cr.parse(CONSTRUCTS)
    assert m == whole and str(m) == str(whole)


def _long_program(n: int, bad_line: int | None = None, bad: str = "") -> tuple[str, list]:
    lines = ["def main(x: f64[3]) -> f64:", "    lv0 = sin(x)"]
    for i in range(1, n):
        lines.append(f"    lv{i} = {'cos' if i % 2 else 'sin'}(lv{i - 1})")
    lines += [f"    s = sum(lv{n - 1})", "    return s", ""]
    if bad_line is not None:
        lines[bad_line - 1] = bad
    return "\n".join(lines), lines


def _error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        cr.parse(text)
    return info.value


def test_error_in_a_late_slice_has_its_line_and_column(tiny_slices):
    text, _ = _long_program(400, bad_line=350, bad="    lv348 = add(lv347, nope)")
    whole = _error(text)
    assert (whole.line, whole.col) == (350, 24)
    tiny_slices(20)
    assert text_slices.split_module(text) is not None
    err = _error(text)
    assert (err.line, err.col, str(err)) == (350, 24, str(whole))


def test_syntax_error_after_a_late_error_is_reported_as_before(tiny_slices):
    # the whole-text parse meets the syntax error at line 390 before any meaning
    text, lines = _long_program(400, bad_line=350, bad="    lv348 = add(lv347, nope)")
    lines[389] = "    lv388 = cos(lv387"
    text = "\n".join(lines)
    tiny_slices(20)
    err = _error(text)
    assert err.message.startswith("invalid syntax") and str(err) == str(_error(text))
    assert str(err) == str(_whole_error(text))


def _whole_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        _whole(text)
    return info.value


def test_missing_return_is_found_before_the_body_is_read(tiny_slices):
    text, lines = _long_program(300, bad_line=5, bad="    lv3 = add(lv2, nope)")
    text = "\n".join(lines[:-2] + [""])  # no `return`: reported first, as before
    tiny_slices(20)
    assert str(_error(text)) == str(_whole_error(text))
    assert "must end with `return value`" in str(_error(text))


def test_100k_bindings_parse_in_slices_to_the_printed_module():
    text, _ = _long_program(100_000)
    split = text_slices.split_module(text)
    assert split is not None and len(next(iter(split.bodies.values())).cuts) > 40
    del split
    m = cr.parse(text)
    assert len(m["main"].body.bindings) == 100_001
    assert str(m) == text


def test_slices_without_exact_lines_count_from_the_slice(tiny_slices):
    # the cheap first reading: no padding, lines counted from each slice ("if 1:" is
    # line 1); an error makes parse() read the text again with exact lines (above)
    text, _ = _long_program(100)
    tiny_slices(20)
    exact = text_slices.split_module(text)
    cheap = text_slices.split_module(text, exact_lines=False)
    body_exact = list(next(iter(exact.bodies.values())).statements())
    body_cheap = list(next(iter(cheap.bodies.values())).statements())
    assert [s.lineno for s in body_exact] == list(range(2, 104))
    assert max(s.lineno for s in body_cheap) <= 22 and len(body_cheap) == len(body_exact)
    assert [ast.unparse(s) for s in body_cheap] == [ast.unparse(s) for s in body_exact]
    assert str(cr.parse(text)) == text
