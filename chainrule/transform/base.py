"""A tiny pass framework: passes, pipelines and a registry of passes by name.

A pass has a ``name`` and maps a Module to a new Module; the input is never
mutated. Passes share the unchanged parts of the input (IR nodes are
immutable), and a function a pass leaves unchanged is returned as the same
object, so ``new.functions[n] is old.functions[n]`` tells cheaply that
nothing happened (``optimize`` uses this to detect its fixed point).

>>> import chainrule as cr
>>> from chainrule.transform import Pipeline
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64:
...     a = add(x, 0.0)
...     b = exp(x)
...     s = sum(a)
...     return s
... ''')
>>> print(Pipeline(["simplify", "dce"], verify=True)(m))
def main(x: f64[3]) -> f64:
    s = sum(x)
    return s
<BLANKLINE>
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable
from operator import is_not

from ..errors import ChainruleError, VerifyError
from ..ir.collector import collector_paused
from ..ir.nodes import Block, Call, Constant, Function, If, Module, Tuple, TupleGetItem, Var, While
from ..ir.verify import verify as verify_module


class Pass:
    """A module-to-module transformation; subclasses set ``name`` and define ``run``."""

    name: str = "pass"

    def run(self, module: Module) -> Module:
        raise NotImplementedError

    @collector_paused
    def __call__(self, module: Module) -> Module:
        if not isinstance(module, Module):
            raise ChainruleError(f"pass {self.name} takes a Module, not {type(module).__name__}")
        return self.run(module)

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class FunctionPass(Pass):
    """A pass applied to each function of a module independently."""

    def transform_function(self, fn: Function, name: str, module: Module) -> Function:
        raise NotImplementedError

    def run(self, module: Module) -> Module:
        funcs = {name: self.transform_function(fn, name, module)
                 for name, fn in module.functions.items()}
        return Module(funcs, module.meta)


class OptionsPass(Pass):
    """A pass that applies ``function(module, **options)``; subclasses set ``name``
    and ``function``. Options are checked against the function's signature when
    the pass is built, so a pipeline with a misspelled option fails at once."""

    function: Callable[..., Module]

    def __init__(self, **options):
        try:
            inspect.signature(type(self).function).bind(None, **options)
        except TypeError as exc:
            raise ChainruleError(f"pass {self.name}: {exc}") from None
        self.options = options

    def run(self, module: Module) -> Module:
        return type(self).function(module, **self.options)


class _CallablePass(Pass):
    def __init__(self, name: str, fn: Callable[[Module], Module]):
        self.name = name
        self.fn = fn

    def run(self, module: Module) -> Module:
        return self.fn(module)


PASSES: dict[str, Callable[..., Pass]] = {}


def register_pass(factory: Callable[..., Pass], name: str | None = None):
    """Register a pass class (or factory taking options) under its name; returns it."""
    key = name or getattr(factory, "name", None)
    if not isinstance(key, str) or not key:
        raise ChainruleError(f"cannot register {factory!r}: it has no name")
    if key in PASSES and PASSES[key] is not factory:
        raise ChainruleError(f"a pass named {key!r} is already registered")
    PASSES[key] = factory
    return factory


def get_pass(name: str, **options) -> Pass:
    """A registered pass by name, built with ``options``."""
    try:
        factory = PASSES[name]
    except KeyError:
        raise ChainruleError(f"unknown pass {name!r}; registered: {sorted(PASSES)}") from None
    return factory(**options)


def as_pass(p) -> Pass:
    """A Pass from a Pass, a registered name, or a plain function Module -> Module."""
    if isinstance(p, Pass):
        return p
    if isinstance(p, str):
        return get_pass(p)
    if isinstance(p, type) and issubclass(p, Pass):
        return p()
    if callable(p):
        return _CallablePass(getattr(p, "__name__", "function"), p)
    raise ChainruleError(f"not a pass: {p!r}")


class Pipeline(Pass):
    """Runs passes in order; with ``verify=True`` checks the module after each one."""

    name = "pipeline"

    def __init__(self, passes: Iterable, verify: bool = False):
        self.passes = [as_pass(p) for p in passes]
        self.verify = verify

    def run(self, module: Module) -> Module:
        for p in self.passes:
            module = p(module)
            if not isinstance(module, Module):
                raise ChainruleError(f"pass {p.name} returned {type(module).__name__}, "
                                     f"not a Module")
            if self.verify:
                try:
                    verify_module(module)
                except VerifyError as exc:
                    raise VerifyError(f"after pass {p.name}: {exc}") from exc
        return module

    def __repr__(self) -> str:
        return f"Pipeline([{', '.join(p.name for p in self.passes)}])"

    @classmethod
    def parse(cls, text: str, verify: bool = False) -> Pipeline:
        """A pipeline from text: pass names separated by commas, each optionally called
        with literal keyword options, e.g. ``"gradient(func='f', require_grads=['x']),
        optimize"``. Read with ``ast`` (values by ``ast.literal_eval``), never evaluated."""
        try:
            tree = ast.parse(f"({text},)", mode="eval").body
        except SyntaxError as exc:
            raise ChainruleError(f"pipeline {text!r}: {exc.msg}") from None
        passes = []
        for item in tree.elts:
            if isinstance(item, ast.Name):
                passes.append(get_pass(item.id))
                continue
            if not (isinstance(item, ast.Call) and isinstance(item.func, ast.Name)
                    and not item.args and all(k.arg for k in item.keywords)):
                raise ChainruleError(f"pipeline {text!r}: write pass names, or name(key=value, "
                                     f"...) with keyword options, not {ast.unparse(item)!r}")
            options = {}
            for k in item.keywords:
                try:
                    options[k.arg] = ast.literal_eval(k.value)
                except ValueError:
                    raise ChainruleError(f"pipeline {text!r}: option {k.arg} of {item.func.id} "
                                         f"must be a literal") from None
            passes.append(get_pass(item.func.id, **options))
        return cls(passes, verify)


# -- helpers shared by the clean-up passes -------------------------------------------------
def subst_atom(x, sub: dict):
    """``x`` with variables replaced through ``sub``; the same object when nothing changes."""
    if type(x) is Var:
        return sub.get(x, x)
    if type(x) is Tuple:
        fields = [subst_atom(f, sub) for f in x.fields]
        if not any(map(is_not, fields, x.fields)):
            return x
        return Tuple(fields)
    return x


def subst_direct(value, sub: dict):
    """``value`` with the atoms it reads directly substituted (nested blocks untouched)."""
    if not sub:
        return value
    t = type(value)
    if t is Call:
        for a in value.args:  # the common case first: nothing read is substituted
            if a in sub or type(a) is Tuple:
                break
        else:
            if type(value.callee) is not Var or value.callee not in sub:
                return value
        callee = sub.get(value.callee, value.callee) if type(value.callee) is Var else value.callee
        args = [subst_atom(a, sub) for a in value.args]
        if callee is value.callee and not any(map(is_not, args, value.args)):
            return value
        return Call(callee, args, value.attrs)
    if t is TupleGetItem:
        tv = subst_atom(value.tuple_value, sub)
        return value if tv is value.tuple_value else TupleGetItem(tv, value.index)
    if t is Var or t is Tuple or t is Constant:
        return subst_atom(value, sub)
    if t is If:
        cond = subst_atom(value.cond, sub)
        return value if cond is value.cond else If(cond, value.then_block, value.else_block)
    if t is While:
        init = [subst_atom(i, sub) for i in value.init]
        if not any(map(is_not, init, value.init)):
            return value
        return While(value.loop_vars, init, value.cond, value.body)
    return value


def with_blocks(value, blocks):
    """``value`` with its nested blocks replaced (same object when they are the same)."""
    if isinstance(value, If):
        then_b, else_b = blocks
        if then_b is value.then_block and else_b is value.else_block:
            return value
        return If(value.cond, then_b, else_b)
    if isinstance(value, While):
        cond, body = blocks
        if cond is value.cond and body is value.body:
            return value
        return While(value.loop_vars, value.init, cond, body)
    if isinstance(value, Function):
        (body,) = blocks
        return value if body is value.body else Function(value.params, body, value.ret_type,
                                                         value.attrs)
    return value


def same_block(block: Block, bindings: list, result) -> Block:
    """A Block of ``bindings`` and ``result``, reusing ``block`` when nothing changed."""
    old = block.bindings
    if result is block.result and len(bindings) == len(old) and not any(
        map(is_not, bindings, old)
    ):
        return block
    return Block(bindings, result)

