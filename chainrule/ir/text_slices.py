"""Parse a long text-format module in slices, so its whole ``ast`` is never alive at once.

One ``ast.parse`` of a 100,000-binding module holds every node of every statement
(about 2 GB); the parser only ever needs a few statements at a time. So the text is
cut at the top-level statement boundaries of each long function body, and each slice
is parsed when the parser reaches it.

Each slice is parsed where it stands: its nodes carry the line and column a whole-text
parse would give them, so error messages need no translation.

Most lines of a long body are one op call on variables and numbers,
``lv7 = multiply(lv6, 2.0)``, and ``ast`` spends most of the parse on them. A slice
without strings, comments or backslashes (so that only brackets continue a line, and
they are counted) reads such a line at the body's indentation as a ``SimpleCall``
without ``ast``; the parser builds the same binding from it, and parses the line with
``ast`` after all (``SimpleCall.as_ast``) to report anything wrong with it. A cut never
changes what parses: a wrong cut (inside brackets, a string, a continued line, between
an ``if`` and its ``else`` or a decorator and its ``def``) leaves a slice that is not
valid Python, and any syntax error makes the caller parse the whole text instead, so
syntax errors read as they always did.

>>> split = split_module("def f(x: f64) -> f64:\\n    y = sin(x)\\n    return y\\n",
...                      slice_statements=1, min_sliced_lines=1)
>>> [type(s).__name__ for s in split.items[0].body]
['Pass']
>>> [type(s).__name__ for s in split.bodies[split.items[0]].statements()]
['SimpleCall', 'Return']
"""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice

SLICE_STATEMENTS = 2000  # top-level statements per slice: ASTs this small cost little
MIN_SLICED_LINES = 4 * SLICE_STATEMENTS  # shorter texts are parsed whole, as before
_CLAUSES = ("else", "elif", "except", "finally")  # continue the statement before them


class SliceSyntaxError(Exception):
    """A slice is not valid Python: parse the whole text instead."""


def _parse_at(lines: list[str], start: int, stop: int, indented: bool) -> list:
    """The statements of ``lines[start:stop]`` with their line numbers in the whole text
    (in an indented body, simple op calls as ``SimpleCall``)."""
    text = "\n".join(lines[start:stop])
    if indented and not any(c in text for c in "'\"#\\"):
        return _parse_with_simple_calls(lines, start, stop)
    pad = "\n" * (start - 1) + "if 1:\n" if indented else "\n" * start
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as the whole-text parse: SyntaxWarnings
            tree = ast.parse(pad + text + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SliceSyntaxError from None
    return tree.body[0].body if indented else tree.body


_NAME = r"[A-Za-z_]\w*"
_NUMBER = r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|[1-9]\d*|0)"
_ARG = f"(?:{_NAME}|{_NUMBER})"
_SIMPLE = re.compile(f"( +)({_NAME}) = ({_NAME})\\(((?:{_ARG}(?:, {_ARG})*)?)\\)")
_NOT_NAMES = frozenset(keyword.kwlist) | {"inf", "nan"}  # keywords; constants written bare


class SimpleCall:
    """``target = func(arg, ...)`` on one line, each argument a name or a number
    (``int`` or ``float``), read without ``ast``; ``lineno`` and ``col_offset`` as its
    ``ast`` node would have them."""

    __slots__ = ("target", "func", "args", "lineno", "col_offset", "line")

    def __init__(self, target, func, args, lineno, col_offset, line):
        self.target, self.func, self.args = target, func, args
        self.lineno, self.col_offset, self.line = lineno, col_offset, line

    def as_ast(self) -> ast.stmt:
        """The line parsed by ``ast`` (to report what is wrong with it as usual)."""
        return _parse_run([self.line], self.lineno - 1)[0]


def _simple_call(line: str, indent: str, lineno: int) -> SimpleCall | None:
    m = _SIMPLE.fullmatch(line)
    if m is None or m[1] != indent:
        return None
    args = m[4].split(", ") if m[4] else []
    if m[2] in _NOT_NAMES or m[3] in _NOT_NAMES or any(a in _NOT_NAMES for a in args):
        return None
    values = [a if a[0].isalpha() or a[0] == "_" else
              float(a) if "." in a or "e" in a or "E" in a else int(a) for a in args]
    return SimpleCall(m[2], m[3], values, lineno, len(indent), line)


def _parse_run(lines: list[str], first: int) -> list[ast.stmt]:
    """The statements of indented ``lines`` whose first is line ``first`` (0-based)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse("if 1:\n" + "\n".join(lines) + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SliceSyntaxError from None
    stmts = tree.body[0].body
    for st in stmts:
        ast.increment_lineno(st, first - 1)  # line 2 of the parsed text is line first + 1
    return stmts


def _parse_with_simple_calls(lines: list[str], start: int, stop: int) -> list:
    """``_parse_at`` of an indented slice free of strings, comments and backslashes."""
    indent = next((line[:len(line) - len(line.lstrip())] for line in lines[start:stop]
                   if line.strip()), "")
    out: list = []
    run = start  # the first line not yet parsed
    depth = 0  # brackets open at the start of line i
    for i in range(start, stop):
        line = lines[i]
        simple = _simple_call(line, indent, i + 1) if depth == 0 else None
        if simple is None:
            depth += (line.count("(") + line.count("[") + line.count("{")
                      - line.count(")") - line.count("]") - line.count("}"))
            continue
        if any(lines[k].strip() for k in range(run, i)):
            out += _parse_run(lines[run:i], run)
        out.append(simple)
        run = i + 1
    if any(lines[k].strip() for k in range(run, stop)):
        out += _parse_run(lines[run:stop], run)
    return out


class SlicedBody:
    """A function body's statements, parsed one slice at a time as they are read."""

    def __init__(self, lines: list[str], cuts: list[int]):
        self.lines = lines
        self.cuts = cuts  # slice k is lines[cuts[k]:cuts[k + 1]]
        self.next_slice = 0
        self._last = _parse_at(lines, cuts[-2], cuts[-1], True)  # read first: checks `return`

    def last_statement(self) -> ast.stmt:
        return self._last[-1]

    def statements(self) -> Iterator[ast.stmt]:
        while self.next_slice < len(self.cuts) - 1:
            k = self.next_slice
            self.next_slice += 1
            if k == len(self.cuts) - 2:
                stmts, self._last = self._last, [self._last[-1]]
            else:
                stmts = _parse_at(self.lines, self.cuts[k], self.cuts[k + 1], True)
            yield from stmts

    def check_rest(self) -> None:
        """Raise SliceSyntaxError if a slice not yet read is not valid Python."""
        for k in range(self.next_slice, len(self.cuts) - 2):
            _parse_at(self.lines, self.cuts[k], self.cuts[k + 1], True)


class StatementStream:
    """Statements read with lookahead (a loop's pattern spans three statements)."""

    def __init__(self, statements: Iterable[ast.stmt], drop_last: bool = False):
        self._source = iter(statements)
        self._ahead: deque = deque()
        self._drop_last = drop_last  # hide the final statement (a function's `return`)

    def peek(self, k: int = 0):
        ahead, want = self._ahead, k + 1 + self._drop_last
        if len(ahead) < want:
            ahead.extend(islice(self._source, want - len(ahead)))
            if len(ahead) < want:
                return None
        return ahead[k]

    def pop(self):
        stmt = self.peek()
        if stmt is None:
            raise IndexError("no statement left")
        return self._ahead.popleft()


class SplitModule:
    """The module's top-level statements; long functions have a ``pass`` body in
    ``items`` and their real body in ``bodies``."""

    def __init__(self, items: list[ast.stmt], bodies: dict):
        self.items = items
        self.bodies = bodies

    def check_rest(self) -> None:
        for body in self.bodies.values():
            body.check_rest()


def _top_level_starts(lines: list[str]) -> list[int]:
    starts, after_decorator = [], False
    for i, line in enumerate(lines):
        if line[:1].isalpha() or line[:1] in ("_", "@"):
            if not (after_decorator or line.startswith(_CLAUSES)):
                starts.append(i)  # (a decorator belongs to its def, an else to its if)
            after_decorator = line.startswith("@")
    return starts


def _header_end(lines: list[str], start: int, stop: int) -> int | None:
    """The index of the line ending a ``def``'s header (its ``:``), or None."""
    depth = 0
    for i in range(start, stop):
        line = lines[i]
        if "#" in line or "'" in line or '"' in line:
            return None  # brackets in strings or comments: not worth reading here
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        if depth == 0 and not line.startswith("@"):
            return i if line.rstrip().endswith(":") else None
    return None


def _body_cuts(lines: list[str], start: int, stop: int, per_slice: int) -> list[int]:
    indent = next((line[:len(line) - len(line.lstrip())] for line in lines[start:stop]
                   if line.strip() and not line.lstrip().startswith("#")), "")
    cuts, count, width = [start], 0, len(indent)
    after_decorator = False
    for i in range(start, stop):
        line = lines[i]
        if not line.startswith(indent) or line[width:width + 1] in ("", " ", "#", ")", "]",
                                                                    "}"):
            continue
        if count >= per_slice and not after_decorator and not line[width:].startswith(
                _CLAUSES):
            cuts.append(i)
            count = 0
        count += 1
        after_decorator = line[width] == "@"
    cuts.append(stop)
    return cuts


def split_module(text: str, slice_statements: int | None = None,
                 min_sliced_lines: int | None = None) -> SplitModule | None:
    """The module cut into slices, or None when it is short or unusual enough that the
    whole-text parse is simpler (tabs, form feeds and carriage returns change how Python
    counts indentation and lines). Raises SliceSyntaxError for the caller to fall back."""
    per_slice = SLICE_STATEMENTS if slice_statements is None else slice_statements
    min_lines = MIN_SLICED_LINES if min_sliced_lines is None else min_sliced_lines
    if text.count("\n") < min_lines or any(c in text for c in "\t\r\f\v"):
        return None
    lines = text.split("\n")
    starts = _top_level_starts(lines) + [len(lines)]
    items: list[ast.stmt] = []
    bodies: dict = {}
    chunk_start = 0  # lines not yet parsed (short items, comments) are parsed together
    for start, stop in zip(starts, starts[1:]):
        head = start
        while head < stop and lines[head].startswith("@"):
            head += 1
        is_def = head < stop and lines[head].startswith("def ")
        end = _header_end(lines, head, stop) if is_def else None
        if end is None or stop - end - 1 < min_lines:
            continue
        items += _parse_at(lines, chunk_start, start, False)
        header = _parse_at(lines[:end + 1] + [" pass"], start, end + 2, False)
        if len(header) != 1 or not isinstance(header[0], ast.FunctionDef):
            raise SliceSyntaxError
        items.append(header[0])
        bodies[header[0]] = SlicedBody(lines, _body_cuts(lines, end + 1, stop, per_slice))
        chunk_start = stop
    items += _parse_at(lines, chunk_start, len(lines), False)
    return SplitModule(items, bodies)
