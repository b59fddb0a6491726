"""Python verifiers with process isolation vs the same functions as plain tests.

A test module with N ``@verifier`` functions that return True (default isolation:
``process``, a forkserver child per call) against a module with the same N functions
written as plain tests. Both run through ``python -m pytest`` (and, with
``--console-script``, also through the ``pytest`` script, whose top level every
forkserver child re-runs on Python < 3.12; see docs/verifiers.md). The per-verifier
overhead is (plugin - plain) / N. The isolation method's floor is measured in a clean
process: a bare forkserver ``Process`` start+join (also with the server preloading
pytest, as ours does in a pytest session), the job round trip to a child started ahead
(what a call waits for when the plugin's spare child is ready), and a bare ``os.fork`` +
``waitpid``.

    python bench/verifiers.py              # N = 100, 3 rounds
    python bench/verifiers.py --quick      # N = 20, 1 round
    python bench/verifiers.py -n 500 --console-script
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
    Series,
    alternate,
    base_parser,
    clean_env,
    header,
    pytest_argv,
    ratio,
    run_child,
    table,
    verdict,
    workdir,
)

VERIFIER = """
@verifier
def check_{i}():
    return True
"""

PLAIN = """
def test_check_{i}():
    assert _check() is True
"""

FLOOR = r"""
# Kept light at the top: on Python < 3.12 every forkserver child re-runs this script's
# top level (multiprocessing's main-module fixup), which would otherwise be measured.
import multiprocessing, os, sys, time


def noop():
    pass


def answer(conn):
    conn.recv()
    conn.send(True)


def main(calls, preload):
    import json, statistics

    out = {}
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", *preload])
    times = []
    for _ in range(calls + 1):
        t = time.perf_counter()
        p = ctx.Process(target=noop)
        p.start()
        p.join()
        times.append(time.perf_counter() - t)
    out["forkserver_first"] = times[0]
    out["forkserver"] = statistics.median(times[1:])
    times = []
    for _ in range(calls):  # a child started ahead, waiting: job round trip + exit
        ours, theirs = ctx.Pipe()
        p = ctx.Process(target=answer, args=(theirs,))
        p.start()
        theirs.close()
        time.sleep(0.005)
        t = time.perf_counter()
        ours.send(None)
        ours.recv()
        times.append(time.perf_counter() - t)
        p.join()
    out["spare"] = statistics.median(times)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - t)
    out["fork"] = statistics.median(times)
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
"""


def floors(base: Path, calls: int, preload: tuple[str, ...] = ()) -> dict[str, float]:
    script = base / "floor.py"
    script.write_text(FLOOR)
    argv = [sys.executable, str(script), str(calls), *preload]
    run = run_child(argv, cwd=base, env=clean_env())
    run.check(what="isolation floor")
    return json.loads(run.output.strip().splitlines()[-1])


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("-n", type=int, default=None, help="verifiers per run (default 100)")
    parser.add_argument(
        "--console-script",
        action="store_true",
        help="also run the verifiers through the `pytest` console script",
    )
    parser.add_argument("--floor-calls", type=int, default=200, help="calls per floor median")
    args = parser.parse_args()
    n = args.n or (20 if args.quick else 100)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"verifiers: {n} process-isolated verifiers vs {n} plain tests, {rounds} rounds")
    env = clean_env()
    common = ["-p", "no:cacheprovider", "-q"]
    with workdir("verifiers", keep=args.keep) as base:
        vdir, pdir = base / "verifiers", base / "plain"
        vdir.mkdir()
        pdir.mkdir()
        head = "import pytest\n\nfrom pytest_vgate import verifier\n"
        (vdir / "test_verifiers.py").write_text(
            head + "".join(VERIFIER.format(i=i) for i in range(n))
        )
        plain = "import pytest\n\n\ndef _check():\n    return True\n"
        (pdir / "test_plain.py").write_text(plain + "".join(PLAIN.format(i=i) for i in range(n)))

        def verifiers() -> Run:
            argv = pytest_argv("test_verifiers.py", *common)
            return run_child(argv, cwd=vdir, env=env).check(what="verifiers")

        def script() -> Run:
            argv = pytest_argv("test_verifiers.py", *common, console_script=True)
            return run_child(argv, cwd=vdir, env=env).check(what="verifiers (console script)")

        def plain_tests() -> Run:
            argv = pytest_argv("test_plain.py", *common)
            return run_child(argv, cwd=pdir, env=env).check(what="plain tests")

        subjects = [("verifiers (-m pytest)", verifiers), ("plain tests", plain_tests)]
        if args.console_script:
            subjects.append(("verifiers (pytest script)", script))
        series: dict[str, Series] = alternate(rounds, subjects, verbose=not args.quiet)
        calls = 20 if args.quick else args.floor_calls
        floor = floors(base, calls)
        floor_pytest = floors(base, calls, ("pytest",))

    plain_s = series["plain tests"]
    rows = []
    for name, s in series.items():
        over = (s.median - plain_s.median) / n * 1000 if s is not plain_s else 0.0
        rows.append([name, s.median, s.spread, s.median / n * 1000, over, s.cpu, s.peak_rss])
    print()
    headers = [
        "subject",
        "median s",
        "min-max s",
        "ms/item",
        "overhead ms/item",
        "CPU s",
        "RSS MiB",
    ]
    print(table(headers, rows))
    print()
    v = series["verifiers (-m pytest)"]
    over = (v.median - plain_s.median) / n * 1000
    print(
        table(
            ["measure", "value"],
            [
                ["verifiers/plain (wall)", ratio(v.median, plain_s.median)],
                ["per-verifier overhead ms (-m pytest)", over],
                ["target <= 5 ms", verdict(over, 5.0, at_most=True)],
                ["floor: forkserver Process start+join ms", floor["forkserver"] * 1000],
                [
                    "floor: the same, server preloaded with pytest ms",
                    floor_pytest["forkserver"] * 1000,
                ],
                [
                    "floor: forkserver first call (server start) ms",
                    floor["forkserver_first"] * 1000,
                ],
                [
                    "floor: job round trip to a child started ahead ms",
                    floor_pytest["spare"] * 1000,
                ],
                ["floor: os.fork + waitpid ms", floor["fork"] * 1000],
            ],
        )
    )


if __name__ == "__main__":
    main()
