"""Layers point down: walking every import of the package (with ``ast``), a module
imports only from its own layer or those below it, and module-level imports
form no cycle. The layers, bottom first, are documented in docs/architecture.md."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "chainrule"

LAYERS = [
    {"errors", "tree"},
    {"ir"},
    {"ops"},
    {"emit"},
    {"rules"},
    {"transform"},
    {"backend"},
    {"checks"},
    {"numpy", "scipy", "nn"},
    {"frontend"},
    {"tape"},
    {"custom", "custom_closure", "api", "api_forward", "api_jacobian", "api_vmap", "random",
     "testing", "testing_steps", "solvers", "optim", "autograd_compat", "_autograd_misc",
     "_autograd_primitive", "_autograd_vspace", "_autograd_builtins", "api_jacobian_program",
     "api_grad_program", "api_polymorphic"},
    {"__init__", "__main__", "demo"},
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: pathlib.Path) -> bool:
    return path.name == "__init__.py"


def _resolve(module: str, package: bool, node: ast.ImportFrom) -> list[str]:
    """The chainrule modules an ``import from`` statement names."""
    if node.level:
        base = module.split(".")
        base = base if package else base[:-1]
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    if not prefix.startswith("chainrule"):
        return []
    if node.module is None or node.level == 0 and prefix == "chainrule":
        return [f"{prefix}.{a.name}" for a in node.names]  # from . import ops
    return [prefix]


def _imports(path: pathlib.Path):
    """(imported chainrule module, at module level?) for every import in the file."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for name in _resolve(module, _is_package(path), node):
                yield name, id(node) in top
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("chainrule"):
                    yield a.name, id(node) in top


def _layer(module: str) -> int:
    if module.startswith("chainrule.scipy.integrate"):  # SciPy's odeint over chainrule's
        return LAYER["solvers"]
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    return LAYER[key]


FILES = sorted(ROOT.rglob("*.py"))


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


def test_no_module_level_import_cycles():
    graph = {}
    for path in FILES:
        graph[_module_name(path)] = {n for n, top in _imports(path) if top}
    modules = set(graph)

    def target(name):  # "chainrule.ops.sum" names an attribute of the package chainrule.ops
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in modules else None

    edges = {m: {t for n in deps if (t := target(n)) and t != m} for m, deps in graph.items()}
    state: dict = {}

    def visit(m, path):
        state[m] = "open"
        for t in edges[m]:
            if state.get(t) == "open":
                cycle = path[path.index(t):] + [t]
                pytest.fail("module-level import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
