"""The documentation site: every page of docs/ is in the navigation, the architecture
page names every part of the package, the API reference is generated from the
docstrings, and ``mkdocs build --strict`` succeeds offline (with the ``[docs]``
extra; the build is skipped without it). The code blocks of the pages run in
tests/docs/test_readme.py."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
from repo_paths import ROOT

DOCS = ROOT / "docs"


def _load_gen_api():
    spec = importlib.util.spec_from_file_location("gen_api", DOCS / "gen_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:"):]
    return set(re.findall(r":\s*(\S+\.md)\s*$", nav, re.M))


def test_every_page_is_in_the_navigation():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    generated = {page[0] for page in _load_gen_api().PAGES}
    assert _nav_pages() == pages | generated


def test_the_architecture_page_names_every_part_of_the_package():
    """Its table of layers is the map: a module or package missing from it is
    a part of chainrule the documentation does not place."""
    text = (DOCS / "architecture.md").read_text()
    table = text[text.index("| layer |"):text.index("\n\n", text.index("| layer |"))]
    named = set(re.findall(r"^\| ([^|]+) \|", table, re.M))
    named = {n for cell in named for n in re.findall(r"`([\w/.]+)`", cell)}
    package = ROOT / "chainrule"
    parts = {p.name + "/" if p.is_dir() else p.name for p in package.iterdir()
             if not p.name.startswith("_") or p.name in ("__init__.py", "__main__.py")}
    parts = {p for p in parts if p.endswith(("/", ".py")) and p != "__pycache__/"}
    assert parts <= named, sorted(parts - named)


def test_readme_links_to_the_architecture_page():
    readme = (ROOT / "README.md").read_text()
    assert "(docs/architecture.md)" in readme and "DESIGN.md" not in readme


def test_api_reference_is_made_from_the_docstrings():
    gen_api = _load_gen_api()
    pages = {page[0]: gen_api.render(page) for page in gen_api.PAGES}
    import chainrule as cr
    import chainrule.numpy as cnp

    reference = pages["api/index.md"]
    for name in cr.__all__:
        if callable(getattr(cr, name)) and not isinstance(getattr(cr, name), type):
            assert f"### `{name}`" in reference, name
    first_line = cr.grad.__doc__.strip().splitlines()[0]
    assert first_line in reference
    numpy_page = pages["api/numpy.md"]
    assert all(f"| `{name}` |" in numpy_page for name in ("sum", "tanh", "einsum"))
    assert len(re.findall(r"^\| `", numpy_page, re.M)) >= len(cnp.__all__)
    for text in pages.values():
        assert "```pycon" not in text or ">>>" in text  # doctests as sessions


def test_docstrings_become_markdown():
    gen_api = _load_gen_api()
    doc = """Summary line with a <tag> and ``code <kept>``.

    More text.

        literal block

    >>> 1 + 1
    2
    """
    md = gen_api.markdown_of(doc)
    assert md.splitlines()[0] == "Summary line with a &lt;tag&gt; and ``code <kept>``."
    assert "```text\nliteral block\n```" in md
    assert "```pycon\n>>> 1 + 1\n2\n```" in md
    assert gen_api.summary_of(doc) == "Summary line with a &lt;tag&gt; and ``code <kept>``."


def test_the_site_builds_offline_with_strict_checks(tmp_path):
    pytest.importorskip("mkdocs", reason="needs the [docs] extra (mkdocs)")
    pytest.importorskip("pygments", reason="needs the [docs] extra (pygments)")
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(site)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("index.html", "getting_started/index.html", "coming_from_jax/index.html",
                 "coming_from_pytorch/index.html", "migrating_from_autograd/index.html",
                 "architecture/index.html", "ad_passes/index.html", "api/index.html",
                 "api/numpy/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text()
    assert "value_and_grad" in api and 'class="highlight"' in api  # coloured at build time
    # nothing is loaded from the network when a page is read
    for page in site.rglob("*.html"):
        text = page.read_text()
        loads = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert not loads, (page.name, loads)
