"""Generated code computes a logsumexp's exponentials once when its derivative reads them.

``logsumexp(x)`` is one op (one NumPy template: the maximum m, ``exp(x - m)``, the
sum, the log), and its derivative rule (``rules/reduction.py``) computes the weights
from the same maximum and exponentials, written out as ops:

    t = max(x, axis, keepdims=True);  t = stop_gradient(t);  f = isfinite(t)
    m = where(f, t, 0);  d = subtract(x, m);  e = exp(d)

so CSE cannot share them with the op, whose exponentials are inside its kernel. Before
code generation (``tiered.Tiered.compile``), this rewrite moves that chain before the
logsumexp and computes the logsumexp from it:

    s = sum(e, axis, keepdims=True);  l = log(s);  z = add(l, m)   (then a reshape
    without keepdims)

The NumPy calls are the template's, on the same values, so every result is the same
bit for bit; the backward then reads ``e`` instead of computing the maximum, the
mask, the subtraction and the exponentials again (a softmax cross-entropy's gradient:
6 of its 10 elementwise NumPy calls on the logits). Only the compiled program changes:
the module a transform shows (``.module``) and inlines into enclosing traces keeps the
op (differentiating the rewritten form again would differentiate through the maximum).

>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[2, 3]) -> tuple[f64[2], f64[2, 3]]:
...     z = logsumexp(x, axis=(1,))
...     t = max(x, axis=(1,), keepdims=True)
...     f = isfinite(t)
...     m = where(f, t, f64(0.0))
...     d = subtract(x, m)
...     e = exp(d)
...     return (z, e)
... ''')
>>> print(share_logsumexp(m))
def main(x: f64[2, 3]) -> tuple[f64[2], f64[2, 3]]:
    t = max(x, axis=(1,), keepdims=True)
    f = isfinite(t)
    m = where(f, t, 0.0)
    d = subtract(x, m)
    e = exp(d)
    z_sum = sum(e, axis=(1,), keepdims=True)
    z_log = log(z_sum)
    z_kept = add(z_log, m)
    z = reshape(z_kept, shape=(2,))
    return (z, e)
<BLANKLINE>
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...ir.infer import type_call
from ...ir.nodes import Binding, Block, Call, Constant, Function, Module, Var
from ...ir.types import TensorType

# the chain after the maximum: (op, the operands as positions in the chain so far; "x"
# the logsumexp's operand, "zero" a constant 0), stop_gradient optional
_CHAIN = ((ops.isfinite, ("top",)), (ops.where, ("isfinite", "top", "zero")),
          (ops.subtract, ("x", "where")), (ops.exp, ("subtract",)))


def share_logsumexp(module: Module) -> Module:
    """``module`` with each logsumexp whose exponentials the program computes again
    (the chain above, in the same block) computed from them; the module itself when
    there is none."""
    if not any(_has_logsumexp(fn) for fn in module.functions.values()):
        return module
    functions = {name: _share_in(fn) for name, fn in module.functions.items()}
    if all(functions[name] is fn for name, fn in module.functions.items()):
        return module
    return Module(functions, module.meta)


def _has_logsumexp(fn: Function) -> bool:
    return any(type(b.value) is Call and b.value.callee is ops.logsumexp
               for b in fn.body.bindings)


def _share_in(fn: Function) -> Function:
    bindings = fn.body.bindings
    users: dict = {}  # var -> the positions of the op calls reading it
    for i, b in enumerate(bindings):
        if type(b.value) is Call:
            for a in b.value.args:
                if type(a) is Var:
                    users.setdefault(a, []).append(i)
    replaced: dict[int, list] = {}  # logsumexp position -> the bindings replacing it
    taken: set[int] = set()  # chain positions claimed
    later: set[int] = set()  # chain positions after their logsumexp: moved up to it
    for i, b in enumerate(bindings):
        v = b.value
        if type(v) is not Call or v.callee is not ops.logsumexp:
            continue
        chain = _find_chain(bindings, users, i, taken)
        if chain is None:
            continue
        new = _from_exponentials(b.var, v.attrs, bindings[chain[-1]].var,
                                 bindings[chain[-3]].var)
        if new is None:
            continue
        taken.update(chain)
        after = [k for k in chain if k > i]  # (the rest come before: already computed)
        later.update(after)
        replaced[i] = [bindings[k] for k in after] + new
    if not replaced:
        return fn
    out = []
    for i, b in enumerate(bindings):
        if i in replaced:
            out.extend(replaced[i])
        elif i not in later:
            out.append(b)
    return Function(fn.params, Block(out, fn.body.result), fn.ret_type, fn.attrs)


def _find_chain(bindings, users, i, taken) -> list | None:
    """The positions of the chain (maximum first, exponentials last) recomputing the
    exponentials of the logsumexp at position ``i``, or None."""
    lse = bindings[i].value
    x = lse.args[0]
    xt = getattr(x, "type", None)
    if (type(x) is not Var or not isinstance(xt, TensorType) or not xt.dtype.is_float
            or not xt.is_static or xt.ndim == 0 or bindings[i].var.type.dtype != xt.dtype):
        return None
    for k in users.get(x, ()):
        v = bindings[k].value
        if (k in taken or v.callee is not ops.max or v.attrs.get("keepdims") is not True
                or v.attrs.get("axis") != lse.attrs["axis"]):
            continue
        chain = _follow(bindings, users, x, k, taken)
        if chain is not None:
            return chain
    return None


def _follow(bindings, users, x, start, taken) -> list | None:
    found = {"x": x, "top": bindings[start].var}
    chain = [start]
    stop = [j for j in users.get(found["top"], ())
            if bindings[j].value.callee is ops.stop_gradient and j not in taken]
    if stop:  # the rule holds the maximum constant: it is the same value
        chain.append(stop[0])
        found["top"] = bindings[stop[0]].var
    for op, operands in _CHAIN:
        step = None
        for j in users.get(found[operands[0]], ()):
            v = bindings[j].value
            if j not in taken and v.callee is op and len(v.args) == len(operands) and all(
                    _is_zero(a) if name == "zero" else a is found[name]
                    for a, name in zip(v.args, operands)):
                step = j
                break
        if step is None:
            return None
        chain.append(step)
        found[op.name] = bindings[step].var
    return chain if chain == sorted(chain) else None


def _is_zero(a) -> bool:
    return (type(a) is Constant and np.ndim(a.data) == 0 and a.data == 0
            and not np.signbit(a.data))


def _from_exponentials(z: Var, attrs: dict, e: Var, m: Var) -> list[Binding] | None:
    """Bindings computing ``z`` (a logsumexp of ``attrs``) from the exponentials ``e``
    and the finite maximum ``m``, as the op's template does (None if the types would
    differ)."""
    out: list[Binding] = []

    def emit(op, args, op_attrs, name):
        new_attrs, t = type_call(op, [a.type for a in args], op_attrs)
        var = z if name == z.name and t == z.type else Var(name, t)
        out.append(Binding(var, Call(op, args, new_attrs)))
        return var

    s = emit(ops.sum, [e], {"axis": attrs["axis"], "keepdims": True}, f"{z.name}_sum")
    log = emit(ops.log, [s], {}, f"{z.name}_log")
    if attrs["keepdims"]:
        emit(ops.add, [log, m], {}, z.name)
    else:
        kept = emit(ops.add, [log, m], {}, f"{z.name}_kept")
        emit(ops.reshape, [kept], {"shape": tuple(z.type.shape)}, z.name)
    return out if out[-1].var is z else None
