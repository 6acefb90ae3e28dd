"""Print a Module as Python source that ``chainrule.parse`` reads back.

Loops over bindings; recursion only follows block nesting, so a program of
any length prints.
"""

from __future__ import annotations

import keyword

import numpy as np

from ..errors import ChainruleError
from .collector import collector_paused
from .indexing import ArrayIndex, Slice
from .nodes import (
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
from .op import OPS, Op
from .symbols import SHAPE_ATTRS
from .types import DTYPES, DType, Type
from .visitor import atoms_of, nested_blocks

INLINE_CONSTANT_SIZE = 16  # larger constants are hoisted to module-level names
SYNTAX_NAMES = {"tuple", "Callable", "inf", "nan", "True", "False", "None", "slice", "complex"}
SPECIAL_PRINT = {}  # op name -> function(printer, call, names) -> str


def reserved_names() -> set[str]:
    return set(OPS) | set(DTYPES) | SYNTAX_NAMES | set(keyword.kwlist)


def format_scalar(value, dtype: DType) -> str:
    if dtype.is_bool:
        return "True" if bool(value) else "False"
    if dtype.is_int:
        return str(int(value))
    if dtype[0] == "c":  # complex(re, im): also right for inf and nan parts
        part = DType("f32" if dtype == "c64" else "f64")
        value = complex(value)
        return f"complex({format_scalar(value.real, part)}, {format_scalar(value.imag, part)})"
    value = dtype.numpy.type(value)
    if np.isnan(value):  # keep the sign bit: -nan parses back as -float("nan")
        return "-nan" if np.signbit(value) else "nan"
    text = str(value)
    if text in ("inf", "-inf"):
        return text
    if "e" not in text and "." not in text:
        text += ".0"
    return text


def format_constant_data(data: np.ndarray) -> str:
    dtype = DType(data.dtype)
    if data.ndim == 0:
        text = format_scalar(data.item(), dtype)
        if dtype in ("f64", "i64", "bool", "c128"):
            return text
        return f"{dtype}({text})"
    if 0 in data.shape:
        return f"{dtype}([], shape={format_attr(tuple(data.shape))})"

    def nested(a):
        if a.ndim == 1:
            return "[" + ", ".join(format_scalar(v, dtype) for v in a.tolist()) + "]"
        return "[" + ", ".join(nested(sub) for sub in a) + "]"

    return f"{dtype}({nested(data)})"


class Bare(str):
    """A symbolic dimension in a shape attribute: printed as a name, not a string."""

    __slots__ = ()


def format_attr(value) -> str:
    if isinstance(value, DType):
        return str(value)
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        return format_scalar(value, DType("f64"))
    if isinstance(value, Bare):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({format_attr(value[0])},)"
        return "(" + ", ".join(format_attr(v) for v in value) + ")"
    if isinstance(value, Type):
        return repr(value)
    raise ChainruleError(f"cannot print attribute value {value!r}")


class _LargeConstant(Exception):
    """A large constant met before the large constants were named (``Printer.run``)."""


class Printer:
    def __init__(self, module: Module):
        self.module = module
        self.lines: list[str] = []
        self.const_names: dict[int, str] = {}
        self.header: list[str] = []
        self.reserved = reserved_names() | set(module.functions)
        self._printable_ops: set[Op] = set()  # ops checked to be the registered ones
        self._hoisted = False  # whether _hoist_constants has named the large constants
        self._taken: set | None = None  # while naming variables as they are printed
        self._constant_texts: dict[int, tuple] = {}  # id -> (constant, text): holds it
        # printable ops without a special form -> "name(": how ``block`` prints their
        # calls of variables without attributes (learnt from ``value``'s first such call)
        self._plain_calls: dict[Op, str] = {}

    # -- names -----------------------------------------------------------------
    def _assign(self, names: dict, taken: set, var: Var) -> str:
        hint = var.name if isinstance(var.name, str) and var.name.isidentifier() else "v"
        name, k = hint, 0
        while name in taken:
            k += 1
            name = f"{hint}_{k}"
        taken.add(name)
        names[var] = name
        return name

    def _name_block(self, names, taken, block: Block) -> None:
        assign = self._assign
        for b in block.bindings:
            var = b.var
            name = var.name
            if type(name) is str and name not in taken and name.isidentifier():
                taken.add(name)  # _assign's common case, inlined
                names[var] = name
            else:
                assign(names, taken, var)
            v = b.value
            t = type(v)
            if t is Call:
                continue
            if t is If:
                self._name_block(names, taken, v.then_block)
                self._name_block(names, taken, v.else_block)
            elif t is While:
                for lv in v.loop_vars:
                    self._assign(names, taken, lv)
                self._name_block(names, taken, v.cond)
                self._name_block(names, taken, v.body)
            elif t is Function:
                for p in v.params:
                    self._assign(names, taken, p)
                self._name_block(names, taken, v.body)

    # -- atoms -------------------------------------------------------------------
    def atom(self, x, names) -> str:
        if type(x) is Var:
            try:
                return names[x]
            except KeyError:
                if self._taken is not None:
                    raise  # maybe bound further on: run() names everything first
                raise ChainruleError(f"variable {x.name} is used but never bound") from None
        if isinstance(x, Constant):
            if x.data.size > INLINE_CONSTANT_SIZE:
                if not self._hoisted:
                    raise _LargeConstant  # run() hoists the constants and prints again
                return self.const_names[id(x)]
            hit = self._constant_texts.get(id(x))
            if hit is None:  # a pass reuses one constant (the 1.0 of every tanh rule)
                hit = self._constant_texts[id(x)] = (x, format_constant_data(x.data))
            return hit[1]
        if isinstance(x, Tuple):
            inner = [self.atom(f, names) for f in x.fields]
            return f"({inner[0]},)" if len(inner) == 1 else "(" + ", ".join(inner) + ")"
        if isinstance(x, GlobalVar):
            return x.name
        raise ChainruleError(f"not an atom: {x!r}")

    def value(self, v, names) -> str:
        if type(v) is Call:
            atom = self.atom
            args = [(names.get(a) or atom(a, names)) if type(a) is Var else atom(a, names)
                    for a in v.args]
            callee = v.callee
            if type(callee) is Op:
                if callee not in self._printable_ops:
                    if OPS.get(callee.name) is not callee:
                        raise ChainruleError(f"cannot print a call of {callee!r}: no op of that "
                                             f"name is registered, so the text would not read "
                                             f"back as this program")
                    self._printable_ops.add(callee)
                special = SPECIAL_PRINT.get(callee.name)
                if special is not None:
                    return special(v, args)
                self._plain_calls[callee] = callee.name + "("
                if not v.attrs:
                    return f"{callee.name}({', '.join(args)})"
                defaults = callee.attrs
                for key, val in v.attrs.items():
                    if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(
                            key):
                        raise ChainruleError(f"cannot print attribute {key!r} of "
                                             f"{v.callee.name}: not a name")
                    default = defaults.get(key)
                    if type(default) is type(val) and default == val:
                        continue
                    if key in SHAPE_ATTRS and type(val) is tuple:  # symbols print bare
                        val = tuple(Bare(d) if isinstance(d, str) else d for d in val)
                    args.append(f"{key}={format_attr(val)}")
                return f"{v.callee.name}({', '.join(args)})"
            callee = v.callee.name if isinstance(v.callee, GlobalVar) else names[v.callee]
            return f"{callee}({', '.join(args)})"
        if isinstance(v, TupleGetItem):
            return f"{self.atom(v.tuple_value, names)}[{v.index}]"
        return self.atom(v, names)

    # -- statements ----------------------------------------------------------------
    def block(self, block: Block, names, indent: str, result_target: str | None) -> None:
        out = self.lines
        plain = self._plain_calls
        taken = self._taken  # names given so far, while naming as printing (else None)
        for b in block.bindings:
            if taken is None:
                name = names[b.var]
            else:  # _name_block's naming of the binding, in the same order
                var = b.var
                name = var.name
                if type(name) is str and name not in taken and name.isidentifier():
                    taken.add(name)
                    names[var] = name
                else:
                    name = self._assign(names, taken, var)
            v = b.value
            t = type(v)
            if t is Call and not v.attrs:  # the common case first: an op of variables
                head = plain.get(v.callee)
                if head is not None:
                    try:
                        args = ", ".join([names[a] for a in v.args])
                    except KeyError:  # an operand not a bound variable: value() prints it
                        pass
                    else:
                        out.append(f"{indent}{name} = {head}{args})")
                        continue
            if t is Call or t is TupleGetItem:
                out.append(f"{indent}{name} = {self.value(v, names)}")
            elif t is If:
                out.append(f"{indent}if {self.atom(v.cond, names)}:")
                self.block(v.then_block, names, indent + "    ", name)
                out.append(f"{indent}else:")
                self.block(v.else_block, names, indent + "    ", name)
            elif t is While:
                if taken is not None:
                    for lv in v.loop_vars:
                        self._assign(names, taken, lv)
                lvs = ", ".join(names[lv] for lv in v.loop_vars)
                inits = ", ".join(self.atom(i, names) for i in v.init)
                out.append(f"{indent}{lvs} = {inits}")
                out.append(f"{indent}while True:")
                inner = indent + "    "
                self.block(v.cond, names, inner, None)
                out.append(f"{inner}if not {self.atom(v.cond.result, names)}:")
                out.append(f"{inner}    break")
                self.block(v.body, names, inner, None)
                res = v.body.result
                if len(v.loop_vars) > 1 and isinstance(res, Tuple):
                    text = ", ".join(self.atom(f, names) for f in res.fields)
                else:
                    text = self.atom(res, names)
                out.append(f"{inner}{lvs} = {text}")
                packed = lvs if len(v.loop_vars) == 1 else f"({lvs})"
                out.append(f"{indent}{name} = {packed}")
            elif t is Function:
                if taken is not None:
                    for p in v.params:
                        self._assign(names, taken, p)
                self.function(name, v, names, indent)
            else:
                out.append(f"{indent}{name} = {self.value(v, names)}")
        if result_target is not None:
            out.append(f"{indent}{result_target} = {self.atom(block.result, names)}")

    def function(self, name: str, fn: Function, names: dict, indent: str) -> None:
        for flag in sorted(fn.attrs):
            if not isinstance(flag, str) or not flag.isidentifier() or keyword.iskeyword(flag):
                raise ChainruleError(f"cannot print the flag {flag!r} of function {name}")
            self.lines.append(f"{indent}@{flag}")
        params = ", ".join(f"{names[p]}: {p.type!r}" for p in fn.params)
        self.lines.append(f"{indent}def {name}({params}) -> {fn.ret_type!r}:")
        self.block(fn.body, names, indent + "    ", None)
        self.lines.append(f"{indent}    return {self.atom(fn.body.result, names)}")

    def _hoist_constants(self) -> None:
        """Name the large constants first, so that no variable takes their names."""
        self._hoisted = True
        taken = set(self.reserved)
        for fn in self.module.functions.values():
            taken.update(p.name for p in fn.params)
        stack = [fn.body for fn in self.module.functions.values()]
        stack.reverse()
        while stack:
            block = stack.pop()
            atoms = []
            inner = []
            for b in block.bindings:
                taken.add(b.var.name)
                v = b.value
                t = type(v)
                if t is Call:  # the common case: only its constant operands matter here
                    for a in v.args:
                        if type(a) is not Var:
                            atoms.append(a)
                    continue
                atoms.extend(atoms_of(v))
                inner.extend(nested_blocks(v))
                if t is Function:
                    taken.update(p.name for p in v.params)
                elif t is While:
                    taken.update(lv.name for lv in v.loop_vars)
            atoms.extend(atoms_of(block.result))
            for x in atoms:
                if type(x) is Tuple:  # a tuple operand: its fields (nested: later in atoms)
                    atoms.extend(x.fields)
                elif (isinstance(x, Constant) and x.data.size > INLINE_CONSTANT_SIZE
                        and id(x) not in self.const_names):
                    k = len(self.const_names)
                    name = f"c{k}"
                    while name in taken:
                        k += 1
                        name = f"c{k}"
                    taken.add(name)
                    self.const_names[id(x)] = name
                    self.header.append(f"{name} = {format_constant_data(x.data)}")
            stack.extend(reversed(inner))

    def run(self) -> str:
        # Most programs are printed in one walk: no large constant (the walk naming
        # those, and every name they must avoid, runs only when one is met, and the
        # printing starts again) and variables named as they are printed (the names
        # _name_block gives, in the same order), unless one is read before its binding
        # in printing order: then they are all named first, as _name_block does.
        for hoist in (False, True):
            if hoist:
                self._hoist_constants()
                self.reserved |= set(self.const_names.values())
            try:
                return self._print_functions(naming=True)
            except _LargeConstant:
                continue
            except KeyError:
                break
        if not self._hoisted:
            self._hoist_constants()
            self.reserved |= set(self.const_names.values())
        return self._print_functions(naming=False)

    def _print_functions(self, naming: bool) -> str:
        chunks = []
        for fname in self.module.functions:
            if (not isinstance(fname, str) or not fname.isidentifier()
                    or keyword.iskeyword(fname) or fname in reserved_names()):
                raise ChainruleError(f"cannot print a function named {fname!r}: a function "
                                     f"name is an identifier that is not a keyword, an op, a "
                                     f"dtype or a name of the text format")
        for fname, fn in self.module.functions.items():
            names: dict[Var, str] = {}
            taken = set(self.reserved)
            for p in fn.params:
                self._assign(names, taken, p)
            if naming:
                self._taken = taken
            else:
                self._taken = None
                self._name_block(names, taken, fn.body)
            self.lines = []
            self.function(fname, fn, names, "")
            chunks.append("\n".join(self.lines))
        text = "\n\n".join(chunks)
        if self.header:
            text = "\n".join(self.header) + "\n\n" + text
        return text + "\n"


@collector_paused
def print_module(module: Module) -> str:
    """The text format of ``module`` (``parse`` reads it back to the same module)."""
    return Printer(module).run()


def format_index_key(key, args) -> str:
    """``x[0, 1:3, None, i]`` style text of an index key; ``args`` are the printed arrays."""
    parts = []
    for k in key:
        if isinstance(k, Slice):
            parts.append(str(k))
        elif isinstance(k, ArrayIndex):
            parts.append(args[k.position])
        else:
            parts.append(repr(k))
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts) if parts else "()"
