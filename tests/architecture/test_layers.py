"""The package's folders are its layers, and this test holds them to that.

Walking every import of the package with ``ast`` (at module level and inside
functions alike): a module imports only from its own layer or those below it;
the modules import each other in no cycle, except the few delegations that are
cycles by design (listed below, each with its reason); and no module imports a
private name (``_x``) from another package: a name another package needs is
public in its home module. The layers, bottom first, are documented in
docs/architecture.md.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
import repo_paths

ROOT = repo_paths.ROOT / "chainrule"

LAYERS = [
    ("errors", "tree"),                     # the exception hierarchy; pytrees
    ("ir",),                                # types, nodes, Op, Builder, printer, parser
    ("ops",),                               # every op, declared once
    ("emit",),                              # ops called on IR values (rules use it)
    ("rules",),                             # derivative and batching rules, keyed by op
    ("transform",),                         # the passes
    ("backend",),                           # running a module: interpreter, code, numba
    ("checks",),                            # what users pass, checked
    ("numpy", "scipy", "nn"),               # the user namespaces
    ("frontend",),                          # tracing Python functions, control flow
    ("tape",),                              # eager tensors recording IR
    ("api",),                               # grad, jit, jvp, vmap, custom rules...
    ("solvers", "optim", "random", "testing"),  # built on the API
    ("compat",),                            # autograd's names on all of it
    ("__init__", "__main__", "demo", "autograd_compat"),  # the package's faces
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}

# cycles by design: a module calling back into one that reads it (the edge listed is the
# delegation, made by a lazy import inside a method). Any other cycle is a fault.
DELEGATIONS = {
    ("chainrule.ir.nodes", "chainrule.ir.printer"):
        "str(node) is its text: a node calls the printer, which reads nodes",
    ("chainrule.ir.nodes", "chainrule.ir.display"):
        "a node shows itself (text, HTML, Graphviz) through display, which reads nodes",
    ("chainrule.ir.nodes", "chainrule.ir.equal"):
        "module == module is structural equality (equal.py), which reads nodes",
    ("chainrule.tape.tensor", "chainrule.tape.graph"):
        "a tensor's methods (backward, graph, a lazy value) run the tape's graph of tensors",
    ("chainrule.tape.tensor", "chainrule.tape.dot"):
        "a tensor draws its graph (dot.py), which reads tensors",
    ("chainrule.frontend.script.expressions", "chainrule.frontend.script.functions"):
        "a @script function calling a @script function compiles the callee",
}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


FILES = sorted(ROOT.rglob("*.py"))
MODULES = {_module_name(p): p for p in FILES}


def _resolve(module: str, package: bool, node: ast.ImportFrom) -> list[tuple[str, str]]:
    """(module named, name imported) for an ``import from`` statement of chainrule's."""
    if node.level:
        base = module.split(".")
        base = base if package else base[:-1]
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    if not prefix.startswith("chainrule"):
        return []
    out = []
    for a in node.names:
        sub = f"{prefix}.{a.name}"
        out.append((sub, "") if sub in MODULES else (prefix, a.name))
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of imports under ``if TYPE_CHECKING:`` (annotations: never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _imports(path: pathlib.Path):
    """(imported chainrule module, name imported from it or "") for every import that
    runs (at module level or inside a function; not those for type annotations only)."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    annotations_only = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.ImportFrom):
            yield from _resolve(module, path.name == "__init__.py", node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("chainrule"):
                    yield a.name, ""


def _target(name: str) -> str | None:
    """The module an import names ("chainrule.ops.sum": an attribute of chainrule.ops)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def _layer(module: str) -> int:
    if module.startswith("chainrule.scipy.integrate"):  # SciPy's odeint on chainrule's
        return LAYER["solvers"]
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else "__init__"]


def _edges() -> dict[str, set[str]]:
    out = {}
    for path in FILES:
        m = _module_name(path)
        out[m] = {t for n, _ in _imports(path) if (t := _target(n)) and t != m}
    return out


def test_every_module_has_a_layer():
    for path in FILES:
        _layer(_module_name(path))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path):
    module = _module_name(path)
    mine = _layer(module)
    for name, _ in _imports(path):
        theirs = _layer(name)
        assert theirs <= mine, (f"{module} (layer {mine}) imports {name} (layer {theirs}), a "
                                f"layer above it")


def test_rules_never_import_the_user_namespace():
    for path in (ROOT / "rules").rglob("*.py"):
        assert not any(n.startswith("chainrule.numpy") for n, _ in _imports(path)), path


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        group.add(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        out.append(group)
    return out


def test_no_import_cycles_but_the_delegations():
    edges = _edges()
    for a, b in DELEGATIONS:
        edges[a].discard(b)
    assert _cycles(edges) == []


def test_the_delegations_are_still_there():
    edges = _edges()
    for a, b in DELEGATIONS:
        assert b in edges[a], f"{a} no longer imports {b}: drop it from DELEGATIONS"


def _package(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]


def test_no_private_name_is_imported_from_another_package():
    found = []
    for path in FILES:
        me = _module_name(path)
        for module, name in _imports(path):
            home = _target(module)
            if (name.startswith("_") and not name.startswith("__") and home
                    and _package(home) != _package(me)):
                found.append(f"{me} imports {name} from {home}")
    assert found == []
