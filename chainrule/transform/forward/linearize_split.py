"""Linearize of a straight-line program: forward mode whose bindings are sorted into
the primal and the tangent function as they are made (``linearize.py`` unzips a jvp
function afterwards; for a function of op calls this one sweep makes the same two
functions, to the character).

A binding is *tangent* when it reads a tangent (a tangent parameter or a tangent
binding), else *primal*. A tangent binding's reads of primal values become the
tangent function's parameters, the *residuals* (``<v>_res``, in first-read order);
an argument-free primal binding (``zeros``) is computed again on the tangent side
under a new variable instead (it is *moved*), as ``linearize._shared`` does.

``Split`` sorts bindings one at a time (``classify``): what the unzip of a straight-line
jvp function does, and what the sweep does for every binding a rule emits. A rule
template (``ad/rule_templates.py``) of a long program is compiled, for this sweep, into a
function that emits each step on its side at once: which steps are tangent and which
primal values they read follows from the template's slots (its inputs are the result,
the operands, which are primal, then the non-zero tangents), so no binding is looked
at twice. Anything else (a branch, a loop, a tuple operand, a call of a function)
raises ``NotStraight``: the caller then takes the general path.
"""

from __future__ import annotations

from ...ir.infer import arg_type
from ...ir.nodes import (
    Binding,
    Block,
    Call,
    Function,
    Module,
    Tuple,
    Var,
    typed_var,
)
from ...ir.op import Op
from ...ir.types import TensorType, TupleType, has_float
from ...ir.visitor import vars_used
from ..ad.rule_templates import step_globals, step_lines
from .closures import STACK_FORWARD
from .jvp import _Context, _float_positions, _ForwardSweep
from .ops import _op_forward


class NotStraight(Exception):  # noqa: N818 - a signal to take the general path, not an error
    """A binding the one-walk unzip does not sort (the general unzip does)."""


def residual_param(v: Var) -> Var:
    """The tangent function's parameter for the residual ``v``."""
    return typed_var(v.name if v.name.endswith("_res") else f"{v.name}_res", v.type)


class Split:
    """The primal/tangent sorting of one straight-line jvp function's bindings."""

    __slots__ = ("tangent_vars", "moved", "tangent", "needed", "sub", "clean",
                 "primal_messages")

    def __init__(self, tangent_params):
        self.tangent_vars = set(tangent_params)
        self.moved: list = []  # the tangent side's copies of argument-free bindings
        self.tangent: list = []  # the tangent bindings, residuals substituted
        self.needed: list = []  # the residuals, in first-read order
        self.sub: dict = {}  # a residual or moved primal value -> the tangent side's
        self.clean = 0  # the sweep's frame is sorted up to here (see ``compile_replay``)
        # tangents (of a binding) that are primal bindings: a rule's tangent reading no
        # tangent (rare; the sweep records them, ``compile_replay`` reads them)
        self.primal_messages: set = set()

    def residual(self, a: Var) -> Var:
        """A residual's first read: its parameter (``residual_param``, inlined)."""
        name = a.name
        r = typed_var(name if name.endswith("_res") else f"{name}_res", a.type)
        self.needed.append(a)
        self.sub[a] = r
        return r

    def classify(self, bindings, start: int = 0) -> None:
        """Sort ``bindings[start:]`` (a list): primal ones stay, tangent ones move to
        ``self.tangent`` with their reads of primal values substituted."""
        tangent_vars, sub, residual = self.tangent_vars, self.sub, self.residual
        primal: list = []
        add_primal, add_tangent = primal.append, self.tangent.append
        is_tangent, get = tangent_vars.add, sub.get
        for k in range(start, len(bindings)):
            b = bindings[k]
            value = b.value
            if type(value) is not Call or type(value.callee) is not Op:
                raise NotStraight
            args = value.args
            n_args = len(args)
            if n_args == 1:  # an operand that is a tangent makes a tangent to keep as it is
                x = args[0]
                tx = type(x)
                if tx is Var and x in tangent_vars:
                    is_tangent(b.var)
                    add_tangent(b)
                elif tx is Tuple:
                    raise NotStraight
                else:
                    add_primal(b)  # a primal binding (with an operand: not argument-free)
                continue
            if n_args == 2:  # most calls: sorted and substituted without a loop
                x, y = args
                tx, ty = type(x), type(y)
                if tx is Tuple or ty is Tuple:
                    raise NotStraight
                x_tan = tx is Var and x in tangent_vars
                if not x_tan and not (ty is Var and y in tangent_vars):
                    add_primal(b)  # a primal binding (with operands: not argument-free)
                    continue
                is_tangent(b.var)
                if not x_tan and tx is Var:
                    x = get(x) or residual(x)
                elif x_tan and ty is Var and y not in tangent_vars:
                    y = get(y) or residual(y)
                else:  # a constant and a tangent, or two tangents: nothing to substitute
                    add_tangent(b)
                    continue
                add_tangent(Binding(b.var, value.with_args(value.callee, (x, y))))
                continue
            for a in args:
                if type(a) is Var:
                    if a in tangent_vars:
                        break
                elif type(a) is Tuple:
                    raise NotStraight
            else:  # a primal binding
                add_primal(b)
                if not args and isinstance(b.var.type, TensorType):
                    var = Var(b.var.name, b.var.type)
                    sub[b.var] = var
                    self.moved.append(Binding(var, value))
                continue
            is_tangent(b.var)
            new_args = None  # the substituted operands, once one is substituted
            for j, a in enumerate(args):
                if type(a) is Var:
                    r = get(a)
                    if r is None:
                        if a in tangent_vars:
                            continue
                        r = residual(a)
                    if new_args is None:
                        new_args = list(args)
                    new_args[j] = r
            if new_args is not None:
                b = Binding(b.var, value.with_args(value.callee, new_args))
            add_tangent(b)
        bindings[start:] = primal
        self.clean = len(bindings)

    def functions(self, params: list, n: int, primal: list, result,
                  dresult) -> tuple[Function, Function]:
        """``(f_primal, f_tangent)`` once every binding is sorted: ``params`` the jvp
        function's (``n`` primal ones, then the tangents), ``primal`` the primal
        bindings, ``result`` and ``dresult`` what it returned."""
        sub, needed, tangent_vars = self.sub, self.needed, self.tangent_vars
        for v in vars_used(Tuple([dresult])):
            if v not in sub and v not in tangent_vars:
                needed.append(v)
                sub[v] = residual_param(v)
        out = Tuple([result, Tuple(list(needed))])
        # arg_type(out), without its call per residual
        out_type = TupleType([arg_type(result), TupleType([v.type for v in needed])])
        prim = Function(params[:n], Block(primal, out), out_type)
        return prim, Function([sub[v] for v in needed] + list(params[n:]),
                              Block(self.moved + self.tangent, substituted(dresult, sub)),
                              arg_type(dresult))

    def compile_replay(self, template, inputs):
        """The replay of ``template`` (compiled for a jvp sweep whose frame is the
        primal function's, see the module docstring) for this split, given one of its
        inputs tuples: ``replay(inputs, builder, last=None) -> outs``. Called with
        ``last`` (the forward sweep's common case: the tangent named ``<v>_dot`` as it
        is made) it emits each step on its side and marks the frame sorted; without,
        it is the template's own compiled replay (the bindings left for ``classify``).
        Made from the template's numbers, the ops, types, attributes and constants
        passed as globals, never from program text (as ``Template._compiled``)."""
        plain = template._compiled()
        steps, outs = template.steps, template.outs
        tangent_vars, primal_messages = self.tangent_vars, self.primal_messages
        if any(not refs for _, refs, _, _, _ in steps) or any(
                x in primal_messages for x in inputs):
            return plain  # an argument-free step is moved, ...: classify does it
        # the inputs are the copy of the result and of the operands (primal bindings and
        # parameters, never tangents), then tangents: those that are tangent bindings
        tangent_slots = {("in", i) for i, x in enumerate(inputs) if x in tangent_vars}
        names = {"in": "i", "const": "k", "step": "s"}

        def slot(ref):
            return "None" if ref is None else f"{names[ref[0]]}{ref[1]}"

        last_step = ("step", len(steps) - 1)
        sides = set(tangent_slots)
        for j, (_, refs, _, _, _) in enumerate(steps):
            if any(r in sides for r in refs):
                sides.add(("step", j))
        if outs != (last_step,) or last_step not in sides:
            return plain  # a tangent reading no tangent: recorded by the sweep
        env = step_globals()
        env.update({"plain": plain, "split": self, "get": self.sub.get, "sub": self.sub,
                    "needed": self.needed.append, "residual": self.residual,
                    "temit": self.tangent.append, "is_tangent": tangent_vars.add,
                    "primal_messages": primal_messages})
        env.update((f"k{i}", c) for i, c in enumerate(template.consts))
        # the steps' sides hold for a hit whose tangents are tangent bindings: any other
        # is emitted as it is and left to ``classify``
        guard = " or ".join(f"{slot(r)} in primal_messages" for r in sorted(tangent_slots))
        lines = ["def replay(inputs, builder, last=None):",
                 "    (" + "".join(f"i{i}, " for i in range(len(inputs))) + ") = inputs",
                 f"    if last is None or primal_messages and ({guard or 'False'}):",
                 "        return plain(inputs, builder, last)",
                 "    frame = builder.bindings",
                 "    pemit = frame.append",
                 f"    c = builder.reserve_temps({template.advance})"]
        substituted_slot: set = set()  # primal slots whose residual is in a local already
        for j, (op, refs, attrs, t, offset) in enumerate(steps):
            env[f"op{j}"], env[f"a{j}"], env[f"t{j}"] = op, attrs, t
            tangent = any(r in tangent_slots for r in refs)
            operands = []
            for r in refs:
                if not tangent or r in tangent_slots or r[0] == "const":
                    operands.append(slot(r))
                    continue
                local = f"r_{slot(r)}"
                if r not in substituted_slot:  # a primal value's first read here
                    substituted_slot.add(r)
                    if r[0] == "in":
                        lines.append(f"    {local} = get({slot(r)}) or residual({slot(r)})")
                    else:  # a primal step (not the last): ``residual``, inlined
                        k = r[1]
                        lines += [f'    {local} = typed_var(f"lv{{c + {steps[k][4]}}}_res", t{k})',
                                  f"    needed(s{k})",
                                  f"    sub[s{k}] = {local}"]
                operands.append(local)
            name = f'f"lv{{c + {offset}}}"'
            if j == len(steps) - 1:
                name = f"last or {name}"
            lines += step_lines(j, name, "".join(o + ", " for o in operands))
            if tangent:
                tangent_slots.add(("step", j))
                lines.append(f"    temit(b{j})")
                if j == len(steps) - 1:  # the result: the others are read by steps only
                    lines.append(f"    is_tangent(s{j})")
            else:
                lines.append(f"    pemit(b{j})")
        lines.append("    split.clean = len(frame)")
        lines.append("    return (" + "".join(f"{slot(r)}, " for r in outs) + ")")
        exec("\n".join(lines), env)  # noqa: S102 - the template's own numbers, see above
        return env["replay"]


def substituted(atom, sub: dict):
    """``atom`` (a variable, constant or tuple of them) with variables replaced
    through ``sub``."""
    if type(atom) is Tuple:
        return Tuple([substituted(f, sub) for f in atom.fields])
    return sub.get(atom, atom) if type(atom) is Var else atom


def _op_calls(bindings) -> bool:
    """Whether every binding is a call of an op (not a loop's stack) on atoms: a function
    the sweep is likely to finish (a rule may still emit what it does not sort)."""
    ops = set()
    for b in bindings:
        value = b.value
        if type(value) is not Call:
            return False
        ops.add(value.callee)
        for a in value.args:
            if type(a) is Tuple:
                return False
    return all(type(op) is Op and op not in STACK_FORWARD for op in ops)


class _SplitSweep(_ForwardSweep):
    """A forward sweep over op calls only whose frame keeps the primal bindings: the
    tangent ones are sorted out (``Split``) as they are emitted."""

    def bindings(self, bindings) -> None:
        split = self.split
        tangents, tangent_vars = self.tangents, split.tangent_vars
        tangent_vars.update(tangents.values())  # the tangent parameters
        frame = self.b.bindings
        for binding in bindings:  # calls of ops (``_op_calls``), so no dispatch
            _op_forward(self, binding)
            if len(frame) != split.clean:  # not all emitted on its side: sorted now
                split.classify(frame, split.clean)
                msg = tangents.get(binding.var)
                if type(msg) is Var and msg not in tangent_vars:
                    split.primal_messages.add(msg)


def linearize_straight(module: Module, func: str, wrt) -> tuple[Function, Function] | None:
    """``(f_primal, f_tangent)`` as ``linearize`` makes them, in one forward sweep, for
    a function of op calls whose jvp is op calls; None for any other (the general
    path then runs from the start, and refuses what it refuses)."""
    fn = module[func]
    if f"{func}_jvp" in module.functions or not _op_calls(fn.body.bindings):
        return None
    if wrt is not None:  # as jvp_with_loop_splits then _Context.jvp_name take it
        wrt = {i for i in wrt if 0 <= i < len(fn.params) and has_float(fn.params[i].type)}
        if tuple(sorted(wrt)) == _float_positions(fn):
            wrt = None
    ctx = _Context(module)
    sweep = _SplitSweep(ctx, fn, wrt)
    split = sweep.split = Split(())
    if ctx.templates is not None:
        ctx.templates.compiler = split.compile_replay
    try:
        with sweep.trace:
            jf = sweep.run()
    except NotStraight:
        return None
    if ctx.named:  # a tangent renamed after the sweep: the general path names it
        return None
    n = len(fn.params)
    primal = list(jf.body.bindings)
    split.classify(primal, split.clean)  # what run emitted after the bindings (zeros)
    return split.functions(list(jf.params), n, primal, *jf.body.result.fields)
