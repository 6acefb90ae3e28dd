"""Run every benchmark in sequence, each in its own process (so thread settings,
caches and tracemalloc start clean).

    python benchmarks/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ("mlp.py", "tiny_ops.py", "hvp.py", "loop100.py", "transform_scaling.py")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    p.add_argument("--only", nargs="+", choices=SCRIPTS, help="run only these scripts")
    ns = p.parse_args()
    failed = []
    for script in ns.only or SCRIPTS:
        cmd = [sys.executable, os.path.join(HERE, script)]
        if ns.quick:
            cmd.append("--quick")
            if script == "transform_scaling.py":
                cmd += ["--sizes", "1000", "10000"]
        print(f"\n=== {script} " + "=" * max(0, 60 - len(script)), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call(cmd, cwd=HERE)
        print(f"({script}: {time.perf_counter() - t0:.1f} s, exit {rc})", flush=True)
        if rc:
            failed.append(script)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
