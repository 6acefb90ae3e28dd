"""Unzip a JVP program into its primal part and its tangent part (seed 002),
through branches and loops.

Straight-line bindings go to one side or the other. A branch ``If`` whose
branches compute both becomes two: a primal ``If`` that also returns the
values its tangent code needs (the other branch's slots are zeros), and a
tangent ``If`` on the same condition. A loop becomes a primal loop that
pushes each iteration's needed values on a stack, a reversal of that stack
(still primal work), and a tangent loop that pops them in iteration order.
"""

from __future__ import annotations

from ... import ops
from ...errors import CompiledHigherOrderError, GradientError
from ...ir.infer import arg_type
from ...ir.nodes import Binding, Block, Call, If, Tuple, TupleGetItem, Var, While
from ...ir.op import Op
from ...ir.types import ListType, TensorType, TupleType
from ...ir.visitor import nested_blocks, vars_used
from ...ops.stack import STACK_EMPTY, STACK_NONEMPTY, STACK_POP, STACK_PUSH

BOOL = TensorType((), "bool")


def _call(op: Op, args, attrs=None) -> Call:
    return Call(op, args, attrs or {})


def _zeros_for(t, out: list):
    """Bindings making a zero value of type ``t``; returns the atom."""
    if isinstance(t, TupleType):
        return Tuple(_zeros_for(f, out) for f in t.fields)
    v = Var("zero", t)
    if isinstance(t, ListType):  # a stack (of snapshots, residuals): the empty one
        out.append(Binding(v, _call(STACK_EMPTY, [], {"elem": t.elem})))
        return v
    out.append(Binding(v, _call(ops.zeros, [], {"shape": t.shape, "dtype": t.dtype})))
    return v


def _atoms(x):
    if isinstance(x, Tuple):
        out = []
        for f in x.fields:
            out.extend(_atoms(f))
        return out
    return [x]


def refuse_calls(bindings) -> None:
    """Raise when one of ``bindings`` calls something other than an op: a recursive
    module function (inlining left it), which is not unzipped."""
    for b in bindings:
        v = b.value
        if type(v) is Call and type(v.callee) is not Op and not isinstance(v.callee, Op):
            raise CompiledHigherOrderError(
                f"linearize: {b.var.name} calls a recursive module function, which is not "
                f"unzipped; the API falls back to jvp")


class Unzip:
    """Splits bindings; ``tangent`` holds every variable that depends on a tangent."""

    def __init__(self, tangent_params, loop_splits=None):
        self.tangent: set[Var] = set(tangent_params)
        # the top-level primal calls of an op without operands (zeros): recomputed by the
        # tangent side rather than passed as residuals (linearize)
        self.argument_free: list[Binding] = []
        self.loop_splits = loop_splits or {}
        self.split_ifs: dict[Var, tuple[Var, Var]] = {}  # jvp pair -> (primal If, tangent If)
        self.split_loops: dict[Var, tuple[Var, Var, int]] = {}

    def is_tangent(self, value) -> bool:
        return any(map(self.tangent.__contains__, vars_used(value)))

    def block(self, bindings, top: bool = False) -> tuple[list, list]:
        """The primal and tangent bindings of ``bindings``; ``top``: they are the jvp
        function's own, where a call of a module function is refused (``refuse_calls``)
        and the argument-free op calls are noted (``argument_free``)."""
        primal, tangent = [], []
        tangent_vars = self.tangent
        for b in bindings:
            v = b.value
            if type(v) is Call and type(v.callee) is Op:  # the common case first: an op
                for a in v.args:  # is_tangent, inlined: any operand a tangent
                    if a in tangent_vars if type(a) is Var else (
                            type(a) is Tuple and self.is_tangent(a)):
                        break
                else:
                    primal.append(b)
                    if top and not v.args:
                        self.argument_free.append(b)
                    continue
                tangent_vars.add(b.var)
                tangent.append(b)
            elif top and type(v) is Call and not isinstance(v.callee, Op):
                refuse_calls([b])
            elif isinstance(v, If) and self.is_tangent(v):
                self._if(b, primal, tangent)
            elif isinstance(v, While) and self.is_tangent(v):
                self._while(b, primal, tangent)
            elif isinstance(v, TupleGetItem) and isinstance(v.tuple_value, Var) and (
                    v.tuple_value in self.split_ifs or v.tuple_value in self.split_loops):
                self._getitem(b, primal, tangent)
            elif nested_blocks(v) and not isinstance(v, (If, While)):
                raise CompiledHigherOrderError(
                    f"linearize: {b.var.name} is a closure that partial evaluation could not "
                    f"apply where it is defined (it is passed to a recursive function, or "
                    f"it is a pullback of a loop or branch); it is not unzipped, the API "
                    f"falls back to jvp")
            elif isinstance(v, Call) and not isinstance(v.callee, Op) and self.is_tangent(v):
                # a function kept out of line (a checkpointed chunk, a recursive function):
                # not unzipped, as at the top level; the API falls back to jvp
                raise CompiledHigherOrderError(
                    f"linearize: {b.var.name} calls a module function that is not inlined "
                    f"(checkpointed or recursive); it is not unzipped, the API falls back to "
                    f"jvp")
            elif self.is_tangent(v):
                self.tangent.add(b.var)
                tangent.append(b)
            else:
                primal.append(b)
                if top and type(v) is Call and not v.args and isinstance(v.callee, Op):
                    self.argument_free.append(b)
        return primal, tangent

    def _needed(self, tangent_bindings, tangent_atoms, local_primal) -> list[Var]:
        """Primal values defined in this block that the tangent side reads."""
        used = []
        for b in tangent_bindings:
            used.extend(vars_used(b.value))
        for a in tangent_atoms:
            used.extend(x for x in _atoms(a) if isinstance(x, Var))
        seen, out = set(), []
        for u in used:
            if u in local_primal and u not in seen:
                seen.add(u)
                out.append(u)
        return out

    # -- branches ------------------------------------------------------------------------
    def _if(self, b: Binding, primal: list, tangent: list) -> None:
        node: If = b.value
        if node.cond in self.tangent:
            raise GradientError("linearize: a branch condition depends on a tangent")
        parts = []
        for blk in (node.then_block, node.else_block):
            res, dres = blk.result.fields
            p, t = self.block(blk.bindings)
            local = {x.var for x in p}
            parts.append((p, t, res, dres, self._needed(t, [dres], local)))
        needed_types = [[u.type for u in part[4]] for part in parts]
        primal_blocks = []
        for k, (p, _, res, _, needed) in enumerate(parts):
            extra = list(p)
            slots = []
            for j, types in enumerate(needed_types):
                if j == k:
                    slots.extend(needed)
                else:
                    slots.extend(_zeros_for(t, extra) for t in types)
            primal_blocks.append(Block(extra, Tuple([res, *slots])))
        ptype = TupleType([arg_type(parts[0][2])] + [t for ts in needed_types for t in ts])
        pvar = Var(f"{b.var.name}_primal", ptype)
        primal.append(Binding(pvar, If(node.cond, *primal_blocks)))
        k = 1
        for part in parts:
            for u in part[4]:
                # bound again outside the branch: the tangent If reads it from there (each
                # function is copied with fresh variables, so this stays single assignment)
                primal.append(Binding(u, TupleGetItem(pvar, k)))
                k += 1
        tvar = Var(f"{b.var.name}_tangent", arg_type(parts[0][3]))
        tangent.append(Binding(tvar, If(node.cond, *[Block(t, dres) for _, t, _, dres, _ in
                                                     parts])))
        self.tangent.add(tvar)
        self.split_ifs[b.var] = (pvar, tvar)

    def _getitem(self, b: Binding, primal: list, tangent: list) -> None:
        src, i = b.value.tuple_value, b.value.index
        if src in self.split_ifs:
            pvar, tvar = self.split_ifs[src]
            if i == 0:
                primal.append(Binding(b.var, TupleGetItem(pvar, 0)))
            else:
                self.tangent.add(b.var)
                tangent.append(Binding(b.var, tvar))
            return
        pvar, tvar, n = self.split_loops[src]
        if i < n:
            primal.append(Binding(b.var, TupleGetItem(pvar, i)))
        else:
            self.tangent.add(b.var)
            tangent.append(Binding(b.var, TupleGetItem(tvar, i - n)))

    # -- loops -----------------------------------------------------------------------------
    def _while(self, b: Binding, primal: list, tangent: list) -> None:
        node: While = b.value
        n = self.loop_splits.get(b.var)  # the jvp pass records its primal loop variables
        if n is None:
            # a loop a rule emitted (a solver's tangent equations): not split here, so
            # the caller falls back to forward mode
            raise CompiledHigherOrderError(
                f"linearize: {b.var.name} is a loop a derivative rule emitted, not one of the "
                f"jvp pass; it is not split into primal and tangent parts")
        lvs, dots = list(node.loop_vars[:n]), list(node.loop_vars[n:])
        init, dinit = list(node.init[:n]), list(node.init[n:])
        self.tangent.update(dots)
        p_cond, t_cond = self.block(node.cond.bindings)
        if node.cond.result in self.tangent:
            raise GradientError("linearize: a loop condition depends on a tangent")
        p_body, t_body = self.block(node.body.bindings)
        fields = node.body.result.fields
        nxt, dnxt = list(fields[:n]), list(fields[n:])
        local = set(lvs) | {x.var for x in p_cond} | {x.var for x in p_body}
        needed = self._needed(t_cond + t_body, dnxt, local)
        rtype = TupleType([u.type for u in needed])
        stype = ListType(rtype)
        # primal loop, pushing this iteration's needed values
        st = Var(f"{b.var.name}_stack", stype)
        pushed = Var(f"{b.var.name}_stack", stype)
        pack = Var(f"{b.var.name}_saved", rtype)
        empty = Var(f"{b.var.name}_tape", stype)
        primal.append(Binding(empty, _call(STACK_EMPTY, [], {"elem": rtype})))
        body = Block(p_body + [Binding(pack, Tuple(needed)),
                               Binding(pushed, _call(STACK_PUSH, [st, pack]))],
                     Tuple(nxt + [pushed]))
        ploop = Var(f"{b.var.name}_primal", TupleType([v.type for v in lvs] + [stype]))
        primal.append(Binding(ploop, While(lvs + [st], init + [empty],
                                           Block(p_cond, node.cond.result), body)))
        # reverse the stack so the tangent loop pops iterations in order
        done = Var(f"{b.var.name}_pushed", stype)
        primal.append(Binding(done, TupleGetItem(ploop, n)))
        s1, s2 = Var("lifo", stype), Var("fifo", stype)
        e2 = Var("fifo", stype)
        primal.append(Binding(e2, _call(STACK_EMPTY, [], {"elem": rtype})))
        more, top = Var("more", BOOL), Var("top", TupleType([rtype, stype]))
        item, rest, s2n = Var("item", rtype), Var("rest", stype), Var("fifo", stype)
        flip_body = Block([Binding(top, _call(STACK_POP, [s1])),
                           Binding(item, TupleGetItem(top, 0)),
                           Binding(rest, TupleGetItem(top, 1)),
                           Binding(s2n, _call(STACK_PUSH, [s2, item]))], Tuple([rest, s2n]))
        flip = Var(f"{b.var.name}_reversal", TupleType([stype, stype]))
        primal.append(Binding(flip, While(
            [s1, s2], [done, e2],
            Block([Binding(more, _call(STACK_NONEMPTY, [s1]))], more), flip_body)))
        ordered = Var(f"{b.var.name}_in_order", stype)
        primal.append(Binding(ordered, TupleGetItem(flip, 1)))
        # tangent loop: pop one iteration's values, run its tangent bindings
        ts = Var(f"{b.var.name}_tape", stype)
        tmore = Var("more", BOOL)
        ttop = Var("top", TupleType([rtype, stype]))
        titem, trest = Var("saved", rtype), Var("rest", stype)
        unpack = [Binding(ttop, _call(STACK_POP, [ts])), Binding(titem, TupleGetItem(ttop, 0)),
                  Binding(trest, TupleGetItem(ttop, 1))]
        for k, u in enumerate(needed):
            unpack.append(Binding(u, TupleGetItem(titem, k)))
        tbody = Block(unpack + t_cond + t_body, Tuple(dnxt + [trest]))
        tloop = Var(f"{b.var.name}_tangent", TupleType([d.type for d in dots] + [stype]))
        tangent.append(Binding(tloop, While(
            dots + [ts], dinit + [ordered],
            Block([Binding(tmore, _call(STACK_NONEMPTY, [ts]))], tmore), tbody)))
        self.tangent.add(tloop)
        self.split_loops[b.var] = (ploop, tloop, n)


__all__ = ["Unzip", "refuse_calls"]
