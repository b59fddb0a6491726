"""pytest-xdist: 24 gates that each sleep 0.5 s, serial vs ``-n 4``.

The gates wait, they do not compute, so four workers should overlap them even on two
cores: the ideal ratio is 4 (12 s vs 3 s), less the cost of starting the workers.
Also runs the same 24 sleeps as hand-written tests, serial and ``-n 4``, for reference,
and ``-n 4`` on one empty test: the cost of starting the workers, which bounds the ratio
(serial / (startup + the sleeps / 4)).

    python bench/xdist.py            # 24 gates, 3 rounds
    python bench/xdist.py --quick    # 8 gates of 0.25 s, 1 round
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
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

HAND = """\
import subprocess

import pytest


@pytest.mark.parametrize("i", range({n}))
def test_sleep(i):
    subprocess.run(["sleep", "{seconds}"], capture_output=True, timeout=60)
"""


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("-n", type=int, default=None, help="gates (default 24)")
    parser.add_argument("--sleep", type=float, default=None, help="seconds per gate (0.5)")
    parser.add_argument("--workers", type=int, default=4, help="xdist workers (default 4)")
    parser.add_argument("--no-hand", action="store_true", help="skip the hand-written tests")
    args = parser.parse_args()
    n = args.n or (8 if args.quick else 24)
    seconds = args.sleep or (0.25 if args.quick else 0.5)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    workers = str(args.workers)
    header(f"xdist: {n} gates sleeping {seconds:g} s, serial vs -n {workers}, {rounds} rounds")
    env = clean_env()
    with workdir("xdist", keep=args.keep) as base:
        gdir, hdir = base / "gates", base / "hand"
        gdir.mkdir()
        hdir.mkdir()
        (gdir / "gates.yaml").write_text(gates_yaml([f"sleep {seconds:g}"] * n))
        (hdir / "test_hand.py").write_text(HAND.format(n=n, seconds=f"{seconds:g}"))
        edir = base / "empty"
        edir.mkdir()
        (edir / "test_empty.py").write_text("def test_nothing():\n    pass\n")
        common = ["-p", "no:cacheprovider", "-q"]

        def gates(*extra: str) -> Run:
            argv = pytest_argv("--vgate", "gates.yaml", *common, *extra)
            return run_child(argv, cwd=gdir, env=env).check(what="gates")

        def hand(*extra: str) -> Run:
            argv = pytest_argv("test_hand.py", *common, *extra)
            return run_child(argv, cwd=hdir, env=env).check(what="hand-written")

        subjects = [
            ("gates serial", lambda: gates("-p", "no:xdist")),
            (f"gates -n {workers}", lambda: gates("-n", workers)),
        ]
        if not args.no_hand:
            subjects += [
                ("hand serial", lambda: hand("-p", "no:xdist")),
                (f"hand -n {workers}", lambda: hand("-n", workers)),
            ]

        def startup() -> Run:
            argv = pytest_argv("test_empty.py", *common, "-n", workers)
            return run_child(argv, cwd=edir, env=env).check(what="xdist startup")

        subjects.append((f"-n {workers}, one empty test", startup))
        series = alternate(rounds, subjects, verbose=not args.quiet)
    rows = [[name, s.median, s.spread, s.cpu, s.peak_rss] for name, s in series.items()]
    print()
    print(table(["subject", "median s", "min-max s", "CPU s", "peak RSS MiB"], rows))
    g = ratio(series["gates serial"].median, series[f"gates -n {workers}"].median)
    rows = [["gates serial / -n " + workers, g, ">= 3.0", verdict(g, 3.0, at_most=False)]]
    if not args.no_hand:
        h = ratio(series["hand serial"].median, series[f"hand -n {workers}"].median)
        rows.append(["hand serial / -n " + workers, h, "-", ""])
    print()
    print(table(["ratio", "value", "target", ""], rows))
    start = series[f"-n {workers}, one empty test"].median
    bound = ratio(series["gates serial"].median, start + n * seconds / args.workers)
    print(f"(ideal: {n * seconds:g} s serial, {n * seconds / args.workers:g} s on {workers})")
    print(
        f"worker startup here: {start:.2f} s, so serial / -n {workers} can reach at most "
        f"{bound:.2f} on this machine now"
    )


if __name__ == "__main__":
    main()
