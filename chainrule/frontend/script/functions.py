"""``@chainrule.script``: a Python function's source (read with ``ast``, never
``eval``/``exec``) compiled to IR, with ``if``/``while``/``for`` as ``If``/``While``.

>>> import numpy as np
>>> import chainrule as cr
>>> f = script_from_source('''
... def f(a: f64, b: f64) -> f64:
...     if a > 0:
...         return a + b + 2 * a * b
...     else:
...         return sqrt(-a)
... ''')
>>> float(f(2.0, 3.0)), float(f(-4.0, 0.0))
(17.0, 2.0)

What a script function may contain (see ``script.expressions`` and ``script.statements``):
assignments (tuple targets, reassignment -> SSA, ``+=``), arithmetic and
comparison operators, ``and``/``or``/``not`` (logical ops on traced bools),
subscripts, ``cnp.f(...)``/``np.f(...)`` (any ``chainrule.numpy`` function;
the module is found through the function's globals), the methods ``.sum()``,
``.T``, ``.reshape(...)``, ``.shape[i]`` ..., ``if``/``elif``/``else``,
conditional expressions, ``while``, ``for i in range(a, b[, step])``,
``break``, ``continue``, early ``return``, calls to other ``@script``
functions (calls of module functions: recursion works once the recursive
function has a return annotation), and numbers/arrays from the globals or
the closure (read when a signature is first compiled). The text format
that ``print(module)`` writes is itself accepted (bare op names such as
``add(x, y)``, ``f32(2.0)`` constants, ``x.at[i].add(v)``), see
``script_from_source``.

Parameter types come from annotations (``x: "f32[3]"``, ``x: f32[3]`` under
``from __future__ import annotations``, or a ``chainrule.ir`` type object),
else from the arguments: a module is compiled and cached per signature.

Called on NumPy values, a script function runs its module with the
interpreter. Called on traced values (inside ``chainrule.trace``), it
compiles its body *inline* into the current trace; the script functions it
calls become functions of the traced module (registered in
``Trace.functions``, which ``trace_function`` adds to the module).
"""

from __future__ import annotations

import ast
import inspect
import keyword
import textwrap
import types as pytypes

import numpy as np

from ...emit.trace import Trace, Traced
from ...errors import ArgumentError, ChainruleError, ParseError
from ...ir.nodes import Module, Tuple
from ...ir.op import OPS
from ...ir.parser_literals import parse_constant, parse_type
from ...ir.types import DTYPES, FuncType, TensorType, TupleType, Type
from ...tree import flatten
from ..leaves import default_type, is_weak, leaf_atom
from ..polymorphic import substitute, unify
from ..tracer import abstract_type, recording_trace
from .expressions import ScriptError
from .statements import StmtCompiler

__all__ = ["ScriptError", "ScriptFunction", "script", "script_from_source"]


class Source:
    """Where a script function comes from: its AST, file position and names."""

    def __init__(self, tree, filename, line_offset=0, col_offset=0, globals_=None,
                 closure=None):
        self.tree = tree
        self.filename = filename
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.globals = globals_ if globals_ is not None else {}
        self.closure = closure or {}

    def error(self, node, message: str, cls=ScriptError):
        line = getattr(node, "lineno", None)
        if line is None:
            return cls(message, filename=self.filename)
        col = getattr(node, "col_offset", 0) + 1 + self.col_offset
        return cls(message, line + self.line_offset, col, self.filename)

    def global_value(self, name: str):
        if name in self.closure:
            try:
                return True, self.closure[name].cell_contents
            except ValueError:
                return False, None
        if name in self.globals:
            return True, self.globals[name]
        return False, None

    def annotation(self, node) -> Type:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return parse_type(ast.parse(node.value.strip(), mode="eval").body)
            except (SyntaxError, ChainruleError) as exc:
                raise self.error(node, f"not a type: {node.value!r} ({_msg(exc)})") from None
        if isinstance(node, (ast.Name, ast.Attribute)):
            head = node
            while isinstance(head, ast.Attribute):
                head = head.value
            found, v = self.global_value(head.id)
            if isinstance(node, ast.Name) and found and isinstance(v, Type):
                return v
        try:
            return parse_type(node)
        except ParseError as exc:
            raise self.error(node, exc.message) from None


def _msg(exc) -> str:
    return exc.message if isinstance(exc, ParseError) else str(exc)


def arg_type(a) -> Type:
    """The IR type of a call argument (an array, number, traced value, tuple or a Type)."""
    if isinstance(a, Type):
        return a
    if isinstance(a, Traced):
        return a.type
    if isinstance(a, (tuple, list)):
        return TupleType(arg_type(e) for e in a)
    return abstract_type(a)


class Program:
    """The module functions compiled for one module (or one trace), one per
    (script function, signature)."""

    def __init__(self, functions=None, types=None, reserved=()):
        self.functions = functions if functions is not None else {}
        self.types = types if types is not None else {}
        self.names: dict = {}
        self.reserved = set(reserved)

    def function(self, sf: ScriptFunction, types: tuple) -> str:
        key = (sf, types)
        if key in self.names:
            return self.names[key]
        base = sf.name
        if base in OPS or base in DTYPES or keyword.iskeyword(base) or base in (
                "tuple", "Callable", "inf", "nan", "slice"):
            base = f"{base}_fn"
        name, k = base, 0
        while name in self.functions or name in self.types or name in self.reserved:
            k += 1
            name = f"{base}_{k}"
        self.names[key] = name
        self.reserved.add(name)
        ret = sf.return_annotation()
        if ret is not None:
            self.types[name] = FuncType(types, ret)
        try:
            fn = compile_function(sf, types, self, name)
        except BaseException:
            del self.names[key]
            self.types.pop(name, None)
            raise
        self.types[name] = fn.type
        self.functions[name] = fn
        return name


def compile_function(sf: ScriptFunction, types, program: Program, name: str):
    tr = Trace(name)
    tr.builder.extra_globals = program.types
    env = {}
    for pname, t in zip(sf.param_names, types):
        env[pname] = tr.wrap(tr.builder.param(pname, t))
    result = StmtCompiler(sf, tr, program).run(env)
    atom = result_atom(sf, tr, result, sf.return_annotation())
    try:
        return tr.builder.finish_function(atom)
    except ChainruleError as exc:
        raise sf.source.error(sf.fdef, _msg(exc)) from None


def result_atom(sf, tr, v, ret):
    """The function's result as an atom or (nested) tuple of atoms, of the declared type."""
    if isinstance(v, (tuple, list)):
        if ret is not None and (not isinstance(ret, TupleType) or len(ret.fields) != len(v)):
            raise sf.source.error(sf.fdef, f"{sf.name} returns a tuple of {len(v)} but is "
                                           f"annotated {ret!r}")
        fields = ret.fields if ret is not None else [None] * len(v)
        return Tuple(result_atom(sf, tr, e, f) for e, f in zip(v, fields))
    if isinstance(ret, TupleType):
        raise sf.source.error(sf.fdef, f"{sf.name} is annotated {ret!r} but returns one value")
    t = default_type(v) if ret is None else ret
    if isinstance(v, Traced) and v.type != t:
        raise sf.source.error(sf.fdef, f"{sf.name} returns {v.type!r} but is annotated {t!r}")
    if not isinstance(v, Traced) and not is_weak(v):
        v = np.asarray(v)
        if ret is not None and (v.dtype != t.dtype.numpy or v.shape != t.shape):
            raise sf.source.error(sf.fdef, f"{sf.name} returns {default_type(v)!r} but is "
                                           f"annotated {t!r}")
    return leaf_atom(tr, v, t)


def _trace_program(tr: Trace) -> Program:
    prog = getattr(tr, "_script_program", None)
    if prog is None:
        functions = getattr(tr, "functions", None)
        if functions is None:
            functions = tr.functions = {}
        prog = Program(functions, tr.builder.extra_globals, reserved={tr.name})
        tr._script_program = prog
    return prog


class ScriptFunction:
    """A compiled-on-demand ``@script`` function (see the module docstring)."""

    def __init__(self, fdef: ast.FunctionDef, source: Source, python=None):
        self.fdef = fdef
        self.source = source
        self.name = fdef.name
        self.python = python
        self.__name__ = fdef.name
        self.__doc__ = getattr(python, "__doc__", None) or ast.get_docstring(fdef)
        if python is not None:
            self.__wrapped__ = python
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise source.error(fdef, f"{fdef.name}: @script functions take plain positional "
                                     f"parameters only (no defaults, *args, **kwargs)")
        self.param_names = [p.arg for p in a.args]
        self._modules: dict = {}
        self._annotations = None

    def __repr__(self) -> str:
        return f"<script function {self.name}>"

    # -- signatures --------------------------------------------------------------------
    def param_annotations(self) -> list:
        if self._annotations is None:
            params = [None if p.annotation is None else self.source.annotation(p.annotation)
                      for p in self.fdef.args.args]
            ret = None if self.fdef.returns is None else self.source.annotation(
                self.fdef.returns)
            self._annotations = (params, ret)
        return self._annotations[0]

    def return_annotation(self) -> Type | None:
        self.param_annotations()
        return self._annotations[1]

    def signature(self, args) -> tuple:
        if len(args) != len(self.param_names):
            raise ChainruleError(f"{self.name} takes {len(self.param_names)} argument(s) "
                                 f"({', '.join(self.param_names)}), got {len(args)}")
        return tuple(ann if ann is not None else arg_type(a)
                     for a, ann in zip(args, self.param_annotations()))

    # -- compiling and running ---------------------------------------------------------------
    def module(self, *args) -> Module:
        """The Module for these arguments (arrays, numbers or ``chainrule.ir`` types)."""
        types = self.signature(args)
        if types not in self._modules:
            program = Program()
            name = program.function(self, types)
            funcs = {name: program.functions[name]}
            funcs.update(program.functions)
            self._modules[types] = (Module(funcs), name)
        return self._modules[types][0]

    def __call__(self, *args):
        leaves = flatten(list(args))[0]
        if any(isinstance(x, Traced) for x in leaves):
            return self.inline(args)
        from ...backend.interpret import Interpreter, run

        m = self.module(*args)
        func = self._modules[self.signature(args)][1]
        if any(getattr(x, "requires_grad", False) for x in leaves):
            # tape tensors: run the IR through the op functions, so the tape records it
            return Interpreter(m, dispatch=True).call_function(m[func], list(args), {})
        return run(m, *args, func=func)

    def inline(self, args):
        """Compile the body into the innermost function being traced (the arguments
        may all be an enclosing trace's values, such as its captured inputs)."""
        tr = recording_trace(args)
        env = {}
        # a symbol of the annotations (x: "f64[n, 3]") stands for what the traced
        # arguments have there: a size, or a symbol of the trace (polymorphic_shapes)
        try:
            dims = unify([a.type if isinstance(a, Traced) else None for a in args],
                         self.param_annotations(), self.param_names)
        except ArgumentError as exc:
            raise ChainruleError(f"{self.name}: {exc}") from None
        for name, a, ann in zip(self.param_names, args, self.param_annotations()):
            if ann is not None:
                ann = substitute(ann, dims)
                if isinstance(a, Traced) and a.type != ann:
                    raise ChainruleError(f"{self.name}: argument {name} has type {a.type!r}, "
                                         f"annotated {ann!r}")
                if not isinstance(a, (Traced, tuple, list)) and isinstance(ann, TensorType):
                    a = np.broadcast_to(np.asarray(a, ann.dtype.numpy), ann.shape).copy()
            env[name] = a
        if len(args) != len(self.param_names):
            self.signature(args)  # raises the arity error
        result = StmtCompiler(self, tr, _trace_program(tr)).run(env)
        ret = self.return_annotation()
        if ret is not None:
            result = _convert_result(self, result, substitute(ret, dims))
        return result


def _convert_result(sf, v, ret):
    """An inlined result, checked against (and weak numbers converted to) the annotation."""
    if isinstance(v, (tuple, list)) or isinstance(ret, TupleType):
        if not (isinstance(v, (tuple, list)) and isinstance(ret, TupleType)
                and len(v) == len(ret.fields)):
            raise sf.source.error(sf.fdef, f"{sf.name} returns {v!r}, annotated {ret!r}")
        return tuple(_convert_result(sf, e, f) for e, f in zip(v, ret.fields))
    got = v.type if isinstance(v, Traced) else default_type(v)
    if is_weak(v) and isinstance(ret, TensorType) and ret.is_static:
        return np.broadcast_to(np.asarray(v, ret.dtype.numpy), ret.shape).copy()
    if got != ret:
        raise sf.source.error(sf.fdef, f"{sf.name} returns {got!r} but is annotated {ret!r}")
    return v


# -- entry points ---------------------------------------------------------------------------
def script(fn) -> ScriptFunction:
    """Decorator: compile ``fn``'s source to IR (see the module docstring)."""
    if isinstance(fn, ScriptFunction):
        return fn
    if not isinstance(fn, pytypes.FunctionType):
        raise ScriptError(f"@script applies to Python functions, not {type(fn).__name__}")
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise ScriptError(f"cannot read the source of {fn.__name__}: {exc}") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    col_offset = _indent(text) - _indent(dedented)
    try:
        tree = ast.parse(dedented)
    except SyntaxError as exc:
        raise ScriptError(f"invalid syntax: {exc.msg}", (exc.lineno or 1) + first - 1,
                          exc.offset, filename) from None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
        raise ScriptError(f"@script needs a `def` statement; {fn.__name__} is not one "
                          f"(a lambda?)", first, 1, filename)
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    source = Source(tree, filename, first - 1, col_offset, fn.__globals__, closure)
    return ScriptFunction(fdef, source, python=fn)


def _indent(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def script_from_source(text: str, name: str | None = None, globals=None) -> ScriptFunction:
    """Script functions from source text (e.g. what ``print(module)`` writes).

    Top-level ``def``s may call one another; ``name = f32([...])`` constants
    and ``import numpy as np`` / ``import chainrule.numpy as cnp`` are
    understood. Returns the function ``name`` (default: the first one).
    """
    import numpy as _np

    from ... import numpy as _cnp

    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError as exc:
        raise ScriptError(f"invalid syntax: {exc.msg}", exc.lineno, exc.offset) from None
    env = dict(globals or {})
    source = Source(tree, "<script>", globals_=env)
    defs = []
    for s in tree.body:
        if isinstance(s, ast.FunctionDef):
            defs.append(s)
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], ast.Name) and parse_constant(s.value) is not None:
            env[s.targets[0].id] = parse_constant(s.value).data
        elif isinstance(s, ast.Import) and all(a.name in ("numpy", "chainrule.numpy")
                                               for a in s.names):
            for a in s.names:
                if a.asname is None and a.name == "chainrule.numpy":
                    raise source.error(s, "write `import chainrule.numpy as cnp`")
                env[a.asname or a.name] = _np if a.name == "numpy" else _cnp
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue
        else:
            raise source.error(s, f"unexpected {type(s).__name__} at the top level of a script")
    if not defs:
        raise ScriptError("the script source defines no function")
    for d in defs:
        env[d.name] = ScriptFunction(d, source)
    if name is None:
        return env[defs[0].name]
    if not isinstance(env.get(name), ScriptFunction):
        raise ScriptError(f"the script source defines no function {name!r}")
    return env[name]
