"""Fusion: maximal regions of elementwise ops become one call of a ``@fused`` function.

A region is a run of op calls, in program order, that are elementwise (the
``elementwise`` fact of ``chainrule/ir/op.py``), broadcasts feeding them
(``broadcast``: ``broadcast_to``), and reductions (``reduction``: ``sum``,
``mean``, ``max``, ``min``, ``prod``) of values the region computed. The
region is outlined into a module function flagged ``fused`` (printed
``@fused``, parsed back; ``verify`` checks it like any function) and replaced
by one call of it; the values of the region that the rest of the program reads
are its results (a tuple when there are several).

Representation, and why: a fused region is an ordinary module function called
through a ``GlobalVar``, so the interpreter runs it, ``verify`` types it, and
reverse and forward mode differentiate the call by differentiating its body
(the rules of a fused region are derived from its body, as for any called
function): fusion may run before or after differentiation. ``optimize``
inlines calls of non-recursive functions, so it undoes fusion: run ``fuse``
last in a pipeline (``Pipeline(["gradient", "optimize", "fuse"])``).

Regions are built in one scan of each block. A fusible binding that reads
values of open regions joins them (merging them into one); one that reads none
starts a region. A reduction ends its chain: a binding that reads its result
closes that region first and takes the result as an input. A binding that is
not fusible and reads a value of an open region closes it; bindings that do
not read it stay before the fused call (they do not depend on the region, so
the call placed after them still precedes every use of its results).
Independent chains are separate regions. Regions of fewer than ``min_ops``
elementwise ops are left as they are. Nested blocks (branches, loop bodies,
closures) are fused on their own; a loop condition's values that its body
reads stay results of the condition's regions.

On the NumPy backend a fused region compiles to the code its bindings compile
to (the code generator already writes elementwise chains in place, ``out=``,
into one buffer), plus one Python call: fusion is neutral there; it is the
unit a compiled backend for regions works on (``benchmarks/fusion.py``).

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3], y: f64[3]) -> f64:
...     a = multiply(x, y)
...     b = tanh(a)
...     c = add(b, x)
...     s = sum(c)
...     return s
... ''')
>>> print(fuse(m))
def main(x: f64[3], y: f64[3]) -> f64:
    s = main_fused0(x, y)
    return s
<BLANKLINE>
@fused
def main_fused0(x: f64[3], y: f64[3]) -> f64:
    a = multiply(x, y)
    b = tanh(a)
    c = add(b, x)
    s = sum(c)
    return s
<BLANKLINE>
"""

from __future__ import annotations

from ...ir.nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from ...ir.op import Op
from ...ir.types import TensorType, TupleType
from ...ir.visitor import atoms_of, nested_blocks
from ..base import Pass, register_pass, same_block, with_blocks

FUSED = "fused"  # the flag of an outlined region's function


def _simple_call(value) -> bool:
    return (type(value) is Call and type(value.callee) is Op and not value.callee.effects
            and all(type(a) in (Var, Constant) for a in value.args))


def _fusible(binding: Binding) -> bool:
    """Whether ``binding`` may be in a region (a reduction only of a region's value)."""
    v = binding.value
    if not _simple_call(v) or not isinstance(binding.var.type, TensorType):
        return False
    op = v.callee
    return op.elementwise or op.broadcast or op.reduction is not None


class _Region:
    """An open region: its bindings (with their positions), variables, and the results
    of its reductions (a chain ends there: their readers start another region)."""

    __slots__ = ("bindings", "members", "ends", "closed")

    def __init__(self):
        self.bindings: list = []
        self.members: set = set()
        self.ends: set = set()
        self.closed = False  # emitted: its values are ordinary inputs from now on


def _reads(value) -> set:
    """Every variable ``value`` reads, nested blocks included (an over-approximation
    for closures, whose own bindings are never region members)."""
    out = {a for a in atoms_of(value) if type(a) is Var}
    for block in nested_blocks(value):
        out |= _block_reads(block)
    return out


def _block_reads(block: Block) -> set:
    """Every variable read in ``block`` (its own bindings included: see ``_reads``)."""
    out: set = set()
    stack = [block]
    while stack:
        block = stack.pop()
        out.update(_flat_vars(block.result))
        for b in block.bindings:
            out.update(a for a in atoms_of(b.value) if type(a) is Var)
            stack.extend(nested_blocks(b.value))
    return out


def _flat_vars(x) -> list:
    if type(x) is Var:
        return [x]
    if type(x) is Tuple:
        return [v for f in x.fields for v in _flat_vars(f)]
    return []


class _Fuser:
    def __init__(self, module: Module, fname: str, min_ops: int, taken: set):
        self.module = module
        self.fname = fname
        self.min_ops = min_ops
        self.taken = taken  # function names in use (the module's and those made here)
        self.new_functions: dict[str, Function] = {}

    def fresh_name(self) -> str:
        k = 0
        while f"{self.fname}_fused{k}" in self.taken:
            k += 1
        name = f"{self.fname}_fused{k}"
        self.taken.add(name)
        return name

    # -- blocks ---------------------------------------------------------------------------
    def block(self, block: Block, live_out=()) -> Block:
        """``block`` with its regions fused; ``live_out``: variables read after it (a
        loop's body reads its condition's bindings)."""
        bindings = []
        for b in block.bindings:  # nested blocks first, on their own
            inner = nested_blocks(b.value)
            if inner:
                if type(b.value) is While:
                    body = self.block(b.value.body)
                    blocks = [self.block(b.value.cond, _block_reads(body)),
                              body]
                else:
                    blocks = [self.block(blk) for blk in inner]
                new_value = with_blocks(b.value, blocks)
                if new_value is not b.value:
                    b = Binding(b.var, new_value)
            bindings.append(b)
        # the last binding reading each variable, to know which region values escape
        last_read: dict = {v: len(bindings) for v in _flat_vars(block.result)}
        last_read.update((v, len(bindings)) for v in live_out)
        for i, b in enumerate(bindings):
            for v in _reads(b.value):
                last_read[v] = max(last_read.get(v, -1), i)
        out: list[Binding] = []
        open_regions: list[_Region] = []  # in the order they were started
        region_of: dict = {}
        for i, b in enumerate(bindings):
            reads = _reads(b.value)
            touched = []
            for v in reads:
                r = region_of.get(v)
                if r is not None and not r.closed and r not in touched:
                    touched.append(r)
            touched.sort(key=open_regions.index)  # program order, not the order of a set
            if touched and _fusible(b):
                for r in [r for r in touched if reads & r.ends]:  # reads a chain's end
                    self.flush(r, out, last_read, i, open_regions)
                    touched.remove(r)
            if _fusible(b) and (touched or b.value.callee.reduction is None):
                target = self.merge(touched, region_of) if touched else _Region()
                if not touched:
                    open_regions.append(target)
                target.bindings.append((i, b))
                target.members.add(b.var)
                region_of[b.var] = target
                if b.value.callee.reduction is not None:
                    target.ends.add(b.var)
                continue
            for r in touched:  # it reads them: close them
                self.flush(r, out, last_read, i, open_regions)
            out.append(b)
        for r in list(open_regions):
            self.flush(r, out, last_read, len(bindings), open_regions)
        return same_block(block, out, block.result)

    def merge(self, regions: list, region_of: dict) -> _Region:
        """One region of ``regions`` (a binding reads them all; the first started first),
        in program order; the others are emptied (their members now belong to it)."""
        target, rest = regions[0], regions[1:]
        for r in rest:
            target.bindings.extend(r.bindings)
            target.members |= r.members
            target.ends |= r.ends
            for v in r.members:
                region_of[v] = target
            r.bindings, r.members = [], set()
        if rest:
            target.bindings.sort(key=lambda ib: ib[0])
        return target

    def flush(self, open_region: _Region, out, last_read, end, open_regions) -> None:
        """Emit ``open_region`` (closed before binding ``end``) into ``out``: as one fused
        call when it is worth it, else binding by binding, as it was."""
        open_regions.remove(open_region)
        open_region.closed = True
        region = [b for _, b in open_region.bindings]
        if not region:  # merged into another
            return
        n_elementwise = sum(1 for b in region if b.value.callee.elementwise)
        if n_elementwise < self.min_ops:
            out.extend(region)
            return
        # a binding outside the region that reads a member closes it, so a member is
        # read outside exactly when it is read at or after the end of the region
        outputs = [b.var for b in region if last_read.get(b.var, -1) >= end]
        if not outputs:  # dead code: dce's business, not ours
            out.extend(region)
            return
        name = self.fresh_name()
        fn, inputs = _outline(region, outputs)
        self.new_functions[name] = fn
        call = Call(GlobalVar(name), inputs)
        if len(outputs) == 1:
            out.append(Binding(outputs[0], call))
            return
        packed = Var(f"{name}_out", TupleType([v.type for v in outputs]))
        out.append(Binding(packed, call))
        out.extend(Binding(v, TupleGetItem(packed, k)) for k, v in enumerate(outputs))


def _outline(region, outputs) -> tuple[Function, list]:
    """The function computing ``outputs`` from ``region``'s bindings, and its arguments
    (the variables the region reads from outside, in first-use order). Every variable
    of the body is new: a variable is bound once in a module."""
    sub: dict = {}
    inputs: list[Var] = []
    params: list[Var] = []
    body: list[Binding] = []
    for b in region:
        args = []
        for a in b.value.args:
            if type(a) is Var and a not in sub:
                p = Var(a.name, a.type)
                sub[a] = p
                inputs.append(a)
                params.append(p)
            args.append(sub.get(a, a) if type(a) is Var else a)
        var = Var(b.var.name, b.var.type)
        sub[b.var] = var
        body.append(Binding(var, Call(b.value.callee, args, b.value.attrs)))
    if len(outputs) == 1:
        result, ret_type = sub[outputs[0]], outputs[0].type
    else:
        result = Tuple([sub[v] for v in outputs])
        ret_type = TupleType([v.type for v in outputs])
    return Function(params, Block(body, result), ret_type, {FUSED: True}), inputs


def fuse(module: Module, min_ops: int = 2) -> Module:
    """``module`` with maximal elementwise regions outlined into ``@fused`` functions
    (see the module docstring); functions with nothing to fuse are the same objects."""
    taken = set(module.functions)
    funcs: dict[str, Function] = {}
    made: dict[str, Function] = {}
    for name, fn in module.functions.items():
        if fn.attrs.get(FUSED):  # already a fused region
            funcs[name] = fn
            continue
        fuser = _Fuser(module, name, min_ops, taken)
        body = fuser.block(fn.body)
        funcs[name] = fn if body is fn.body else Function(fn.params, body, fn.ret_type,
                                                         fn.attrs)
        made.update(fuser.new_functions)
    if not made:
        return module if all(funcs[n] is f for n, f in module.functions.items()) else Module(
            funcs, module.meta)
    funcs.update(made)
    return Module(funcs, module.meta)


def is_fused(fn: Function) -> bool:
    """Whether ``fn`` is a region outlined by ``fuse``."""
    return bool(fn.attrs.get(FUSED))


class Fuse(Pass):
    """Outline maximal elementwise regions into ``@fused`` functions called once."""

    name = "fuse"

    def __init__(self, min_ops: int = 2):
        self.min_ops = min_ops

    def run(self, module: Module) -> Module:
        return fuse(module, self.min_ops)


register_pass(Fuse)
