"""Command gates vs hand-written pytest tests vs a raw subprocess loop.

For each N: N gates ``check: "true"`` run by ``pytest --vgate gates.yaml`` (default
isolation, and ``--vgate-isolation off``: the process group only); N parametrized
tests each doing ``subprocess.run(["true"], capture_output=True, timeout=60)``; the same
tests with the containment the plugin gives, each process under ``unshare --pid --fork
--mount-proc`` (its own PID namespace and ``/proc``: every descendant dies with it; with
``--user --map-root-user`` when not root); and a plain Python loop of the same N calls
(the floor). Each subject is a child process; the
three alternate round by round. Prints medians, per-item cost, the marginal cost per
item between sizes (constant = linear) and the ratios.

    python bench/command_gates.py            # N = 100, 400, 2000
    python bench/command_gates.py --quick    # N = 50, 1 round
    python bench/command_gates.py --sizes 400 --rounds 7
"""

from __future__ import annotations

import itertools
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
    Series,
    alternate,
    base_parser,
    clean_env,
    gates_yaml,
    header,
    pytest_argv,
    ratio,
    run_child,
    table,
    verdict,
    workdir,
)

HAND_WRITTEN = """\
import subprocess

import pytest


@pytest.mark.parametrize("i", range({n}))
def test_true(i):
    subprocess.run(["true"], capture_output=True, timeout=60)
"""

CONTAINED = """\
import os
import subprocess

import pytest

UNSHARE = ["unshare", *([] if os.geteuid() == 0 else ["--user", "--map-root-user"]),
           "--pid", "--fork", "--mount-proc"]


@pytest.mark.parametrize("i", range({n}))
def test_true(i):
    subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=60, check=True)
"""

RAW_LOOP = """\
import subprocess
for _ in range({n}):
    subprocess.run(["true"], capture_output=True, timeout=60)
"""


def measure(n: int, rounds: int, base: Path, *, verbose: bool) -> dict[str, Series]:
    gates_dir = base / f"gates-{n}"
    hand_dir = base / f"hand-{n}"
    gates_dir.mkdir()
    hand_dir.mkdir()
    (gates_dir / "gates.yaml").write_text(gates_yaml(["true"] * n))
    (hand_dir / "test_hand.py").write_text(HAND_WRITTEN.format(n=n))
    (hand_dir / "test_contained.py").write_text(CONTAINED.format(n=n))
    contain = shutil.which("unshare") is not None
    env = clean_env()
    common = ["-p", "no:cacheprovider", "-q"]

    def plugin() -> Run:
        shutil.rmtree(gates_dir / ".vgate", ignore_errors=True)  # same ledger every round
        argv = pytest_argv("--vgate", "gates.yaml", *common)
        return run_child(argv, cwd=gates_dir, env=env).check(what="plugin")

    def plugin_off() -> Run:  # the first release's containment: a process group
        shutil.rmtree(gates_dir / ".vgate", ignore_errors=True)
        argv = pytest_argv("--vgate", "gates.yaml", "--vgate-isolation", "off", *common)
        return run_child(argv, cwd=gates_dir, env=env).check(what="plugin off")

    def hand() -> Run:
        argv = pytest_argv("test_hand.py", *common)
        return run_child(argv, cwd=hand_dir, env=env).check(what="hand-written")

    def contained() -> Run:  # the peer with the same guarantee as the plugin's default
        argv = pytest_argv("test_contained.py", *common)
        return run_child(argv, cwd=hand_dir, env=env).check(what="hand-written, contained")

    def raw() -> Run:
        argv = [sys.executable, "-c", RAW_LOOP.format(n=n)]
        return run_child(argv, cwd=hand_dir, env=env).check(what="raw loop")

    print(f"-- N = {n}", flush=True)
    subjects = [("plugin", plugin), ("plugin off", plugin_off), ("hand-written", hand)]
    if contain:
        subjects.append(("hand, contained", contained))
    return alternate(rounds, [*subjects, ("raw loop", raw)], verbose=verbose)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="values of N (default 100 400 2000)"
    )
    args = parser.parse_args()
    sizes = args.sizes or ([50] if args.quick else [100, 400, 2000])
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"command gates: N trivial gates vs hand-written tests vs raw loop, {rounds} rounds")
    results: dict[int, dict[str, Series]] = {}
    with workdir("command", keep=args.keep) as base:
        for n in sizes:
            results[n] = measure(n, rounds, base, verbose=not args.quiet)

    rows = []
    for n, series in results.items():
        for name, s in series.items():
            rows.append([n, name, s.median, s.spread, s.median / n * 1000, s.cpu, s.peak_rss])
    print()
    headers = ["N", "subject", "median s", "min-max s", "ms/item", "CPU s", "peak RSS MiB"]
    print(table(headers, rows))

    rows = []
    for n, series in results.items():
        p, h, r = (series[k].median for k in ("plugin", "hand-written", "raw loop"))
        cpu = ratio(series["plugin"].cpu, series["hand-written"].cpu)
        target = verdict(ratio(p, h), 1.10, at_most=True)
        off = ratio(series["plugin off"].median, h)
        peer = series.get("hand, contained")
        c = peer.median if peer else float("nan")
        rows.append([n, ratio(p, h), cpu, off, ratio(p, c), ratio(h, r), ratio(p, r), target,
                     verdict(ratio(p, c), 1.25, at_most=True)])  # fmt: skip
    print()
    headers = ["N", "plugin/hand", "(CPU)", "off/hand", "plugin/contained", "hand/raw",
               "plugin/raw", "plugin/hand <= 1.10", "plugin/contained <= 1.25"]  # fmt: skip
    print(table(headers, rows))

    if len(sizes) > 1:
        rows = []
        ordered = sorted(results)
        for lo, hi in itertools.pairwise(ordered):
            row: list[object] = [f"{lo}->{hi}"]
            for name in ("plugin", "plugin off", "hand-written", "raw loop"):
                if name not in results[hi]:
                    row.append(float("nan"))
                    continue
                slope = (results[hi][name].median - results[lo][name].median) / (hi - lo)
                row.append(slope * 1000)
            p_slope = results[hi]["plugin"].median - results[lo]["plugin"].median
            h_slope = results[hi]["hand-written"].median - results[lo]["hand-written"].median
            row.append(ratio(p_slope, h_slope))
            rows.append(row)
        print()
        print("marginal cost per item between sizes (equal rows = linear in N):")
        print(
            table(
                [
                    "sizes",
                    "plugin ms/item",
                    "off ms/item",
                    "hand ms/item",
                    "raw ms/item",
                    "plugin/hand marginal",
                ],
                rows,
            )
        )


if __name__ == "__main__":
    main()
