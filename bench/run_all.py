"""Run every benchmark, one after the other (never in parallel: they time each other).

python bench/run_all.py --quick              # a smoke run of all of them
python bench/run_all.py --out /tmp/results   # full sizes; each output also saved there
python bench/run_all.py citations xdist      # only these

"peers" makes its own venv (pytest 8.3 with pytest-forked and pytest-isolate) under the
temp directory on its first run. coverage_cost.py is not in the set: it needs a clone
of more-itertools (``--library PATH``) and runs on its own.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCHES = [
    "entry_cost",
    "tool_recheck",
    "command_gates",
    "verifiers",
    "peers",
    "citations",
    "collection",
    "xdist",
    "memory",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: {BENCHES})")
    parser.add_argument("--quick", action="store_true", help="pass --quick to each")
    parser.add_argument("--out", type=Path, help="also write each output to OUT/<name>.txt")
    args = parser.parse_args()
    names = args.names or BENCHES
    unknown = sorted(set(names) - set(BENCHES))
    if unknown:
        parser.error(f"unknown benchmarks {unknown}; choose from {BENCHES}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent
    failed = []
    for name in names:
        argv = [sys.executable, str(here / f"{name}.py"), *(["--quick"] if args.quick else [])]
        started = time.perf_counter()
        print(f"\n######## {name}", flush=True)
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(proc.stdout, end="", flush=True)
        print(f"######## {name}: exit {proc.returncode}, {time.perf_counter() - started:.0f} s")
        if args.out:
            (args.out / f"{name}.txt").write_text(proc.stdout)
        if proc.returncode != 0:
            failed.append(name)
    if failed:
        raise SystemExit(f"failed: {failed}")


if __name__ == "__main__":
    main()
