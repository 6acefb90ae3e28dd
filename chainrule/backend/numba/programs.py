"""Whole programs as native code: a module's function written as one numba function.

A program of many small ops (nested derivatives in loops, 3x3 transforms, a time loop
of small matrix products) spends about a microsecond per op in Python's calls of
NumPy, whatever the arrays' sizes. ``program_source`` writes the whole optimized
function (its ``while`` loops, its ``if``s, its tuples, the stacks of reverse mode)
as one numba function in nopython mode, so those calls become compiled code; the
NumPy code stays the reference: it answers until the numba function is compiled (in
the background, ``runtime.py``), and whatever has no numba form here keeps a program
on it, with the reason (``Unsupported``), which ``describe`` puts at the end of the
program's ``.source()``.

A chain of elementwise ops (broadcasts, slices, transposes, concatenations, slice
updates) is computed in one loop nest, a value read once by the next op not stored, a
reduction in the loops of what it reduces (``deferred.py``): above, the tanh, the
product and the sum are one loop.

Every value is a numba variable: an array of any rank, a 0-d value a scalar of its
dtype, a tuple its fields, a stack (the residuals reverse mode pushes in a loop) a
buffer and a count, grown by doubling (``products.HELPERS``). An op is written by its
entry of ``LOWERINGS``, keyed by the op object (``tests`` walk the registry: an op has a
lowering or a reason in ``NO_LOWERING``). Numbers are written with their dtype
(``np.float32(2.0)``), so NumPy 2's promotions hold (numba's would widen float32 by a
Python float); indexing is bounds-checked, as NumPy's.

Results agree with the NumPy code to a few units in the last place where the math is
computed otherwise (a sum's order, numba's ``exp``): ``NATIVE_RTOL``.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> m = cr.trace(lambda x: cnp.sum(cnp.tanh(x) * 2.0), np.ones(100))
>>> print(program_source(m, "main").text)
def main(a0):
    v1 = v2 = v3 = v4 = 0.0
    for v0 in range(0, 100, 4):
        v1 = (v1 + ((vm.tanh(a0[v0])) * 2.0))
        v2 = (v2 + ((vm.tanh(a0[(v0 + 1)])) * 2.0))
        v3 = (v3 + ((vm.tanh(a0[(v0 + 2)])) * 2.0))
        v4 = (v4 + ((vm.tanh(a0[(v0 + 3)])) * 2.0))
    v5 = ((v1 + v2) + (v3 + v4))
    return (v5,)
<BLANKLINE>
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...ir.nodes import Call, Constant, Function, If, Module, Tuple, TupleGetItem, Var, While
from ...ir.op import Op
from ...ir.types import ListType, TensorType, TupleType
from ...ir.visitor import all_bindings, nested_blocks
from ...ops.stack import (
    STACK_ALLOC,
    STACK_EMPTY,
    STACK_NONEMPTY,
    STACK_POP,
    STACK_POP_OR_ZERO,
    STACK_PUSH,
)
from .. import policy
from .deferred import Deferred, deferrable_vars, element_form, store
from .loops import LoopSource
from .lowerings import HELPERS as OP_HELPERS
from .lowerings import NO_LOWERING, Emit, Unsupported, dtype_name, lowering
from .products import HELPERS as STACK_HELPERS
from .small import Decline, Elements, Small, is_small, simple, small_lowering
from .source import _NB_NAME, NP_NAME, shape_text

__all__ = ["HELPERS", "NATIVE_RTOL", "STATEMENTS", "TooLong", "program_source"]

NATIVE_RTOL = 1e-12  # relative agreement with the NumPy code (tested, catalog and GradBench)

DTYPES = frozenset(_NB_NAME)  # the dtypes numba holds here


class TooLong(Unsupported):
    """The numba function would be too long to compile in reasonable time."""


# the numba functions the program may call: stacks' buffers, ops' helpers
HELPERS = STACK_HELPERS + "\n\n" + OP_HELPERS


# -- the writer --------------------------------------------------------------------------------
def _flat(form) -> list:
    if isinstance(form, list):
        return [x for f in form for x in _flat(f)]
    if isinstance(form, tuple):  # a stack: its buffers and count
        return [*form[1], form[2]]
    return [form]


def _tree(form):
    return [_tree(f) for f in form] if isinstance(form, list) else None


def _stacks(form) -> list:
    if isinstance(form, list):
        return [s for f in form for s in _stacks(f)]
    return [form] if isinstance(form, tuple) else []


class _Writer:
    def __init__(self, scalars: bool = True, max_lines: int | None = None):
        self.scalars = scalars  # small arrays held by their elements (small.py)
        self.max_lines = MAX_LINES if max_lines is None else max_lines
        self.array_ops = 0  # ops written on arrays (not on small arrays' elements)
        self.lines: list[str] = []
        self.where: dict = {}  # IR variable -> its form (a name, a list, a stack)
        self.constants: list = []
        self.count = 0
        self.consumed: dict = {}  # stack form -> times used up (pushed onto, popped)
        self.empty: set = set()  # stack forms of stack_empty (see the stacks, below)
        self.memo: dict = {}  # small arrays' elements read, arrays made of elements
        self.deferrable: set = set()  # values read once, element by element (deferred.py)
        self.workspace: list = []  # (shape, dtype) of the stacks' buffers passed in
        self.pops_copy = True  # a push may follow a pop: popped rows are copied
        self.bounds_checked = False  # whether an index reads positions from values

    def small_arrays(self, t) -> bool:
        """Whether values of type ``t`` are held by their elements."""
        return self.scalars and is_small(t)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count - 1}"

    def out(self, depth: int, line: str) -> None:
        if len(self.lines) >= self.max_lines:  # stop writing what will not be compiled
            raise TooLong(f"more than {self.max_lines} lines of numba code (numba would "
                          f"compile it for minutes)")
        self.lines.append("    " * depth + line)

    # numbers with their dtype: numba types a Python float as float64 (float32 arrays
    # would be widened), so anything but float64, int64 and bool is written typed
    def number(self, value, t) -> str:
        kind = str(t.dtype)
        if kind not in DTYPES:
            raise Unsupported(f"a value of dtype {kind}")
        v = np.asarray(value).astype(t.dtype.numpy).item()
        if kind == "bool":
            return repr(bool(v))
        if isinstance(v, float) and not np.isfinite(v):
            text = "np.nan" if v != v else "np.inf" if v > 0 else "-np.inf"
            return text if kind == "f64" else f"{NP_NAME[kind]}({text})"
        text = repr(v) if v >= 0 or v != v else f"({v!r})"  # -2.0 ** x is -(2.0 ** x)
        return text if kind in ("f64", "i64") else f"{NP_NAME[kind]}({text})"

    def zero(self, t) -> str:
        return self.number(0, t)

    def one(self, t) -> str:
        return self.number(1, t)

    def atom(self, a):
        if type(a) is Var:
            form = self.where.get(a)
            if form is None:
                raise Unsupported(f"{a.name} is not a value this backend holds")
            return form
        if type(a) is Constant:
            if not a.data.ndim:
                return self.number(a.data, a.type)
            if self.small_arrays(a.type) and str(a.type.dtype) in DTYPES:
                return Small(tuple(self.number(v, a.type) for v in a.data.ravel()), a.type)
            if str(a.type.dtype) not in DTYPES:
                raise Unsupported(f"a constant array of {a.type.dtype}")
            self.constants.append(np.array(a.data, copy=True, order="C"))  # writeable
            return f"k{len(self.constants) - 1}"
        if type(a) is Tuple:
            return [self.atom(f) for f in a.fields]
        raise Unsupported(f"a {type(a).__name__} operand")

    def fresh_form(self, t):
        """New numba names holding a value of type ``t``."""
        if isinstance(t, TensorType):
            _check_tensor(t)
            if self.small_arrays(t):
                return Small(tuple(self.fresh() for _ in range(t.size)), t)
            return self.fresh()
        if isinstance(t, TupleType):
            return [self.fresh_form(f) for f in t.fields]
        if isinstance(t, ListType):
            return ("S", tuple(self.fresh() for _ in _elem_leaves(t.elem)), self.fresh())
        raise Unsupported(f"a value of type {t}")

    def consume(self, s) -> tuple:
        if not isinstance(s, tuple):
            raise Unsupported("a stack op on a value that is not a stack")
        if s not in self.empty:
            self.consumed[s] = self.consumed.get(s, 0) + 1
        return s

    def assign(self, depth: int, forms, values) -> None:
        names, texts = [], []
        self._pair(forms, values, names, texts, depth)
        if names:
            self.out(depth, f"{', '.join(names)} = {', '.join(texts)}")

    def _pair(self, form, value, names: list, texts: list, depth: int) -> None:
        if isinstance(form, list):
            if not isinstance(value, list) or len(value) != len(form):
                raise Unsupported("a value whose structure changes")
            for f, v in zip(form, value):
                self._pair(f, v, names, texts, depth)
        elif isinstance(form, Small):
            names += form.names
            texts += self.elements(value, form.type, depth)
        else:
            names += _flat(form)
            texts += _flat(self.arrays(value, depth))

    # -- small arrays: elements and arrays made of them (memo: valid in the block) --------
    def elements(self, form, t, depth: int) -> list[str]:
        """The elements of a value of type ``t`` (a small array, or 0-d), read out of its
        array once."""
        if isinstance(form, Small):
            return list(form.names)
        if not t.shape:
            return [form]
        key = ("elements", form)
        names = self.memo.get(key)
        if names is None:
            names = [self.fresh() for _ in range(t.size)]
            reads = [f"{form}[{', '.join(map(str, i))}]" for i in np.ndindex(*t.shape)]
            self.out(depth, f"{', '.join(names)} = {', '.join(reads)}")
            self.memo[key] = names
        return list(names)

    def array(self, form, depth: int) -> str:
        """A small array's elements as an array (once per block); a deferred array
        stored."""
        if isinstance(form, Deferred):
            form = store(self, form, depth)
        if not isinstance(form, Small):
            return form
        key = ("array", form.names, form.type)
        name = self.memo.get(key)
        if name is None:
            t = form.type
            name = self.fresh()
            self.out(depth, f"{name} = np.empty({shape_text(t.shape)}, {dtype_name(t)})")
            targets = [f"{name}[{', '.join(map(str, i))}]" for i in np.ndindex(*t.shape)]
            self.out(depth, f"{', '.join(targets)} = {', '.join(form.names)}")
            self.memo[key] = name
        return name

    def arrays(self, form, depth: int):
        """``form`` with its small arrays made arrays."""
        if isinstance(form, list):
            return [self.arrays(f, depth) for f in form]
        return self.array(form, depth)

    def scoped(self, fill, *args) -> None:
        """``fill(*args)`` writes a nested block: what it unpacks or makes is not seen
        after it."""
        saved = dict(self.memo)
        fill(*args)
        self.memo = saved

    # -- blocks ----------------------------------------------------------------------------
    def block(self, block, depth: int) -> None:
        for b in block.bindings:
            self.binding(b.var, b.value, depth)

    def binding(self, var: Var, v, depth: int) -> None:
        t = type(v)
        if t is Call and type(v.callee) is Op:
            self.op(var, v, depth)
        elif t is Var or t is Constant or t is Tuple:
            self.where[var] = self.atom(v)
        elif t is TupleGetItem:
            tup = self.atom(v.tuple_value)
            if not isinstance(tup, list):
                raise Unsupported("an index into a value that is not a tuple")
            self.where[var] = tup[v.index]
        elif t is While:
            self.loop(var, v, depth)
        elif t is If:
            self.branch(var, v, depth)
        elif t is Call:
            raise Unsupported(f"a call of {getattr(v.callee, 'name', v.callee)} ({var.name}): "
                              f"calls of functions stay NumPy code")
        else:
            raise Unsupported(f"a {t.__name__} ({var.name}): closures stay NumPy code")

    def op(self, var: Var, v: Call, depth: int) -> None:
        op = v.callee
        statement = STATEMENTS.get(op)
        if statement is not None:
            statement(self, var, v, depth)
            return
        lower = lowering(op)
        if lower is None:
            raise Unsupported(NO_LOWERING.get(op, f"op {op.name} has no numba form"))
        rt = var.type
        if not isinstance(rt, TensorType):
            raise Unsupported(f"op {op.name} giving {rt}")
        _check_tensor(rt)
        for a in v.args:
            _check_tensor(a.type)
        args = [self.atom(a) for a in v.args]
        types = [a.type for a in v.args]
        form = element_form(self, var, v, args, types, depth)
        if form is not None:
            self.where[var] = form
            return
        args = [self.array(a, depth) if isinstance(a, Deferred) else a for a in args]
        if self.small(var, v, args, types, depth):
            return
        self.array_ops += 1
        if self.array_ops > MAX_ARRAY_OPS:
            raise TooLong(f"more than {MAX_ARRAY_OPS} ops on arrays (numba would compile "
                          f"them for minutes)")
        args = [self.array(a, depth) for a in args]
        text = lower(Emit(self, args, types, rt, v.attrs, depth))
        target = self.fresh()
        self.out(depth, f"{target} = {_bare(text)}")
        self.where[var] = target

    def small(self, var: Var, v: Call, args: list, types: list, depth: int) -> bool:
        """Write ``var`` by its elements (``small.py``) when it is a small array or a
        number made of small arrays and the op has an element form for them."""
        rt = var.type
        if not (self.small_arrays(rt) or not rt.shape and any(self.small_arrays(t)
                                                              for t in types)):
            return False
        lower = small_lowering(v.callee)
        if lower is None:
            return False
        mark = len(self.lines), self.count, dict(self.memo)
        try:
            texts = lower(Elements(self, args, types, rt, v.attrs, depth))
        except Decline:
            del self.lines[mark[0]:]
            self.count, self.memo = mark[1], mark[2]
            return False
        names = []
        for text in texts:
            if not simple(text):
                name = self.fresh()
                self.out(depth, f"{name} = {_bare(text)}")
                text = name
            names.append(text)
        self.where[var] = Small(tuple(names), rt) if rt.shape else names[0]
        return True

    def loop(self, var: Var, w: While, depth: int) -> None:
        forms = [self.fresh_form(lv.type) for lv in w.loop_vars]
        inits = [self.atom(a) for a in w.init]
        self.assign(depth, forms, inits)
        self.take(inits)
        for lv, f in zip(w.loop_vars, forms):
            self.where[lv] = f
        self.out(depth, "while True:")
        self.scoped(self._iteration, w, forms, depth + 1)
        # a loop variable's stack is used up by each iteration (at most once); after the
        # loop it holds the last iteration's value, not used up yet
        for s in _stacks(forms):
            if self.consumed.pop(s, 0) > 1:
                raise Unsupported("a stack used twice in a loop (shared, not linear)")
        self.where[var] = forms[0] if len(forms) == 1 else forms

    def _iteration(self, w: While, forms: list, depth: int) -> None:
        self.block(w.cond, depth)
        self.out(depth, f"if not {self.atom(w.cond.result)}:")
        self.out(depth + 1, "break")
        self.block(w.body, depth)
        nexts = self.atom(w.body.result)
        nexts = [nexts] if len(forms) == 1 else nexts
        self.assign(depth, forms, nexts)
        self.take(nexts)

    def _arm(self, block, form, depth: int) -> None:
        self.block(block, depth)
        self.assign(depth, form, self.atom(block.result))
        self.take(self.atom(block.result))

    def branch(self, var: Var, v: If, depth: int) -> None:
        form = self.fresh_form(var.type)
        before = dict(self.consumed)
        self.out(depth, f"if {self.atom(v.cond)}:")
        self.scoped(self._arm, v.then_block, form, depth + 1)
        after_then, self.consumed = self.consumed, dict(before)
        self.out(depth, "else:")
        self.scoped(self._arm, v.else_block, form, depth + 1)
        # one branch runs: a stack used up in both is used up once
        for s in set(after_then) | set(self.consumed):
            self.consumed[s] = max(after_then.get(s, 0), self.consumed.get(s, 0))
        self.where[var] = form

    def take(self, forms) -> None:
        """The stacks moved into new variables (a loop's, a branch's result) are used up."""
        for s in _stacks(forms):
            self.consume(s)


def _bare(text: str) -> str:
    """``text`` without parentheses around the whole of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(text) - 1:
            return text  # "(a) + (b)": the first group closes before the end
    return text[1:-1]


def _check_tensor(t) -> None:
    if not isinstance(t, TensorType):
        raise Unsupported(f"a value of type {t}")
    if str(t.dtype) not in DTYPES:
        raise Unsupported(f"a value of dtype {t.dtype}")
    if not t.is_static:
        raise Unsupported(f"a symbolic shape ({t})")


# -- stacks (the residuals of reverse mode through loops) --------------------------------------
# A stack is ("S", buffers, count): a buffer (capacity, *shape) per array of its element
# (one, or one per field of a tuple), grown by doubling when a push finds it full. An
# empty stack has no room, so its first push makes a buffer of its own: one may start
# several stacks. Any other stack value is used up by the push or pop that reads it
# (reverse mode's stacks are used linearly); one read twice would have two pushes write
# one buffer, so such a program stays NumPy code.
def _elem_leaves(t) -> list:
    if isinstance(t, TupleType):
        return [x for f in t.fields for x in _elem_leaves(f)]
    _check_tensor(t)
    return [t]


def _leaves(form) -> list:
    """A stack element's arrays (``_elem_leaves``' order)."""
    return [x for f in form for x in _leaves(f)] if isinstance(form, list) else [form]


def _elem_form(t, names):
    if isinstance(t, TupleType):
        return [_elem_form(f, names) for f in t.fields]
    return next(names)


def _stack_empty(w: _Writer, var: Var, v: Call, depth: int) -> None:
    bufs = []
    for leaf in _elem_leaves(v.attrs["elem"]):
        buf = w.fresh()
        w.out(depth, f"{buf} = np.empty({shape_text((0, *leaf.shape))}, {dtype_name(leaf)})")
        bufs.append(buf)
    n = w.fresh()
    w.out(depth, f"{n} = 0")
    form = ("S", tuple(bufs), n)
    w.empty.add(form)
    w.where[var] = form


def _stack_alloc(w: _Writer, var: Var, v: Call, depth: int) -> None:
    """A stack with room for ``trips`` pushes (a loop of known trip count fills it): one
    buffer of that many rows per leaf, so no push grows it."""
    trips = w.atom(v.args[0])
    if not isinstance(trips, str) or isinstance(v.args[0].type, TensorType) and (
            v.args[0].type.shape):
        raise Unsupported("a stack sized by a value that is not a number")
    leaves = _elem_leaves(v.attrs["elem"])
    bufs = []
    if type(v.args[0]) is Constant and depth == 1 and _fits_workspace(w, v.args[0], leaves):
        rows = max(int(v.args[0].data), 0)  # once a call: the program's workspace
        for leaf in leaves:
            w.workspace.append(((rows, *leaf.shape), leaf.dtype.numpy.str))
            bufs.append(f"b{len(w.workspace) - 1}")
    else:
        rows = w.fresh()
        w.out(depth, f"{rows} = max({trips}, 0)")
        for leaf in leaves:
            buf = w.fresh()
            w.out(depth, f"{buf} = np.empty({shape_text((rows, *leaf.shape))}, "
                         f"{dtype_name(leaf)})")
            bufs.append(buf)
    n = w.fresh()
    w.out(depth, f"{n} = 0")
    w.where[var] = ("S", tuple(bufs), n)


def _fits_workspace(w: _Writer, trips: Constant, leaves: list) -> bool:
    """Whether rows for ``trips`` pushes of ``leaves`` fit the workspace's bound."""
    rows = max(int(trips.data), 0)
    size = rows * sum(leaf.size * leaf.dtype.numpy.itemsize for leaf in leaves)
    held = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d in w.workspace)
    return size + held <= policy.NATIVE_WORKSPACE_BYTES


def _stack_push(w: _Writer, var: Var, v: Call, depth: int) -> None:
    _, bufs, n = w.consume(w.atom(v.args[0]))
    values = _leaves(w.atom(v.args[1]))
    new_bufs = []
    for buf, x in zip(bufs, values):
        new = w.fresh()
        if isinstance(x, Small):  # its elements written into the next row
            w.out(depth, f"{new} = stack_room({buf}, {n})")
            rows = [f"{new}[{', '.join([n, *map(str, i)])}]" for i in np.ndindex(*x.type.shape)]
            w.out(depth, f"{', '.join(rows)} = {', '.join(x.names)}")
        else:
            w.out(depth, f"{new} = stack_push({buf}, {n}, {x})")
        new_bufs.append(new)
    new_n = w.fresh()
    w.out(depth, f"{new_n} = {n} + 1")
    w.where[var] = ("S", tuple(new_bufs), new_n)


def _stack_pop(w: _Writer, var: Var, v: Call, depth: int) -> None:
    _, bufs, n = w.consume(w.atom(v.args[0]))
    elem = var.type.fields[0]
    tops = []
    for buf, leaf in zip(bufs, _elem_leaves(elem)):
        top = w.fresh()
        if w.small_arrays(leaf):  # its elements, read now (a later push may write the row)
            row = top
            if v.callee is STACK_POP:
                w.out(depth, f"{row} = {buf}[{n} - 1]")
            else:
                w.out(depth, f"{row} = stack_top_or_zero({buf}, {n})")
            top = Small(tuple(w.fresh() for _ in range(leaf.size)), leaf)
            reads = [f"{row}[{', '.join(map(str, i))}]" for i in np.ndindex(*leaf.shape)]
            w.out(depth, f"{', '.join(top.names)} = {', '.join(reads)}")
            tops.append(top)
            continue
        # a copy: a later push may write the slot while the popped value is read
        copy = ".copy()" if leaf.shape and w.pops_copy else ""
        if v.callee is STACK_POP:
            w.out(depth, f"{top} = {buf}[{n} - 1]{copy}")
        else:
            w.out(depth, f"{top} = stack_top_or_zero({buf}, {n}){copy}")
        tops.append(top)
    new_n = w.fresh()
    w.out(depth, f"{new_n} = {n} - 1" if v.callee is STACK_POP else f"{new_n} = max({n} - 1, 0)")
    w.where[var] = [_elem_form(elem, iter(tops)), ("S", bufs, new_n)]


def _stack_nonempty(w: _Writer, var: Var, v: Call, depth: int) -> None:
    stack = w.atom(v.args[0])
    if not isinstance(stack, tuple):
        raise Unsupported("a stack op on a value that is not a stack")
    target = w.fresh()
    w.out(depth, f"{target} = {stack[2]} > 0")
    w.where[var] = target


def _split(w: _Writer, var: Var, v: Call, depth: int) -> None:
    """split(x): the pieces along the axis, views of x."""
    x = w.atom(v.args[0])
    axis = v.attrs["axis"]
    start, parts = 0, []
    if isinstance(x, Small):  # pieces of its elements
        grid = np.arange(x.type.size).reshape(x.type.shape)
        for ft in var.type.fields:
            n = ft.shape[axis]
            picks = grid[(slice(None),) * axis + (slice(start, start + n),)].ravel()
            parts.append(Small(tuple(x.names[i] for i in picks), ft))
            start += n
        w.where[var] = parts
        return
    for ft in var.type.fields:
        n = ft.shape[axis]
        key = ", ".join([":"] * axis + [f"{start}:{start + n}"])
        name = w.fresh()
        w.out(depth, f"{name} = {x}[{key}]")
        parts.append(name)
        start += n
    w.where[var] = parts


# ops that write statements of their own and values of other forms than one array
STATEMENTS = {STACK_EMPTY: _stack_empty, STACK_ALLOC: _stack_alloc, STACK_PUSH: _stack_push,
              STACK_POP: _stack_pop, STACK_POP_OR_ZERO: _stack_pop, STACK_NONEMPTY: _stack_nonempty,
              ops.split: _split}


# -- the function --------------------------------------------------------------------------
def _numba_type(t) -> str:
    nb = "numba." + _NB_NAME[str(t.dtype)]
    if not t.ndim:
        return nb
    return f"{nb}[{', '.join([':'] * (t.ndim - 1) + ['::1'])}]"


# numba's and LLVM's time grows faster than a function's length: at O3, a function of
# 200 lines took 25 s, of 670 lines 10 minutes; at O1 14 s and 39 s (and their code ran
# as fast, except matrix-vector code: an LSTM's 1.8x slower at O1); at O1 an LSTM's
# Jacobian of 2,400 lines took 30 s, a third derivative's loops of 1,700 lines 72 s. A
# program longer than MAX_LINES with its small arrays as elements is written again with
# them as arrays (a line per op: 470 lines for that Jacobian), else stays NumPy code
MAX_LINES_AT_O3 = 250
MAX_LINES = 2500
# an op on arrays costs numba and LLVM far more than a line of scalar code (a 256x256
# Jacobian unrolled, 775 lines of ops on arrays, compiled for more than 5 minutes)
MAX_ARRAY_OPS = 300


def program_source(module: Module, func: str, scalars: bool = True,
                   max_lines: int | None = None) -> LoopSource:
    """``module[func]`` as one numba function, or ``Unsupported`` with the reason; its
    small arrays held by their elements unless not ``scalars``; ``TooLong`` past
    ``max_lines`` (``MAX_LINES`` by default)."""
    fn: Function = module[func]
    w = _Writer(scalars, max_lines)
    w.deferrable = deferrable_vars(fn)
    w.pops_copy = _push_after_pop(fn)
    sig = []
    for k, p in enumerate(fn.params):
        if not isinstance(p.type, TensorType):
            raise Unsupported(f"parameter {p.name} of type {p.type}")
        _check_tensor(p.type)
        w.where[p] = f"a{k}"
        sig.append(_numba_type(p.type))
    w.block(fn.body, 1)
    result = w.arrays(w.atom(fn.body.result), 1)
    if _stacks(result):
        raise Unsupported("a stack as a result")
    shared = [s for s, k in w.consumed.items() if k > 1]
    if shared:
        raise Unsupported("a stack used twice (shared, not linear)")
    consts = [f"k{k}" for k in range(len(w.constants))]
    sig += [_numba_type(TensorType(c.shape, _dtype_of(c))) for c in w.constants]
    sig += [_numba_type(TensorType(shape, _dtype_of(np.empty(0, dt))))
            for shape, dt in w.workspace]
    names = ([f"a{k}" for k in range(len(fn.params))] + consts
             + [f"b{k}" for k in range(len(w.workspace))])
    flat = _flat(result)
    if w.workspace and not w.pops_copy:  # a result may be a row of the next call's buffers
        flat = [f"np.copy({x})" if isinstance(t, TensorType) and t.shape else x
                for x, t in zip(flat, _flat_types(fn.ret_type))]
    body = "\n".join(w.lines)
    text = (f"def {func}({', '.join(names)}):\n" + (body + "\n" if body else "")
            + f"    return ({', '.join(flat)}{',' if len(flat) == 1 else ''})\n")
    return LoopSource(func, text, f"({', '.join(sig)},)", tuple(w.constants),
                      _tree(result), HELPERS, boundscheck=w.bounds_checked,
                      opt_level=3 if len(w.lines) <= MAX_LINES_AT_O3 else 1,
                      workspace=tuple(w.workspace))


def _flat_types(t) -> list:
    if isinstance(t, TupleType):
        return [x for f in t.fields for x in _flat_types(f)]
    return [t]


def _push_after_pop(fn: Function) -> bool:
    """Whether a push may run after a pop: some binding of the function's top block
    pushing comes after (or is) one popping. Otherwise (a forward loop pushing, then a
    reverse loop popping: reverse mode's) popped rows are never written again, and are
    read in place."""
    popped = False
    for b in fn.body.bindings:
        callees = {x.value.callee for x in all_bindings(nested_blocks(b.value))
                   if type(x.value) is Call}
        if type(b.value) is Call:
            callees.add(b.value.callee)
        if popped and STACK_PUSH in callees:
            return True
        if STACK_POP in callees or STACK_POP_OR_ZERO in callees:
            if STACK_PUSH in callees:
                return True
            popped = True
    return False


def _dtype_of(arr: np.ndarray):
    from ...ir.types import DType

    return DType(arr.dtype)
