"""Run every benchmark in this directory, one after the other, each in its own process
(so thread settings, caches and tracemalloc start clean), each pinned to one thread
and one core. Prints the machine, its load (before and after each script) and the
date, so a table made from the output says where and when it was measured.

Every ``*.py`` here but ``_common.py`` and this file is a benchmark: a new script is
run without being listed; so is the ``run.py`` of a suite in a subdirectory
(``gradbench/run.py``). ``--quick`` passes each script its smoke-run options
(fewer repeats, smaller sizes: see ``QUICK``); its figures are rougher.

    python benchmarks/run_all.py [--quick] [--only mlp.py ...] [--list]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NOT_BENCHMARKS = {"_common.py", "run_all.py"}
# the smoke-run options of scripts that take other ones than --quick
QUICK = {
    "codegen_overhead.py": ["--repeats", "5"],
    "ir_scaling.py": ["--repeats", "1", "--sizes", "1000", "10000"],
    "transform_scaling.py": ["--quick", "--sizes", "1000", "10000"],
}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def scripts() -> list[str]:
    """Every benchmark script of this directory, alphabetically, then the ``run.py`` of
    each suite in a subdirectory."""
    own = sorted(name for name in os.listdir(HERE)
                 if name.endswith(".py") and name not in NOT_BENCHMARKS)
    suites = sorted(f"{name}/run.py" for name in os.listdir(HERE)
                    if os.path.isfile(os.path.join(HERE, name, "run.py")))
    return own + suites


def one_core() -> int | None:
    """The core every benchmark runs on: the last one this process may use (the one
    ``_common`` picks too), or None where affinity cannot be set."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def child_environment() -> dict:
    env = dict(os.environ)
    for var in THREAD_VARIABLES:
        env[var] = "1"
    env.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    return env


def load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)"


def machine() -> str:
    """CPU model, cores, memory, OS, Python and NumPy versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(next(line for line in fh if line.startswith("MemTotal")).split()[1])
        memory = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    numpy = subprocess.run([sys.executable, "-c", "import numpy; print(numpy.__version__)"],
                           capture_output=True, text=True).stdout.strip() or "?"
    return (f"{cpu}, {os.cpu_count()} cores{memory}; {platform.system()} {platform.release()}; "
            f"python {platform.python_version()}, numpy {numpy}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="each script's smoke-run options: fewer repeats, smaller sizes")
    p.add_argument("--only", nargs="+", choices=scripts(), metavar="SCRIPT",
                   help="run only these scripts (default: every one)")
    p.add_argument("--list", action="store_true", help="print the scripts it would run, and exit")
    ns = p.parse_args(argv)
    chosen = ns.only or scripts()
    if ns.list:
        print("\n".join(chosen))
        return 0
    core = one_core()
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    env = child_environment()
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"benchmarks/run_all.py{' --quick' if ns.quick else ''}: {len(chosen)} scripts, "
          f"started {started:%Y-%m-%d %H:%M} UTC")
    print(f"machine: {machine()}")
    print(f"each script: {', '.join(f'{v}=1' for v in THREAD_VARIABLES[:3])}, "
          f"pinned to core {core}" if core is not None else "not pinned (no affinity here)")
    print(f"before: {load()}", flush=True)
    failed, durations = [], []
    for script in chosen:
        cmd = [sys.executable, os.path.join(HERE, script)]
        if ns.quick:
            cmd += QUICK.get(script, ["--quick"])
        print(f"\n=== {script} {'=' * max(0, 60 - len(script))}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call(cmd, cwd=HERE, env=env, preexec_fn=pin)
        seconds = time.perf_counter() - t0
        durations.append((script, seconds, rc))
        print(f"({script}: {seconds:.1f} s, exit {rc}; {load()})", flush=True)
        if rc:
            failed.append(script)
    finished = datetime.datetime.now(datetime.timezone.utc)
    print(f"\nfinished {finished:%Y-%m-%d %H:%M} UTC, "
          f"{(finished - started).total_seconds() / 60:.1f} min; {load()}")
    print("  ".join(f"{s} {t:.0f} s" + (f" (exit {rc})" if rc else "") for s, t, rc in durations))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
