"""Graphviz DOT text of a recorded graph; ``render`` needs the optional
``graphviz`` package (``pip install graphviz`` and the Graphviz binaries)."""

from __future__ import annotations

from ..errors import ChainruleError
from .graph import _Layout
from .tensor import Tensor


def _label(x) -> str:
    shape, dtype = x.aval() if isinstance(x, Tensor) else (getattr(x, "shape", ()), "")
    return f"{tuple(shape)} {dtype}".strip()


def to_dot(t: Tensor) -> str:
    """Nodes are ops (boxes) and inputs (ellipses); edges follow the data."""
    layout = _Layout(t)
    lines = ["digraph chainrule {", "  rankdir=TB;", '  node [fontname="monospace"];']
    for i, x in enumerate(layout.leaves):
        lines.append(f'  w{i} [shape=ellipse, style=filled, fillcolor=lightblue, '
                     f'label="w{i}\\n{_label(x)}"];')
    for i, x in enumerate(layout.inputs):
        lines.append(f'  in{i} [shape=ellipse, label="in{i}\\n{_label(x)}"];')
    names = {}
    for k, u in enumerate(layout.nodes):
        node = u.node
        op = "item" if node.op is None else node.op.name
        names[id(u)] = f"n{k}"
        lines.append(f'  n{k} [shape=box, label="{op}\\n{_label(u)}"];')
        for a in node.args:
            ref = layout.position.get(id(a))
            if ref is None:
                continue
            src = {"node": lambda i: f"n{i}", "leaf": lambda i: f"w{i}",
                   "input": lambda i: f"in{i}"}[ref[0]](ref[1])
            lines.append(f"  {src} -> n{k};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(t: Tensor, path: str, format: str = "svg") -> str:
    """Write the graph to ``path.<format>`` with the graphviz package; returns the file."""
    try:
        import graphviz
    except ImportError:
        raise ChainruleError("rendering needs the optional graphviz package: "
                             "pip install graphviz (and the Graphviz binaries)") from None
    return graphviz.Source(to_dot(t)).render(path, format=format, cleanup=True)
