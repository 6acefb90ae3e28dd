"""How IR shows itself: the text of any node, HTML for notebooks, Graphviz pictures.

``str`` of every node is its text-format text (``print(module["main_adjoint"])``
prints the function); ``Module._repr_html_`` is that text syntax-highlighted with
inline styles (no stylesheet, no dependency), one foldable section per function;
``Function._repr_svg_`` and tape tensors draw their data flow with Graphviz when
the optional ``graphviz`` package and Graphviz's ``dot`` program are installed,
and fall back to text otherwise.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> module = cr.trace(lambda x: cnp.sum(cnp.sin(x)), np.ones(3))
>>> print(module["main"])
def fn(x: f64[3]) -> f64:
    lv0 = sin(x)
    lv1 = sum(lv0)
    return lv1
>>> print(module["main"].body.bindings[0])
lv0 = sin(x)
>>> '<span style="color:#0f766e">sin</span>' in module._repr_html_()
True
"""

from __future__ import annotations

import html
import re
import shutil

from ..errors import ChainruleError
from .nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from .op import OPS
from .printer import Printer, format_constant_data, print_module
from .types import DTYPES, TupleType
from .visitor import atoms_of, block_free_vars, nested_blocks

FUNCTION_NAME = "fn"  # a Function does not know the name a module gives it
FOLD_LINES = 40  # longer functions start folded in a module's HTML
LONG_LINE = 2000  # characters of one line shown in HTML (a hoisted constant can be huge)
MAX_GRAPH_NODES = 400  # larger graphs are not drawn: dot takes long and the picture is noise


# -- text ---------------------------------------------------------------------------------


class _Names(dict):
    """Variable -> printed name. A variable bound outside the printed node (what a
    closure captures, what a branch reads) gets a name from its hint on first use."""

    def __init__(self, printer: Printer, taken: set):
        super().__init__()
        self._printer, self._taken = printer, taken

    def __missing__(self, var):
        if not isinstance(var, Var):
            raise KeyError(var)
        return self._printer._assign(self, self._taken, var)


def _display_var() -> Var:
    # the target an ``if`` or ``while`` printed on its own assigns to; display only
    return Var("result", TupleType(()))


def _prepare(node, name: str):
    """A printer whose constants are hoisted and whose names are assigned for ``node``."""
    if isinstance(node, Function):
        wrapper = node
    elif isinstance(node, Block):
        wrapper = Function((), node, None)
    elif isinstance(node, Binding):
        wrapper = Function((), Block([node], node.var), None)
    else:
        target = _display_var()
        wrapper = Function((), Block([Binding(target, node)], target), None)
    printer = Printer(Module({name: wrapper}))
    printer._hoist_constants()
    printer.reserved |= set(printer.const_names.values())
    taken = set(printer.reserved)
    names = _Names(printer, taken)
    # what the node reads from outside was bound before it: it takes its names first,
    # as in the text of the whole function
    for v in block_free_vars([wrapper.body], wrapper.params):
        printer._assign(names, taken, v)
    for p in wrapper.params:
        printer._assign(names, taken, p)
    printer._name_block(names, taken, wrapper.body)
    printer.lines = []
    return printer, names, wrapper


def node_text(node, name: str = FUNCTION_NAME) -> str:
    """The text-format text of any IR node (no trailing newline but a module's).

    A ``Function`` prints as ``def <name>(...)``; variables it reads from outside
    (a closure's captures) print by their names. An ``if`` or ``while`` printed
    on its own assigns its value to ``result``; a ``Block`` ends in ``return``.
    Large constants are hoisted to ``c0 = ...`` lines first, as in a module.
    """
    if isinstance(node, Module):
        return print_module(node)
    if isinstance(node, Constant):
        return format_constant_data(node.data)
    if isinstance(node, GlobalVar):
        return node.name
    printer, names, wrapper = _prepare(node, name)
    if isinstance(node, Function):
        printer.function(name, node, names, "")
    elif isinstance(node, Block):
        printer.block(node, names, "", None)
        printer.lines.append(f"return {printer.atom(node.result, names)}")
    elif isinstance(node, (Binding, If, While)):
        printer.block(wrapper.body, names, "", None)
    else:  # Var, Call, Tuple, TupleGetItem: an expression
        printer.lines.append(printer.value(node, names))
    text = "\n".join(printer.lines)
    return "\n".join(printer.header) + "\n\n" + text if printer.header else text


def node_str(node) -> str:
    """``str(node)``: its text, or its repr and the reason when it has no text (a call
    of an unregistered op cannot print as text that reads back)."""
    try:
        return node_text(node)
    except ChainruleError as exc:
        return f"{object.__repr__(node)}  # no text: {exc}"


# -- syntax highlighting ------------------------------------------------------------------

COLORS = {
    "keyword": "color:#7c3aed;font-weight:bold",
    "function": "color:#2563eb;font-weight:bold",
    "op": "color:#0f766e",
    "type": "color:#15803d",
    "number": "color:#c2410c",
    "string": "color:#b91c1c",
    "attribute": "color:#a16207",
    "comment": "color:#6b7280;font-style:italic",
    "decorator": "color:#7c3aed",
}
KEYWORDS = {"def", "return", "if", "else", "while", "True", "False", "None", "not", "break"}
TYPE_NAMES = set(DTYPES) | {"tuple", "Callable", "list"}
_TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>'[^'\n]*'|"[^"\n]*")
  | (?P<decorator>@[A-Za-z_]\w*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
""", re.X)
PRE_STYLE = ("font-family:monospace;font-size:12.5px;line-height:1.35;margin:0;"
             "padding:6px 8px;overflow-x:auto;white-space:pre")


def _span(kind: str, text: str) -> str:
    return f'<span style="{COLORS[kind]}">{html.escape(text)}</span>'


def highlight(text: str, functions=()) -> str:
    """HTML of IR text with inline-styled spans: keywords, function names (``def``
    and calls of ``functions``), ops, types, numbers, attribute names, comments."""
    functions = set(functions)
    out, last, previous = [], 0, ""
    for m in _TOKEN.finditer(text):
        out.append(html.escape(text[last:m.start()]))
        last = m.end()
        kind, word = m.lastgroup, m.group()
        if kind == "name":
            after = text[m.end():m.end() + 2]
            if word in KEYWORDS:
                kind = "keyword"
            elif previous == "def" or (word in functions and after.startswith("(")):
                kind = "function"
            elif word in ("inf", "nan"):
                kind = "number"
            elif word in TYPE_NAMES:
                kind = "type"
            elif after.startswith("(") and word in OPS:
                kind = "op"
            elif after.startswith("=") and after != "==" and previous != "def":
                # a keyword attribute ``axis=`` (an assignment has a space before ``=``)
                kind = "attribute"
            else:
                kind = None
            previous = word
        out.append(html.escape(word) if kind is None else _span(kind, word))
    out.append(html.escape(text[last:]))
    return "".join(out)


def _clip(line: str) -> str:
    if len(line) <= LONG_LINE:
        return line
    return line[:LONG_LINE] + f" … ({len(line) - LONG_LINE} more characters)"


def _pre(text: str, functions=()) -> str:
    text = "\n".join(_clip(line) for line in text.split("\n"))
    return f'<pre style="{PRE_STYLE}">{highlight(text, functions)}</pre>'


def _fold(summary_html: str, body_html: str, open_: bool) -> str:
    return (f"<details{' open' if open_ else ''}><summary style=\"cursor:pointer\">"
            f"{summary_html}</summary>{body_html}</details>")


def module_html(module: Module) -> str:
    """A module as HTML: one ``<details>`` per function, open unless it is longer
    than ``FOLD_LINES`` lines; hoisted constants in their own folded section."""
    try:
        text = print_module(module)
    except ChainruleError as exc:
        return f"<pre>{html.escape(repr(module))}: no text: {html.escape(str(exc))}</pre>"
    names = list(module.functions)
    chunks = text.rstrip("\n").split("\n\n")  # functions are separated by one blank line
    parts = [f"<div><b>Module</b> with {len(names)} function{'s' * (len(names) != 1)}"]
    if len(chunks) > len(names):
        header = chunks.pop(0)
        count = header.count("\n") + 1
        parts.append(_fold(f"{count} hoisted constant{'s' * (count != 1)}",
                           _pre(header), False))
    for chunk in chunks:
        lines = chunk.split("\n")
        first = next(i for i, line in enumerate(lines) if line.startswith("def "))
        summary = highlight("\n".join(lines[:first + 1]), names)
        summary = f'<code style="white-space:pre">{summary}</code> ({len(lines)} lines)'
        body = _pre("\n".join(lines[first + 1:]), names) if len(lines) > first + 1 else ""
        parts.append(_fold(summary, body, len(lines) <= FOLD_LINES))
    parts.append("</div>")
    return "\n".join(parts)


def function_html(fn: Function, name: str = FUNCTION_NAME) -> str:
    """A function as highlighted text, with its data-flow graph below (folded) when
    Graphviz can draw it."""
    text = node_str(fn)
    parts = [_pre(text)]
    svg = function_svg(fn, name)
    if svg is not None:
        parts.append(_fold("data-flow graph", _inline_svg(svg), False))
    return "<div>" + "\n".join(parts) + "</div>"


# -- Graphviz -------------------------------------------------------------------------------

FORWARD_COLOR, BACKWARD_COLOR, INPUT_COLOR = "#dbeafe", "#fed7aa", "#e0f2fe"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _what(value) -> str:
    if isinstance(value, Call):
        callee = value.callee
        return callee.name if not isinstance(callee, Var) else f"call {callee.name}"
    if isinstance(value, TupleGetItem):
        return f"[{value.index}]"
    if isinstance(value, Tuple):
        return "tuple"
    if isinstance(value, If):
        return "if"
    if isinstance(value, While):
        return f"while ({len(value.loop_vars)} carried)"
    if isinstance(value, Function):
        return "closure"
    return "="


def _reads(value) -> list:
    """What a binding reads: its atoms, and what its nested blocks read from outside."""
    bound = value.loop_vars if isinstance(value, While) else (
        value.params if isinstance(value, Function) else ())
    out = list(atoms_of(value))
    blocks = nested_blocks(value)
    if blocks:
        out += block_free_vars(blocks, bound)
    return out


def function_to_dot(fn: Function, name: str = FUNCTION_NAME, title: str | None = None,
                    backward_from: int | None = None, dpi: int | None = None) -> str:
    """Graphviz DOT text of a function's data flow: parameters are ellipses, each
    binding a box (its op, then its variable and type), constants small plain
    nodes, edges follow the values. A branch, loop or closure is one box fed by
    everything it reads. With ``backward_from=k`` the bindings from the k-th on are
    shaded as the backward sweep and a legend says so."""
    printer, names, _ = _prepare(fn, name)
    lines = ["digraph chainrule {", "  rankdir=TB;", "  nodesep=0.25;",
             '  node [fontname="monospace", fontsize=11];', '  edge [color="#555555"];']
    if dpi:
        lines.append(f"  dpi={int(dpi)};")
    if title:
        lines.append(f'  labelloc=t; fontname="sans-serif"; fontsize=16; label={_quote(title)};')
    ids: dict = {}
    for i, p in enumerate(fn.params):
        ids[p] = f"p{i}"
        label = f"{names[p]}\n{_short(repr(p.type))}"
        lines.append(f"  p{i} [shape=ellipse, style=filled, fillcolor=\"{INPUT_COLOR}\", "
                     f"label={_quote(label)}];")
    n_constants = 0

    def edges_into(target: str, atoms) -> None:
        nonlocal n_constants
        seen = set()
        for a in atoms:
            if isinstance(a, Constant):
                text = format_constant_data(a.data) if a.data.size <= 4 else (
                    f"{a.type!r} constant")
                lines.append(f"  k{n_constants} [shape=plaintext, fontsize=9, "
                             f"label={_quote(_short(text, 24))}];")
                lines.append(f"  k{n_constants} -> {target};")
                n_constants += 1
            elif isinstance(a, Var) and a not in seen:
                seen.add(a)
                if a not in ids:  # read from outside the function: a closure's capture
                    ids[a] = f"f{len(ids)}"
                    lines.append(f"  {ids[a]} [shape=ellipse, style=dashed, "
                                 f"label={_quote(names[a])}];")
                lines.append(f"  {ids[a]} -> {target};")

    for k, b in enumerate(fn.body.bindings):
        ids[b.var] = f"b{k}"
        backward = backward_from is not None and k >= backward_from
        color = BACKWARD_COLOR if backward else FORWARD_COLOR
        label = f"{_what(b.value)}\n{names[b.var]}: {_short(repr(b.var.type))}"
        shape = "box3d" if nested_blocks(b.value) else "box"
        lines.append(f"  b{k} [shape={shape}, style=\"filled,rounded\", fillcolor=\"{color}\", "
                     f"label={_quote(label)}];")
        edges_into(f"b{k}", _reads(b.value))
    lines.append('  out [shape=doubleoctagon, label="return"];')
    edges_into("out", atoms_of(fn.body.result))
    if backward_from is not None:
        lines += ['  subgraph cluster_legend {', '    label="legend"; fontsize=11; style=dashed;',
                  f'    legend_in [shape=ellipse, style=filled, fillcolor="{INPUT_COLOR}", '
                  'label="input"];',
                  f'    legend_fwd [shape=box, style="filled,rounded", fillcolor="{FORWARD_COLOR}"'
                  ', label="forward pass"];',
                  f'    legend_bwd [shape=box, style="filled,rounded", '
                  f'fillcolor="{BACKWARD_COLOR}", label="backward pass"];',
                  '    {rank=same; legend_in -> legend_fwd -> legend_bwd [style=invis];}', "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphviz_missing() -> str | None:
    """``None`` when Graphviz can draw here, else what to install."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return "the graphviz Python package (pip install graphviz)"
    if shutil.which("dot") is None:
        return ("Graphviz's dot program (apt-get install graphviz, brew install graphviz "
                "or conda install graphviz)")
    return None


def render_dot(dot: str, format: str = "svg") -> bytes | None:
    """``dot`` rendered by Graphviz (``format`` as ``dot -T``), or ``None`` when
    Graphviz is not installed or the graph has more than ``MAX_GRAPH_NODES`` nodes."""
    if graphviz_missing() is not None or dot.count(" [shape=") > MAX_GRAPH_NODES:
        return None
    import graphviz

    try:
        return graphviz.Source(dot).pipe(format=format)
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError):
        return None


def function_svg(fn: Function, name: str = FUNCTION_NAME) -> str | None:
    """SVG of a function's data flow, or ``None`` without Graphviz (or for a huge graph)."""
    svg = render_dot(function_to_dot(fn, name))
    return None if svg is None else svg.decode("utf-8")


def _inline_svg(svg: str) -> str:
    """SVG text fit for embedding in HTML: without its XML prolog and doctype."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


# -- tape tensors (duck-typed: the tape is a layer above the IR) ----------------------------


def tensor_svg(tensor) -> str | None:
    """SVG of a tape tensor's recorded graph, or ``None`` (a leaf, a graph freed by
    ``backward``, no Graphviz)."""
    if tensor.is_leaf:
        return None
    try:
        svg = render_dot(tensor.to_dot())
    except ChainruleError:
        return None
    return None if svg is None else svg.decode("utf-8")


def tensor_html(tensor) -> str:
    """A tape tensor as HTML: its repr, then the graph that computed it, drawn by
    Graphviz or else printed as IR text."""
    parts = [f'<pre style="{PRE_STYLE}">{html.escape(repr(tensor))}</pre>']
    if not tensor.is_leaf:
        try:
            module = tensor.graph()
        except ChainruleError as exc:
            parts.append(f"<p><i>{html.escape(str(exc))}</i></p>")
        else:
            n_ops = len(module["main"].body.bindings)
            svg = tensor_svg(tensor)
            if svg is not None:
                body = _inline_svg(svg)
            else:
                missing = graphviz_missing()
                note = f" (to draw it, install {missing})" if missing else ""
                body = _pre(print_module(module)) + f"<p><i>recorded as IR{note}</i></p>"
            parts.append(_fold(f"recorded graph: {n_ops} op{'s' * (n_ops != 1)}", body, True))
    return "<div>" + "\n".join(parts) + "</div>"
