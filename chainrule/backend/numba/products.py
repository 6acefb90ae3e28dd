"""Buffers for whole-loop numba (``numba.loops``): the ``stack_contract`` that
``batch_loops`` puts after a loop, read from the stacks' rows in place; products that
share their right operand made as one; values the step pushes made in their row.

Merging: a step that multiplies two (m, k) matrices by the same right operand (the
forward-over-reverse loop's ``x @ W`` and ``dx @ W``; its reverse loop's ``g @ W.T`` and
``dg @ W.T``) makes one (2m, k) product instead, when the two left operands can be
written into the halves of one buffer as they are made: both computed in the step by
array expressions (the buffer is made in the step), or both carried by the loop with
next values so computed (the buffer of the current values is carried beside them, the
first one filled before the loop). The products' results are the halves of the one
result: views, no copy. On 16x64 by 64x64 products OpenBLAS takes 15-16 us for one
32x64 product against 18-19 us for two 16x64 ones, and the HVP of the 100-step loop
of ``benchmarks/fusion.py`` ran 17% faster with both of its pairs merged; with a copy
into the buffer instead, the gain was gone.

Rows: a value the step makes by an array expression and pushes on a stack the loop
carries is written into the stack's next row (``stack_room`` makes room first, as a push
would), so the push copies nothing.

Both writes into part of a buffer (a half, a row) are explicit loops over the elements
when the expression is arithmetic and ``vm`` calls on arrays of the destination's shape
and scalars (``fill``): numba evaluates ``buf[:m] = expr`` into a temporary array and
copies it, ``buf[i, j] = expr[i, j]`` in a loop writes in place; the same operations on
the same elements, so the same results to the bit. The HVP of the 100-step loop of
``benchmarks/fusion.py`` ran 15% faster (2.73 against 2.31 ms of CPU, load 4.6).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ... import ops
from ...ir.nodes import Call, Function, Tuple, TupleGetItem, Var, While
from ...ops.stack import STACK_PUSH
from ...transform.lowering.loop_batching import STACK_CONTRACT

# numba helpers of the whole-loop function: a stack's buffer grown by doubling
HELPERS = '''\
@numba.njit(cache=True, nogil=True)
def stack_push(buf, n, x):
    if n == buf.shape[0]:  # full: double the capacity (a copy per doubling)
        grown = np.empty((max(16, 2 * n),) + buf.shape[1:], buf.dtype)
        grown[:n] = buf[:n]
        buf = grown
    buf[n] = x
    return buf


@numba.njit(cache=True, nogil=True)
def stack_room(buf, n):  # room for row n, the value then made in it (stack_push's growth)
    if n == buf.shape[0]:
        grown = np.empty((max(16, 2 * n),) + buf.shape[1:], buf.dtype)
        grown[:n] = buf[:n]
        return grown
    return buf


@numba.njit(cache=True, nogil=True)
def stack_room_down(buf, n):  # filled from the end: push k is row capacity - 1 - k
    if n == buf.shape[0]:
        grown = np.empty((max(16, 2 * n),) + buf.shape[1:], buf.dtype)
        grown[grown.shape[0] - n:] = buf
        return grown
    return buf


@numba.njit(cache=True, nogil=True)
def stack_push_down(buf, n, x):
    buf = stack_room_down(buf, n)
    buf[buf.shape[0] - 1 - n] = x
    return buf


@numba.njit(cache=True, nogil=True)
def stack_top_or_zero(buf, n):  # a view, as stack_pop's (copied where it must be)
    if n > 0:
        return buf[n - 1]
    return np.zeros(buf.shape[1:], buf.dtype)
'''


class Refused(Exception):
    """The program has no whole-loop numba form; the message says why."""


def contracted_pushes(fn: Function) -> set:
    """The loop variables of the stacks a ``stack_contract`` reads as pushed ('b'): their
    buffers fill from the end, so that their rows line up with the popped residuals'
    rows and the contraction reads both in place."""
    defs = {b.var: b.value for b in fn.body.bindings}
    out = set()
    for value in defs.values():
        if not (type(value) is Call and value.callee is STACK_CONTRACT):
            continue
        for a, read in zip(value.args, value.attrs["reads"]):
            got = defs.get(a)
            if read == "b" and type(got) is TupleGetItem and type(
                    loop := defs.get(got.tuple_value)) is While:
                out.add(loop.loop_vars[got.index])
    return out


def contract(w, var: Var, v: Call, args, depth: int) -> str:
    """``stack_contract`` of two stacks of matrices: their rows read in place, in step
    order or both reversed, as one ``np.dot`` when the contracted axis leads both
    operands (``ji,jk->ik``: ``sum_k x_k.T @ g_k``), else one ``np.dot`` per step."""
    spec, reads = v.attrs["spec"], v.attrs["reads"]
    sa, sb = spec.split("->")[0].split(",")
    if (sa not in ("ij", "ji") or sb not in ("jk", "kj") or spec[-2:] != "ik"
            or str(var.type.dtype) != "f64" or not all(
                isinstance(a, tuple) and a[0] in ("S", "D") for a in args)):
        raise Refused(f"stack_contract {spec} of {[str(a.type) for a in v.args]}")
    m = w.fresh()
    w.out(depth, f"{m} = min({args[0][2]}, {args[1][2]})")
    rows = []
    for (kind, buf, n), read in zip(args, reads):
        end = f"{buf}.shape[0]"
        # rows [lo, lo + m) hold the first m steps' elements, in step order or reversed
        rev = (kind == "S") == (read == "t")
        lo = {("S", "t"): f"{n} - {m}", ("S", "b"): "0", ("D", "b"): f"{end} - {m}",
              ("D", "t"): f"{end} - {n}"}[kind, read]
        rows.append((f"{buf}[{lo}:{lo} + {m}]", rev))
    (a, ra), (b, rb) = rows
    if ra != rb:  # the sum runs in any order, but pairs must match: one copy reversed
        b = f"np.ascontiguousarray({b}[::-1])"
    target = w.fresh()
    if (sa, sb) == ("ji", "jk"):
        w.out(depth, f"{target} = np.dot(np.ascontiguousarray({a}).reshape(-1, "
                     f"{v.args[0].type.elem.shape[1]}).T, np.ascontiguousarray({b}).reshape("
                     f"-1, {v.args[1].type.elem.shape[1]}))")
        return target
    step = w.fresh()
    shape = ", ".join(map(str, var.type.shape))
    w.out(depth, f"{target} = np.zeros(({shape}), np.float64)")
    w.out(depth, f"for {step} in range({m}):")
    w.out(depth + 1, f"{target} += np.dot({a}[{step}]{'.T' if sa == 'ji' else ''}, "
                     f"{b}[{step}]{'.T' if sb == 'kj' else ''})")
    return target




@dataclass
class Pair:
    """Two products ``left[i] @ right`` of one step made as one: ``carried`` when the left
    operands are loop variables (their next values fill ``next_buf``, which becomes
    ``buf``), else computed in the step into ``buf``. ``m`` rows each."""

    left: tuple
    nexts: tuple  # the next values' variables (carried), else the left operands
    products: tuple  # the two products' variables, in program order
    m: int
    k: int
    carried: bool
    buf: str = ""
    next_buf: str = ""
    result: str = ""


def _f64_matrix(t) -> bool:
    return getattr(t, "ndim", None) == 2 and str(t.dtype) == "f64" and t.is_static


def merged_products(w: While, array_op) -> list[Pair]:
    """The pairs of products of ``w``'s body that can be made as one (see the module
    docstring); ``array_op(value)``: whether a binding is an array expression."""
    body = w.body.bindings
    pos = {b.var: i for i, b in enumerate(body)}
    defs = {b.var: b.value for b in body}
    fields = list(w.body.result.fields) if type(w.body.result) is Tuple else [w.body.result]
    next_of = dict(zip(w.loop_vars, fields))
    by_right: dict = {}
    for b in body:
        v = b.value
        if (type(v) is Call and v.callee is ops.matmul
                and all(type(a) is Var and _f64_matrix(a.type) for a in v.args)):
            by_right.setdefault(v.args[1], []).append(b.var)
    pairs, taken = [], set()
    for right, products in by_right.items():
        if len(products) < 2:
            continue
        p1, p2 = products[:2]
        left = (defs[p1].args[0], defs[p2].args[0])
        if left[0] is left[1] or left[0].type != left[1].type or right in left \
                or taken & set(left):
            continue
        carried = all(x in next_of for x in left)
        nexts = tuple(next_of[x] for x in left) if carried else left
        if len(set(nexts)) != 2 or any(
                x not in defs or not array_op(defs[x]) or x in taken or fields.count(x) != 1
                and carried for x in nexts):
            continue
        if not carried and any(pos[x] > pos[p1] for x in left):
            continue
        taken.update(left + nexts)
        m, k = left[0].type.shape
        pairs.append(Pair(left, nexts, (p1, p2), m, k, carried))
    return pairs


def plan_pairs(w, loop: While, inits, depth: int, array_op) -> list:
    """The products of ``loop``'s step made as one, for the writer ``w`` of numba.loops;
    the buffer of carried left operands is filled with their initial values here."""
    pairs = merged_products(loop, array_op)
    for pair in pairs:
        pair.result, pair.buf = w.fresh(), w.fresh()
        if pair.carried:
            pair.next_buf = w.fresh()
            first, second = (inits[loop.loop_vars.index(x)] for x in pair.left)
            w.out(depth, f"{pair.buf} = np.empty(({2 * pair.m}, {pair.k}), np.float64)")
            w.out(depth, f"{pair.buf}[:{pair.m}] = {first}")
            w.out(depth, f"{pair.buf}[{pair.m}:] = {second}")
        for half in (0, 1):
            w.roles[pair.nexts[half]] = w.roles[pair.products[half]] = (pair, half)
    return pairs


def write_half(w, target: str, var: Var, text: str, depth: int) -> None:
    """Write the array expression ``text`` of ``var`` into its half of the buffer of
    merged products' left operands (made at the first of the two)."""
    pair, half = w.roles[var]
    buf = pair.next_buf if pair.carried else pair.buf
    if buf not in w.allocated:
        w.allocated.add(buf)
        w.out(depth, f"{buf} = np.empty(({2 * pair.m}, {pair.k}), np.float64)")
    rows = f"{buf}[:{pair.m}]" if half == 0 else f"{buf}[{pair.m}:]"
    fill(w, buf, "" if half == 0 else f"{pair.m} + ", rows, var, text, depth)
    w.out(depth, f"{target} = {rows}")


def plan_rows(w, loop: While, array_op) -> None:
    """The values ``loop``'s step makes by an array expression and pushes on a stack the
    loop carries: each is made in the stack's next row (``write_in_row``)."""
    defs = {b.var: b.value for b in loop.body.bindings}
    for b in loop.body.bindings:
        v = b.value
        if type(v) is Call and v.callee is STACK_PUSH:
            stack, x = v.args
            if (type(x) is Var and x in defs and array_op(defs[x]) and x.type.shape
                    and stack in loop.loop_vars and x not in w.in_rows
                    and x not in w.roles):
                w.in_rows[x] = (stack, b.var)


def write_in_row(w, target: str, var: Var, text: str, depth: int) -> bool:
    """Make ``var``, which the step pushes, in the next row of its stack's buffer (no
    copy at the push); False when its stack has no buffer of its own here."""
    plan = w.in_rows.pop(var, None)
    form = None if plan is None else w.where.get(plan[0])
    if not (isinstance(form, tuple) and form[0] in ("S", "D")):
        return False
    kind, buf, n = form
    room, row = (("stack_room", n) if kind == "S"
                 else ("stack_room_down", f"{buf}.shape[0] - 1 - {n}"))
    w.out(depth, f"{buf} = {room}({buf}, {n})")
    fill(w, f"{buf}[{row}, ", "", f"{buf}[{row}]", var, text, depth)
    w.out(depth, f"{target} = {buf}[{row}]")
    w.rows_pushes.add(plan[1])
    return True


_NAME = re.compile(r"(?<![\w.])[av]\d+(?![\w(])")  # a numba variable of the writer's
_VM_CALL = re.compile(r"(?<![\w.])vm\.[a-z0-9]+\(")
# what an element's expression may hold besides names: numbers, + - * /, parentheses, and
# vm's functions (the ufuncs' own scalar code); np's ufuncs, ** and comparisons stay
# array expressions (numba's scalar and array forms of those are not all one code)
_ARITHMETIC = re.compile(r"[0-9.eE\s+\-*/()]*")


def record_shapes(shapes: dict, form, t) -> None:
    """Note the shape of each array (and scalar: ``()``) the numba names of ``form`` hold,
    ``t`` its IR type: what ``fill`` indexes."""
    if isinstance(form, str) and _NAME.fullmatch(form):
        if hasattr(t, "shape"):
            shapes[form] = tuple(t.shape)
    elif isinstance(form, list) and hasattr(t, "fields"):
        for f, ft in zip(form, t.fields):
            record_shapes(shapes, f, ft)


def fill(w, index: str, offset: str, dest: str, var: Var, text: str, depth: int) -> None:
    """``dest = text`` for ``var``'s value, a part of a buffer: ``dest[i, j] = text[i, j]``
    as explicit loops (``{index}{offset}i, j]``) when ``text`` is elementwise on arrays of
    ``var``'s shape and scalars, else the array expression."""
    shape = tuple(var.type.shape)
    names = set(_NAME.findall(text))
    if not shape or "**" in text or not _ARITHMETIC.fullmatch(
            _VM_CALL.sub("(", _NAME.sub("0", text))) or any(
            w.shapes.get(n, 0) not in ((), shape) for n in names):
        w.out(depth, f"{dest} = {text}")
        return
    ix = [w.fresh() for _ in shape]
    for d, (i, n) in enumerate(zip(ix, shape)):
        w.out(depth + d, f"for {i} in range({n}):")
    at = ", ".join(ix)
    element = _NAME.sub(lambda m: f"{m.group()}[{at}]" if w.shapes[m.group()] else m.group(),
                        text)
    index = f"{index}[" if not index.endswith(", ") else index
    w.out(depth + len(shape), f"{index}{offset}{at}] = {element}")
