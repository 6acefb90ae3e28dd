"""Run HIPS autograd's own tests and examples on chainrule, the way a user migrates.

Given an autograd source tree (``pip download autograd==1.9.1 --no-binary :all:`` gets
the sdist; unpack it), this copies its ``tests/`` and ``examples/`` into a work
directory, rewrites their imports onto chainrule (``autograd.numpy`` ->
``chainrule.numpy``, ``from autograd import grad`` -> ``chainrule.autograd_compat``, the
table ``IMPORTS`` below), runs them, and prints the pass rate and the failures grouped
by cause. Nothing of autograd runs: a stub ``autograd`` package shadows an installed
one, so an import the table cannot map fails the test that needs it (its cause says
which name). No autograd code is kept in this repository: it is read from the tree
given at every run.

    python tools/migrate_autograd.py /path/to/autograd-1.9.1            # tests + examples
    python tools/migrate_autograd.py SRC --only tests -k test_numpy     # a subset
    python tools/migrate_autograd.py SRC --set-aside 'test_scipy.py::test_(j0|j1)'

``--set-aside REGEX`` (repeatable) counts the matching tests apart (work another change
owns, say) and prints the rate with and without them. ``--compare`` also runs each
example under the installed autograd and compares the numbers the two print.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (pattern, replacement), applied in order to every .py file of the copied tree.
IMPORTS = [
    (r"autograd\.numpy\.random", "numpy.random"),  # autograd's is NumPy's own module
    (r"autograd\.numpy", "chainrule.numpy"),
    (r"autograd\.scipy", "chainrule.scipy"),
    (r"from autograd\.test_util import", "from cr_autograd_test_util import"),
    (r"from autograd\.builtins import", "from chainrule.autograd_compat.builtins import"),
    (r"from autograd\.tracer import isbox", "from chainrule.ir.op import is_dispatched as isbox"),
    (r"from autograd\.(?:extend|tracer|core|wrap_util|util|differential_operators|"
     r"misc(?:\.optimizers|\.flatten|\.fixed_points|\.tracers)?) import",
     "from chainrule.autograd_compat import"),
    (r"from autograd import", "from cr_autograd import"),
]

# ``from autograd import x``: chainrule.autograd_compat's names and Python's containers
# (autograd's top level re-exports autograd.builtins' tuple, list, dict, isinstance)
TOP_LEVEL = '''"""autograd's top-level names on chainrule (for the migration measurement)."""
from chainrule.autograd_compat import *  # noqa
from cr_autograd_lazy import name_or_missing
tuple, list, dict = (name_or_missing("chainrule.autograd_compat.builtins", n)
                     for n in ("tuple", "list", "dict"))
isinstance = name_or_missing("chainrule.autograd_compat.builtins", "isinstance")
'''

# A name a converted module imports from the compat layer but chainrule does not have
# fails where it is used, not where it is imported: each test counts on what it uses.
LAZY = '''"""Imports that fail at their first use (written for the migration measurement)."""
import importlib


class Missing:
    def __init__(self, module, name):
        self._why = f"cannot import name {name!r} from {module!r}"

    def __getattr__(self, attr):
        raise ImportError(self._why)

    def __call__(self, *args, **kwargs):
        raise ImportError(self._why)


def name_or_missing(module, name):
    try:
        return getattr(importlib.import_module(module), name)
    except (AttributeError, ImportError):
        return Missing(module, name)
'''

LAZY_IMPORT = re.compile(r"^([ \t]*)from (chainrule\.autograd_compat(?:\.builtins)?|cr_autograd) "
                         r"import "
                         r"(\([^)]*\)|[^\n]*)", re.M)


def lazy_imports(text: str) -> str:
    """``from M import a, b as c`` -> ``a = name_or_missing("M", "a")`` and so on."""

    def one(m):
        indent, module, names = m.group(1), m.group(2), m.group(3)
        names = re.sub(r"#[^\n]*", "", names).strip("()")
        lines = [f"{indent}from cr_autograd_lazy import name_or_missing as _name_or_missing"]
        for item in filter(None, (n.strip() for n in names.split(","))):
            name, _, alias = (part.strip() for part in item.partition(" as "))
            lines.append(f"{indent}{alias or name} = _name_or_missing({module!r}, {name!r})")
        return "\n".join(lines)

    return LAZY_IMPORT.sub(one, text)

# autograd.test_util's helpers, on chainrule.autograd_compat.check_grads
TEST_UTIL = '''"""autograd.test_util's interface (written for the migration measurement)."""
import itertools
import numpy as onp
from chainrule.autograd_compat import check_grads

TOL = RTOL = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def check_equivalent(x, y):
    onp.testing.assert_allclose(onp.asarray(x), onp.asarray(y), rtol=1e-6, atol=1e-6)


def combo_check(fun, *args, **kwargs):
    def run(*arg_choices, **kw_choices):
        keys = list(kw_choices)
        for values in itertools.product(*arg_choices):
            for kw in itertools.product(*[kw_choices[k] for k in keys]):
                check_grads(fun, *args, **kwargs)(*values, **dict(zip(keys, kw)))
    return run
'''

STUB = '''raise ImportError("autograd itself is not used by the migration measurement: this "
                  "import has no chainrule equivalent in tools/migrate_autograd.py")
'''

# the MNIST examples download data; give them random digits of the same shapes
FAKE_MNIST = '''
def mnist():
    rs = np.random.RandomState(0)
    return (rs.randint(0, 256, (1000, 28, 28)).astype(np.uint8),
            rs.randint(0, 10, 1000).astype(np.uint8),
            rs.randint(0, 256, (200, 28, 28)).astype(np.uint8),
            rs.randint(0, 10, 200).astype(np.uint8))
'''


def convert(src: str, dst: str, source_root: str) -> None:
    """Copy ``src`` to ``dst`` with the imports rewritten."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    for dirpath, _, files in os.walk(dst):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            text = open(path).read()
            if name == "data_mnist.py" and "def mnist():" in text:
                text = text[:text.index("def mnist():")] + FAKE_MNIST
            for pattern, replacement in IMPORTS:
                text = re.sub(pattern, replacement, text)
            text = lazy_imports(text)
            # rnn/lstm/hmm_em train on their own source text: read the original's
            text = re.sub(r'join\(dirname\(__file__\), "(\w+\.py)"\)',
                          lambda m: repr(os.path.join(source_root, m.group(1))), text)
            open(path, "w").write(text)


def write_shims(shim: str) -> None:
    os.makedirs(os.path.join(shim, "autograd"), exist_ok=True)
    for name, text in (("cr_autograd_test_util.py", TEST_UTIL),
                       ("cr_autograd.py", TOP_LEVEL), ("cr_autograd_lazy.py", LAZY),
                       (os.path.join("autograd", "__init__.py"), STUB)):
        with open(os.path.join(shim, name), "w") as fh:
            fh.write(text)


def environment(shim: str, extra: str = "") -> dict:
    path = os.pathsep.join(p for p in (shim, REPO, extra) if p)
    return dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")


def cause(message: str) -> str:
    """A short cause from an exception message: a missing name, else type and text."""
    message = message.strip().splitlines()[0] if message.strip() else "(no message)"
    m = re.search(r"has no attribute '(\w+)'|cannot import name '(\w+)'", message)
    if m:
        return f"missing name: {m.group(1) or m.group(2)}"
    return message[:110]


def run_tests(work: str, shim: str, keyword: str | None, timeout: float) -> list:
    """[(test id, outcome, cause)] from one pytest run of the converted tests."""
    xml = os.path.join(work, "tests.xml")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--continue-on-collection-errors", f"--junitxml={xml}", "."]
    if keyword:
        cmd += ["-k", keyword]
    subprocess.run(cmd, cwd=os.path.join(work, "tests"), env=environment(shim),
                   capture_output=True, text=True, timeout=timeout)
    results = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        collected = bool(module)  # a module that failed to import has no class name
        test_id = f"{module}.py::{case.get('name')}" if collected else f"{case.get('name')}.py"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if not collected and bad is not None:  # each test of the module fails
            detail = [line[2:] for line in (bad.text or "").splitlines()
                      if line.startswith("E ")]
            why = cause(detail[-1] if detail else bad.get("message") or "")
            source = open(os.path.join(work, "tests", test_id)).read()
            results.extend((f"{test_id}::{name}", "failed", why)
                           for name in re.findall(r"^def (test_\w+)", source, re.M))
        elif case.find("skipped") is not None:
            results.append((test_id, "skipped", ""))
        elif bad is not None:
            results.append((test_id, "failed", cause(bad.get("message") or "")))
        else:
            results.append((test_id, "passed", ""))
    return results


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def run_example(path: str, shim: str, timeout: float, python_path: str | None = None):
    """``(status, last stderr line, stdout)`` of one example program."""
    env = environment(shim, os.path.dirname(path)) if python_path is None else dict(
        os.environ, PYTHONPATH=python_path, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    try:
        p = subprocess.run([sys.executable, "-c",
                            "import numpy.random, runpy, sys; numpy.random.seed(0); "
                            "runpy.run_path(sys.argv[1], run_name='__main__')", path],
                           cwd=os.path.dirname(path), env=env, capture_output=True, text=True,
                           timeout=timeout)
        status, out, err = ("ok" if p.returncode == 0 else "error"), p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        status = "timeout"  # a training loop still running: it ran until then
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    lines = [line for line in err.strip().splitlines() if line.strip()]
    return status, (lines[-1] if lines else ""), out


def numbers_differ(a: str, b: str) -> tuple[int, int]:
    """``(compared, differing)`` numbers of two printouts, in order."""
    na = [float(x) for x in NUMBER.findall(a)]
    nb = [float(x) for x in NUMBER.findall(b)]
    n = min(len(na), len(nb))
    bad = sum(abs(na[i] - nb[i]) > 1e-5 * max(1.0, abs(na[i])) + 1e-8 for i in range(n))
    return n, bad


def run_examples(source: str, work: str, shim: str, timeout: float, compare: bool) -> list:
    results = []
    skip = {"data.py", "data_mnist.py", "__init__.py"}
    root = os.path.join(work, "examples")
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith(".py") or name in skip:
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            status, last, out = run_example(path, shim, timeout)
            note = "" if status != "error" else cause(last)
            if compare and status != "error":
                original = os.path.join(source, "examples", rel)
                _, _, ref = run_example(original, shim, timeout,
                                        python_path=os.path.dirname(original))
                n, bad = numbers_differ(ref, out)
                note = f"{n} numbers compared with autograd's, {bad} differ"
            results.append((rel, status, note))
    return results


def report(tests: list, set_aside: list[str]) -> None:
    aside = [t for t in tests if any(re.search(p, t[0]) for p in set_aside)]
    mine = [t for t in tests if t not in aside]
    for label, group in (("all", tests), ("without the set-aside tests", mine)):
        run = [t for t in group if t[1] != "skipped"]
        passed = sum(t[1] == "passed" for t in run)
        if run and (label == "all" or aside):
            print(f"tests ({label}): {passed} of {len(run)} pass = "
                  f"{100.0 * passed / len(run):.1f}%")
    by_cause = defaultdict(list)
    for test_id, outcome, why in mine:
        if outcome == "failed":
            by_cause[why].append(test_id)
    for why, ids in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):3d}  {why}")
        for test_id in ids:
            print(f"         {test_id}")
    if aside:
        print(f"  set aside: {sum(t[1] == 'failed' for t in aside)} failing of {len(aside)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="an autograd source tree (with tests/ and examples/)")
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                       "chainrule_autograd_migration"))
    parser.add_argument("--only", choices=("tests", "examples"))
    parser.add_argument("-k", dest="keyword", help="pytest -k expression for the tests")
    parser.add_argument("--set-aside", action="append", default=[], metavar="REGEX")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per example (a training loop still running then "
                             "counts as running)")
    parser.add_argument("--compare", action="store_true",
                        help="run each example under the installed autograd too")
    args = parser.parse_args(argv)
    source = os.path.abspath(args.source)
    shim = os.path.join(args.work, "shim")
    write_shims(shim)
    if args.only != "examples":
        convert(os.path.join(source, "tests"), os.path.join(args.work, "tests"), source)
        report(run_tests(args.work, shim, args.keyword, timeout=7200), args.set_aside)
    if args.only != "tests":
        examples_src = os.path.join(source, "examples")
        convert(examples_src, os.path.join(args.work, "examples"), examples_src)
        results = run_examples(source, args.work, shim, args.timeout, args.compare)
        ran = sum(status != "error" for _, status, _ in results)
        print(f"examples: {ran} of {len(results)} run ({100.0 * ran / max(1, len(results)):.1f}%;"
              f" 'timeout' = still training after {args.timeout:.0f} s)")
        for rel, status, note in results:
            print(f"  {status:8s} {rel}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
