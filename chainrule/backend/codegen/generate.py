"""The fast execution path: a Module becomes Python source that calls NumPy directly.

One statement per binding, named after the IR's variables; ``if`` and
``while`` become Python control flow, closures nested ``def``s (their free
variables passed as keyword-only defaults, i.e. captured by value), calls to
module functions calls to the other generated functions. Per-op templates
(``emit_ops.py``) write ``a + b``, ``x @ W.T``, ``x.sum(axis=(1,))``,
``np.tanh(x)``; other ops call their kernel from the exec namespace.

Only checked identifiers and literals formatted from plain numbers reach the
source; constants, kernels and odd attributes live in the exec namespace.

A function of more than ``codegen.split.SPLIT_BINDINGS`` bindings is written as a
sequence of piece functions, compiled a few at a time (``codegen/split.py``):
CPython's ``compile()`` of one huge function costs more per line and gigabytes.

Memory: a backward liveness scan per block puts ``del`` after each last use,
and an elementwise op whose operand dies there and was allocated by this
function (never a parameter, constant or view) writes its result into that
buffer with ``out=`` (``inplace=True``), keeping the operand's Python name (a
comment names the IR variable: fewer lines to compile, no alias or ``del``).

>>> import numpy as np
>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3], y: f64[3]) -> f64:
...     a = multiply(x, y)
...     b = tanh(a)
...     s = sum(b)
...     return s
... ''')
>>> f = compile_module(m)
>>> print(f.source.strip())
def main(x, y):
    a = x * y
    del x, y
    a = np.tanh(a, out=a)  # b = a
    s = a.sum()
    del a
    return s
>>> round(float(f(np.ones(3), np.ones(3))), 6)
2.284782
"""

from __future__ import annotations

import itertools
import keyword
from collections import OrderedDict

import numpy as np

from ...errors import CodegenError, InterpretError
from ...ir.collector import collector_paused
from ...ir.dims import render, symbols_of
from ...ir.nodes import (
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
from ...ir.op import Op
from ...ir.symbols import SHAPE_ATTRS, has_symbolic_attrs, symbol_sources
from ...ir.visitor import free_vars, nested_blocks
from ...ops.templates import InPlace, OpEmit, int_literal, literal
from ..execution import KERNEL_ERRORS, coerce_args, kernel_error
from .identifiers import RESERVED, UniqueNames, safe_identifier
from .plan import Plan, block_uses, carried_buffers, plan_block
from .split import exec_generated, piece_bounds, write_split

CACHE_SIZE = 64
_counter = itertools.count()


class _ModuleCodegen:
    def __init__(self, module: Module, inplace: bool):
        self.module = module
        self.inplace = inplace
        self.ns: dict = {"np": np}
        self.lines: list[str] = []
        self.notes: list[str] = []
        self.locations: dict[int, tuple[str, str]] = {}  # source line -> (op, binding)
        self._interned: dict = {}
        names = UniqueNames(RESERVED)
        self.func_names = {name: names.fresh(name, "f") for name in module.functions}
        # symbolic dimensions named by shape attributes: one local per function, bound
        # from its parameters' shapes when it starts (``n = x.shape[0]``)
        self.sym_names = {s: names.fresh(s, "d") for s in _attr_symbols(module)}
        self.bound_syms: set = set()  # those the function being written binds
        self.names_of: dict[str, dict[Var, str]] = {}
        # functions too long to compile at once: their pieces' names (codegen.split)
        self.pieces = {fname: [names.fresh(f"{fname}_part{k + 1}") for k in range(len(
            piece_bounds(len(fn.body.bindings))))] for fname, fn in module.functions.items()
            if isinstance(fn, Function)}
        self.live_names: dict[str, str] = {}
        taken = set(names.taken)
        for fname, fn in module.functions.items():
            if not isinstance(fn, Function):
                raise CodegenError(f"module entry {fname!r} is not a function")
            fnames = UniqueNames(names.taken)
            var_names: dict[Var, str] = {}
            for p in fn.params:
                var_names[p] = fnames.fresh(p.name)
            self._name_block(fn.body, var_names, fnames)
            if self.pieces[fname]:
                self.live_names[fname] = fnames.fresh("live")
            self.names_of[fname] = var_names
            taken |= fnames.taken
        self.ns_names = UniqueNames(taken)
        self.names: dict[Var, str] = {}

    # -- names -------------------------------------------------------------------------
    def _name_block(self, block: Block, names: dict, fresh: UniqueNames) -> None:
        for b in block.bindings:
            names[b.var] = fresh.fresh(b.var.name)
            v = b.value
            if type(v) is If:
                self._name_block(v.then_block, names, fresh)
                self._name_block(v.else_block, names, fresh)
            elif type(v) is While:
                for lv in v.loop_vars:
                    names[lv] = fresh.fresh(lv.name)
                self._name_block(v.cond, names, fresh)
                self._name_block(v.body, names, fresh)
            elif type(v) is Function:
                for p in v.params:
                    names[p] = fresh.fresh(p.name)
                self._name_block(v.body, names, fresh)

    def name(self, var: Var) -> str:
        try:
            return self.names[var]
        except KeyError:
            raise CodegenError(f"variable {var.name!r} is used but never bound") from None

    def intern(self, key, obj, hint: str) -> str:
        """A namespace name for ``obj`` (one per ``key``)."""
        name = self._interned.get(key)
        if name is None:
            name = self.ns_names.fresh(hint, "_g")
            self._interned[key] = name
            self.ns[name] = obj
        return name

    def const(self, c: Constant) -> str:
        data = c.data
        if data.size <= 64:
            key = ("c", data.dtype.str, data.shape, data.tobytes())
        else:
            key = ("c", id(data))
        fresh = key not in self._interned
        name = self.intern(key, data, f"_c{len(self._interned)}")
        if fresh:
            self.notes.append(f"{name}: {c.type!r}")
        return name

    def atom(self, x, inline=None) -> str:
        if type(x) is Var:
            if inline and x in inline:  # a transpose folded into a matmul: ``W.T``
                return self.atom(inline[x]) + ".T"
            return self.name(x)
        if type(x) is Constant:
            return self.const(x)
        if type(x) is Tuple:
            parts = [self.atom(f, inline) for f in x.fields]
            return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
        raise CodegenError(f"not a variable, constant or tuple: {type(x).__name__}")

    def out(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    # -- analysis ----------------------------------------------------------------------
    def plan(self, block: Block, extra, exclude, keep_at_end, carried=None) -> Plan:
        return plan_block(block, extra, exclude, keep_at_end, self.inplace, carried)

    # -- emission ------------------------------------------------------------------------
    def block(self, block: Block, depth: int, result: tuple, extra=(), exclude=(),
              keep_at_end=frozenset(), carried=None) -> Plan:
        plan = self.plan(block, extra, exclude, keep_at_end, carried)
        self._dels(depth, plan.start_dels)
        for i, b in enumerate(block.bindings):
            if b.var in plan.inline:
                continue
            self.binding(b, depth, plan, i)
            self._dels(depth, plan.dels[i])
        kind = result[0]
        res = self.atom(block.result)
        if kind == "return":
            self.out(depth, f"return {res}")
            return plan
        if kind == "assign":
            self.out(depth, f"{result[1]} = {res}")
        elif kind == "break":
            self.out(depth, f"if not {res}:")
            self.out(depth + 1, "break")
        else:  # carry of a loop
            lvs = result[1]
            if len(lvs) > 1 and type(block.result) is Tuple and len(block.result.fields) == len(
                    lvs):
                res = ", ".join(self.atom(f) for f in block.result.fields)
            self.out(depth, f"{', '.join(lvs)} = {res}")
        self._dels(depth, plan.dels[-1])
        return plan

    def _dels(self, depth: int, variables) -> None:
        if variables:
            names = self.names
            if len(variables) == 1:  # the common case, without sorting
                (v,) = variables
                text = names[v] if v in names else self.name(v)
            else:
                text = ", ".join(sorted([self.name(v) for v in variables]))
            self.lines.append(f"{'    ' * depth}del {text}")

    def binding(self, b, depth: int, plan: Plan, i: int) -> None:
        v = b.value
        t = type(v)
        if t is Call and isinstance(v.callee, Op):  # the common case first
            self.op_call(b, depth, plan, i)
            return
        name = self.name(b.var)
        if t is Call:
            callee = v.callee
            args = ", ".join(self.atom(a) for a in v.args)
            if type(callee) is GlobalVar:
                if callee.name not in self.func_names:
                    raise CodegenError(f"call to unknown function {callee.name!r}")
                fn = self.func_names[callee.name]
            elif type(callee) is Var:
                fn = self.name(callee)
            else:
                raise CodegenError(f"cannot call {type(callee).__name__}")
            self.out(depth, f"{name} = {fn}({args})")
        elif t is TupleGetItem:
            self.out(depth, f"{name} = {self.atom(v.tuple_value)}[{int_literal(v.index)}]")
        elif t in (Var, Constant, Tuple):
            self.out(depth, f"{name} = {self.atom(v)}")
        elif t is If:
            self.out(depth, f"if {self.atom(v.cond)}:")
            self.block(v.then_block, depth + 1, ("assign", name))
            self.out(depth, "else:")
            self.block(v.else_block, depth + 1, ("assign", name))
        elif t is While:
            self.loop(name, v, depth)
        elif t is Function:
            captured = free_vars(v)
            caps = [self.name(c) for c in captured]
            sig = [self.name(p) for p in v.params]
            if caps:
                sig.append("*")
                sig.extend(f"{c}={c}" for c in caps)
            self.out(depth, f"def {name}({', '.join(sig)}):")
            self.block(v.body, depth + 1, ("return",), extra=list(v.params) + captured)
        else:
            raise CodegenError(f"binding of {b.var.name!r}: cannot compile a {t.__name__}")

    def loop(self, name: str, w: While, depth: int) -> None:
        lvs = [self.name(lv) for lv in w.loop_vars]
        # buffers the body updates in place (a scan's stacked outputs, a row per step:
        # linear in the loop's length, not quadratic) start from copies of their own
        carried = carried_buffers(w) if self.inplace else {}
        inits = [f"np.array({self.atom(a)}, copy=True)" if lv in carried else self.atom(a)
                 for lv, a in zip(w.loop_vars, w.init)]
        self.out(depth, f"{', '.join(lvs)} = {', '.join(inits)}")
        self.out(depth, "while True:")
        body_uses = block_uses(w.body)
        keep = [b.var for b in w.cond.bindings if b.var in body_uses]  # live into the body
        cond = self.block(w.cond, depth + 1, ("break",), exclude=keep)
        self.block(w.body, depth + 1, ("carry", lvs), extra=list(w.loop_vars) + keep,
                   keep_at_end=frozenset(w.loop_vars), carried=carried)
        packed = lvs[0] if len(lvs) == 1 else "(" + ", ".join(lvs) + ")"
        self.out(depth, f"{name} = {packed}")
        self._dels(depth, list(w.loop_vars) + keep + cond.dels[-1])

    def op_call(self, b, depth: int, plan: Plan, i: int) -> None:
        v = b.value
        op = v.callee
        var = b.var
        names = self.names
        target = names.get(var) or self.name(var)  # (name() raises for an unbound one)
        inline = plan.inline
        if inline:
            def text(a):
                return self.atom(a, inline)
        else:
            text = self.atom

        res = None
        template = op.emit
        args = v.args
        if template is not None:
            for a in args:
                if type(a) is not Var and type(a) is not Constant:
                    break
            else:
                reuse = ()
                owned = plan.owned
                out_type = var.type
                if owned and op.inplace:
                    last = plan.last
                    reuse = tuple([k for k, a in enumerate(args)
                                   if a in owned and last.get(a) == i
                                   and (a.type is out_type or a.type == out_type)])
                e = OpEmit(op, v.attrs, args, text, [a.type for a in args], out_type,
                           target, reuse)
                res = template(e)
        if res is None:
            res = self.kernel_call(op, v.attrs, [text(a) for a in args])
        lines, locations = self.lines, self.locations
        where = (op.name, var.name)
        indent = "    " * depth
        if type(res) is str:
            locations[len(lines)] = where
            lines.append(f"{indent}{target} = {res}")
            return
        if type(res) is InPlace and args[res.operand] in plan.carried:
            # a loop variable updated in place: its name is the loop's, so the result
            # is bound to the buffer under its own name (deleting it must not delete the
            # loop variable)
            locations[len(lines)] = where
            lines.append(f"{indent}{res.line}")
            lines.append(f"{indent}{target} = {self.name(args[res.operand])}")
            return
        if type(res) is InPlace:
            # ``a += y``: the result is a's buffer, called a from here on (a is dead)
            operand = args[res.operand]
            names[var] = kept = names[operand]
            dels = plan.dels[i]
            dels[:] = [x for x in dels if x is not operand]
            locations[len(lines)] = where
            lines.append(f"{indent}{res.line}  # {target} = {kept}")
            return
        for line in res:
            locations[len(lines)] = where
            lines.append(indent + line)

    def bind_symbols(self, fn: Function) -> None:
        """Bind the symbols the module's shape attributes name from ``fn``'s parameters
        (``coerce_args`` checked at the call that they have one size each)."""
        self.bound_syms = set()
        for sym, (i, path, axis) in symbol_sources([p.type for p in fn.params]).items():
            if sym in self.sym_names:
                self.bound_syms.add(sym)
                where = self.name(fn.params[i]) + "".join(f"[{k}]" for k in path)
                self.out(1, f"{self.sym_names[sym]} = {where}.shape[{axis}]")

    def shape_text(self, shape) -> str | None:
        """``(n, 3)`` for a shape attribute with symbols (the locals bound on entry)."""
        parts = [self.sym_names[d] if d in self.bound_syms else None if type(d) is str
                 else self.dim_text(d) if isinstance(d, str) else int_literal(d)
                 for d in shape]
        if any(p is None for p in parts):
            return None
        return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"

    def dim_text(self, d) -> str | None:
        """``(n - 1)`` for a dimension expression (``ir.dims``) of symbols bound on entry."""
        if not all(sym in self.bound_syms for sym in symbols_of(d)):
            return None
        return f"({render(d, self.sym_names.__getitem__)})"

    def kernel_call(self, op: Op, attrs: dict, args: list) -> str:
        kname = self.intern(("k", id(op)), op.kernel, f"_k_{safe_identifier(op.name, 'op')}")
        parts = list(args)
        texts = {k: literal(val) for k, val in attrs.items()}
        if has_symbolic_attrs(attrs):  # shape=(n, 3): the sizes bound on entry
            symbolic = {}
            for key in SHAPE_ATTRS:
                if type(attrs.get(key)) is tuple:
                    symbolic[key] = self.shape_text(attrs[key])
                    if symbolic[key] is None:
                        raise CodegenError(
                            f"{op.name}: shape {attrs[key]} names a symbol that no parameter "
                            f"of the function binds (bound: {sorted(self.bound_syms)})")
            rest = {k: v for k, v in attrs.items() if k not in symbolic}
            if rest:
                parts.append("**" + self.intern(("a", id(attrs)), rest, "_attrs"))
            parts.extend(f"{k}={text}" for k, text in symbolic.items())
            return f"{kname}({', '.join(parts)})"
        if all(type(k) is str and k.isidentifier() and not keyword.iskeyword(k)
               and texts[k] is not None for k in attrs):
            parts.extend(f"{k}={texts[k]}" for k in attrs)
        elif attrs:
            parts.append("**" + self.intern(("a", id(attrs)), dict(attrs), "_attrs"))
        return f"{kname}({', '.join(parts)})"

    # -- the module ------------------------------------------------------------------
    def run(self) -> str:
        for fname, fn in self.module.functions.items():
            self.names = self.names_of[fname]
            if self.pieces[fname]:
                write_split(self, fname, fn, self.pieces[fname], self.live_names[fname])
                continue
            params = [self.name(p) for p in fn.params]
            self.out(0, f"def {self.func_names[fname]}({', '.join(params)}):")
            self.bind_symbols(fn)
            self.block(fn.body, 1, ("return",), extra=list(fn.params))
            self.out(0, "")
        header = []
        if self.notes:
            header = ["# constants (exec namespace): " + ", ".join(self.notes), ""]
        # source line numbers (1-based, after the header) of the op bindings
        self.locations = {k + 1 + len(header): where for k, where in self.locations.items()}
        return "\n".join(header + self.lines[:-1]) + "\n"


class CompiledModule:
    """Every function of a module, compiled together (they call each other)."""

    def __init__(self, module: Module, inplace: bool = True):
        gen = _ModuleCodegen(module, inplace)
        self.source = gen.run()
        self.func_names = gen.func_names
        self.locations = gen.locations
        self.filename = f"<chainrule-codegen-{next(_counter)}>"
        self.namespace = gen.ns
        exec_generated(self, self.source, self.filename, self.namespace,
                       "; the module nests blocks too deeply for Python?")

    def function(self, name: str):
        return self.namespace[self.func_names[name]]

    def error(self, func: str, exc: BaseException):
        """The InterpretError for ``exc`` raised while running ``func``: it names the op
        and binding whose generated line failed (the innermost one of this module)."""
        where = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                where = self.locations.get(tb.tb_lineno, where)
            tb = tb.tb_next
        if where is None:
            return InterpretError(f"{func} (compiled) failed: {type(exc).__name__}: {exc}")
        return kernel_error(where[0], where[1], exc, f" of {func}")


class CompiledFunction:
    """A compiled module function: call it like ``run(module, *args, func=...)``."""

    __slots__ = ("module", "name", "fn", "params", "compiled")

    def __init__(self, module: Module, name: str, compiled: CompiledModule):
        self.module = module
        self.name = name
        self.compiled = compiled
        self.fn = compiled.function(name)
        self.params = module.functions[name].params

    @property
    def source(self) -> str:
        """The generated Python source (of the whole module)."""
        return self.compiled.source

    def __call__(self, *args):
        params = self.params
        if len(args) != len(params):
            raise InterpretError(
                f"{self.name} takes {len(params)} argument(s) "
                f"({', '.join(str(p.name) for p in params)}), got {len(args)}")
        args = coerce_args(args, params, self.name)
        return self.call_unchecked(*args)

    def call_unchecked(self, *args):
        """Call with arguments already of the parameters' exact types (no coercion)."""
        try:
            return self.fn(*args)
        except RecursionError:
            raise InterpretError(f"{self.name}: calls nest too deeply (a recursion without "
                                 f"a reachable base case?)") from None
        except KERNEL_ERRORS as exc:
            raise self.compiled.error(self.name, exc) from exc
        except MemoryError:
            raise InterpretError(f"{self.name} (compiled): out of memory") from None

    def __repr__(self) -> str:
        return f"<CompiledFunction {self.name}>"


_CACHE: OrderedDict = OrderedDict()


@collector_paused
def compile_module(module: Module, func: str = "main", inplace: bool = True
                   ) -> CompiledFunction:
    """Compile ``module`` (once; cached by object) and return its function ``func``."""
    if not isinstance(module, Module):
        raise CodegenError(f"compile_module takes a Module, not {type(module).__name__}")
    if func not in module.functions:
        if len(module.functions) == 1:
            func = next(iter(module.functions))
        else:
            raise CodegenError(f"no function {func!r} in the module; it has "
                               f"{list(module.functions)}")
    key = (id(module), bool(inplace))
    entry = _CACHE.get(key)
    if entry is None or entry[0] is not module:
        entry = (module, CompiledModule(module, bool(inplace)))
        _CACHE[key] = entry
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return CompiledFunction(module, func, entry[1])


def _attr_symbols(module) -> dict:
    """The symbols the shape attributes of a module's op calls name (an ordered set)."""
    out: dict = {}
    stack = [fn.body for fn in module.functions.values()]
    while stack:
        block = stack.pop()
        for b in block.bindings:
            v = b.value
            if type(v) is Call and v.attrs and has_symbolic_attrs(v.attrs):
                for key in SHAPE_ATTRS:
                    for d in v.attrs.get(key) or ():
                        for sym in symbols_of(d):
                            out.setdefault(sym, None)
            stack.extend(nested_blocks(v))
    return out
