"""The fixed start and the per-gate slope of a ``--vgate-base`` session, against two runs.

On the toolz release pair of ``real_pr.py`` (0.12.0 -> 0.12.1, built from the package
index into a two-commit repository), in alternating rounds:

- **two runs** (the anchor, bench/_two_runs.py): the node ids once on a base worktree with
  the head's test file copied in, once on the head;
- **vgate**: ``pytest --vgate GATES --vgate-only --vgate-base HEAD~1``, default settings;
- with ``--against PYTHON``: the same session with another tree's interpreter (its venv's
  ``bin`` first on PATH, so its checks run that tree too): before and after in the same
  rounds.

Sizes: ``pr`` is the gate ``--vgate-init`` writes for the pair (the fixed start); a number N
is the first N tests of the pair's test file as regression gates (``real_pr.scaled_gates``),
for the slope per gate. Printed: medians of wall and CPU time (user + system of the session
and every process it reaped), each subject's excess over the two runs, and the slopes
between the first and the last numeric size. Usage::

    python bench/fixed_start.py --rounds 7                       # pr, 1 and 50 gates
    python bench/fixed_start.py --sizes pr --against ../before/.venv/bin/python
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from _common import (
    BENCH_DIR,
    Run,
    alternate,
    base_parser,
    clean_env,
    header,
    run_child,
    table,
    workdir,
)
from real_pr import PAIRS, build_pair, nodes_of, scaled_gates

PAIR = "toolz"


def vgate(python: str, repo: Path, gates: str) -> Callable[[], Run]:
    """The session with ``python`` (its venv's bin first on PATH, for the checks too)."""
    path = f"{Path(python).parent}:{clean_env().get('PATH', '')}"
    env = clean_env(PATH=path)
    argv = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--vgate", gates,
            "--vgate-only", "--vgate-base", "HEAD~1"]  # fmt: skip

    def run() -> Run:
        shutil.rmtree(repo / ".vgate", ignore_errors=True)
        return run_child(argv, cwd=repo, env=env).check((0, 1), what=f"vgate {python}")

    return run


def two_runs(repo: Path, gates: str) -> Callable[[], Run]:
    nodes, overlay = nodes_of(repo / gates)
    copies = [arg for path in overlay for arg in ("--copy", path)]
    argv = [sys.executable, str(BENCH_DIR / "_two_runs.py"), str(repo), "HEAD~1", *copies,
            "--", *nodes]  # fmt: skip
    env = clean_env(PATH=f"{Path(sys.executable).parent}:{clean_env().get('PATH', '')}")
    return lambda: run_child(argv, cwd=repo, env=env).check((0, 1), what="two runs")


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=5)
    parser.add_argument("--sizes", nargs="*", default=["pr", "1", "50"])
    parser.add_argument("--against", help="another tree's Python: its session in the same rounds")
    parser.add_argument("--cache", type=Path, help="a folder for the downloaded sdists")
    args = parser.parse_args()
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"fixed start and slope: vgate --vgate-base vs two runs on {PAIR}, {rounds} rounds")
    names = ["vgate", *(["vgate (against)"] if args.against else [])]
    rows: list[list[object]] = []
    numeric: list[tuple[int, dict[str, tuple[float, float]]]] = []
    with workdir("fixed-start", keep=args.keep) as work:
        cache = args.cache or work / "sdists"
        cache.mkdir(exist_ok=True)
        repo = build_pair(work, cache, PAIR)
        pythons = [sys.executable, *([os.path.abspath(args.against)] if args.against else [])]
        for size in args.sizes:
            if size == "pr":
                init = run_child([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                  "--vgate-init", "HEAD~1", "--vgate-init-out", "gates.yaml"],
                                 cwd=repo, env=clean_env())  # fmt: skip
                init.check(what="--vgate-init")
                gates = "gates.yaml"
            else:
                gates = f"scale-{size}.yaml"
                (repo / gates).write_text(scaled_gates(repo, PAIRS[PAIR][3], int(size)))
            runs = [("two runs", two_runs(repo, gates))]
            runs += [(n, vgate(py, repo, gates)) for n, py in zip(names, pythons, strict=True)]
            series = alternate(rounds, runs, verbose=not args.quiet)
            anchor = series["two runs"]
            row: list[object] = [size, anchor.median, anchor.cpu]
            for name in names:
                s = series[name]
                row += [s.median, s.cpu, s.median - anchor.median, s.cpu - anchor.cpu]
            rows.append(row)
            if size != "pr":
                numeric.append(
                    (int(size), {n: (s.median, s.cpu) for n, s in series.items()})
                )  # fmt: skip
    print()
    cols = ["gates", "two runs s", "two runs CPU s"]
    for name in names:
        cols += [f"{name} s", f"{name} CPU s", f"{name} - two runs s", f"{name} - two runs CPU s"]
    print(table(cols, rows))
    if len(numeric) >= 2 and numeric[-1][0] > numeric[0][0]:
        (n0, first), (n1, last) = numeric[0], numeric[-1]
        print(f"\nper gate from {n0} to {n1} gates (wall, CPU):")
        anchor = [(last["two runs"][i] - first["two runs"][i]) / (n1 - n0) for i in (0, 1)]
        for name in ("two runs", *names):
            slope = [(last[name][i] - first[name][i]) / (n1 - n0) for i in (0, 1)]
            ratios = [s / a if a > 0 else float("nan") for s, a in zip(slope, anchor, strict=True)]
            print(f"  {name:<16} {slope[0] * 1000:6.1f} ms, {slope[1] * 1000:6.1f} ms CPU"
                  f"  (x{ratios[0]:.2f}, x{ratios[1]:.2f} the two runs')")  # fmt: skip


if __name__ == "__main__":
    main()
