"""Parse a long text-format module in slices, so its whole ``ast`` is never alive at once.

One ``ast.parse`` of a 100,000-binding module holds every node of every statement
(about 2 GB); the parser only ever needs a few statements at a time. So the text is
cut at the top-level statement boundaries of each long function body, and each slice
is parsed when the parser reaches it.

With ``exact_lines`` each slice is parsed where it stands: preceded by as many
newlines as lines before it (and by ``if 1:`` so an indented body parses), so every node
keeps the line and column a whole-text parse would give it and error messages need no
translation. Those newlines cost: the tokenizer reads every one, and slice k is preceded
by all the lines of slices 0..k-1, so the padding grows as the square of the text (at
100,000 bindings about 30 million newlines, a seventh of the parser's time). So the
parser first reads the slices without it (``exact_lines=False``: a node's line is then
counted from its slice) and, only if that finds an error, parses the text again with
exact lines to report it. A cut never changes what parses: a wrong cut (inside brackets,
a string, a continued line, between an ``if`` and its ``else`` or a decorator and its
``def``) leaves a slice that is not valid Python, and any syntax error makes the caller
parse the whole text instead, so syntax errors read as they always did.

>>> split = split_module("def f(x: f64) -> f64:\\n    y = sin(x)\\n    return y\\n",
...                      slice_statements=1, min_sliced_lines=1)
>>> [type(s).__name__ for s in split.items[0].body]
['Pass']
>>> [type(s).__name__ for s in split.bodies[split.items[0]].statements()]
['Assign', 'Return']
"""

from __future__ import annotations

import ast
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice

SLICE_STATEMENTS = 2000  # top-level statements per slice: ASTs this small cost little
MIN_SLICED_LINES = 4 * SLICE_STATEMENTS  # shorter texts are parsed whole, as before
_CLAUSES = ("else", "elif", "except", "finally")  # continue the statement before them
READ_AHEAD = 64  # statements a StatementStream takes from its source at once


class SliceSyntaxError(Exception):
    """A slice is not valid Python: parse the whole text instead."""


def _parse_at(lines: list[str], start: int, stop: int, indented: bool,
              exact: bool = True) -> list[ast.stmt]:
    """The statements of ``lines[start:stop]`` with their line numbers in the whole text
    (``exact``) or counted from the slice (one more when ``indented``)."""
    if exact:
        pad = "\n" * (start - 1) + "if 1:\n" if indented else "\n" * start
    else:
        pad = "if 1:\n" if indented else ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as the whole-text parse: SyntaxWarnings
            tree = ast.parse(pad + "\n".join(lines[start:stop]) + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SliceSyntaxError from None
    return tree.body[0].body if indented else tree.body


class SlicedBody:
    """A function body's statements, parsed one slice at a time as they are read."""

    def __init__(self, lines: list[str], cuts: list[int], exact_lines: bool = True):
        self.lines = lines
        self.cuts = cuts  # slice k is lines[cuts[k]:cuts[k + 1]]
        self.exact = exact_lines
        self.next_slice = 0
        self._last = self._parse(len(cuts) - 2)  # read first: checks `return`

    def _parse(self, k: int) -> list[ast.stmt]:
        return _parse_at(self.lines, self.cuts[k], self.cuts[k + 1], True, self.exact)

    def last_statement(self) -> ast.stmt:
        return self._last[-1]

    def statements(self) -> Iterator[ast.stmt]:
        while self.next_slice < len(self.cuts) - 1:
            k = self.next_slice
            self.next_slice += 1
            if k == len(self.cuts) - 2:
                stmts, self._last = self._last, [self._last[-1]]
            else:
                stmts = self._parse(k)
            yield from stmts

    def check_rest(self) -> None:
        """Raise SliceSyntaxError if a slice not yet read is not valid Python."""
        for k in range(self.next_slice, len(self.cuts) - 2):
            self._parse(k)


class StatementStream:
    """Statements read with lookahead (a loop's pattern spans three statements)."""

    def __init__(self, statements: Iterable[ast.stmt], drop_last: bool = False):
        self._source = iter(statements)
        self._ahead: deque = deque()
        self._drop_last = drop_last  # hide the final statement (a function's `return`)

    def peek(self, k: int = 0):
        ahead, want = self._ahead, k + 1 + self._drop_last
        if len(ahead) < want:  # read a few ahead: one islice per statement cost as much
            ahead.extend(islice(self._source, max(want - len(ahead), READ_AHEAD)))
            if len(ahead) < want:
                return None
        return ahead[k]

    def pop(self):
        ahead = self._ahead
        if len(ahead) <= self._drop_last and self.peek() is None:  # (else peek() is ahead[0])
            raise IndexError("no statement left")
        return ahead.popleft()


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
                 min_sliced_lines: int | None = None,
                 exact_lines: bool = True) -> SplitModule | None:
    """The module cut into slices, or None when it is short or unusual enough that the
    whole-text parse is simpler (tabs, form feeds and carriage returns change how Python
    counts indentation and lines). Raises SliceSyntaxError for the caller to fall back.
    Without ``exact_lines`` the long bodies' nodes count lines from their slice."""
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
        bodies[header[0]] = SlicedBody(lines, _body_cuts(lines, end + 1, stop, per_slice),
                                       exact_lines)
        chunk_start = stop
    items += _parse_at(lines, chunk_start, len(lines), False)
    return SplitModule(items, bodies)
