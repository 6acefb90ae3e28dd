"""Matrix products in whole-loop numba (``numba_loops``): the ``stack_contract`` that
``batch_loops`` puts after a loop, and products that share their right operand merged
into one.

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
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Call, Function, Tuple, TupleGetItem, Var, While


class Refused(Exception):
    """The program has no whole-loop numba form; the message says why."""


def contracted_pushes(fn: Function) -> set:
    """The loop variables of the stacks a ``stack_contract`` reads as pushed ('b'): their
    buffers fill from the end, so that their rows line up with the popped residuals'
    rows and the contraction reads both in place."""
    defs = {b.var: b.value for b in fn.body.bindings}
    out = set()
    for value in defs.values():
        if not (type(value) is Call and getattr(value.callee, "name", "") == "stack_contract"):
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
        if (type(v) is Call and getattr(v.callee, "name", "") == "matmul"
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
