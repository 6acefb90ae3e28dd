"""The command line.

    python -m chainrule show FILE                 print a text-IR module after verifying it
    python -m chainrule grad FILE --func main [--wrt x,y] [--no-optimize]
    python -m chainrule passes FILE PIPELINE       run named passes, e.g. gradient,optimize
    python -m chainrule passes --list              the registered passes
    python -m chainrule demo                      train a small model, show the IR and figures

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chainrule",
                                     description="chainrule: AD as a compiler")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a text-IR module after verifying it")
    show.add_argument("file")
    show.set_defaults(run=cmd_show)
    grad = sub.add_parser("grad", help="add <func>_adjoint (reverse mode) and print")
    grad.add_argument("file")
    grad.add_argument("--func", default="main")
    grad.add_argument("--wrt", help="comma-separated parameter or variable names")
    grad.add_argument("--target-index", type=int, default=None)
    grad.add_argument("--sens", action="store_true", help="take the target's cotangent")
    grad.add_argument("--no-optimize", action="store_true")
    grad.set_defaults(run=cmd_grad)
    passes = sub.add_parser(
        "passes", help="run a pipeline of named passes on a text-IR module and print it",
        description="Run named passes in order, verifying after each, and print the result. "
                    "PIPELINE is comma-separated pass names, each optionally with literal "
                    "keyword options: \"gradient(func='f', require_grads=['x']),optimize\".")
    passes.add_argument("file", nargs="?", help="a text-IR module")
    passes.add_argument("pipeline", nargs="?", help="e.g. gradient,optimize")
    passes.add_argument("--list", action="store_true", help="list the registered passes")
    passes.set_defaults(run=cmd_passes)
    demo = sub.add_parser("demo", help="train a small model and show what chainrule does")
    demo.add_argument("--steps", type=int, default=200)
    demo.add_argument("--quick", action="store_true", help="a few steps only")
    demo.set_defaults(run=cmd_demo)
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
