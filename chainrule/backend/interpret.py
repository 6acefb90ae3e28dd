"""The reference interpreter: runs any Module on NumPy.

Bindings run in a loop; Python recursion follows only block nesting and the
program's own calls (a recursive function recurses here too).

>>> import numpy as np
>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64:
...     y = multiply(x, x)
...     s = sum(y)
...     return s
... ''')
>>> float(run(m, np.array([1.0, 2.0, 3.0])))
14.0
"""

from __future__ import annotations

import itertools

from ..errors import InterpretError
from ..ir.collector import paused
from ..ir.nodes import (
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
from ..ir.op import Op, apply
from ..ir.symbols import bind_symbols, has_symbolic_attrs, resolve_attrs, type_symbols
from ..ir.visitor import atoms_of, free_vars, vars_used
from ..tree import flatten, unflatten
from .execution import FAILURES, Liveness, coerce_args, kernel_failure, run_kernel

SIZES = "#sizes"  # the env key of the symbol sizes of a call (variables are never strings)


class Closure:
    """A function value: the Function and the values of its free variables."""

    __slots__ = ("fn", "env", "interp")

    def __init__(self, fn: Function, env: dict, interp: Interpreter):
        self.fn = fn
        self.env = env
        self.interp = interp

    def __call__(self, *args):
        env = dict(self.env)
        return self.interp.call_function(self.fn, args, env)


class Interpreter:
    """Runs a module. With ``dispatch=True`` op calls go through the op functions'
    dispatch, so tape tensors record them (how ``create_graph`` works).

    A value is dropped after its last use in the block that binds it (``Liveness``,
    as the generated code's ``del``), so a program's peak memory is the same
    whichever runs it (checkpointed loops rely on it)."""

    def __init__(self, module: Module, dispatch: bool = False):
        self.module = module
        self._free: dict[int, list] = {}
        self._dead: dict[int, tuple] = {}
        self.dispatch = dispatch

    def dead_after(self, block: Block) -> list:
        """``dead[i]``: the variables bound in ``block`` whose last use is binding ``i``
        (uses inside nested blocks count at the binding holding them; the same points
        as ``Liveness``, computed in one pass since a first call pays for it)."""
        hit = self._dead.get(id(block))
        if hit is not None and hit[0] is block:
            return hit[1]
        with paused():  # one tuple per binding: the collector would rescan the program
            return self._dead_after(block)

    def _dead_after(self, block: Block) -> list:
        bindings = block.bindings
        last: dict = {}
        for i, b in enumerate(bindings):
            v = b.value
            t = type(v)
            if t is Call:
                for a in v.args:
                    ta = type(a)
                    if ta is Var:
                        last[a] = i
                    elif ta is Tuple:
                        for x in _flat_vars(a.fields):
                            last[x] = i
                if type(v.callee) is Var:  # a closure called
                    last[v.callee] = i
            else:
                for x in (vars_used(v) if t in (If, While, Function)
                          else _flat_vars(atoms_of(v))):
                    last[x] = i
        n = len(bindings)
        for x in _flat_vars((block.result,)):
            last[x] = n  # read by the result: kept
        dead: list = [()] * n
        for i, b in enumerate(bindings):
            j = last.get(b.var, i)  # never used: dropped at once
            if j < n:
                dead[j] = (*dead[j], b.var)
        self._dead[id(block)] = (block, dead)
        return dead

    def value_of(self, x, env):
        if isinstance(x, Var):
            return env[x]
        if isinstance(x, Constant):
            return x.data
        if isinstance(x, Tuple):
            return tuple(self.value_of(f, env) for f in x.fields)
        raise InterpretError(f"not an atom: {x!r}")

    def call_function(self, fn: Function, args, env: dict):
        if len(args) != len(fn.params):
            raise InterpretError(f"function takes {len(fn.params)} arguments, got {len(args)}")
        for p, a in zip(fn.params, args):
            env[p] = a
        if self._has_symbols(fn):  # bind f64[n]'s n once per call (SIZES: name -> size)
            sizes = dict(env.get(SIZES, ()))
            bind_symbols(fn.params, args, sizes, "call")
            env[SIZES] = sizes
        return self.block(fn.body, env)

    def _has_symbols(self, fn: Function) -> bool:
        key = ("sym", id(fn))
        known = self._free.get(key)
        if known is None or known[0] is not fn:
            found = any(type_symbols(p.type) for p in fn.params)
            known = self._free[key] = (fn, found)
        return known[1]

    def call_global(self, name: str, args):
        return self.call_function(self.module[name], args, {})

    def block(self, block: Block, env: dict, free: bool = True):
        """Run ``block`` in ``env``; its result. ``free=False`` keeps every value it binds
        (a loop's condition block: the body reads them)."""
        value_of = self.value_of
        dead_after = self.dead_after(block) if free else _KEEP_ALL
        for b, dead in zip(block.bindings, dead_after):
            v = b.value
            if type(v) is Call:
                callee = v.callee
                # most arguments are variables: read them without a call each
                args = [env[a] if type(a) is Var else value_of(a, env) for a in v.args]
                if isinstance(callee, Op):
                    attrs = v.attrs
                    if attrs and has_symbolic_attrs(attrs):
                        attrs = resolve_attrs(attrs, env.get(SIZES, {}))
                    if self.dispatch and not callee.internal:  # stacks hold values as they are
                        env[b.var] = run_kernel(apply, callee, args, attrs, b.var, callee)
                    else:  # run_kernel written out: this is the interpreter's inner loop
                        try:
                            env[b.var] = callee.kernel(*args, **attrs)
                        except FAILURES as exc:
                            raise kernel_failure(callee, b.var, exc) from None
                elif isinstance(callee, GlobalVar):
                    env[b.var] = self.call_global(callee.name, args)
                else:
                    env[b.var] = env[callee](*args)
            elif type(v) is TupleGetItem:
                env[b.var] = value_of(v.tuple_value, env)[v.index]
            elif type(v) is If:
                branch = v.then_block if bool(value_of(v.cond, env)) else v.else_block
                env[b.var] = self.block(branch, env)
            elif type(v) is While:
                env[b.var] = self.loop(v, env)
            elif type(v) is Function:
                key = id(v)
                if key not in self._free:
                    self._free[key] = (v, free_vars(v))
                captured = {fv: env[fv] for fv in self._free[key][1]}
                if SIZES in env:  # a closure sees the symbols of where it is made
                    captured[SIZES] = env[SIZES]
                env[b.var] = Closure(v, captured, self)
            else:
                env[b.var] = value_of(v, env)
            for x in dead:
                del env[x]
        return value_of(block.result, env)

    def loop(self, w: While, env: dict):
        carry = [self.value_of(i, env) for i in w.init]
        while True:
            for lv, c in zip(w.loop_vars, carry):
                env[lv] = c
            if not bool(self.block(w.cond, env, free=False)):
                break
            nxt = self.block(w.body, env)
            carry = [nxt] if len(w.loop_vars) == 1 else list(nxt)
        return carry[0] if len(carry) == 1 else tuple(carry)


class StraightLine:
    """A function made only of op calls, tuple fields and atoms (what a recorded
    tape's pullback is), run without the general interpreter's dispatch and with
    every value freed after its last use."""

    __slots__ = ("params", "steps", "result")

    @classmethod
    def plan(cls, fn: Function) -> StraightLine | None:
        """The plan of ``fn``, or None when it holds anything else (branches, loops...)."""
        steps, bound, uses = [], [], []
        for b in fn.body.bindings:
            v = b.value
            if type(v) is Call and isinstance(v.callee, Op) and all(map(_is_arg, v.args)):
                steps.append([_CALL, b.var, (v.callee, v.args, v.attrs), None])
                used = v.args
            elif type(v) is TupleGetItem and _is_arg(v.tuple_value):
                steps.append([_GETITEM, b.var, (v.tuple_value, v.index), None])
                used = (v.tuple_value,)
            elif _is_arg(v):
                steps.append([_COPY, b.var, v, None])
                used = (v,)
            else:
                return None
            bound.append(b.var)
            uses.append(_flat_vars(used))
        uses.append(_flat_vars((fn.body.result,)))
        deletable = set(bound) | set(fn.params)
        live = Liveness(bound, uses, deletable, keep_at_end=frozenset(uses[-1]))
        for step, d in zip(steps, live.dels):
            step[3] = tuple(d)
        self = cls()
        self.params, self.steps, self.result = fn.params, steps, fn.body.result
        return self

    def __call__(self, *args):
        if len(args) != len(self.params):
            raise InterpretError(f"takes {len(self.params)} arguments, got {len(args)}")
        env = dict(zip(self.params, args))
        for kind, var, payload, dead in self.steps:
            if kind == _CALL:
                op, atoms, attrs = payload
                values = [env[a] if type(a) is Var else _atom_value(a, env) for a in atoms]
                env[var] = run_kernel(op.kernel, op, values, attrs, var)
            elif kind == _GETITEM:
                env[var] = _atom_value(payload[0], env)[payload[1]]
            else:
                env[var] = _atom_value(payload, env)
            for x in dead:
                del env[x]
        return _atom_value(self.result, env)


_CALL, _GETITEM, _COPY = 0, 1, 2
_KEEP_ALL = itertools.repeat(())


def _is_arg(x) -> bool:
    if type(x) is Tuple:
        return all(_is_arg(f) for f in x.fields)
    return type(x) in (Var, Constant)


def _flat_vars(atoms) -> list:
    out = []
    for x in atoms:
        if type(x) is Tuple:
            out.extend(_flat_vars(x.fields))
        elif type(x) is Var:
            out.append(x)
    return out


def _atom_value(x, env):
    if type(x) is Var:
        return env[x]
    if type(x) is Constant:
        return x.data
    return tuple(_atom_value(f, env) for f in x.fields)


def run(module: Module, *args, func: str = "main"):
    """Run ``func`` of ``module`` on the arguments (arrays, scalars, tuples).

    A traced module (``chainrule.trace``) takes the same pytrees (dicts,
    lists, tuples of arrays) as the traced Python function, and returns its
    result in the same structure; flat leaves are accepted too.
    """
    if func not in module.functions:
        if len(module.functions) == 1:
            func = next(iter(module.functions))
        else:
            raise InterpretError(f"no function {func!r} in the module; it has "
                                 f"{list(module.functions)}")
    fn = module.functions[func]
    traced = module.meta.get("func") == func
    in_tree, out_tree = module.meta.get("in_tree"), module.meta.get("out_tree")
    if traced and in_tree is not None:
        leaves, tree = flatten(tuple(args))
        if tree == in_tree and len(leaves) == len(fn.params):
            args = tuple(leaves)
    if len(args) != len(fn.params):
        raise InterpretError(
            f"{func} takes {len(fn.params)} argument(s) "
            f"({', '.join(p.name for p in fn.params)}), got {len(args)}")
    args = coerce_args(args, fn.params, func)
    try:
        result = Interpreter(module).call_function(fn, args, {})
    except RecursionError:
        raise InterpretError(f"{func}: calls nest too deeply (a recursion without a "
                             f"reachable base case?)") from None
    if traced and out_tree is not None:
        leaves = [result] if out_tree.kind is None else result
        if isinstance(leaves, (tuple, list)) and len(leaves) == out_tree.num_leaves:
            return unflatten(out_tree, leaves)
    return result
