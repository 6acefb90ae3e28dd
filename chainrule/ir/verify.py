"""Well-formedness and type checking of a Module.

Checks: every variable used is bound before, in an enclosing scope; every
variable is bound once; call arguments are atoms or tuples of atoms; every
binding's variable has the type its value infers to; conditions are bool
scalars; functions return their declared type; calls match signatures.
"""

from __future__ import annotations

from ..errors import ChainruleError, TypeInferenceError, VerifyError
from .infer import arg_type, infer_value
from .nodes import (
    Binding,
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
    is_arg,
)
from .op import Op


class _Verifier:
    def __init__(self, module: Module):
        self.module = module
        self.where = ""
        self.bound: set[Var] = set()
        self.scopes: list[set[Var]] = []

    def fail(self, message: str):
        raise VerifyError(f"in function {self.where}: {message}")

    def global_type(self, name):
        fn = self.module.functions.get(name)
        if not isinstance(fn, Function):
            # raised inside type inference, which adds "binding of <var>: "
            raise TypeInferenceError(
                f"call to unknown function {name!r} (the module has {list(self.module.functions)})"
            )
        return fn.type

    def define(self, v: Var) -> None:
        if not isinstance(v, Var):
            self.fail(f"binding target {v!r} is not a variable")
        if v in self.bound:
            self.fail(f"variable {v.name} is bound more than once")
        self.bound.add(v)
        self.scopes[-1].add(v)

    def use(self, x) -> None:
        if isinstance(x, Var):
            if not any(x in s for s in self.scopes):
                self.fail(f"variable {x.name} is used but not bound in scope")
        elif isinstance(x, Tuple):
            for f in x.fields:
                self.use(f)
        elif isinstance(x, Constant):
            pass
        else:
            self.fail(f"{type(x).__name__} where a variable or constant is expected")

    def block_type(self, block: Block):
        # nested blocks are checked when visited; here only the result's type
        return arg_type(block.result)

    def block(self, block: Block, params=()) -> None:
        self.scopes.append(set())
        for p in params:
            self.define(p)
        self.bindings(block)
        self.use(block.result)
        if not is_arg(block.result):
            self.fail("a block's result must be a variable, constant or tuple of them")
        self.scopes.pop()

    def bindings(self, block: Block) -> None:
        for b in block.bindings:
            if not isinstance(b, Binding) or not isinstance(b.var, Var):
                self.fail(f"{b!r} is not a binding of a variable")
            v = b.value
            if isinstance(v, Call):
                if isinstance(v.callee, Var):
                    self.use(v.callee)
                elif not isinstance(v.callee, (Op, GlobalVar)):
                    self.fail(f"cannot call {v.callee!r}")
                for a in v.args:
                    if not is_arg(a):
                        self.fail(f"argument {a!r} of {getattr(v.callee, 'name', '?')} is not "
                                  f"an atom (A-normal form)")
                    self.use(a)
            elif isinstance(v, TupleGetItem):
                self.use(v.tuple_value)
            elif isinstance(v, (Var, Constant, Tuple)):
                self.use(v)
            elif isinstance(v, If):
                self.use(v.cond)
                self.block(v.then_block)
                self.block(v.else_block)
            elif isinstance(v, While):
                for i in v.init:
                    self.use(i)
                self.scopes.append(set())
                for lv in v.loop_vars:
                    self.define(lv)
                self.bindings(v.cond)
                self.use(v.cond.result)
                self.block(v.body)
                self.scopes.pop()
            elif isinstance(v, Function):
                self.function(v)
            else:
                self.fail(f"{type(v).__name__} is not a binding value")
            try:
                normalized, t = infer_value(v, self.global_type, self.block_type)
            except ChainruleError as exc:
                self.fail(f"binding of {b.var.name}: {exc}")
            if isinstance(v, Call) and normalized is not v:
                self.fail(f"binding of {b.var.name}: attributes of {v.callee.name} are not "
                          f"in canonical form: {v.attrs} vs {normalized.attrs}")
            if t != b.var.type:
                self.fail(f"variable {b.var.name} has type {b.var.type!r} but its value has "
                          f"type {t!r}")
            self.define(b.var)

    def function(self, fn: Function) -> None:
        self.block(fn.body, fn.params)
        rt = arg_type(fn.body.result)
        if rt != fn.ret_type:
            self.fail(f"returns {rt!r} but declares {fn.ret_type!r}")

    def run(self) -> None:
        for name, fn in self.module.functions.items():
            if not isinstance(fn, Function):
                raise VerifyError(f"module entry {name!r} is not a function")
            self.where = name
            self.bound = set()
            self.scopes = []
            self.function(fn)


def verify(module: Module) -> Module:
    """Raise ``VerifyError`` if the module is malformed; return it otherwise."""
    if not isinstance(module, Module):
        raise VerifyError(f"verify takes a Module, not {type(module).__name__}")
    _Verifier(module).run()
    return module
