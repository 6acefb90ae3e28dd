"""IR nodes: immutable, in A-normal form.

A ``Block`` is a list of ``Binding(var, value)`` and a result. A value is a
``Call`` (of an ``Op``, a ``GlobalVar`` or a ``Var`` holding a function), a
``Tuple``, a ``TupleGetItem``, an atom (``Var`` or ``Constant``: assignment),
an ``If``, a ``While`` or a ``Function`` (a closure). Call arguments are atoms
or tuples of atoms. Every variable is bound once.
"""

from __future__ import annotations

import numpy as np

from ..errors import ChainruleError
from .types import DType, FuncType, TensorType, TupleType, Type


class Frozen:
    """Nodes that refuse assignment: their fields are set once, in ``__init__``.

    Every node is immutable; variables, blocks, functions, branches, loops and
    constants enforce it (a variable renamed in place, or a function flagged
    after it is built, raises). Calls, bindings and tuples, built by the million
    by every pass, are immutable by convention only, to keep them cheap to make.
    """

    __slots__ = ()

    def __setattr__(self, key, value):
        raise ChainruleError(f"IR nodes are immutable: cannot set {type(self).__name__}.{key}; "
                             f"build a new node instead")

    __delattr__ = __setattr__


def _setters(cls) -> tuple:
    """The setters of ``cls``'s fields, in ``__slots__`` order, for its ``__init__``
    (assignment is refused once a node exists)."""
    return tuple(getattr(cls, field).__set__ for field in cls.__slots__)


class Expr:
    __slots__ = ()

    def __str__(self) -> str:  # its text-format text (chainrule/ir/display.py)
        from .display import node_str

        return node_str(self)


class Var(Expr, Frozen):
    """A variable; identity-hashed. ``name`` is only a hint for printing."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type: Type):
        if not isinstance(type, Type):
            raise ChainruleError(f"variable {name!r} needs a type, not {type!r}")
        _var_name(self, name)
        _var_type(self, type)

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type!r}"

_var_name, _var_type = _setters(Var)
_new_node = object.__new__


def typed_var(name: str, type: Type) -> Var:
    """``Var(name, type)`` for a ``type`` taken from an existing variable (a pass copying
    or renaming one), without the check of ``type``: the same variable, made in about
    half the time, for the passes' paths that run once per binding."""
    var = _new_node(Var)
    _var_name(var, name)
    _var_type(var, type)
    return var


class GlobalVar(Expr, Frozen):
    """A reference to a function of the module, by name."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        _global_var_name(self, name)

    def __eq__(self, other) -> bool:
        return isinstance(other, GlobalVar) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("GlobalVar", self.name))

    def __repr__(self) -> str:
        return f"@{self.name}"

(_global_var_name,) = _setters(GlobalVar)


class Constant(Expr, Frozen):
    """A constant array (read-only)."""

    __slots__ = ("data", "type")

    def __init__(self, data):
        arr = np.array(data, copy=True)
        arr.setflags(write=False)
        _constant_data(self, arr)
        _constant_type(self, TensorType(arr.shape, DType(arr.dtype)))

    def __repr__(self) -> str:
        return f"Constant({self.data!r})"

_constant_data, _constant_type = _setters(Constant)


class Call(Expr):
    __slots__ = ("callee", "args", "attrs")

    def __init__(self, callee, args, attrs=None):
        self.callee = callee
        self.args = tuple(args)
        self.attrs = dict(attrs) if attrs else {}

    def with_args(self, callee, args) -> Call:
        """The same call with another callee and operands; the attribute dict is shared,
        not copied (no node is changed once built), so a pass can tell a copied call's
        attributes are the original's by identity."""
        new = Call.__new__(Call)
        new.callee = callee
        new.args = tuple(args)
        new.attrs = self.attrs
        return new

    def __repr__(self) -> str:
        name = getattr(self.callee, "name", self.callee)
        return f"Call({name}, {self.args!r}, {self.attrs!r})"


class Tuple(Expr):
    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = tuple(fields)

    def __repr__(self) -> str:
        return f"Tuple{self.fields!r}"


class TupleGetItem(Expr):
    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value, index: int):
        self.tuple_value = tuple_value
        self.index = int(index)


class Binding:
    __slots__ = ("var", "value")

    def __init__(self, var: Var, value: Expr):
        self.var = var
        self.value = value

    def __repr__(self) -> str:
        return f"Binding({self.var!r} = {self.value!r})"

    __str__ = Expr.__str__


class Block(Frozen):
    """Bindings in order, then a result (an atom or a tuple of atoms)."""

    __slots__ = ("bindings", "result")

    def __init__(self, bindings, result):
        _block_bindings(self, tuple(bindings))
        _block_result(self, result)

    __str__ = Expr.__str__

_block_bindings, _block_result = _setters(Block)


class If(Expr, Frozen):
    __slots__ = ("cond", "then_block", "else_block")

    def __init__(self, cond, then_block: Block, else_block: Block):
        _if_cond(self, cond)
        _if_then_block(self, then_block)
        _if_else_block(self, else_block)

_if_cond, _if_then_block, _if_else_block = _setters(If)


class While(Expr, Frozen):
    """A structured loop with loop-carried values.

    Each iteration binds ``loop_vars`` to the current carry, runs ``cond`` (a
    block whose result is a bool scalar) and, if true, runs ``body`` (which
    may use ``cond``'s bindings) whose result is the next carry. The loop's
    value is the final carry: a tuple when there are several loop variables.
    """

    __slots__ = ("loop_vars", "init", "cond", "body")

    def __init__(self, loop_vars, init, cond: Block, body: Block):
        _while_loop_vars(self, tuple(loop_vars))
        _while_init(self, tuple(init))
        _while_cond(self, cond)
        _while_body(self, body)
        if len(self.loop_vars) != len(self.init):
            raise ChainruleError(
                f"while loop has {len(self.loop_vars)} loop variables but "
                f"{len(self.init)} initial values"
            )

    @property
    def result_type(self) -> Type:
        if len(self.loop_vars) == 1:
            return self.loop_vars[0].type
        return TupleType(v.type for v in self.loop_vars)

_while_loop_vars, _while_init, _while_cond, _while_body = _setters(While)


class Function(Expr, Frozen):
    """A function; as a binding's value it is a closure over its free variables.

    ``attrs`` holds flags of module functions, printed as decorators: only
    ``checkpoint`` (reverse mode recomputes its intermediates instead of
    storing them).
    """

    __slots__ = ("params", "body", "ret_type", "attrs")

    def __init__(self, params, body: Block, ret_type: Type, attrs=None):
        _function_params(self, tuple(params))
        _function_body(self, body)
        _function_ret_type(self, ret_type)
        _function_attrs(self, dict(attrs) if attrs else {})

    @property
    def type(self) -> FuncType:
        return FuncType([p.type for p in self.params], self.ret_type)

    def _repr_html_(self) -> str:  # notebooks: highlighted text (+ graph with Graphviz)
        from .display import function_html

        return function_html(self)

    def _repr_svg_(self) -> str | None:  # its data flow, or None without Graphviz
        from .display import function_svg

        return function_svg(self)

_function_params, _function_body, _function_ret_type, _function_attrs = _setters(Function)


ATOMS = (Var, Constant)


def is_arg(x) -> bool:
    """An atom, or a (nested) tuple of atoms: what a call argument may be."""
    if isinstance(x, ATOMS):
        return True
    return isinstance(x, Tuple) and all(is_arg(f) for f in x.fields)


class Module:
    """An ordered map from names to functions. Never mutated: passes build new modules."""

    __slots__ = ("functions", "meta")

    def __init__(self, functions=None, meta=None):
        self.functions: dict[str, Function] = dict(functions or {})
        self.meta = dict(meta or {})  # e.g. pytree structure of traced modules; not printed

    def __getitem__(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise ChainruleError(
                f"no function named {name!r} in the module (it has {list(self.functions)})"
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def with_function(self, name: str, fn: Function) -> Module:
        funcs = dict(self.functions)
        funcs[name] = fn
        return Module(funcs, self.meta)

    def func_type(self, name: str) -> FuncType:
        return self[name].type

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)

    def __repr__(self) -> str:
        return f"<Module {list(self.functions)}>"

    def _repr_html_(self) -> str:  # notebooks: highlighted text, long functions folded
        from .display import module_html

        return module_html(self)

    def __eq__(self, other) -> bool:
        from .equal import structural_equal

        return isinstance(other, Module) and structural_equal(self, other)

    __hash__ = None  # type: ignore[assignment]
