"""Shape polymorphism: compile once for every size of some dimensions.

``jit(f, polymorphic_shapes=...)``, ``grad`` and ``value_and_grad`` take JAX's
``polymorphic_shapes`` (of ``jax2tf`` / ``jax.export``): one specification per
positional argument, a string naming each dimension, applied to every array
leaf of that argument (``None``: the argument's shapes are static):

- a name (``b``) is a symbolic dimension: the program is traced with ``f64[b, 3]``
  and serves every size of it; the same name in two places means the same size,
  checked at every call;
- an integer must equal the actual size; ``_`` keeps the actual size;
- a trailing ``...`` keeps the actual sizes of the remaining dimensions.

>>> import numpy as np
>>> spec = parse_spec("(b, 3)")
>>> spec
('b', 3)
>>> leaf_type(np.ones((7, 3)), spec, "x")
f64[b, 3]
>>> leaf_type(np.ones((7, 3, 2)), parse_spec("b, ..."), "x")
f64[b, 3, 2]
"""

from __future__ import annotations

import keyword

import numpy as np

from ..errors import ArgumentError
from ..ir.types import DType, TensorType
from ..tree import flatten

KEEP, REST = "_", "..."


def parse_spec(spec) -> tuple | None:
    """A polymorphic shape specification as a tuple of entries (names, ints, ``_``,
    a trailing ``...``); None for None."""
    if spec is None:
        return None
    if isinstance(spec, (tuple, list)):
        entries = list(spec)
    elif isinstance(spec, str):
        text = spec.strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        entries = [e.strip() for e in text.split(",")]
        if entries and entries[-1] == "":
            entries.pop()  # "(b,)"
    else:
        raise ArgumentError(f"polymorphic_shapes: a specification is a string like "
                            f"'(b, 3)', not {spec!r}")
    out = []
    for k, e in enumerate(entries):
        if isinstance(e, str) and e.lstrip("-").isdigit():
            e = int(e)
        if isinstance(e, (int, np.integer)) and not isinstance(e, bool) and e >= 0:
            out.append(int(e))
        elif e == REST and k == len(entries) - 1:
            out.append(REST)
        elif e == KEEP or (isinstance(e, str) and e.isidentifier()
                           and not keyword.iskeyword(e)):
            out.append(e)
        else:
            raise ArgumentError(
                f"polymorphic_shapes: bad dimension {e!r} in {spec!r}; use a name (a "
                f"symbol), a size, '_' (the actual size) or a trailing '...'")
    return tuple(out)


def leaf_type(x, spec: tuple, where: str) -> TensorType:
    """The symbolic type of the array ``x`` under ``spec``."""
    arr = x if isinstance(x, np.ndarray) else np.asarray(x)
    shape = arr.shape
    rest = bool(spec) and spec[-1] == REST
    dims = spec[:-1] if rest else spec
    if len(dims) > len(shape) or (not rest and len(dims) != len(shape)):
        raise ArgumentError(f"polymorphic_shapes: {where} has shape {shape}, which does "
                            f"not match the specification {_text(spec)}")
    out = []
    for axis, (d, size) in enumerate(zip(dims, shape)):
        if d == KEEP:
            out.append(size)
        elif isinstance(d, int):
            if d != size:
                raise ArgumentError(f"polymorphic_shapes: {where} has shape {shape}: axis "
                                    f"{axis} is {size}, but the specification {_text(spec)} "
                                    f"says {d}")
            out.append(size)
        else:
            out.append(d)
    out.extend(shape[len(dims):])
    return TensorType(out, DType(arr.dtype))


def _text(spec) -> str:
    return "(" + ", ".join(str(d) for d in spec) + ")"


def parse_specs(polymorphic_shapes, name: str) -> tuple | None:
    """The specifications of a transform's ``polymorphic_shapes`` argument, one per
    positional argument (a single string applies to the first)."""
    if polymorphic_shapes is None:
        return None
    if isinstance(polymorphic_shapes, str):
        polymorphic_shapes = (polymorphic_shapes,)
    if not isinstance(polymorphic_shapes, (tuple, list)):
        raise ArgumentError(f"{name}: polymorphic_shapes is a sequence of specifications "
                            f"(one per positional argument), not {polymorphic_shapes!r}")
    return tuple(parse_spec(s) for s in polymorphic_shapes)


def leaf_types(specs, args, names=None) -> list | None:
    """One symbolic type (or None: traced with its actual type) per array leaf of the
    positional arguments ``args``; checks that a symbol has one size at this call."""
    if specs is None:
        return None
    if len(specs) > len(args):
        raise ArgumentError(f"polymorphic_shapes has {len(specs)} specifications for "
                            f"{len(args)} positional argument(s)")
    out: list = []
    sizes: dict = {}
    for i, arg in enumerate(args):
        leaves = flatten(arg)[0]
        spec = specs[i] if i < len(specs) else None
        where = f"argument {names[i] if names else i}"
        for leaf in leaves:
            if spec is None or not hasattr(leaf, "shape") and not isinstance(
                    leaf, (list, tuple, float, int, complex)):
                out.append(None)
                continue
            t = leaf_type(leaf, spec, where)
            for d, size in zip(t.shape, np.shape(leaf)):
                if isinstance(d, str):
                    seen = sizes.setdefault(d, (size, where))
                    if seen[0] != size:
                        raise ArgumentError(
                            f"polymorphic_shapes: dimension {d} is {size} in {where} but "
                            f"{seen[0]} in {seen[1]} (one symbol, one size per call)")
            out.append(t)
    return out


def leaf_key(types) -> tuple | None:
    """The part of a cache key the symbolic types contribute."""
    return None if types is None else tuple(types)


def specs_of(f, polymorphic_shapes, name: str) -> tuple | None:
    """The parsed ``polymorphic_shapes`` of a transform ``name`` of ``f`` (an ``@script``
    function's symbolic annotations by default)."""
    if polymorphic_shapes is None:
        return annotation_specs(f)
    return parse_specs(polymorphic_shapes, name)


def annotation_specs(f) -> tuple | None:
    """The specifications an ``@script`` function's annotations give (``x: "f64[n, 3]"``
    compiles once for every n), or None when they name no symbol."""
    annotations = getattr(f, "param_annotations", None)
    if annotations is None or not callable(annotations):
        return None
    try:
        types = annotations()
    except Exception:  # noqa: BLE001 - a bad annotation is reported where it is compiled
        return None
    specs = [tuple(t.shape) if isinstance(t, TensorType) else None for t in types]
    if not any(s and any(isinstance(d, str) for d in s) for s in specs):
        return None
    return tuple(specs)


def unify(types, annotations, where: str) -> dict:
    """``symbol -> dimension`` making each type match its annotation (a symbol of an
    annotation stands for one dimension throughout); raises ArgumentError otherwise."""
    out: dict = {}
    for name, t, ann in zip(where, types, annotations):
        if ann is None or t is None:
            continue
        if not (isinstance(t, TensorType) and isinstance(ann, TensorType)
                and t.dtype == ann.dtype and t.ndim == ann.ndim):
            raise ArgumentError(f"argument {name} has type {t!r}, annotated {ann!r}")
        for d, a in zip(t.shape, ann.shape):
            if isinstance(a, str):
                seen = out.setdefault(a, d)
                if seen != d:
                    raise ArgumentError(f"argument {name} has type {t!r}, annotated {ann!r}: "
                                        f"{a} is {seen} in another argument")
            elif a != d:
                raise ArgumentError(f"argument {name} has type {t!r}, annotated {ann!r}")
    return out


def substitute(t, dims: dict):
    """``t`` with its symbols replaced as ``dims`` says (a type of the ``ir.types``)."""
    from ..ir.types import TupleType

    if isinstance(t, TensorType):
        return TensorType([dims.get(d, d) if isinstance(d, str) else d for d in t.shape],
                          t.dtype)
    if isinstance(t, TupleType):
        return TupleType(substitute(f, dims) for f in t.fields)
    return t


__all__ = ["annotation_specs", "leaf_key", "leaf_type", "leaf_types", "parse_spec",
           "parse_specs", "specs_of", "substitute", "unify"]
