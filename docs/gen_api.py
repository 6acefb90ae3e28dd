"""The API reference, written from chainrule's docstrings.

A hook of mkdocs.yml (``hooks: [docs/gen_api.py]``): at every build it adds the
pages ``api/*.md`` made from the docstrings of the public names, and the
stylesheet that colours code blocks (Pygments), so the reference is never out of
date and the build needs no network. ``chainrule.numpy`` and ``chainrule.scipy``
are assembled from the op registry at import time, which is why this imports
chainrule instead of reading its source (as mkdocstrings would). As a script it
writes the pages to a directory, for reading them without mkdocs::

    python docs/gen_api.py OUT_DIR
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import typing
from pathlib import Path

# (page, title, introduction, [(module, kind)]); "detailed": one entry per name with its
# signature and docstring; "table": one row per name (the namespaces that mirror NumPy)
PAGES = [
    ("api/index.md", "Transforms and the tape",
     "What most programs use: the transforms (`grad`, `jit`, `jvp`, ...), control flow, "
     "custom derivatives, the eager tape, gradient checks, pytrees, random numbers, and "
     "the optimizers and learning-rate schedules of `chainrule.optim` (the layers of "
     "`chainrule.nn` are listed with [chainrule.numpy](numpy.md#chainrulenn)).",
     [("chainrule", "detailed"), ("chainrule.tape", "detailed"),
      ("chainrule.testing", "detailed"), ("chainrule.tree", "detailed"),
      ("chainrule.random", "detailed"), ("chainrule.optim", "detailed")]),
    ("api/numpy.md", "chainrule.numpy and chainrule.scipy",
     "The NumPy and SciPy functions chainrule differentiates, with NumPy's and SciPy's "
     "signatures and semantics: NumPy's or SciPy's documentation of the same name "
     "applies. The notes name the op behind a function (with its own derivative rules; "
     "elementwise, linear, or with a zero derivative) or say where chainrule differs.",
     [("chainrule.numpy", "table"), ("chainrule.numpy.linalg", "table"),
      ("chainrule.numpy.fft", "table"), ("chainrule.scipy.special", "table"),
      ("chainrule.scipy.stats", "table"), ("chainrule.scipy.signal", "table"),
      ("chainrule.scipy.linalg", "table"), ("chainrule.scipy.integrate", "table"),
      ("chainrule.nn", "table")]),
    ("api/autograd_compat.md", "chainrule.autograd_compat",
     "autograd's names and calling conventions on top of chainrule's transforms "
     "(see [Coming from autograd](../migrating_from_autograd.md)).",
     [("chainrule.autograd_compat", "detailed")]),
    ("api/extending.md", "Ops, rules and the IR",
     "For adding ops and derivative rules, and for working with the IR directly "
     "(see [Architecture](../architecture.md) and [The AD passes](../ad_passes.md)).",
     [("chainrule.ops.common", "detailed"), ("chainrule.rules", "detailed"),
      ("chainrule.ir", "detailed"), ("chainrule.ir.display", "detailed"),
      ("chainrule.transform", "detailed")]),
]
# modules without __all__ whose public names are picked by hand
CHOSEN = {
    "chainrule.ops.common": ["define"],
    "chainrule.ir": ["Module", "Function", "Builder", "parse", "verify", "print_module",
                     "structural_equal"],
    "chainrule.ir.display": ["node_text", "highlight", "module_html", "function_to_dot",
                             "render_dot", "graphviz_missing"],
    "chainrule.transform": ["gradient", "optimize", "Pipeline", "PASSES"],
}


def public_names(module) -> list[str]:
    name = module.__name__
    if name in CHOSEN:
        return [n for n in CHOSEN[name] if hasattr(module, n)]
    names = getattr(module, "__all__", None)
    if names is None:  # what the module itself defines
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == name
                 and (inspect.isfunction(v) or inspect.isclass(v))]
    return [n for n in names if hasattr(module, n) and not inspect.ismodule(getattr(module, n))]


# -- docstrings to Markdown -----------------------------------------------------------------

_CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)")


def _escape(line: str) -> str:
    """``<`` and ``>`` outside code spans, which Markdown would read as HTML tags."""
    parts = _CODE_SPAN.split(line)
    return "".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;")
                   for i, p in enumerate(parts))


_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc):`~?([^`]+)`")


def markdown_of(doc: str | None) -> str:
    """A docstring as Markdown: doctest examples fenced as ``pycon``, indented literal
    blocks fenced as text (the formula under a reST ``.. math::`` directive too), the
    rest as paragraphs, reST cross-references (``:func:`name```) as code spans."""
    if not doc:
        return ""
    lines = [_ROLE.sub(r"`\1`", line) for line in inspect.cleandoc(doc).split("\n")]
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == ".. math::":  # the indented block that follows is fenced
            i += 1
        elif line.lstrip().startswith(">>>"):
            indent = len(line) - len(line.lstrip())
            block = []
            while i < len(lines) and lines[i].strip():  # examples run to a blank line
                block.append(lines[i][indent:])
                i += 1
            out += ["", "```pycon", *block, "```", ""]
        elif line.startswith("    ") and (not out or not out[-1].strip()):
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["```text", *block, "```", ""]
        else:
            out.append(_escape(line.strip()) if line.strip() else "")
            i += 1
    return "\n".join(out).strip("\n")


def summary_of(doc: str | None) -> str:
    """The first sentence of a docstring, on one line, fit for a table cell."""
    if not doc:
        return ""
    paragraph = inspect.cleandoc(doc).split("\n\n")[0]
    paragraph = " ".join(line.strip() for line in paragraph.splitlines()
                         if not line.lstrip().startswith(">>>"))
    match = re.match(r"(.+?\.)(\s|$)", paragraph)
    sentence = match.group(1) if match else paragraph
    return _escape(sentence).replace("|", "\\|")


def signature_of(name: str, obj, method: bool = False) -> str:
    """``name(params)``, annotations as written (not quoted strings), ``self`` left out."""
    try:
        try:
            sig = inspect.signature(obj, eval_str=True)
        except Exception:  # an annotation that names something not importable here
            sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    if method:
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    return _QUALIFIER.sub("", _FORWARD_REF.sub(r"\1", f"{name}{sig}")).replace("NoneType",
                                                                              "None")


# annotations as written: ForwardRef('Any') (a NamedTuple's fields under ``from
# __future__ import annotations``) as Any, typing.Any as Any, a class of a private
# module (chainrule.optim._base.GradientTransformation) by its name
_FORWARD_REF = re.compile(r"ForwardRef\('([^']*)'\)")
_QUALIFIER = re.compile(r"\b(?:typing\.|collections\.abc\.|chainrule(?:\.\w+)*\._\w+\.)")


def _is_type_alias(obj) -> bool:
    """``Params = Any``, ``Schedule = Callable[[Any], Any]``, ``float | Schedule``."""
    return obj is typing.Any or typing.get_origin(obj) is not None


def _order(module, names: list[str]) -> list[str]:
    """Functions first, then classes, then exceptions, then the rest (constants, type
    aliases), each alphabetically."""
    def rank(name):
        obj = getattr(module, name)
        if _is_type_alias(obj):
            return (3, name.lower())
        if inspect.isclass(obj):
            return (2 if issubclass(obj, BaseException) else 1, name.lower())
        return (0 if callable(obj) else 3, name.lower())

    return sorted(names, key=rank)


# -- pages ----------------------------------------------------------------------------------


def _anchor(qualified: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "-", qualified.lower()).strip("-")


def detailed(module) -> list[str]:
    out = []
    for name in _order(module, public_names(module)):
        obj = getattr(module, name)
        qualified = f"{module.__name__}.{name}"
        out += [f"### `{name}` {{#{_anchor(qualified)}}}", ""]
        if _is_type_alias(obj):
            alias = _QUALIFIER.sub("", repr(obj))
            out += [f"A type alias: `{name} = {alias}`.", ""]
            continue
        if callable(obj):
            out += ["```python", signature_of(name, obj), "```", ""]
        doc = obj.__doc__ if (callable(obj) or inspect.isclass(obj)) else None
        if doc and doc != type(obj).__doc__ or callable(obj):
            out += [markdown_of(doc) or "*(no docstring)*", ""]
        else:
            out += [f"A `{type(obj).__name__}`.", ""]
        if inspect.isclass(obj):
            for method, value in vars(obj).items():
                if method.startswith("_") or not (inspect.isfunction(value)
                                                  or isinstance(value, property)):
                    continue
                target = value.fget if isinstance(value, property) else value
                shown = method if isinstance(value, property) else signature_of(method, value,
                                                                                  method=True)
                out += [f"- `{shown}`" + (f": {summary_of(target.__doc__)}"
                                          if target.__doc__ else "")]
            out.append("")
    return out


def _notes(function) -> str:
    """What chainrule adds to a NumPy function: the facts of the op behind it."""
    op = getattr(function, "op", None)
    if op is None:
        return summary_of(function.__doc__)
    facts = []
    if getattr(op, "elementwise", False):
        facts.append("elementwise")
    if getattr(op, "linear", None):
        facts.append("linear")
    if not getattr(op, "differentiable", True):
        facts.append("zero derivative")
    own = f"op `{op.name}`" + (f": {', '.join(facts)}" if facts else "")
    summary = summary_of(op.doc) if op.doc else ""
    return f"{summary} ({own})" if summary else own[0].upper() + own[1:]


def table(module) -> list[str]:
    out = ["| name | signature | notes |", "|---|---|---|"]
    for name in public_names(module):
        obj = getattr(module, name)
        if not callable(obj):
            out.append(f"| `{name}` | | `{type(obj).__name__}` constant |")
            continue
        sig = signature_of(name, obj).replace("|", "\\|")
        out.append(f"| `{name}` | `{sig}` | {_notes(obj)} |")
    return out + [""]


def render(page: tuple) -> str:
    _, title, intro, modules = page
    out = [f"# {title}", "", intro, "",
           "*Generated from the docstrings by `docs/gen_api.py` at every build.*", ""]
    for module_name, kind in modules:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        out += [f"## `{module_name}`", ""]
        first = markdown_of(module.__doc__).split("\n\n")[0] if module.__doc__ else ""
        if first and not first.startswith("```"):
            out += [first, ""]
        out += detailed(module) if kind == "detailed" else table(module)
    return "\n".join(out).rstrip("\n") + "\n"


def pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="friendly").get_style_defs(".highlight")


# -- the mkdocs hook ------------------------------------------------------------------------


def on_files(files, config):
    """Add the generated pages and the code stylesheet to the site (mkdocs >= 1.6)."""
    from mkdocs.structure.files import File

    root = str(Path(config["docs_dir"]).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)  # the chainrule next to docs/, installed or not
    for page in PAGES:
        files.append(File.generated(config, page[0], content=render(page)))
    files.append(File.generated(config, "css/pygments.css", content=pygments_css()))
    return files


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    for page in PAGES:
        path = out / page[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(page), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main(sys.argv[1:]))
