"""The command line.

    python -m chainrule show FILE                 print a text-IR module after verifying it
    python -m chainrule grad FILE --func main [--wrt x,y] [--no-optimize]
    python -m chainrule passes FILE PIPELINE       run named passes, e.g. gradient,optimize
    python -m chainrule passes --list              the registered passes
    python -m chainrule demo [--out DIR]          train a small model, show the IR, draw pictures

Errors print as one line ``FILE:LINE:COL: error: message`` and exit with status 1.
"""

from __future__ import annotations

import argparse
import sys

from .errors import ChainruleError, ParseError


def _read_module(path: str):
    from .ir import parse, verify

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ChainruleError(f"cannot read {path}: {exc.strerror}") from None
    return verify(parse(text))


def cmd_show(args) -> int:
    print(_read_module(args.file), end="")
    return 0


def cmd_grad(args) -> int:
    from .ir import verify
    from .transform import gradient, optimize

    module = _read_module(args.file)
    wrt = [w.strip() for w in args.wrt.split(",") if w.strip()] if args.wrt else None
    out = gradient(module, args.func, require_grads=wrt, target_index=args.target_index,
                   sens=args.sens)
    if not args.no_optimize:
        out = optimize(out)
    print(verify(out), end="")
    return 0


def cmd_passes(args) -> int:
    from .ir import verify
    from .transform import PASSES, Pipeline

    if args.list:
        for name in sorted(PASSES):
            doc = (PASSES[name].__doc__ or "").strip().splitlines()
            print(f"{name:14} {doc[0] if doc else ''}")
        return 0
    if not args.file or not args.pipeline:
        raise ChainruleError("passes: give FILE and PIPELINE (or --list)")
    module = _read_module(args.file)
    print(verify(Pipeline.parse(args.pipeline, verify=True)(module)), end="")
    return 0


def cmd_demo(args) -> int:
    from .demo import main as demo_main

    return demo_main(args)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: every subcommand and option has its help text."""
    parser = argparse.ArgumentParser(
        prog="python -m chainrule",
        description="chainrule: automatic differentiation as a compiler. Text-IR modules "
                    "(FILE) are Python source in chainrule's text format (docs/text_format.md)."
                    " Mistakes print one line, FILE:LINE:COL: error: message, and exit 1.",
        epilog="Run 'python -m chainrule COMMAND --help' for a command's options.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = sub.add_parser("show", help="parse, verify and print a text-IR module",
                          description="Parse a text-IR module, verify it (types, scoping) "
                                      "and print it back in canonical form.")
    show.add_argument("file", metavar="FILE", help="a text-IR module, e.g. examples/add_sum.py")
    show.set_defaults(run=cmd_show)
    grad = sub.add_parser(
        "grad", help="add <func>_adjoint (reverse mode) and print the module",
        description="Run the gradient pass on a function of a text-IR module: it adds "
                    "<func>_adjoint, returning (result, (adjoints...)), then the clean-up "
                    "passes (unless --no-optimize), and prints the module.")
    grad.add_argument("file", metavar="FILE", help="a text-IR module, e.g. examples/add_sum.py")
    grad.add_argument("--func", default="main", metavar="NAME",
                      help="the function to differentiate (default: main)")
    grad.add_argument("--wrt", metavar="NAMES",
                      help="comma-separated parameter or variable names to differentiate with "
                           "respect to (default: every float parameter)")
    grad.add_argument("--target-index", type=int, default=None, metavar="I",
                      help="differentiate element I of a tuple result (default: the result "
                           "itself, which must be a scalar unless --sens)")
    grad.add_argument("--sens", action="store_true",
                      help="add a last parameter, cotangent, that seeds the result's adjoint "
                           "(for non-scalar results: a vector-Jacobian product)")
    grad.add_argument("--no-optimize", action="store_true",
                      help="print the gradient pass's output as it is, without the clean-up "
                           "passes (inlining, simplify, CSE, dead-code elimination)")
    grad.set_defaults(run=cmd_grad)
    passes = sub.add_parser(
        "passes", help="run a pipeline of named passes on a text-IR module and print it",
        description="Run named passes in order, verifying after each, and print the result. "
                    "PIPELINE is comma-separated pass names, each optionally with literal "
                    "keyword options: \"gradient(func='f', require_grads=['x']),optimize\".")
    passes.add_argument("file", nargs="?", metavar="FILE", help="a text-IR module")
    passes.add_argument("pipeline", nargs="?", metavar="PIPELINE",
                        help="e.g. gradient,optimize (see --list)")
    passes.add_argument("--list", action="store_true",
                        help="list the registered passes with one line each, and exit")
    passes.set_defaults(run=cmd_passes)
    demo = sub.add_parser(
        "demo", help="train a small model and show what chainrule does, with pictures",
        description="A tour on one small model: a tanh MLP learns two spirals. Prints its IR, "
                    "its gradient program and the NumPy code that runs it, trains it, checks "
                    "the gradients, takes higher derivatives, times a step against "
                    "hand-written backprop, and draws pictures (matplotlib and graphviz, "
                    "optional: pip install \"chainrule[demo]\").")
    demo.add_argument("--steps", type=int, default=200, metavar="N",
                      help="training steps (default: 200)")
    demo.add_argument("--quick", action="store_true",
                      help="at most 40 training steps and shorter timings (a smoke run)")
    demo.add_argument("--out", default="chainrule-demo", metavar="DIR",
                      help="the directory the pictures are written to, created if needed "
                           "(default: ./chainrule-demo)")
    demo.add_argument("--no-pictures", dest="out", action="store_const", const=None,
                      help="draw no pictures and write no files")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ParseError as exc:
        where = f"{getattr(args, 'file', '')}:{exc.line}:{exc.col}" if exc.line else getattr(
            args, "file", "")
        print(f"{where}: error: {exc.message}", file=sys.stderr)
    except ChainruleError as exc:
        print(f"{getattr(args, 'file', 'chainrule')}: error: {exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
