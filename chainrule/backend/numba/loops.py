"""Whole loops in numba: a program of small loops compiled into one numba function.

A region kernel (``numba.regions``) removes the per-op overhead inside one
iteration, but a loop of 10,000 steps on 8x16 arrays still pays Python's
``while`` and one call per region per step. When every binding of a program
(its ``while`` loops included: the forward loop, and the reverse loop of its
gradient with its residual stacks) has a numba form, ``loop_source`` writes
the whole function as one numba function instead, and ``compile_loops`` runs
it in place of the generated NumPy code once compiled (in the background, with
the disk cache of the region kernels; the NumPy code answers meanwhile).

The numba forms: elementwise ops are NumPy array expressions (numba fuses each
statement's into one loop) from the ops' scalar forms (``Op.scalar``) that are
also array expressions, in float64 (exp, log, tanh, ... are ``numba.vecmath``'s
ufuncs, ``vm.tanh``: vector code in the fused loop); ``matmul`` is ``np.dot`` on contiguous
arrays (a transpose is a view in F order, which BLAS reads transposed); ``sum`` of a whole
array; ``zeros``; two products of a step by one right operand as one product, and
``stack_contract`` (``transform/lowering/loop_batching.py``) on the stacks' rows in place
(``numba.products``). Values are flattened into numba variables: a tuple is its
fields, a stack is a buffer ``(capacity, *elem shape)`` with a count, grown by
doubling (so preallocated in effect, whether the trip count is known or not; one a
``stack_contract`` reads as pushed fills from the end, so its rows line up with the
popped residuals'). Stacks are used linearly in the code reverse mode makes (each stack
value is pushed or popped at most once; a contraction reads, it does not consume);
a program that shares one is refused. The
reason a program is refused (an op without a numba form, a nested function,
an ``if``) is printed at the end of its ``.source()``.

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3], n: i64) -> f64[3]:
...     i, y = 0, x
...     while True:
...         c = less(i, n)
...         if not c:
...             break
...         t = tanh(y)
...         j = add(i, 1)
...         i, y = j, t
...     r = (i, y)
...     z = r[1]
...     return z
... ''')
>>> print(loop_source(m, "main").text)
def main(a0, a1):
    v0, v1 = 0, a0
    while True:
        v2 = v0 < a1
        if not v2:
            break
        v3 = vm.tanh(v1)
        v4 = v0 + 1
        v0, v1 = v4, v3
    return (v1,)
<BLANKLINE>
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from ... import ops
from ...ir.nodes import Call, Constant, Function, If, Module, Tuple, TupleGetItem, Var, While
from ...ir.op import Op, ScalarForm
from ...ir.types import ListType, TensorType, TupleType
from ...ops.stack import (
    STACK_ALLOC,
    STACK_EMPTY,
    STACK_NONEMPTY,
    STACK_POP,
    STACK_POP_OR_ZERO,
    STACK_PUSH,
)
from ...transform.lowering.loop_batching import STACK_CONTRACT, counted_down
from .products import (
    HELPERS,
    Refused,
    contract,
    contracted_pushes,
    plan_pairs,
    plan_rows,
    record_shapes,
    write_half,
    write_in_row,
)
from .source import _NB_NAME, KINDS, NP_NAME, VECMATH
from .source import HELPERS as SCALAR_HELPERS

__all__ = ["LoopProgram", "LoopSource", "Refused", "describe", "loop_source"]

SCALAR_KINDS = ("f64", "i64", "bool")  # scalars whose promotions numba and NumPy share

# what only a scalar can be given in numba: the math module, bool(), not, the helpers
_SCALAR_ONLY = re.compile(r"\bmath\.|\bbool\(|\bnot\b|(?<![\w.])(?:{})\(".format(
    "|".join(re.findall(r"^def (\w+)\(", SCALAR_HELPERS, re.M))))
_ARRAY_FORMS: dict = {}


def array_form(op: Op) -> str | None:
    """``op``'s scalar form when it is also a NumPy array expression numba compiles (then
    fused into the loop of the statement reading it), or None; ops with attributes
    (``astype``'s dtype) have none here. numba.vecmath's ufuncs take the place of the
    C library's calls, vectorized."""
    if op not in _ARRAY_FORMS:
        form = op.scalar
        text = VECMATH.get(op)
        if text is None and type(form) is ScalarForm and not op.attrs and not (
                _SCALAR_ONLY.search(form.text)):
            text = form.text
        _ARRAY_FORMS[op] = text
    return _ARRAY_FORMS[op]

RECOMPUTE_USES = 3  # an arithmetic expression read this many times is not stored
_MAX_RECOMPUTE = 80  # characters of such an expression (its size grows with each reuse)


def _arithmetic(text: str) -> bool:
    """Whether an array expression is cheap arithmetic (no function call: ``np.``, ``vm.``)."""
    return len(text) <= _MAX_RECOMPUTE and "np." not in text and "vm." not in text


@dataclass(frozen=True)
class LoopSource:
    """The numba function of a program: ``text`` (``def <name>(a0, ...)``), its ``njit``
    ``signature``, the array ``constants`` passed after the parameters, and how to
    rebuild the program's result from the flat tuple it returns (``result_tree``)."""

    name: str
    text: str
    signature: str
    constants: tuple
    result_tree: object
    helpers: str = HELPERS
    boundscheck: bool = False  # indices checked as NumPy checks them (whole programs)
    opt_level: int = 3  # LLVM's: 1 for long functions, whose O3 takes minutes
    workspace: tuple = ()  # (shape, dtype) of the buffers passed after the constants


def _literal(c: Constant) -> str | None:
    if c.data.ndim or str(c.type.dtype) not in KINDS:
        return None
    v = c.data.item()
    return repr(v) if not isinstance(v, float) or np.isfinite(v) else f"np.float64({v!r})"


def _atom_vars(a) -> list:
    if type(a) is Var:
        return [a]
    if type(a) is Tuple:
        return [v for f in a.fields for v in _atom_vars(f)]
    return []


def _array_op(v) -> bool:
    return type(v) is Call and isinstance(v.callee, Op) and array_form(v.callee) is not None \
        and not v.attrs


def _users(block, out: dict, calls: list) -> None:
    """``out[var]``: where ``var`` is read, ``(id(block), whether by an array expression)``
    each; ``calls``: (callee, first operand) of the calls, in program order."""
    for b in block.bindings:
        v = b.value
        where = (id(block), _array_op(v))
        if type(v) is Call:
            calls.append((v.callee, v.args[0] if v.args else None))
            reads = [x for a in v.args for x in _atom_vars(a)]
        elif type(v) is TupleGetItem:
            reads = _atom_vars(v.tuple_value)
        elif type(v) is While:
            reads = [x for a in v.init for x in _atom_vars(a)]
            _users(v.cond, out, calls)
            _users(v.body, out, calls)
        else:
            reads = _atom_vars(v) if type(v) in (Var, Tuple) else []
        for x in reads:
            out.setdefault(x, []).append(where)
    for x in _atom_vars(block.result):
        out.setdefault(x, []).append((id(block), False))


class _Writer:
    def __init__(self, fn: Function):
        self.users: dict = {}
        calls: list = []
        _users(fn.body, self.users, calls)
        self.downward = contracted_pushes(fn)
        self.roles: dict = {}  # variable -> (Pair, half): products made as one
        self.in_rows: dict = {}  # value -> (stack, push): made in the stack's next row
        self.rows_pushes: set = set()  # pushes whose value is already in its row
        self.allocated: set = set()
        pops = [k for k, (callee, _) in enumerate(calls)
                if callee is STACK_POP or callee is STACK_POP_OR_ZERO]
        # a push onto a stack a contraction reads starts from an empty stack of its own
        pushes = [k for k, (callee, s) in enumerate(calls)
                  if callee is STACK_PUSH and s not in self.downward]
        # a popped slot is overwritten only by a later push; none in the code reverse mode
        # makes (every push in the forward loops, every pop after them), so pops are views
        self.copy_pops = bool(pops and pushes and max(pushes) > min(pops))
        self.block_id = id(fn.body)
        self.lines: list[str] = []
        self.where: dict = {}  # IR variable -> its numba form (name, [fields], ("S", buf, n))
        self.shapes: dict = {}  # numba name -> the shape of the array it holds (fill)
        self.constants: list = []
        self.count = 0
        self.uses: dict = {}  # stack form -> times consumed (linearity check)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count - 1}"

    def out(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def atom(self, a):
        if type(a) is Var:
            if a not in self.where:
                raise Refused(f"{a.name} is not a value this backend holds")
            return self.where[a]
        if type(a) is Constant:
            lit = _literal(a)
            if lit is not None:
                return lit
            if str(a.type.dtype) != "f64":
                raise Refused(f"a constant array of {a.type.dtype}")
            self.constants.append(np.ascontiguousarray(a.data))
            return f"k{len(self.constants) - 1}"
        if type(a) is Tuple:
            return [self.atom(f) for f in a.fields]
        raise Refused(f"a {type(a).__name__} operand")

    def form_of(self, t):
        """Fresh numba names holding a value of type ``t``."""
        if isinstance(t, TensorType):
            return self.fresh()
        if isinstance(t, TupleType):
            return [self.form_of(f) for f in t.fields]
        if isinstance(t, ListType):
            return ("S", self.fresh(), self.fresh())
        raise Refused(f"a value of type {t}")

    def block(self, block, depth: int) -> None:
        outer, self.block_id = self.block_id, id(block)
        for b in block.bindings:
            self.binding(b.var, b.value, depth)
        self.block_id = outer

    def binding(self, var: Var, v, depth: int) -> None:
        t = type(v)
        if t in (Var, Constant, Tuple):
            self.where[var] = self.atom(v)
        elif t is TupleGetItem:
            tup = self.atom(v.tuple_value)
            if not isinstance(tup, list):
                raise Refused("an index into a value that is not a tuple")
            self.where[var] = tup[v.index]
        elif t is Call and isinstance(v.callee, Op):
            self.op(var, v, depth)
        elif t is While:
            self.loop(var, v, depth)
        elif t is If:
            raise Refused(f"an if ({var.name})")
        else:
            raise Refused(f"a {t.__name__} ({var.name}): calls and closures stay NumPy code")
        record_shapes(self.shapes, self.where[var], var.type)

    def consume(self, s) -> tuple:
        if not (isinstance(s, tuple) and s[0] in ("S", "D")):
            raise Refused("a stack op on a value that is not a stack")
        self.uses[s] = self.uses.get(s, 0) + 1
        return s

    def op(self, var: Var, v: Call, depth: int) -> None:
        op = v.callee
        rt = var.type
        args = [self.atom(a) for a in v.args]
        target = self.fresh()
        self.where[var] = target
        if op is STACK_EMPTY or op is STACK_ALLOC:  # the loop filling it sizes its buffer
            elem = v.attrs["elem"]
            if not isinstance(elem, TensorType) or str(elem.dtype) not in KINDS:
                raise Refused(f"a stack of {elem}")
            shape = ", ".join(map(str, (0, *elem.shape)))
            self.out(depth, f"{target} = np.empty(({shape},), {NP_NAME[str(elem.dtype)]})")
            self.where[var] = ("S", target, "0")
        elif op is STACK_PUSH and var in self.rows_pushes:  # made in its row
            kind, buf, n = self.consume(args[0])
            self.out(depth, f"{target} = {n} + 1")
            self.where[var] = (kind, buf, target)
        elif op is STACK_PUSH:
            kind, buf, n = self.consume(args[0])
            count = self.fresh()
            push = "stack_push_down" if kind == "D" else "stack_push"
            self.out(depth, f"{target} = {push}({buf}, {n}, {args[1]})")
            self.out(depth, f"{count} = {n} + 1")
            self.where[var] = (kind, target, count)
        elif op is STACK_POP or op is STACK_POP_OR_ZERO:
            kind, buf, n = self.consume(args[0])
            if kind == "D":
                raise Refused("a pop of a stack filled from the end")
            count = self.fresh()
            # a copy where a later push onto the rest could reuse the slot
            copy = ".copy()" if self.copy_pops and rt.fields[0].shape else ""
            if op is STACK_POP:
                self.out(depth, f"{target} = {buf}[{n} - 1]{copy}")
                self.out(depth, f"{count} = {n} - 1")
            else:
                self.out(depth, f"{target} = stack_top_or_zero({buf}, {n}){copy}")
                self.out(depth, f"{count} = max({n} - 1, 0)")
            self.where[var] = [target, ("S", buf, count)]
        elif op is STACK_NONEMPTY:
            self.out(depth, f"{target} = {self.consume(args[0])[2]} > 0")
            self.uses[args[0]] -= 1  # a read, not a consumption
        elif op is STACK_CONTRACT:
            self.count -= 1
            del self.where[var]
            self.where[var] = contract(self, var, v, args, depth)
        elif op is ops.matmul:
            if any(a.type.ndim not in (1, 2) or str(a.type.dtype) != "f64" for a in v.args):
                raise Refused(f"matmul of {[str(a.type) for a in v.args]}")
            if var in self.roles:  # one of two products made as one: its half
                pair, half = self.roles[var]
                if half == 0:
                    self.out(depth, f"{pair.result} = np.dot({pair.buf}, {args[1]})")
                rows = f"[:{pair.m}]" if half == 0 else f"[{pair.m}:]"
                self.out(depth, f"{target} = {pair.result}{rows}")
            else:
                self.out(depth, f"{target} = np.dot({args[0]}, {args[1]})")
        elif op is ops.permute_dims:
            if v.args[0].type.ndim != 2 or tuple(v.attrs.get("axes")) != (1, 0):
                raise Refused("permute_dims other than a 2-D transpose")
            # a view (F order), which np.dot reads as a transposed operand: no copy
            self.out(depth, f"{target} = np.ascontiguousarray({args[0]}).T")
        elif op is ops.sum and v.attrs.get("axis") is None and not v.attrs.get("keepdims"):
            self._float(var, v)
            self.out(depth, f"{target} = np.sum({args[0]})")
        elif op is ops.zeros and str(rt.dtype) == "f64":
            shape = ", ".join(map(str, rt.shape))
            self.out(depth, f"{target} = np.zeros(({shape}{',' if len(rt.shape) == 1 else ''})"
                     f", np.float64)" if rt.shape else f"{target} = 0.0")
        elif array_form(op) is not None and not v.attrs:
            if rt.shape:
                self._float(var, v)
            elif any(a.type.shape for a in v.args) or str(rt.dtype) not in SCALAR_KINDS:
                raise Refused(f"{op.name} giving a {rt}")
            zero, one = ("0.0", "1.0") if str(rt.dtype).startswith("f") else ("0", "1")
            text = array_form(op).format(*args, zero=zero, one=one)
            users = self.users.get(var, [])
            if var in self.roles:  # a left operand of merged products: into its half
                write_half(self, target, var, text, depth)
            elif write_in_row(self, target, var, text, depth):
                pass
            elif rt.shape and users and all(u == (self.block_id, True) for u in users) and (
                    len(users) == 1 or len(users) <= RECOMPUTE_USES and _arithmetic(text)):
                # read by array expressions of this block only: part of each, which numba
                # fuses into one loop (no temporary array); arithmetic read by a few is
                # computed again in each (an array's pass through memory costs more)
                self.where[var] = f"({text})"
                self.count -= 1
            else:
                self.out(depth, f"{target} = {text}")
        else:
            raise Refused(f"op {op.name} has no whole-loop numba form")

    @staticmethod
    def _float(var: Var, v: Call) -> None:
        """Array arithmetic only in float64: NumPy's and numba's promotions then agree."""
        for t in [var.type] + [a.type for a in v.args]:
            if not isinstance(t, TensorType) or str(t.dtype) != "f64":
                raise Refused(f"{v.callee.name} on {t} (array arithmetic in float64 only)")

    def loop(self, var: Var, w: While, depth: int) -> None:
        forms = [self.form_of(lv.type) for lv in w.loop_vars]
        inits = [self.atom(a) for a in w.init]
        trips = self.trip_count(w, inits)
        for k, (lv, init) in enumerate(zip(w.loop_vars, inits)):
            if trips and isinstance(init, tuple) and init[2] == "0":
                # a stack filled by this loop: one buffer of its final size (a push past
                # it still grows it), its own (two stacks may start from one empty stack);
                # filled from the end when a stack_contract pairs it with popped residuals
                buf = self.fresh()
                shape = ", ".join([trips, *map(str, lv.type.elem.shape)])
                dtype = NP_NAME[str(lv.type.elem.dtype)]
                self.out(depth, f"{buf} = np.empty(({shape},), {dtype})")
                kind = "D" if lv in self.downward else "S"
                inits[k] = (kind, buf, "0")
                forms[k] = (kind, *forms[k][1:])
        self.out(depth, f"{_flat_text(forms)} = {_flat_text(inits, forms)}")
        self.moved(inits)
        for lv, f in zip(w.loop_vars, forms):
            self.where[lv] = f
            record_shapes(self.shapes, f, lv.type)
        pairs = plan_pairs(self, w, inits, depth, _array_op)
        plan_rows(self, w, _array_op)
        self.out(depth, "while True:")
        self.block(w.cond, depth + 1)
        self.out(depth + 1, f"if not {self.atom(w.cond.result)}:")
        self.out(depth + 2, "break")
        self.block(w.body, depth + 1)
        for pair in pairs:  # the buffer of the next values holds the next iteration's
            if pair.carried:
                self.out(depth + 1, f"{pair.buf} = {pair.next_buf}")
        res = self.atom(w.body.result)
        nexts = [res] if len(forms) == 1 else res
        self.out(depth + 1, f"{_flat_text(forms)} = {_flat_text(nexts, forms)}")
        self.moved(nexts)
        for s in _stacks(forms):  # once per iteration; after the loop, a new value
            if self.uses.pop(s, 0) > 1:
                raise Refused("a stack used twice in a loop (shared, not linear)")
        self.where[var] = forms[0] if len(forms) == 1 else forms

    def trip_count(self, w: While, inits) -> str | None:
        """The text of the trip count of a counted loop (``while i < n: ... i = i + 1``,
        ``fori_loop``'s form; ``while k > 0: ... k = k - 1``, a reverse sweep's), None for
        other loops."""
        down = counted_down(w)
        if down is not None and not isinstance(inits[down], (list, tuple)):
            return f"max({inits[down]}, 0)"
        if len(w.cond.bindings) != 1:
            return None
        c = w.cond.bindings[0].value
        if not (type(c) is Call and c.callee is ops.less
                and c.args[0] in w.loop_vars and c.args[1] not in w.loop_vars):
            return None
        k = w.loop_vars.index(c.args[0])
        nexts = w.body.result.fields if type(w.body.result) is Tuple else (w.body.result,)
        step = next((b.value for b in w.body.bindings if b.var is nexts[k]), None)
        if not (type(step) is Call and step.callee is ops.add
                and step.args[0] is c.args[0] and type(step.args[1]) is Constant
                and step.args[1].data.ndim == 0 and step.args[1].data == 1
                and not isinstance(inits[k], (list, tuple))):
            return None
        return f"max({self.atom(c.args[1])} - {inits[k]}, 0)"

    def moved(self, forms) -> None:
        """Stacks moved into loop variables are consumed (an empty one may be shared:
        its first push allocates)."""
        for s in _stacks(forms):
            if s[2] != "0":
                self.consume(s)


def _stacks(form) -> list:
    if isinstance(form, list):
        return [x for f in form for x in _stacks(f)]
    return [form] if isinstance(form, tuple) else []


def _flat(form) -> list:
    if isinstance(form, list):
        return [x for f in form for x in _flat(f)]
    if isinstance(form, tuple):
        return [form[1], form[2]]
    return [form]


def _flat_text(forms, like=None) -> str:
    if like is not None and len(_flat(like)) != len(_flat(forms)):
        raise Refused("a loop carry whose structure changes")
    return ", ".join(_flat(forms))


def _tree(form):
    """How the flat results rebuild the program's result: an index or a list of trees."""
    return [_tree(f) for f in form] if isinstance(form, list) else None


def _numba_type(dtype: str, ndim: int) -> str:
    """numba's type of a C-contiguous array (the wrapper makes arguments so), or scalar."""
    nb = "numba." + _NB_NAME[dtype]
    return f"{nb}[{', '.join([':'] * (ndim - 1) + ['::1'])}]" if ndim else nb


def loop_source(module: Module, func: str) -> LoopSource:
    """``module[func]`` as one numba function, or ``Refused`` with the reason."""
    fn: Function = module[func]
    w = _Writer(fn)
    sig = []
    for k, p in enumerate(fn.params):
        if not isinstance(p.type, TensorType) or str(p.type.dtype) not in KINDS:
            raise Refused(f"parameter {p.name} of type {p.type}")
        w.where[p] = f"a{k}"
        record_shapes(w.shapes, f"a{k}", p.type)
        sig.append(_numba_type(str(p.type.dtype), p.type.ndim))
    w.block(fn.body, 1)
    result = w.atom(fn.body.result)
    flat = _flat(result)
    if any(isinstance(f, tuple) for f in (result if isinstance(result, list) else [result])):
        raise Refused("a stack as a result")
    stacks = [s for s, n in w.uses.items() if n > 1]
    if stacks:
        raise Refused("a stack used twice (shared, not linear)")
    if not any(type(b.value) is While for b in fn.body.bindings):
        raise Refused("no loop")
    consts = [f"k{k}" for k in range(len(w.constants))]
    sig += [_numba_type("f64", c.ndim) for c in w.constants]
    params = [f"a{k}" for k in range(len(fn.params))] + consts
    text = (f"def {func}({', '.join(params)}):\n" + "\n".join(w.lines)
            + f"\n    return ({', '.join(flat)},)\n")
    return LoopSource(func, text, f"({', '.join(sig)},)", tuple(w.constants),
                      _tree(result))


def _rebuild(tree, flat, types, pos: list):
    if tree is None:
        t = types
        v = flat[pos[0]]
        pos[0] += 1
        return NP_SCALAR[str(t.dtype)](v) if not t.shape else v
    return tuple(_rebuild(s, flat, ft, pos) for s, ft in zip(tree, types.fields))


NP_SCALAR = {k: getattr(np, v[3:]) for k, v in NP_NAME.items()}


class Workspace:
    """The buffers a program's stacks fill (their rows written, then read, within one
    call), kept for its next call: memory already touched costs no page faults (a
    program pushing 100 steps of 10,000 values a step onto 12 stacks faulted 24,000
    pages a call, 2.7 times its run). A call made while another holds them (another
    thread) gets new ones."""

    def __init__(self, layout: tuple):
        self.layout = layout
        self.free: list = []
        self.lock = threading.Lock()

    def take(self) -> tuple:
        with self.lock:
            if self.free:
                return self.free.pop()
        return tuple(np.empty(shape, np.dtype(dtype)) for shape, dtype in self.layout)

    def give(self, bufs: tuple) -> None:
        with self.lock:
            if not self.free:
                self.free.append(bufs)


class LoopProgram:
    """A program compiled whole (``src``): ``compile()`` loads or compiles its numba
    function and swaps it into the ``fn`` of every ``CompiledFunction`` attached.
    ``state`` as ``RegionKernel``'s: waiting, compiling, ready or ``numpy: <why>``."""

    def __init__(self, src: LoopSource, fn: Function):
        self.src = src
        self.fn = fn
        self.state = "waiting"
        self.done = threading.Event()
        self.targets: list = []
        self.run = None
        self._lock = threading.Lock()

    def attach(self, compiled) -> None:
        """Run ``compiled`` through the numba function (once it is ready)."""
        with self._lock:  # against compile() finishing between the test and the append
            if self.run is not None:
                self.install(compiled)
            else:
                self.targets.append(compiled)

    def install(self, compiled) -> None:
        """Swap the numba function into ``compiled``."""
        compiled.fn = self.run

    def build(self):
        from .runtime import load_text

        check = ", boundscheck=True" if self.src.boundscheck else ""
        disp = load_text(self.src.helpers + "\n\n" + f"@numba.njit({self.src.signature}, "
                         f'cache=True, error_model="numpy", nogil=True{check})\n'
                         + self.src.text, self.src.name, "loops", self.src.opt_level)
        consts = self.src.constants
        casts = [(np.ascontiguousarray if p.type.ndim else NP_SCALAR[str(p.type.dtype)])
                 for p in self.fn.params]
        tree, rtype = self.src.result_tree, self.fn.ret_type
        if not self.src.workspace:
            def run(*args):
                flat = disp(*[c(a) for c, a in zip(casts, args)], *consts)
                return _rebuild(tree, flat, rtype, [0])
            return run
        pool = Workspace(self.src.workspace)

        def run_in_workspace(*args):
            bufs = pool.take()
            try:
                flat = disp(*[c(a) for c, a in zip(casts, args)], *consts, *bufs)
            finally:
                pool.give(bufs)
            return _rebuild(tree, flat, rtype, [0])

        return run_in_workspace

    def compile(self) -> None:
        if self.done.is_set():
            return
        self.state = "compiling"
        try:
            run = self.build()
            with self._lock:
                self.run = run
                self.state = "ready"
                for c in self.targets:
                    self.install(c)
                self.targets.clear()
        except Exception as exc:  # numba refused: the NumPy code stays
            self.state = f"numpy: numba failed: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            self.done.set()

    def __repr__(self) -> str:
        return f"<LoopProgram {self.src.name}: {self.state}>"


def describe(src: LoopSource | None, reason: str = "") -> str:
    """The text appended to ``.source()``: the numba function, or why there is none."""
    if src is None:
        return f"\n# whole-loop numba: not used ({reason})\n"
    return ("\n# -- the whole program as one numba function (its loops included); the NumPy "
            "code above answers until it is compiled --\n"
            f'@numba.njit({src.signature}, cache=True, error_model="numpy")\n' + src.text)
