"""Read the Python-syntax text format back into a Module, with ``ast`` (never eval).

>>> import chainrule.ops
>>> m = parse('''
... def main(x: f32[5, 5], y: f32[5, 5]) -> f32:
...     lv0 = add(x, y)
...     gv0 = sum(lv0)
...     return gv0
... ''')
>>> m["main"].ret_type
f32
"""

from __future__ import annotations

import ast
import contextlib
import gc
import warnings

from ..errors import ChainruleError, ParseError
from .builder import Builder
from .collector import collector_paused
from .indexing import AT_METHODS, ArrayIndex, Slice
from .infer import arg_type
from .nodes import Call, Constant, Function, GlobalVar, If, Module, Tuple, TupleGetItem, Var, While
from .op import OPS
from .parser_literals import _err, _literal_number, parse_attr, parse_constant, parse_type
from .printer import reserved_names
from .symbols import SHAPE_ATTRS
from .text_slices import SliceSyntaxError, SplitModule, StatementStream, split_module
from .types import DTYPES, FuncType, TupleType

SPECIAL_PARSE = {}  # reserved for ops whose text form is not a plain call
CONSTANT_CALLS = frozenset(DTYPES) | {"complex"}  # the calls parse_constant reads


# -- functions ---------------------------------------------------------------------
class _FunctionParser:
    def __init__(self, module_parser, builder: Builder):
        self.mp = module_parser
        self.b = builder
        self.scopes: list[dict[str, Var]] = [{}]

    def lookup(self, node: ast.Name):
        for scope in reversed(self.scopes):
            if node.id in scope:
                return scope[node.id]
        if node.id in self.mp.constants:
            return self.mp.constants[node.id]
        raise _err(node, f"name {node.id!r} is not defined here")

    def define(self, node, name: str, var: Var) -> None:
        for scope in self.scopes:
            if name in scope:
                raise _err(node, f"{name!r} is assigned twice; every variable is bound once")
        if name in OPS or name in self.mp.signatures or name in DTYPES:
            raise _err(node, f"{name!r} is the name of an op, function or dtype; "
                             f"choose another variable name")
        self.scopes[-1][name] = var

    def atom(self, node):
        if isinstance(node, ast.Name) and node.id not in ("inf", "nan"):
            return self.lookup(node)
        if isinstance(node, ast.Tuple):
            return Tuple(self.atom(e) for e in node.elts)
        const = parse_constant(node)
        if const is not None:
            return const
        raise _err(node, f"expected a variable or a constant, found {ast.unparse(node)!r} "
                         f"(the text format has one operation per line)")

    def index_key(self, node):
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        key, arrays = [], []
        for e in elts:
            if isinstance(e, ast.Slice):
                parts = []
                for p in (e.lower, e.upper, e.step):
                    v = None if p is None else _literal_number(p)
                    if p is not None and not isinstance(v, int):
                        raise _err(p, "slice bounds must be integer literals")
                    parts.append(v)
                key.append(Slice(*parts))
            elif isinstance(e, ast.Constant) and e.value is None:
                key.append(None)
            elif isinstance(e, ast.Constant) and e.value is Ellipsis:
                key.append(Ellipsis)
            elif isinstance(_literal_number(e), int) and not isinstance(_literal_number(e), bool):
                key.append(_literal_number(e))
            else:
                key.append(ArrayIndex(len(arrays)))
                arrays.append(self.atom(e))
        return tuple(key), arrays

    def value(self, node):
        """The value of a binding, as an IR expression (not yet emitted)."""
        if isinstance(node, ast.Call):
            func = node.func
            # base.at[key].add(g), .set(v), .multiply(v), .min(v), .max(v)
            if (isinstance(func, ast.Attribute) and func.attr in AT_METHODS
                    and isinstance(func.value, ast.Subscript)
                    and isinstance(func.value.value, ast.Attribute)
                    and func.value.value.attr == "at"):
                base = self.atom(func.value.value.value)
                key, arrays = self.index_key(func.value.slice)
                if len(node.args) != 1 or node.keywords:
                    raise _err(node, f".at[...].{func.attr} takes one value")
                return Call(OPS[AT_METHODS[func.attr]], [base, self.atom(node.args[0]),
                                                         *arrays], {"key": key})
            if not isinstance(func, ast.Name):
                raise _err(node, f"cannot call {ast.unparse(func)!r}")
            name = func.id
            if name in CONSTANT_CALLS:  # f32([1.0, 2.0]), complex(1.0, 2.0)
                const = parse_constant(node)
                if const is not None:
                    return const
            args = [self.atom(a) for a in node.args]
            if name in OPS:
                keywords = node.keywords
                attrs = {kw.arg: parse_attr(kw.value, kw.arg in SHAPE_ATTRS)
                         for kw in keywords} if keywords else {}
                if None in attrs:
                    raise _err(node, "**kwargs is not allowed")
                return Call(OPS[name], args, attrs)
            if node.keywords:
                raise _err(node, f"function {name} takes no keyword arguments")
            for scope in reversed(self.scopes):
                if name in scope:
                    return Call(scope[name], args)
            if name in self.mp.signatures:
                return Call(GlobalVar(name), args)
            raise _err(func, f"unknown op or function {name!r}")
        if isinstance(node, ast.Subscript):
            base = self.atom(node.value)
            if isinstance(arg_type(base), TupleType):
                idx = _literal_number(node.slice)
                if not isinstance(idx, int) or isinstance(idx, bool):
                    raise _err(node.slice, "a tuple is indexed by an integer literal")
                return TupleGetItem(base, idx)
            key, arrays = self.index_key(node.slice)
            return Call(OPS["index"], [base, *arrays], {"key": key})
        return self.atom(node)

    def emit(self, stmt, target: ast.Name, value):
        try:
            var = self.b.emit(value, target.id)
        except ChainruleError as exc:
            if isinstance(exc, ParseError):
                raise
            raise _err(stmt, str(exc)) from None
        self.define(target, target.id, var)
        return var

    # -- statements --------------------------------------------------------------------
    def statements(self, stmts):
        """Parse statements (a list, or a StatementStream of a long body read in slices);
        returns nothing (bindings go to the builder)."""
        if not isinstance(stmts, StatementStream):
            stmts = StatementStream(stmts)
        peek, pop, statement = stmts.peek, stmts.pop, self.statement
        while (stmt := peek()) is not None:
            if isinstance(peek(1), ast.While):
                self.while_loop(stmts)
            else:
                pop()
                statement(stmt)

    def statement(self, s):
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
                raise _err(s, "assign to one name per line")
            self.emit(s, s.targets[0], self.value(s.value))
        elif isinstance(s, ast.AnnAssign):
            if not isinstance(s.target, ast.Name) or s.value is None:
                raise _err(s, "an annotated binding is `name: type = value`")
            var = self.emit(s, s.target, self.value(s.value))
            want = parse_type(s.annotation)
            if var.type != want:
                raise _err(s, f"{s.target.id} is annotated {want!r} but its value has type "
                              f"{var.type!r}")
        elif isinstance(s, ast.If):
            self.if_statement(s)
        elif isinstance(s, ast.FunctionDef):
            self.nested_function(s)
        elif isinstance(s, ast.Return):
            raise _err(s, "return must be the last statement of a function")
        elif isinstance(s, ast.While):
            raise _err(s, "a while loop must follow the assignment of its loop variables")
        else:
            raise _err(s, f"unsupported statement {type(s).__name__} in the text format")

    def _branch(self, stmts, node):
        if not stmts:
            raise _err(node, "empty branch")
        last = stmts[-1]
        if not (isinstance(last, ast.Assign) and len(last.targets) == 1
                and isinstance(last.targets[0], ast.Name)):
            raise _err(last, "each branch of an if ends by assigning its result: `r = value`")
        self.b.begin_block()
        self.scopes.append({})
        self.statements(stmts[:-1])
        result = self.atom(last.value)
        self.scopes.pop()
        return last.targets[0], self.b.end_block(result)

    def if_statement(self, s: ast.If):
        if not s.orelse:
            raise _err(s, "an if needs an else branch (both branches yield the result)")
        cond = self.atom(s.test)
        t_target, then_block = self._branch(s.body, s)
        e_target, else_block = self._branch(s.orelse, s)
        if t_target.id != e_target.id:
            raise _err(s.orelse[-1], f"both branches must assign the same name, "
                                     f"not {t_target.id!r} and {e_target.id!r}")
        self.emit(s, t_target, If(cond, then_block, else_block))

    def while_loop(self, stmts: StatementStream):
        init, loop = stmts.pop(), stmts.pop()
        if not (isinstance(init, ast.Assign) and len(init.targets) == 1):
            raise _err(loop, "a while loop follows `loop_vars = initial values`")
        names = _target_names(init.targets[0])
        inits = _value_list(init.value, len(names), init)
        init_atoms = [self.atom(v) for v in inits]
        if not (isinstance(loop.test, ast.Constant) and loop.test.value is True) or loop.orelse:
            raise _err(loop, "the text format writes loops as `while True:` with an "
                             "`if not cond: break` test")
        body = loop.body
        brk = next((k for k, st in enumerate(body) if isinstance(st, ast.If)
                    and isinstance(st.test, ast.UnaryOp) and isinstance(st.test.op, ast.Not)
                    and len(st.body) == 1 and isinstance(st.body[0], ast.Break)), None)
        if brk is None:
            raise _err(loop, "loop has no `if not cond: break` test")
        loop_vars = [Var(n.id, self._atom_type(a)) for n, a in zip(names, init_atoms)]
        self.scopes.append({})
        for n, v in zip(names, loop_vars):
            self.define(n, n.id, v)
        self.b.begin_block()
        self.statements(body[:brk])
        cond_block = self.b.end_block(self.atom(body[brk].test.operand))
        update = body[-1]
        if not (isinstance(update, ast.Assign) and len(update.targets) == 1
                and [t.id for t in _target_names(update.targets[0])] == [n.id for n in names]):
            raise _err(update, "a loop body ends by assigning the loop variables: "
                               f"`{', '.join(n.id for n in names)} = ...`")
        self.b.begin_block()
        self.statements(body[brk + 1:-1])
        if len(names) == 1:
            result = self.atom(update.value)
        elif isinstance(update.value, ast.Tuple):
            result = Tuple(self.atom(e) for e in update.value.elts)
        else:
            result = self.atom(update.value)
        body_block = self.b.end_block(result)
        self.scopes.pop()
        after = stmts.peek()
        packed = [n.id for n in names]
        if not (isinstance(after, ast.Assign) and len(after.targets) == 1
                and isinstance(after.targets[0], ast.Name)
                and _packs(after.value, packed)):
            shown = packed[0] if len(packed) == 1 else "(" + ", ".join(packed) + ")"
            raise _err(after or loop, f"a loop is followed by `name = {shown}`")
        stmts.pop()
        self.emit(after, after.targets[0], While(loop_vars, init_atoms, cond_block, body_block))

    @staticmethod
    def _atom_type(a):
        from .infer import arg_type

        return arg_type(a)

    def nested_function(self, s: ast.FunctionDef):
        params, ret = self.mp.signature(s)
        self.scopes.append({})
        pvars = []
        for (pname, ptype), node in zip(params, s.args.args):
            v = Var(pname, ptype)
            self.define(node, pname, v)
            pvars.append(v)
        outer = self.b.params
        self.b.params = []
        self.b.begin_block()
        _, result = self.function_body(s)
        block = self.b.end_block(result)
        self.b.params = outer
        self.scopes.pop()
        fn = Function(pvars, block, ret)
        if self.mp.strict_types(block.result) != ret:
            raise _err(s, f"function {s.name} returns {self.mp.strict_types(block.result)!r} "
                          f"but declares {ret!r}")
        self.emit(s, ast.Name(id=s.name, lineno=s.lineno, col_offset=s.col_offset), fn)

    def function_body(self, s: ast.FunctionDef):
        """Parse the body; returns its last statement and the returned value."""
        sliced = self.mp.bodies.get(s)
        if sliced is None:
            stmts = s.body
            if stmts and _is_docstring(stmts[0]):
                stmts = stmts[1:]
            last = stmts[-1] if stmts else None
            body = StatementStream(stmts, drop_last=True)
        else:  # long enough that its first statement is no docstring and not its last
            last = sliced.last_statement()
            body = StatementStream(sliced.statements(), drop_last=True)
            if _is_docstring(body.peek()):
                body.pop()
        if not isinstance(last, ast.Return) or last.value is None:
            raise _err(s, f"function {s.name} must end with `return value`")
        self.statements(body)
        return last, self.atom(last.value)


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


FUNCTION_FLAGS = ("checkpoint", "fused")


def _function_flags(fdef: ast.FunctionDef) -> dict:
    flags = {}
    for d in fdef.decorator_list:
        if not (isinstance(d, ast.Name) and d.id in FUNCTION_FLAGS):
            raise _err(d, f"unknown decorator {ast.unparse(d)!r}; the text format knows "
                          f"{', '.join('@' + f for f in FUNCTION_FLAGS)}")
        flags[d.id] = True
    return flags


def _target_names(t):
    elts = t.elts if isinstance(t, ast.Tuple) else [t]
    for e in elts:
        if not isinstance(e, ast.Name):
            raise _err(e, "loop variables are plain names")
    return elts


def _value_list(v, n, node):
    if n == 1:
        return [v]
    if isinstance(v, ast.Tuple) and len(v.elts) == n:
        return v.elts
    raise _err(node, f"expected {n} initial values")


def _packs(value, names) -> bool:
    if len(names) == 1:
        return isinstance(value, ast.Name) and value.id == names[0]
    return isinstance(value, ast.Tuple) and [getattr(e, "id", None) for e in value.elts] == names


class _ModuleParser:
    def __init__(self, split: SplitModule):
        self.items = split.items
        self.bodies = split.bodies  # the long functions' bodies, read in slices
        self.constants: dict[str, Constant] = {}
        self.signatures: dict[str, tuple] = {}

    @staticmethod
    def strict_types(result):
        from .infer import arg_type

        return arg_type(result)

    def signature(self, fdef: ast.FunctionDef):
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise _err(fdef, f"function {fdef.name}: only plain positional parameters")
        params = []
        for p in a.args:
            if p.annotation is None:
                raise _err(p, f"parameter {p.arg} of {fdef.name} needs a type, "
                              f"e.g. `{p.arg}: f32[3]`")
            params.append((p.arg, parse_type(p.annotation)))
        if fdef.returns is None:
            raise _err(fdef, f"function {fdef.name} needs a return type: `-> f32[3]`")
        return params, parse_type(fdef.returns)

    def run(self) -> Module:
        defs = []
        for s in self.items:
            if isinstance(s, ast.FunctionDef):
                if s.name in self.signatures:
                    raise _err(s, f"function {s.name} is defined twice")
                if s.name in reserved_names():
                    raise _err(s, f"function name {s.name!r} is taken by an op, a dtype or a "
                                  f"name of the text format")
                params, ret = self.signature(s)
                self.signatures[s.name] = (params, ret)
                defs.append(s)
            elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], ast.Name
            ):
                const = parse_constant(s.value)
                if const is None:
                    raise _err(s, "module-level assignments name constants, e.g. c0 = f32([1.0])")
                self.constants[s.targets[0].id] = const
            elif isinstance(s, (ast.Import, ast.ImportFrom)):
                continue
            else:
                raise _err(s, f"unexpected {type(s).__name__} at module level")
        builder = Builder(Module())
        builder.extra_globals = {
            n: FuncType([t for _, t in p], r) for n, (p, r) in self.signatures.items()
        }
        functions = {}
        for s in defs:
            fp = _FunctionParser(self, builder)
            params, ret = self.signatures[s.name]
            for (pname, ptype), node in zip(params, s.args.args):
                fp.define(node, pname, builder.param(pname, ptype))
            last, result = fp.function_body(s)
            try:
                fn = builder.finish_function(result, ret)
            except ChainruleError as exc:
                raise _err(last, f"function {s.name}: {exc}") from None
            functions[s.name] = Function(fn.params, fn.body, fn.ret_type, _function_flags(s))
        return Module(functions)


@contextlib.contextmanager
def _gc_paused():
    """The cyclic GC rescans the whole (large, acyclic) AST as it grows, which made
    parsing 100,000 bindings several times slower than linear; pause it meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@collector_paused
def parse(text: str) -> Module:
    """Parse the text format into a Module; errors carry line and column."""
    if not isinstance(text, str):
        raise ParseError(f"parse takes the text of a module, not {type(text).__name__}")
    with _gc_paused():
        try:
            # the long bodies in slices whose lines count from the slice (the cheap way,
            # text_slices.py); an error is reported by the exact parse below
            split = split_module(text, exact_lines=False)
            if split is not None:
                try:
                    return _ModuleParser(split).run()
                except ParseError:
                    pass
                split = split_module(text)  # again, every node at its line in the text
                try:
                    return _ModuleParser(split).run()
                except ParseError:
                    split.check_rest()  # a syntax error later in the text is reported first
                    raise
        except SliceSyntaxError:
            pass  # parse the whole text: syntax errors read as they always did
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # e.g. SyntaxWarning: invalid decimal literal
                tree = ast.parse(text)
        except SyntaxError as exc:
            raise ParseError(f"invalid syntax: {exc.msg}", exc.lineno, exc.offset) from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ParseError(f"cannot parse: {exc}") from None
        return _ModuleParser(SplitModule(tree.body, {})).run()
