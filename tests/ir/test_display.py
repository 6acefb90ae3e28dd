"""How IR and tape tensors show themselves: ``str`` of every node is its text,
notebooks get highlighted HTML (modules fold long functions) and Graphviz pictures
when Graphviz is installed, text otherwise (chainrule/ir/display.py)."""

from __future__ import annotations

import html
import re
import shutil

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.api.reverse import trace_grad_module
from chainrule.ir import (
    Binding,
    Block,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    While,
    display,
)
from chainrule.ir.types import TensorType

GRAPHVIZ = display.graphviz_missing() is None


def mlp_loss(W, b, x):
    return cnp.sum(cnp.tanh(x @ W + b) ** 2)


ARGS = (np.ones((4, 3)) / 4, np.zeros(3), np.ones((5, 4)))


def loop_gradient():
    """A gradient program with while loops and stacks."""
    f = lambda x: cnp.sum(cr.fori_loop(0, 3, lambda i, c: c * cnp.sin(c), x))
    return trace_grad_module(f, np.ones(3))


CLOSURE = """
def main(x: f64[3]) -> f64[3]:
    s = sin(x)
    def scale(y: f64[3]) -> f64[3]:
        z = multiply(y, s)
        return z
    r = scale(x)
    return r
"""


def first(bindings, kind):
    return next(b for b in bindings if isinstance(b.value, kind))


def plain_text(markup: str) -> str:
    """What an HTML fragment shows, tags removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


# -- str of every node ------------------------------------------------------------------


def test_printing_a_module_function_prints_its_text():
    module = trace_grad_module(mlp_loss, *ARGS)
    fn = module["main_adjoint"]
    text = str(module).rstrip("\n")
    assert str(fn) == text.replace("def main_adjoint(", "def fn(", 1)
    assert "object at 0x" not in str(fn)
    # the text of a function that reads nothing from outside parses back to it
    assert cr.parse(str(fn))["fn"].body.bindings[0].value.callee is fn.body.bindings[
        0].value.callee
    assert cr.structural_equal(cr.parse(str(fn)), cr.parse(text.replace("main_adjoint", "fn")))


def test_every_kind_of_node_prints_as_text():
    fn = loop_gradient()["main_adjoint"]
    loop = first(fn.body.bindings, While)
    push = next(b for b in loop.value.body.bindings if "stack_push" in str(b.value))
    assert str(loop.value).splitlines()[:2] == [
        "i, val0, lv4_count, lv1_stack_1, val0_stack = 0, x, 0, lv1_stack, lv1_stack",
        "while True:"]
    assert str(loop.value).splitlines()[-1] == (
        "result = (i, val0, lv4_count, lv1_stack_1, val0_stack)")
    # printed alone, a binding names its variables in its own scope (the function's text
    # has lv1_stack_2 = stack_push(lv1_stack_1, lv1): lv1_stack_1 is a carry there)
    assert str(push) == "lv1_stack_1 = stack_push(lv1_stack, lv1)"
    assert str(push.value) == "stack_push(lv1_stack, lv1)"
    assert str(loop.value.cond) == "lv0 = less(i, 3)\nreturn lv0"
    # a closure reads s from its enclosing function: it prints by its name
    closure = first(cr.parse(CLOSURE)["main"].body.bindings, Function)
    assert str(closure.value).splitlines() == [
        "def fn(y: f64[3]) -> f64[3]:", "    z = multiply(y, s)", "    return z"]
    x = fn.params[0]
    assert str(x) == "x" and repr(x) == "%x: f64[3]"
    assert str(Constant(np.float32(2.5))) == "f32(2.5)"
    assert str(Constant(np.arange(3.0))) == "f64([0.0, 1.0, 2.0])"
    assert str(GlobalVar("main")) == "main"
    assert str(Tuple([x, Constant(1.0)])) == "(x, 1.0)"
    assert str(TupleGetItem(x, 1)) == "x[1]"


def test_if_prints_with_its_branches():
    module = cr.trace(lambda x: cr.cond(cnp.sum(x) > 0, lambda x: x * 2, cnp.sin, x),
                      np.ones(3))
    branch = first(module["main"].body.bindings, If)
    assert str(branch.value) == ("if lv1:\n    lv2 = multiply(x, 2.0)\n    result = lv2\n"
                                 "else:\n    lv3 = sin(x)\n    result = lv3")
    assert str(branch) == str(branch.value).replace("result", "lv4")


def test_large_constants_are_hoisted_as_in_a_module():
    module = cr.trace(lambda x: x + np.arange(20.0), np.ones(20))
    call = module["main"].body.bindings[0].value
    header = "c0 = f64([" + ", ".join(f"{i}.0" for i in range(20)) + "])"
    assert str(call) == header + "\n\nadd(x, c0)"
    assert str(module["main"]) == str(module).rstrip("\n").replace("def main(", "def fn(")


def test_a_node_without_text_shows_its_repr_and_why():
    stranger = Op("not_registered", lambda types, attrs: types[0], np.negative)
    x = Var("x", TensorType((), "f64"))
    text = str(Call(stranger, [x]))
    assert text.startswith("<chainrule.ir.nodes.Call object at") and "no text" in text
    assert "not_registered" in text


def test_nodes_stay_immutable():
    block = Block([], Constant(1.0))
    with pytest.raises(cr.ChainruleError, match="immutable"):
        block.result = Constant(2.0)
    assert str(block) == "return 1.0"
    assert str(Binding(Var("y", TensorType((), "f64")), Constant(1.0))) == "y = 1.0"


# -- HTML --------------------------------------------------------------------------------


def test_module_html_is_the_highlighted_text_with_functions_folded():
    module = trace_grad_module(mlp_loss, *ARGS)
    markup = module._repr_html_()
    shown = plain_text(markup)
    for line in str(module).splitlines():
        assert line in shown, line  # nothing of the text is lost
    assert '<span style="color:#0f766e">tanh</span>' in markup  # ops
    assert '<span style="color:#7c3aed;font-weight:bold">def</span>' in markup  # keywords
    assert '<span style="color:#2563eb;font-weight:bold">main_adjoint</span>' in markup
    assert '<span style="color:#15803d">f64</span>' in markup  # types
    assert '<span style="color:#a16207">axes</span>=' in markup  # attribute names
    assert "-&gt;" in markup and "<script" not in markup
    assert markup.count("<details open>") == 1  # a short function is open


def test_long_functions_and_big_constants_fold():
    def long(x):
        for _ in range(30):
            x = cnp.sin(x) + np.arange(20.0)
        return cnp.sum(x)

    module = trace_grad_module(long, np.ones(20))
    markup = module._repr_html_()
    assert "hoisted constant" in markup
    assert markup.count("<details>") == 2  # the constants and the long function, folded
    assert "(2 lines)" not in markup and re.search(r"\(\d{2,} lines\)", markup)


def test_function_html_and_svg():
    fn = trace_grad_module(mlp_loss, *ARGS)["main_adjoint"]
    markup = fn._repr_html_()
    assert plain_text(markup).startswith(str(fn))
    svg = fn._repr_svg_()
    if GRAPHVIZ:
        assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
        assert "data-flow graph" in markup and "<svg" in markup and "<?xml" not in markup
    else:
        assert svg is None and "<svg" not in markup


def test_without_graphviz_everything_falls_back_to_text(monkeypatch):
    monkeypatch.setattr(display, "graphviz_missing", lambda: "Graphviz (for the test)")
    fn = trace_grad_module(mlp_loss, *ARGS)["main_adjoint"]
    assert fn._repr_svg_() is None and "<svg" not in fn._repr_html_()
    x = tape.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = cnp.sum(cnp.sin(x) * x)
    assert y._repr_svg_() is None
    shown = plain_text(y._repr_html_())
    assert "recorded graph: 3 ops" in shown and "def main(w0: f64[2]) -> f64:" in shown
    assert "install Graphviz (for the test)" in shown


def test_tape_tensor_html_shows_its_graph():
    x = tape.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = cnp.sum(cnp.sin(x) * x)
    markup = y._repr_html_()
    assert html.escape(repr(y)) in markup and "recorded graph: 3 ops" in markup
    if GRAPHVIZ:
        assert "<svg" in markup and y._repr_svg_().rstrip().endswith("</svg>")
    assert x._repr_svg_() is None and "recorded graph" not in x._repr_html_()  # a leaf
    y.backward()  # frees the graph: the display says so instead of failing
    assert "already freed this graph" in y._repr_html_() and y._repr_svg_() is None


# -- Graphviz ----------------------------------------------------------------------------


def test_function_to_dot_has_a_node_per_value_and_edges_along_the_data():
    fn = trace_grad_module(mlp_loss, *ARGS)["main_adjoint"]
    dot = display.function_to_dot(fn, "main_adjoint", title="t", backward_from=5)
    assert dot.startswith("digraph chainrule {") and dot.endswith("}\n")
    for k in range(len(fn.body.bindings)):
        assert f"  b{k} [" in dot
        color = display.BACKWARD_COLOR if k >= 5 else display.FORWARD_COLOR
        assert re.search(rf"  b{k} \[.*fillcolor=\"{color}\"", dot)
    assert "  p0 -> b0;" in dot or "  p2 -> b0;" in dot  # W or x feeds the matmul
    assert "backward pass" in dot and 'label="t"' in dot


@pytest.mark.skipif(not GRAPHVIZ, reason="needs the graphviz package and Graphviz's dot")
def test_loops_and_closures_render():
    dot = display.function_to_dot(loop_gradient()["main_adjoint"])
    assert "while (5 carried)" in dot
    assert display.render_dot(dot).rstrip().endswith(b"</svg>")
    dot = display.function_to_dot(cr.parse(CLOSURE)["main"])
    assert "shape=box3d" in dot
    assert display.render_dot(dot).rstrip().endswith(b"</svg>")


def test_huge_graphs_are_not_drawn(monkeypatch):
    monkeypatch.setattr(display, "MAX_GRAPH_NODES", 3)
    fn = trace_grad_module(mlp_loss, *ARGS)["main_adjoint"]
    assert fn._repr_svg_() is None


def test_graphviz_missing_names_what_to_install(monkeypatch):
    if display.graphviz_missing() is None:
        monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
        assert "dot program" in display.graphviz_missing()
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)
    assert display.graphviz_missing() == "the graphviz Python package (pip install graphviz)"
    assert display.render_dot("digraph { a }") is None
