"""Statements of ``@script`` functions: assignments and structured control flow.

The environment maps Python names to values; reassigning a name binds a new
variable (SSA). Control flow becomes ``If`` and ``While`` nodes:

* ``if``: both branches are traced into blocks; the names they (re)assign
  that are live afterwards become the ``If``'s results. A name assigned in
  only one branch becomes *undefined* after it (an error if it is read).
* ``while`` / ``for i in range(...)``: the loop-carried values are the names
  assigned in the body that are bound before the loop and read in the loop
  or after it; ``for`` carries a hidden ``i64`` counter.
* ``break``, ``continue`` and ``return`` set hidden boolean flags (``$break``,
  ``$continue``, ``$ret``; the returned value is ``$retval``), which are
  ordinary names for the machinery above: the statements after one that may
  have set a flag run under ``if not flag``, and a loop carrying ``$break``
  or ``$ret`` tests them before its condition. A flag known at compile time
  (an unconditional ``return``) simply ends the statement list.

Compilation loops over statements; it recurses only into nested blocks
(and into the statements after a conditional exit, which nest in the IR).
"""

from __future__ import annotations

import ast
import re

import numpy as np

from ... import numpy as cnp
from ...emit.trace import Traced
from ...errors import ChainruleError, TraceError
from ...ir.types import TensorType
from ..checkpoint import mark_script_loop, script_budget
from ..control import emit_while, finish_if, run_branch
from ..leaves import Filler, bool_atom, default_type, same_static
from .expressions import ExprCompiler, ScriptError, Undefined, tree_build, tree_leaves

RET, RETVAL, BRK, CONT = "$ret", "$retval", "$break", "$continue"
_HINTS = {RET: "returned", RETVAL: "result", BRK: "broke", CONT: "continued"}
FLAGS = (RET, BRK, CONT)
ABSENT = object()
_TEMP = re.compile(r"lv\d+$")


# -- syntactic analyses (cached per node) ---------------------------------------------
def _walk_shallow(node):
    """Nodes of a statement, not entering nested function definitions."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(c)


_LOADS: dict[int, frozenset] = {}


def loads(nodes) -> set:
    out = set()
    for node in nodes:
        key = id(node)
        if key not in _LOADS:
            names = set()
            for n in _walk_shallow(node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    names.add(n.id)
                elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                    names.add(n.target.id)
            _LOADS[key] = (node, frozenset(names))
        out |= _LOADS[key][1]
    return out


def stores(nodes) -> list:
    """Names assigned in the statements, in source order."""
    out: dict[str, None] = {}
    todo = list(reversed(list(nodes)))
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = None
        if isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(reversed(list(ast.iter_child_nodes(n))))
    return list(out)


def has_exit(nodes, kinds) -> bool:
    """A ``break``/``continue`` of this loop level (not of nested loops), or a ``return``."""
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        nested_loop = isinstance(n, (ast.While, ast.For))
        for c in ast.iter_child_nodes(n):
            if nested_loop and ast.Return not in kinds:
                continue
            todo.append(c)
    return False


class StmtCompiler(ExprCompiler):
    loop_depth = 0

    # -- entry ---------------------------------------------------------------------------
    def run(self, env: dict):
        """Compile the function body with ``env`` holding the parameters; returns the result."""
        fdef = self.sf.fdef
        self.env = dict(env)
        self.env[RET] = False
        body = fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        if not has_exit(body, (ast.Return,)):
            raise self.err(fdef, f"function {fdef.name} does not return a value; "
                                 f"end it with `return ...`")
        self.block(body, set())
        if RETVAL not in self.env:
            raise self.err(fdef, f"function {fdef.name} does not return a value")
        return self.env[RETVAL]

    # -- statement lists ---------------------------------------------------------------
    def block(self, stmts, live_after: set) -> None:
        stmts = list(stmts)
        live: list = [None] * len(stmts)  # live after statement k (kept for compound ones)
        acc = set(live_after)
        for k in range(len(stmts) - 1, -1, -1):
            if isinstance(stmts[k], (ast.If, ast.While, ast.For)):
                live[k] = set(acc)
                if k + 1 < len(stmts):  # statements follow: they test the exit flags
                    live[k].update(FLAGS)
            acc |= loads([stmts[k]])
        for k, s in enumerate(stmts):
            flag = self.exit_flag()
            if flag is True:
                return  # unreachable code after an unconditional exit
            if flag is not None:
                self.guard(flag, stmts[k:], live_after, s)
                return
            self.statement(s, live[k])

    def exit_flag(self):
        """None (not exiting), True (exiting for sure) or a traced bool."""
        dynamic = []
        for f in FLAGS:
            v = self.env.get(f, False)
            if isinstance(v, Traced):
                dynamic.append(v)
            elif not isinstance(v, Undefined) and bool(v):
                return True
        if not dynamic:
            return None
        out = dynamic[0]
        for d in dynamic[1:]:
            out = cnp.logical_or(out, d)
        return out

    def guard(self, flag, rest, live_after, node) -> None:
        """Run ``rest`` only if no exit flag is set: ``if not flag: rest``."""
        cond = self.tr.atom(cnp.logical_not(flag))

        def then():
            old = {f: self.env[f] for f in FLAGS if f in self.env}
            for f in old:
                self.env[f] = False
            self.block(rest, live_after)
            for f, v in old.items():  # known False here: keep the old value (no If result)
                if self.env.get(f) is False:
                    self.env[f] = v

        self.merge_if(cond, then, lambda: None, live_after, node)

    # -- merging branches ------------------------------------------------------------------
    def merge_if(self, cond, then_fn, else_fn, live_after, node) -> None:
        before = self.env
        envs = []

        def branch(fn):
            def run():
                self.env = dict(before)
                fn()
                envs.append(self.env)

            return run

        then = run_branch(self.tr, branch(then_fn))
        other = run_branch(self.tr, branch(else_fn))
        env_t, env_e = envs
        self.env = dict(before)
        names = [n for n in dict.fromkeys([*env_t, *env_e])
                 if env_t.get(n, ABSENT) is not before.get(n, ABSENT)
                 or env_e.get(n, ABSENT) is not before.get(n, ABSENT)]
        leaves_t, leaves_e, leaf_names, leaf_owner, outputs = [], [], [], [], []
        line = node.lineno + self.src.line_offset
        for n in names:
            vt, ve = env_t.get(n, ABSENT), env_e.get(n, ABSENT)
            if n != RETVAL and n not in live_after:
                self.env[n] = Undefined(n, "internal: not live")
                continue
            missing_t = vt is ABSENT or isinstance(vt, Undefined)
            missing_e = ve is ABSENT or isinstance(ve, Undefined)
            if missing_t and missing_e:
                self.env[n] = vt if vt is not ABSENT else ve
                continue
            if (missing_t or missing_e) and n != RETVAL:
                side = "the else" if missing_t else "the then"
                self.env[n] = Undefined(n, f"it is assigned only in {side} branch of the `if` "
                                           f"at line {line}")
                continue
            if missing_t or missing_e:  # the returned value, on a path that has not returned
                known = ve if missing_t else vt
                kl = []
                struct = tree_leaves(known, kl)
                fill = [Filler(None)] * len(kl)
                lt, le = (fill, kl) if missing_t else (kl, fill)
            else:
                lt, le = [], []
                struct = tree_leaves(vt, lt)
                if tree_leaves(ve, le) != struct:
                    raise self.err(node, f"`{n}` has a different tuple structure in the two "
                                         f"branches of the `if` at line {line}")
            outputs.append((n, struct, len(lt)))
            leaves_t += lt
            leaves_e += le
            leaf_names += [self.show(n)] * len(lt)
            leaf_owner += [n] * len(lt)
        try:
            changed = [n for a, b, n in zip(leaves_t, leaves_e, leaf_owner)
                       if not same_static(a, b)]
            hint = _HINTS.get(changed[0], changed[0]) if len(changed) == 1 else None
            merged = finish_if(self.tr, cond, then, leaves_t, other, leaves_e, leaf_names,
                               name=hint)
        except ChainruleError as exc:
            raise self.relocate(exc, node) from None
        it = iter(merged)
        for n, struct, _k in outputs:
            self.env[n] = tree_build(struct, it)

    @staticmethod
    def show(name: str) -> str:
        return {RET: "the returned flag", RETVAL: "the returned value", BRK: "the break flag",
                CONT: "the continue flag"}.get(name, f"`{name}`")

    # -- statements --------------------------------------------------------------------------
    def statement(self, s, live_after) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise self.unsupported(s)
        try:
            method(s, live_after)
        except ScriptError:
            raise
        except (ChainruleError, ArithmeticError, ValueError, TypeError, IndexError) as exc:
            raise self.relocate(exc, s) from None

    def s_Pass(self, s, live_after):
        pass

    def s_Expr(self, s, live_after):
        if isinstance(s.value, ast.Constant):
            return  # a docstring or a bare constant
        self.expr(s.value)

    def s_Assign(self, s, live_after):
        value = self.expr(s.value)
        for t in s.targets:
            self.bind(t, value)

    def s_AugAssign(self, s, live_after):
        if not isinstance(s.target, ast.Name):
            raise self.err(s, "augmented assignment only to a name")
        from .expressions import BINOPS

        fn = BINOPS.get(type(s.op))
        if fn is None:
            raise self.err(s, f"operator {type(s.op).__name__} is not supported")
        load = ast.Name(id=s.target.id, ctx=ast.Load(), lineno=s.lineno,
                        col_offset=s.col_offset)
        self.env[s.target.id] = fn(self.lookup(load), self.expr(s.value))

    def s_AnnAssign(self, s, live_after):
        if s.value is None or not isinstance(s.target, ast.Name):
            raise self.err(s, "an annotated assignment is `name: type = value`")
        want = self.src.annotation(s.annotation)
        v = self.expr(s.value)
        if isinstance(v, Traced):
            if v.type != want:
                raise self.err(s, f"{s.target.id} is annotated {want!r} but its value has type "
                                  f"{v.type!r}")
        elif isinstance(want, TensorType):
            v = np.broadcast_to(np.asarray(v, dtype=want.dtype.numpy), want.shape).copy()
        self.env[s.target.id] = v

    def bind(self, target, value) -> None:
        if isinstance(target, ast.Name):
            if (isinstance(value, Traced) and value.tracer is self.tr
                    and _TEMP.match(value.variable.name)):
                # a readable name for the printed IR: the value just computed takes the name
                # it is assigned to (the wrapper follows; the IR variable is a new one)
                value.variable = self.tr.builder.rename_last(value.variable, target.id)
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                raise self.err(target, "`*` unpacking is not supported in @script functions")
            if isinstance(value, Traced):
                value = tuple(value)  # iterate over the leading axis
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                n = len(value) if isinstance(value, (tuple, list)) else 1
                raise self.err(target, f"cannot unpack {n} value(s) into {len(target.elts)} "
                                       f"names")
            for t, v in zip(target.elts, value):
                self.bind(t, v)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            raise self.err(target, "assignment to an element or attribute is not supported: "
                                   "arrays are immutable in @script functions (use "
                                   "x.at[i].add(v) for a new array)")
        else:
            raise self.unsupported(target)

    def s_Return(self, s, live_after):
        if s.value is None:
            raise self.err(s, "`return` needs a value in @script functions")
        self.env[RETVAL] = self.expr(s.value)
        self.env[RET] = True

    def s_Break(self, s, live_after):
        if not self.loop_depth:
            raise self.err(s, "`break` outside a loop")
        self.env[BRK] = True

    def s_Continue(self, s, live_after):
        if not self.loop_depth:
            raise self.err(s, "`continue` outside a loop")
        self.env[CONT] = True

    def s_If(self, s, live_after):
        c = self.expr(s.test)
        if not isinstance(c, Traced):
            self.block(s.body if bool(np.asarray(c)) else s.orelse, live_after)
            return
        cond = bool_atom(self.tr, c, "an `if`")
        self.merge_if(cond, lambda: self.block(s.body, live_after),
                      lambda: self.block(s.orelse, live_after), live_after, s)

    # -- loops ---------------------------------------------------------------------------
    def s_While(self, s, live_after):
        if s.orelse:
            raise self.err(s, "`while ... else` is not supported in @script functions")
        body, pre, test = list(s.body), None, s.test
        budget = script_budget(self.src, self.env, test, "test")  # while budget.test(c):
        if budget is not None:
            if len(test.args) != 1 or test.keywords:
                raise self.err(test, "budget.test(...) takes the loop's condition only")
            test = test.args[0]
        if isinstance(test, ast.Constant) and test.value is True:
            pre, test, body = self.split_while_true(s, live_after)
        self.loop(s, body, live_after, test=test, pre=pre, budget=budget)

    def split_while_true(self, s, live_after):
        """``while True: pre; if not c: break; rest`` -> cond block ``pre; c``, body ``rest``
        (when ``pre`` has no exits and assigns no carried name): the text format's loops."""
        body = list(s.body)
        for k, st in enumerate(body):
            if (isinstance(st, ast.If) and not st.orelse and len(st.body) == 1
                    and isinstance(st.body[0], ast.Break) and isinstance(st.test, ast.UnaryOp)
                    and isinstance(st.test.op, ast.Not)):
                pre, rest = body[:k], body[k + 1:]
                exits = (ast.Break, ast.Continue, ast.Return)
                if has_exit(pre, exits) or has_exit(rest, (ast.Break, ast.Return)):
                    break
                before = {n for n, v in self.env.items() if not isinstance(v, Undefined)}
                used = loads([s]) | live_after
                if any(n in before and n in used for n in stores(pre)):
                    break
                return pre, st.test.operand, rest
            if has_exit([st], (ast.Break, ast.Continue, ast.Return)):
                break
        return None, s.test, list(s.body)

    def s_For(self, s, live_after):
        it, budget = self.budgeted_range(s.iter)
        if s.orelse:
            raise self.err(s, "`for ... else` is not supported in @script functions")
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and "range" not in self.env and not it.keywords
                and 1 <= len(it.args) <= 3):
            raise self.err(it, "`for` loops in @script functions iterate over range(...) only")
        if not isinstance(s.target, ast.Name):
            raise self.err(s.target, "the variable of a `for` loop must be a plain name")
        bounds = [self.expr(a) for a in it.args]
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (
            (*bounds, 1) if len(bounds) == 2 else bounds)
        if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or step == 0:
            raise self.err(it, "the step of range() must be a nonzero integer known at compile "
                               "time")
        for b, node in zip((start, stop), it.args):
            ok = (isinstance(b, Traced) and isinstance(b.type, TensorType) and b.type.shape == ()
                  and b.type.dtype.is_int) or (isinstance(b, (int, np.integer))
                                               and not isinstance(b, bool))
            if not ok:
                raise self.err(node, "range() bounds must be integer scalars")
        if isinstance(start, Traced) and start.type.dtype != "i64":
            start = start.astype(np.int64)
        elif not isinstance(start, Traced):
            start = int(start)
        self.loop(s, list(s.body), live_after, counter=(s.target.id, start, stop, int(step)),
                  budget=budget)

    def budgeted_range(self, it):
        """``for i in budget.range(...)``, ``budget`` a ``chainrule.Budget``: the loop's
        reverse mode checkpoints under it (binomial checkpointing, docs/loops.md)."""
        base = script_budget(self.src, self.env, it, "range")
        if base is None:
            return it, None
        plain = ast.copy_location(ast.Call(ast.Name("range", ast.Load()), it.args,
                                           it.keywords), it)
        return plain, base

    def loop(self, s, body, live_after, test=None, pre=None, counter=None,
             budget=None) -> None:
        saved = {f: self.env.get(f, ABSENT) for f in (BRK, CONT)}
        self.env[BRK] = False
        self.env.pop(CONT, None)
        has_break = has_exit(body, (ast.Break,))
        has_continue = has_exit(body, (ast.Continue,))
        has_return = has_exit(body, (ast.Return,))
        used = loads([s]) | live_after | {BRK, RET}
        before = self.env
        assigned = stores([*(pre or []), *body]) + ([counter[0]] if counter else [])
        carried = [n for n in dict.fromkeys(assigned)
                   if n in before and not isinstance(before[n], Undefined) and n in used]
        if has_break:
            carried.append(BRK)
        if has_return:
            carried.append(RET)
            if RETVAL in before:
                carried.append(RETVAL)
        ckey = f"$for{s.lineno}_{s.col_offset}"
        if counter is not None:
            carried.insert(0, ckey)
            before = dict(before)
            before[ckey] = counter[1]
        if has_return and RETVAL not in before:
            before = dict(before)
            before[RETVAL] = self.probe_retval(s, body, before, carried, live_after, test, pre,
                                               counter, ckey, has_continue)
            carried.append(RETVAL)
        init, structs, names = [], [], []
        for n in carried:
            struct = tree_leaves(before[n], init)
            structs.append(struct)
            hint = counter[0] if n == ckey else _HINTS.get(n, n)
            names += [hint] * (len(init) - len(names))

        def split(leaves):
            it = iter(leaves)
            return {n: tree_build(st, it) for n, st in zip(carried, structs)}

        def cond_fn(carry):
            self.env = dict(before)
            self.env.update(split(carry))
            return self.loop_test(s, test, pre, counter, ckey, used)

        def body_fn(carry):
            self.loop_depth += 1
            saved_flags = {f: self.env[f] for f in (BRK, RET) if f in self.env}
            for f in saved_flags:  # the body runs only when no flag is set
                self.env[f] = False
            try:
                if has_continue:
                    self.env[CONT] = False
                if counter is not None:
                    self.env[counter[0]] = self.env[ckey]
                self.block(body, used)
            finally:
                self.loop_depth -= 1
            for f, v in saved_flags.items():
                if self.env.get(f) is False:
                    self.env[f] = v
            if counter is not None:
                self.env[ckey] = split(carry)[ckey] + counter[3]
            out = []
            for n, st in zip(carried, structs):
                v = self.env.get(n, ABSENT)
                if v is ABSENT or isinstance(v, Undefined):
                    raise self.err(s, f"{self.show(n)} is not defined at the end of the loop body")
                if tree_leaves(v, out) != st:
                    raise self.err(s, f"{self.show(n)} changes its tuple structure in the loop")
            return out

        if budget is not None:
            init[0] = mark_script_loop(self.tr, init[0], counter, budget, init)
        try:
            final = emit_while(self.tr, init, cond_fn, body_fn, names=names,
                               name=names[0] if len(names) == 1 else None)
        except ScriptError:
            raise
        except (ChainruleError, ValueError, TypeError) as exc:
            raise self.relocate(exc, s) from None
        after = dict(before)
        line = s.lineno + self.src.line_offset
        for n in assigned:
            if n not in carried:
                after[n] = Undefined(n, f"it is assigned in the loop at line {line} but not "
                                        f"before it")
        after.update(split(final))
        after.pop(ckey, None)
        for f, v in saved.items():
            if v is ABSENT:
                after.pop(f, None)
            else:
                after[f] = v
        self.env = after

    def loop_test(self, s, test, pre, counter, ckey, used):
        """The loop condition, in the cond block: not stopped, then the user's test."""
        stop = None
        for f in (BRK, RET):
            v = self.env.get(f, False)
            if isinstance(v, Traced):
                stop = v if stop is None else cnp.logical_or(stop, v)

        def user_test():
            if counter is not None:
                i, hi, step = self.env[ckey], counter[2], counter[3]
                return i < hi if step > 0 else i > hi
            if pre:
                self.block(pre, used)
            return self.expr(test)

        if stop is None:
            return user_test()
        cond = self.tr.atom(stop)
        then = run_branch(self.tr, lambda: False)
        other = run_branch(self.tr, user_test)
        c = other.value
        if not isinstance(c, Traced):
            c = bool(np.asarray(c))
        elif not (c.type.shape == () and c.type.dtype.is_bool):
            c = c != 0
        return finish_if(self.tr, cond, then, [False], other, [c])[0]

    def probe_retval(self, s, body, before, carried, live_after, test, pre, counter, ckey,
                     has_continue):
        """The type of the value a loop may return, from a trial trace of its body."""
        b = self.tr.builder
        saved_env, depth = self.env, self.loop_depth
        b.begin_block()
        try:
            self.env = dict(before)
            for n in carried:
                leaves: list = []
                struct = tree_leaves(before[n], leaves)
                self.env[n] = tree_build(struct, iter(
                    Traced(self.tr, _probe_var(n, default_type(v))) for v in leaves))
            self.loop_depth += 1
            if has_continue:
                self.env[CONT] = False
            if counter is not None:
                self.env[counter[0]] = self.env[ckey]
            self.block(body, loads([s]) | live_after)
            v = self.env.get(RETVAL, ABSENT)
        finally:
            b.end_block(())
            self.env, self.loop_depth = saved_env, depth
        if v is ABSENT or isinstance(v, Undefined):
            raise TraceError("internal: the loop's return value has no type")
        leaves = []
        struct = tree_leaves(v, leaves)
        return tree_build(struct, iter(Filler(default_type(x)) for x in leaves))


def _probe_var(name, t):
    from ...ir.nodes import Var

    return Var("probe", t)
