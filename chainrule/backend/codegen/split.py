"""Very large generated functions, written and compiled in pieces.

CPython's ``compile()`` of one function costs more per statement the longer the
function is (about 70 µs a statement at 10,000 statements, 100 at 100,000, with
some 6 KB of memory each while it runs), where functions of a few hundred
statements compile at a fraction of that. So a module function whose body has
more than ``SPLIT_BINDINGS`` bindings is written as a sequence of piece functions
of ``PIECE_BINDINGS`` bindings each, with the same statements, in the same order
(so the results are the same bit for bit), and the function itself calls them in
turn::

    def main(x, y):
        live = dict(x=x, y=y)
        del x, y
        main_part1(live)
        main_part2(live)
        return main_part3(live)

    def main_part2(live):
        lv998 = live.pop("lv998")     # its last use is in this piece
        y = live["y"]                 # read again later
        lv999 = lv998 * y
        ...
        live.update(lv1020=lv1020, lv1500=lv1500)   # read by later pieces

Values that cross a piece boundary travel in the dict ``live``; a piece takes out
(``pop``) the ones whose last use it holds, so memory is freed where the unsplit
function would free it. Only the top-level block is split: a loop or a branch
stays whole in its piece.

The source is then compiled in chunks of whole top-level functions
(``exec_in_chunks``), so the parser's and compiler's memory is bounded by a chunk;
each chunk's line numbers are shifted to its place in the whole source, so
tracebacks and the binding named by a failing line are those of the whole text.
"""

from __future__ import annotations

import linecache
import weakref
from types import CodeType

from ...errors import CodegenError

SPLIT_BINDINGS = 2000  # functions with more top-level bindings are split
PIECE_BINDINGS = 500  # bindings per piece
CHUNK_LINES = 4000  # lines of source compiled at once (whole top-level functions)


def piece_bounds(n: int) -> list[tuple[int, int]]:
    """The ``[lo, hi)`` binding ranges of the pieces of a block of ``n`` bindings
    (none when the block is not split)."""
    if n <= SPLIT_BINDINGS:
        return []
    return [(lo, min(n, lo + PIECE_BINDINGS)) for lo in range(0, n, PIECE_BINDINGS)]


def write_split(gen, fname: str, fn, pieces: list[str], live: str) -> None:
    """Write module function ``fname`` (``fn``) as the calls of ``pieces`` (names) and
    their definitions; ``gen`` is the ``_ModuleCodegen`` writing the module, ``live``
    the name of the dict carrying values across pieces."""
    block = fn.body
    bindings = block.bindings
    bounds = piece_bounds(len(bindings))
    plan = gen.plan(block, list(fn.params), (), frozenset())
    name = gen.name
    params = [name(p) for p in fn.params]
    gen.out(0, f"def {gen.func_names[fname]}({', '.join(params)}):")
    gen.bind_symbols(fn)
    syms = [gen.sym_names[s] for s in sorted(gen.bound_syms)]
    carried = [name(p) for p in fn.params if p in plan.last] + syms
    gen.out(1, f"{live} = dict({', '.join(f'{c}={c}' for c in carried)})")
    if params or syms:
        gen.out(1, f"del {', '.join(params + syms)}")
    for piece in pieces[:-1]:
        gen.out(1, f"{piece}({live})")
    gen.out(1, f"return {pieces[-1]}({live})")
    gen.out(0, "")

    # where each variable is bound (parameters: before every piece, in their order, so
    # that a piece reads them in that order and not in the order of a set of uses)
    position = {p: k - len(fn.params) for k, p in enumerate(fn.params)}
    for i, b in enumerate(bindings):
        position[b.var] = i
    last = plan.last
    for piece, (lo, hi) in zip(pieces, bounds):
        final = hi == len(bindings)
        gen.out(0, f"def {piece}({live}):")
        for s in syms:
            gen.out(1, f'{s} = {live}["{s}"]')
        loaded: dict = {}
        for i in range(lo, hi + 1 if final else hi):  # plan.uses[n]: the result's
            for x in plan.uses[i]:
                if position.get(x, lo) < lo and x not in loaded:
                    loaded[x] = last[x] < hi or final
        for x, dies_here in sorted(loaded.items(), key=lambda item: position[item[0]]):
            x_name = name(x)
            read = f'{live}.pop("{x_name}")' if dies_here else f'{live}["{x_name}"]'
            gen.out(1, f"{x_name} = {read}")
        for i in range(lo, hi):
            b = bindings[i]
            if b.var in plan.inline:
                continue
            gen.binding(b, 1, plan, i)
            gen._dels(1, plan.dels[i])
        if final:
            gen.out(1, f"return {gen.atom(block.result)}")
        else:
            later = [name(b.var) for b in bindings[lo:hi]
                     if last.get(b.var, -1) >= hi and b.var not in plan.inline]
            for k in range(0, len(later), 8):  # a few per line, to stay readable
                part = ", ".join(f"{v}={v}" for v in later[k:k + 8])
                gen.out(1, f"{live}.update({part})")
        gen.out(0, "")


def exec_generated(owner, source: str, filename: str, namespace: dict, hint: str = "") -> None:
    """Compile generated ``source`` as ``filename`` and run it in ``namespace``; its lines
    show in tracebacks for as long as ``owner`` lives."""
    try:
        lines = exec_in_chunks(source, filename, namespace)  # large modules: piecewise
    except (SyntaxError, RecursionError, MemoryError, ValueError) as exc:
        raise CodegenError(f"the generated code does not compile ({exc}){hint}") from None
    linecache.cache[filename] = (len(source), None, lines, filename)
    weakref.finalize(owner, linecache.cache.pop, filename, None)


def exec_in_chunks(source: str, filename: str, namespace: dict) -> list[str]:
    """Compile and run ``source`` a chunk of whole top-level functions at a time, each
    chunk's line numbers those of the whole text (``filename``); returns its lines (with
    their ends, as ``linecache`` keeps them)."""
    lines = source.splitlines(True)
    starts = [0]
    for k, line in enumerate(lines):
        # a top-level ``def`` not under a decorator starts a statement of its own
        if (k - starts[-1] >= CHUNK_LINES and line.startswith("def ")
                and not lines[k - 1].startswith("@")):
            starts.append(k)
    starts.append(len(lines))
    for lo, hi in zip(starts, starts[1:]):
        code = compile("".join(lines[lo:hi]), filename, "exec")
        exec(_shifted(code, lo) if lo else code, namespace)  # noqa: S102 - checked names only
    return lines


def _shifted(code: CodeType, offset: int) -> CodeType:
    """``code`` (and the code it nests) with its line numbers ``offset`` lines later
    (the line table counts from ``co_firstlineno``)."""
    consts = tuple(_shifted(c, offset) if type(c) is CodeType else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + offset, co_consts=consts)
