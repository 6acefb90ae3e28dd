"""Pytrees: nested tuples, lists, dicts (and registered types) of leaves.

>>> leaves, tree = flatten({"b": (1, 2), "a": [3]})
>>> leaves
[3, 1, 2]
>>> unflatten(tree, [10, 20, 30])
{'a': [10], 'b': (20, 30)}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import ChainruleError

# type -> (to_children(x) -> (children, aux), from_children(aux, children) -> x)
NODE_TYPES: dict[type, tuple[Callable, Callable]] = {
    tuple: (lambda t: (list(t), None), lambda aux, c: tuple(c)),
    list: (lambda t: (list(t), None), lambda aux, c: list(c)),
    dict: (
        lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))),
        lambda aux, c: dict(zip(aux, c)),
    ),
}


def register_pytree_node(cls: type, to_children: Callable, from_children: Callable) -> None:
    """Let ``cls`` be a container: ``to_children(x) -> (children, aux)``."""
    NODE_TYPES[cls] = (to_children, from_children)


class TreeDef:
    """The structure of a pytree with its leaves taken out."""

    __slots__ = ("kind", "aux", "children", "num_leaves", "_hash")

    def __init__(self, kind, aux, children):
        self.kind = kind
        self.aux = aux
        self.children = tuple(children)
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in self.children)
        self._hash = hash((kind, aux, self.children))

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeDef) and self.kind is other.kind
                and self.aux == other.aux and self.children == other.children)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        if self.kind is type(None):
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        return f"{self.kind.__name__}({inner})"


LEAF = TreeDef(None, None, ())


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree: Any) -> tuple[list, TreeDef]:
    """Leaves in order (dict keys sorted) and the structure; iterative."""
    leaves: list = []
    # build bottom-up with an explicit stack: (node, state)
    stack: list = [(tree, None)]
    results: list = []
    while stack:
        node, pending = stack.pop()
        if pending is not None:
            kind, aux, n = pending
            children = results[len(results) - n:] if n else []
            del results[len(results) - n:]
            results.append(TreeDef(kind, aux, children))
            continue
        if node is None:
            results.append(TreeDef(type(None), None, ()))
            continue
        t = type(node)
        if _is_namedtuple(node):
            children, aux = list(node), t
            kind = "namedtuple"
        elif t in NODE_TYPES:
            children, aux = NODE_TYPES[t][0](node)
            kind = t
        else:
            leaves.append(node)
            results.append(LEAF)
            continue
        stack.append((None, (kind, aux, len(children))))
        for c in reversed(children):
            stack.append((c, None))
    # leaves were appended in visiting order, which is left-to-right
    return leaves, results[0]


def unflatten(treedef: TreeDef, leaves) -> Any:
    """The tree of structure ``treedef`` holding ``leaves`` in order (``flatten``'s
    inverse); the number of leaves must match."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ChainruleError(f"expected {treedef.num_leaves} leaves, got {len(leaves)}")
    it = iter(leaves)

    def build(td: TreeDef):
        if td.kind is None:
            return next(it)
        if td.kind is type(None):
            return None
        children = [build(c) for c in td.children]
        if td.kind == "namedtuple":
            return td.aux(*children)
        return NODE_TYPES[td.kind][1](td.aux, children)

    out = build(treedef)
    # ``build`` refers to itself through its closure: a reference cycle that would keep
    # ``it`` and so every leaf alive until the cyclic collector runs
    build = None  # noqa: F841
    return out


def tree_map(f: Callable, tree: Any, *rest: Any) -> Any:
    """``f`` applied leaf by leaf to ``tree`` (and the matching leaves of ``rest``),
    in a tree of the same structure."""
    leaves, td = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    return unflatten(td, [f(x, *xs) for x, *xs in zip(leaves, *others)])


def leaf_paths(tree: Any, prefix: str) -> list[str]:
    """Readable names for the leaves, e.g. ``params_W1``, ``xs_0``."""
    out: list[str] = []

    def walk(node, path):
        if node is None:
            return
        if _is_namedtuple(node):
            for f, c in zip(node._fields, node):
                walk(c, f"{path}_{f}")
        elif type(node) is dict:
            for k in sorted(node):
                walk(node[k], f"{path}_{k}")
        elif type(node) in NODE_TYPES:
            for i, c in enumerate(NODE_TYPES[type(node)][0](node)[0]):
                walk(c, f"{path}_{i}")
        else:
            out.append(path)

    walk(tree, prefix)
    return out
