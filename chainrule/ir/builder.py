"""A builder that infers types as it emits, so a malformed program is refused
where it is built.

>>> from chainrule.ir import Builder, TensorType, get_op
>>> import chainrule.ops  # registers the operators
>>> b = Builder()
>>> x = b.param("x", TensorType((5, 5), "f32"))
>>> y = b.call(get_op("sum"), [b.call(get_op("add"), [x, x])])
>>> m = b.finish_module("main", y)
>>> print(m)
def main(x: f32[5, 5]) -> f32:
    lv0 = add(x, x)
    lv1 = sum(lv0)
    return lv1
<BLANKLINE>
"""

from __future__ import annotations

from ..errors import ChainruleError, TypeInferenceError
from .infer import arg_type, infer_value, simple_block_type, type_call
from .nodes import Binding, Block, Call, Constant, Function, Module, Tuple, Var, is_arg, typed_var
from .op import Op
from .types import FuncType, Type


class _NotAnArg(Exception):
    """An operand that is neither an atom nor a tuple of atoms (internal to ``call``)."""


def _arg_type(a) -> Type:
    if not is_arg(a):
        raise _NotAnArg(a)
    return arg_type(a)


class Builder:
    """Emits bindings into a stack of open blocks, inferring each variable's type."""

    def __init__(self, module: Module | None = None,
                 extra_globals: dict[str, FuncType] | None = None, temp_start: int = 0):
        """``extra_globals``: types of functions being generated next to ``module``
        (callable before they exist); ``temp_start``: the first ``lvN`` number of
        unnamed temporaries (past the names of the function being transformed)."""
        self.module = module if module is not None else Module()
        self.params: list[Var] = []
        self._frames: list[list[Binding]] = [[]]
        self._counter = temp_start
        self.extra_globals = extra_globals if extra_globals is not None else {}

    # -- names and types -------------------------------------------------------
    def fresh_name(self, hint: str | None = None) -> str:
        if hint:
            return hint
        name = f"lv{self._counter}"
        self._counter += 1
        return name

    def reserve_temps(self, count: int) -> int:
        """Reserve ``count`` fresh ``lvN`` numbers for a caller that names the temporaries
        itself (a replayed rule template); returns the first of them."""
        first = self._counter
        self._counter = first + count
        return first

    @property
    def next_temp(self) -> int:
        """The number the next fresh ``lvN`` name will have."""
        return self._counter

    def global_type(self, name: str) -> FuncType:
        if name in self.extra_globals:
            return self.extra_globals[name]
        if name in self.module.functions:
            return self.module.functions[name].type
        raise TypeInferenceError(f"call to unknown function {name!r}")

    # -- emitting ----------------------------------------------------------------
    def param(self, name: str, type: Type) -> Var:
        v = Var(name, type)
        self.params.append(v)
        return v

    def emit(self, value, name: str | None = None) -> Var:
        """Bind ``value`` to a new variable whose type is inferred; returns the variable."""
        value, t = infer_value(value, self.global_type, simple_block_type)
        var = Var(self.fresh_name(name), t)
        self._frames[-1].append(Binding(var, value))
        return var

    def emit_typed(self, value, type: Type, name: str | None = None) -> Var:
        """Bind ``value`` whose type the caller knows (a copy of a checked binding)."""
        var = typed_var(self.fresh_name(name), type)
        self._frames[-1].append(Binding(var, value))
        return var

    def bind(self, var: Var, value) -> Var:
        """Bind an existing variable (its type must match the value's)."""
        value, t = infer_value(value, self.global_type, simple_block_type)
        if t != var.type:
            raise TypeInferenceError(f"{var.name} has type {var.type!r} but is bound to {t!r}")
        self._frames[-1].append(Binding(var, value))
        return var

    def rename_last(self, var: Var, name: str) -> Var:
        """Name the variable just emitted: when ``var`` is bound by the last binding of
        the open block (so nothing refers to it yet), that binding is replaced by one
        binding a new variable called ``name``, which is returned; otherwise ``var``."""
        frame = self._frames[-1]
        if not frame or frame[-1].var is not var:
            return var
        return self.rebind(len(frame) - 1, name)

    def rebind(self, index: int, name: str) -> Var:
        """Replace binding ``index`` of the open block by one binding a new variable
        called ``name`` to the same value; returns it. The caller makes sure nothing
        emitted yet reads the old variable (this is how a pass names a value it
        emitted a moment ago, before anything uses it: no node changes)."""
        frame = self._frames[-1]
        old = frame[index]
        new = typed_var(name, old.var.type)
        frame[index] = Binding(new, old.value)
        return new

    def call(self, callee, args, attrs: dict | None = None, name: str | None = None) -> Var:
        try:  # the common case first: operands that are variables and constants
            types = [a.type if type(a) is Var or type(a) is Constant else _arg_type(a)
                     for a in args]
        except _NotAnArg as exc:
            what = callee.name if isinstance(callee, Op) else getattr(callee, "name", callee)
            raise ChainruleError(f"{what}: argument {exc.args[0]!r} is not a variable or "
                                 f"constant") from None
        if type(callee) is not Op:
            return self.emit(Call(callee, args, attrs or {}), name)
        new_attrs, t = type_call(callee, types, attrs or {})  # the common case, no dispatch
        if not name:  # fresh_name, inlined: this is every emitted op's path
            name = f"lv{self._counter}"
            self._counter += 1
        var = Var(name, t)
        self._frames[-1].append(Binding(var, Call(callee, args, new_attrs)))
        return var

    # -- blocks --------------------------------------------------------------------
    def mark(self) -> tuple:
        """Where emission stands: ``restore(mark)`` drops what is emitted after it (an
        attempt that is given up)."""
        return len(self._frames), len(self._frames[-1])

    def restore(self, mark: tuple) -> None:
        depth, length = mark
        del self._frames[depth:]
        del self._frames[-1][length:]

    def begin_block(self) -> None:
        self._frames.append([])

    def end_block(self, result) -> Block:
        if len(self._frames) == 1:
            raise ChainruleError("end_block without begin_block")
        if isinstance(result, (list, tuple)):
            result = Tuple(result)
        arg_type(result)  # a block's result is an atom or a tuple of atoms
        return Block(self._frames.pop(), result)

    @property
    def bindings(self) -> list[Binding]:
        return self._frames[-1]

    def finish_function(self, result, ret_type: Type | None = None) -> Function:
        if len(self._frames) != 1:
            raise ChainruleError("finish_function with blocks still open")
        if isinstance(result, (list, tuple)):
            result = Tuple(result)
        rt = arg_type(result)
        if ret_type is not None and ret_type != rt:
            raise TypeInferenceError(f"function returns {rt!r} but declares {ret_type!r}")
        fn = Function(self.params, Block(self._frames[0], result), rt)
        self._frames = [[]]
        self.params = []
        return fn

    def finish_module(self, name: str, result) -> Module:
        return self.module.with_function(name, self.finish_function(result))
