"""Expressions of ``@script`` functions: Python AST -> traced values.

An expression is evaluated over *values*: traced values (``Traced``, which
emit IR through the ``Trace`` being built), Python numbers (weakly typed,
folded at compile time), NumPy arrays (constants) and Python tuples of
values. Operators and ``cnp.xxx(...)`` calls are the ordinary Python ones
applied to these values, so every function of ``chainrule.numpy`` works, and
nested expressions flatten to one binding per operation by construction.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import operator
import re
import types as pytypes

import numpy as np

from ... import numpy as cnp
from ...emit.methods import METHODS as ARRAY_METHODS
from ...emit.trace import Traced
from ...errors import ChainruleError, ParseError, TypeInferenceError
from ...ir.indexing import AT_METHODS, ArrayIndex, Slice
from ...ir.nodes import GlobalVar, Tuple
from ...ir.op import OPS
from ...ir.op import apply as apply_op
from ...ir.parser_literals import parse_attr, parse_constant
from ...ir.types import DTYPES, TensorType, TupleType, Type
from ..control import finish_if, run_branch
from ..leaves import bool_atom, is_weak, leaf_atom

BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow, ast.MatMult: operator.matmul,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
          ast.Eq: operator.eq, ast.NotEq: operator.ne}
PROPERTIES = {"shape", "ndim", "size", "dtype", "T", "real", "imag"}
BUILTINS = {"len", "abs", "min", "max", "float", "int", "bool", "range"}
NAMED_CONSTRUCTS = {
    "Try": "`try`", "TryStar": "`try`", "With": "`with`", "AsyncWith": "`async with`",
    "FunctionDef": "a nested `def`", "AsyncFunctionDef": "`async def`", "ClassDef": "`class`",
    "Global": "`global`", "Nonlocal": "`nonlocal`", "Delete": "`del`", "Assert": "`assert`",
    "Import": "`import`", "ImportFrom": "`import`", "Raise": "`raise`", "Match": "`match`",
    "AsyncFor": "`async for`", "Lambda": "`lambda`", "ListComp": "a list comprehension",
    "SetComp": "a set comprehension", "DictComp": "a dict comprehension",
    "GeneratorExp": "a generator expression", "Dict": "a dict display", "Set": "a set display",
    "JoinedStr": "an f-string", "NamedExpr": "`:=`", "Await": "`await`", "Yield": "`yield`",
    "YieldFrom": "`yield from`", "Starred": "`*` unpacking",
}


SCRIPT_CONSTANTS = (bool, int, float, complex, str)  # Python literals a script may use


class ScriptError(ParseError):
    """A ``@script`` function that cannot be compiled; carries the user's file, line, column."""

    def __init__(self, message: str, lineno=None, col=None, filename=None):
        super().__init__(message, lineno, col)
        # what Python's traceback shows for a SyntaxError: file, line, source text, caret
        self.filename, self.lineno, self.offset, self.msg = filename, lineno, col, message
        if filename and lineno:
            self.text = linecache.getline(filename, lineno) or None

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f"{self.filename or '<script>'}:{self.line}:{self.col}: "
        return where + self.message


_LOCATED: dict[type, type] = {}


def located_class(cls: type) -> type:
    """A ScriptError class that is also ``cls`` (so ``except TypeInferenceError`` still works)."""
    if issubclass(cls, ScriptError):
        return cls
    if cls not in _LOCATED:
        try:
            _LOCATED[cls] = type(f"Script{cls.__name__}", (ScriptError, cls), {})
        except TypeError:
            _LOCATED[cls] = ScriptError
    return _LOCATED[cls]


class Undefined:
    """A name that may not be bound here (assigned in one branch, or only in a loop)."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str):
        self.name = name
        self.why = why


class _Module:
    __slots__ = ("alias", "is_numpy")

    def __init__(self, alias, is_numpy):
        self.alias = alias
        self.is_numpy = is_numpy


class _Builtin:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _OpName:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def floor_div_mod(a, b, want_mod: bool):
    """Python's ``a // b`` / ``a % b`` on traced values: ``q = floor(a / b)``,
    ``a % b = a - q * b`` (integer operands give integer results)."""
    q = cnp.floor(a / b)
    dtypes = [x.dtype if isinstance(x, Traced) else np.result_type(x) for x in (a, b)]
    if all(np.issubdtype(d, np.integer) for d in dtypes):
        q = cnp.astype(q, np.result_type(*dtypes))
    return a - q * b if want_mod else q


def tree_leaves(v, leaves: list):
    """Leaves of nested Python tuples/lists; returns the structure."""
    if isinstance(v, (tuple, list)):
        return (type(v), tuple(tree_leaves(e, leaves) for e in v))
    leaves.append(v)
    return None


def tree_build(struct, it):
    if struct is None:
        return next(it)
    kind, children = struct
    return kind(tree_build(c, it) for c in children)


class ExprCompiler:
    """Evaluates expressions in ``self.env`` (Python name -> value)."""

    def __init__(self, sf, trace, program):
        self.sf = sf
        self.src = sf.source
        self.tr = trace
        self.program = program
        self.env: dict = {}

    # -- errors ----------------------------------------------------------------------
    def err(self, node, message: str, cls=ScriptError) -> ScriptError:
        return self.src.error(node, message, cls)

    def unsupported(self, node) -> ScriptError:
        what = NAMED_CONSTRUCTS.get(type(node).__name__, f"`{type(node).__name__}`")
        return self.err(node, f"{what} is not supported in @script functions")

    def relocate(self, exc: Exception, node) -> ScriptError:
        if isinstance(exc, ChainruleError):
            msg = exc.message if isinstance(exc, ParseError) else str(exc)
            msg = re.sub(r" \(at [^()]*:\d+\)$", "", msg)
            return self.err(node, msg, located_class(type(exc)))
        what = type(exc).__name__
        return self.err(node, f"{what}: {exc}", located_class(TypeInferenceError)
                        if isinstance(exc, TypeError) else ScriptError)

    # -- names -----------------------------------------------------------------------
    def lookup(self, node: ast.Name):
        name = node.id
        if name in self.env:
            v = self.env[name]
            if isinstance(v, Undefined):
                raise self.err(node, f"`{name}` may be undefined here: {v.why}")
            return v
        found, v = self.src.global_value(name)
        if found:
            return self.global_value(node, name, v)
        if name in BUILTINS:
            return _Builtin(name)
        if name in ("inf", "nan"):
            return float(name)
        if name in OPS:
            return _OpName(name)
        if hasattr(builtins, name):
            raise self.err(node, f"`{name}` is not supported in @script functions")
        raise self.err(node, f"name `{name}` is not defined")

    def global_value(self, node, name, v):
        from .functions import ScriptFunction

        if isinstance(v, (bool, int, float, np.ndarray, np.generic, ScriptFunction, Type)):
            return v
        if isinstance(v, pytypes.ModuleType):
            if v is cnp or v is np:
                return _Module(name, v is np)
            raise self.err(node, f"module `{name}` cannot be used in @script functions; "
                                 f"use chainrule.numpy (or numpy) functions")
        if isinstance(v, type) and issubclass(v, np.generic):
            return v
        fname = getattr(v, "__name__", None)
        if callable(v) and fname and (getattr(cnp, fname, None) is v
                                      or getattr(np, fname, None) is v):
            if getattr(cnp, fname, None) is None:
                raise self.err(node, f"numpy.{fname} has no chainrule.numpy equivalent")
            return getattr(cnp, fname)
        raise self.err(node, f"global `{name}` (a {type(v).__name__}) cannot be used in a "
                             f"@script function: only numbers, arrays, @script functions and "
                             f"chainrule.numpy / numpy functions")

    # -- expressions -------------------------------------------------------------------
    def expr(self, node):
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(node)
        try:
            return method(node)
        except ScriptError:
            raise
        except (ChainruleError, ArithmeticError, ValueError, TypeError, IndexError) as exc:
            raise self.relocate(exc, node) from None

    def static_value(self, node, what: str):
        v = self.expr(node)
        if isinstance(v, Traced):
            raise self.err(node, f"{what} must be known at compile time, not a traced value")
        return v

    def e_Constant(self, node):
        if isinstance(node.value, SCRIPT_CONSTANTS) or node.value in (None, Ellipsis):
            return node.value
        raise self.err(node, f"constant {node.value!r} is not supported")

    def e_Name(self, node):
        v = self.lookup(node)
        if isinstance(v, (_Builtin, _OpName, _Module)):
            raise self.err(node, f"`{node.id}` can only be called")
        return v

    def e_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def e_List(self, node):
        return [self.expr(e) for e in node.elts]

    def e_BinOp(self, node):
        fn = BINOPS.get(type(node.op))
        if fn is None:
            raise self.err(node, f"operator {type(node.op).__name__} is not supported")
        a, b = self.expr(node.left), self.expr(node.right)
        if fn in (operator.floordiv, operator.mod) and (isinstance(a, Traced)
                                                       or isinstance(b, Traced)):
            return floor_div_mod(a, b, fn is operator.mod)
        return fn(a, b)

    def e_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return cnp.logical_not(v) if isinstance(v, Traced) else (not v)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        return ~v

    def e_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = self.expr(node.values[0])
        for e in node.values[1:]:
            if not isinstance(result, Traced):
                if bool(result) != is_and:  # Python short-circuit on a known value
                    return result
                result = self.expr(e)
                continue
            other = self.expr(e)
            if not isinstance(other, Traced) and bool(other) != is_and:
                return other
            if isinstance(other, Traced):
                result = (cnp.logical_and if is_and else cnp.logical_or)(result, other)
        return result

    def e_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            fn = CMPOPS.get(type(op))
            if fn is None:
                raise self.err(node, f"comparison `{type(op).__name__}` is not supported")
            right = self.expr(right_node)
            r = fn(left, right)
            if result is None:
                result = r
            elif isinstance(result, Traced) or isinstance(r, Traced):
                result = cnp.logical_and(result, r)
            else:
                result = result and r
            left = right
        return result

    def e_IfExp(self, node):
        c = self.expr(node.test)
        if not isinstance(c, Traced):
            return self.expr(node.body if bool(c) else node.orelse)
        cond = bool_atom(self.tr, c, "a conditional expression")
        leaves_t, leaves_e = [], []
        then = run_branch(self.tr, lambda: tree_leaves(self.expr(node.body), leaves_t))
        other = run_branch(self.tr, lambda: tree_leaves(self.expr(node.orelse), leaves_e))
        if then.value != other.value:
            raise self.err(node, "the two sides of a conditional expression differ in structure")
        merged = finish_if(self.tr, cond, then, leaves_t, other, leaves_e)
        return tree_build(then.value, iter(merged))

    def e_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id not in self.env:
            base = self.lookup(node.value)
            if isinstance(base, _Module):
                fn = getattr(cnp, node.attr, None)
                if fn is None or node.attr.startswith("_"):
                    prefix = "numpy" if base.is_numpy else "chainrule.numpy"
                    raise self.err(node, f"{base.alias}.{node.attr}: {prefix}.{node.attr} is not "
                                         f"supported in @script functions (chainrule.numpy has "
                                         f"no `{node.attr}`)")
                return fn
        else:
            base = self.expr(node.value)
        supported = PROPERTIES | set(ARRAY_METHODS)
        if node.attr not in supported or isinstance(base, (tuple, list, bool, int, float)):
            raise self.err(node, f"attribute `.{node.attr}` is not supported in @script "
                                 f"functions (supported: {', '.join(sorted(supported))})")
        if node.attr == "shape" and isinstance(base, Traced):
            shape = base.shape
            if not all(isinstance(d, int) for d in shape):
                raise self.err(node, f"the shape {shape} is not static")
        return getattr(base, node.attr)

    def e_Subscript(self, node):
        base = self.expr(node.value)
        key = self.index_key(node.slice)
        if isinstance(base, (tuple, list)):
            if any(isinstance(k, Traced) for k in (key if isinstance(key, tuple) else (key,))):
                raise self.err(node, "a tuple is indexed by a number known at compile time")
            return base[key]
        if isinstance(base, Type):
            raise self.err(node, "types are only used as annotations")
        return cnp.getitem(base, key)

    def index_key(self, node):
        if isinstance(node, ast.Tuple):
            return tuple(self.index_key(e) for e in node.elts)
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.static_value(p, "a slice bound")
                     for p in (node.lower, node.upper, node.step)]
            return slice(*parts)
        return self.expr(node)

    # -- calls ---------------------------------------------------------------------------
    def e_Call(self, node):
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in AT_METHODS
                and isinstance(func.value, ast.Subscript)
                and isinstance(func.value.value, ast.Attribute)
                and func.value.value.attr == "at"):
            return self.at_update(node)
        if isinstance(func, ast.Name) and func.id in DTYPES and func.id not in self.env:
            found, _ = self.src.global_value(func.id)
            if not found:
                try:
                    return parse_constant(node).data
                except ParseError as exc:
                    raise self.err(node, exc.message) from None
        if isinstance(func, ast.Attribute):
            callee = self.e_Attribute(func)
        elif isinstance(func, ast.Name):
            callee = self.lookup(func)
        else:
            callee = self.expr(func)
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.unsupported(a)
        if isinstance(callee, _OpName):
            return self.call_op(node, callee.name)
        args = [self.expr(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.err(kw, "`**` arguments are not supported")
            kwargs[kw.arg] = self.expr(kw.value)
        from .functions import ScriptFunction

        if isinstance(callee, ScriptFunction):
            if kwargs:
                raise self.err(node, f"{callee.name}: keyword arguments are not supported")
            return self.call_script(node, callee, args)
        if isinstance(callee, _Builtin):
            return self.call_builtin(node, callee.name, args, kwargs)
        if isinstance(callee, _Module) or not callable(callee):
            raise self.err(node, f"{ast.unparse(func)} is not callable")
        return callee(*args, **kwargs)

    def call_builtin(self, node, name, args, kwargs):
        if kwargs:
            raise self.err(node, f"{name}() takes no keyword arguments here")
        if name == "range":
            raise self.err(node, "range() is only supported as the iterable of a `for` loop")
        if name == "abs":
            return cnp.abs(args[0]) if isinstance(args[0], Traced) else abs(args[0])
        if name in ("min", "max") and any(isinstance(a, Traced) for a in args):
            raise self.err(node, f"{name}() of traced values: use cnp.{name}imum(a, b) or "
                                 f"cnp.{name}(x)")
        return getattr(builtins, name)(*args)

    def call_op(self, node, name):
        """A bare op name (as printed by the text format): ``add(x, y)``, ``sum(x, axis=(0,))``."""
        args = [self.expr(a) for a in node.args]
        attrs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.err(kw, "`**` arguments are not supported")
            try:
                attrs[kw.arg] = parse_attr(kw.value)
            except ParseError:
                attrs[kw.arg] = self.static_value(kw.value, f"attribute {kw.arg} of {name}")
        return apply_op(OPS[name], *args, **attrs)

    def at_update(self, node):
        """``x.at[key].add(g)`` (``index_add``), ``.set`` / ``.multiply`` / ``.min`` /
        ``.max`` (``index_set`` ...): the functional updates."""
        method = node.func.attr
        base = self.expr(node.func.value.value.value)
        if len(node.args) != 1 or node.keywords:
            raise self.err(node, f".at[...].{method} takes one value")
        g = self.expr(node.args[0])
        key = self.index_key(node.func.value.slice)
        entries, arrays = [], []
        for k in key if isinstance(key, tuple) else (key,):
            if isinstance(k, slice):
                entries.append(Slice(k.start, k.stop, k.step))
            elif k is None or (isinstance(k, int) and not isinstance(k, bool)):
                entries.append(k)
            else:
                entries.append(ArrayIndex(len(arrays)))
                arrays.append(k)
        return OPS[AT_METHODS[method]](base, g, *arrays, key=tuple(entries))

    def call_script(self, node, sf, args):
        """A call to another ``@script`` function: a call of a module function."""
        try:
            types = sf.signature(args)
        except ChainruleError as exc:
            raise self.relocate(exc, node) from None
        name = self.program.function(sf, types)
        if name not in self.program.types:
            raise self.err(node, f"the recursive call to {sf.name} needs its return type: "
                                 f"annotate it, e.g. `def {sf.name}(...) -> f64:`")
        atoms = [self.arg_atom(node, a, t) for a, t in zip(args, types)]
        var = self.tr.builder.call(GlobalVar(name), atoms)
        return self.tr.wrap(var)

    def arg_atom(self, node, v, t):
        if isinstance(t, TupleType):
            if not isinstance(v, (tuple, list)) or len(v) != len(t.fields):
                raise self.err(node, f"expected a tuple for {t!r}")
            return Tuple(self.arg_atom(node, e, f) for e, f in zip(v, t.fields))
        if isinstance(v, Traced):
            if v.type != t:
                raise self.err(node, f"argument of type {v.type!r} where {t!r} is expected")
            return self.tr.atom(v)
        if not is_weak(v) and np.asarray(v).dtype != t.dtype.numpy:
            raise self.err(node, f"argument of dtype {np.asarray(v).dtype} where {t!r} is "
                                 f"expected")
        if isinstance(t, TensorType) and np.shape(v) not in ((), t.shape):
            raise self.err(node, f"argument of shape {np.shape(v)} where {t!r} is expected")
        return leaf_atom(self.tr, v, t)
