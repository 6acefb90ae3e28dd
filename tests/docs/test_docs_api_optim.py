"""The API reference (docs/gen_api.py) lists ``chainrule.optim`` with every public name,
its formulas as text blocks and its type aliases as such; ``chainrule.nn`` stays listed.
(The site itself is built in tests/docs/test_docs_site.py.)"""

from __future__ import annotations

import importlib.util
import re

from repo_paths import ROOT

import chainrule.nn as nn
from chainrule import optim

DOCS = ROOT / "docs"


def _pages() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("gen_api", DOCS / "gen_api.py")
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    return {page[0]: gen_api.render(page) for page in gen_api.PAGES}


def test_optim_is_in_the_reference():
    pages = _pages()
    text = pages["api/index.md"]
    section = text[text.index("## `chainrule.optim`"):]
    listed = re.findall(r"^### `(\w+)`", section, re.M)
    assert sorted(listed) == sorted(optim.__all__)
    assert "adam(learning_rate: float | Callable[[Any], Any], b1: float = 0.9" in section
    assert "A type alias: `Schedule = Callable[[Any], Any]`." in section
    # reST in the docstrings: the directive and the roles do not reach the page
    assert ".. math::" not in section and ":func:" not in section
    assert "```text\nm_t = \\beta_1 m_{t-1}" in section
    assert "ForwardRef" not in section and "typing." not in section
    numpy_page = pages["api/numpy.md"]
    assert "## `chainrule.nn`" in numpy_page
    assert all(f"| `{name}` |" in numpy_page for name in ("conv2d", "cross_entropy"))
    assert len(nn.__all__) > 10


def test_markdown_of_rest_math_and_roles():
    spec = importlib.util.spec_from_file_location("gen_api", DOCS / "gen_api.py")
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    doc = """Adam, see :func:`chainrule.optim.sgd` and :class:`~GradientTransformation`.

    .. math::

        u = -lr\\, g

    after.
    """
    md = gen_api.markdown_of(doc)
    assert md.splitlines()[0] == ("Adam, see `chainrule.optim.sgd` and "
                                  "`GradientTransformation`.")
    assert "```text\nu = -lr\\, g\n```" in md and ".. math::" not in md
    assert md.rstrip().endswith("after.")
