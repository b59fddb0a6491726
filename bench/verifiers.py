"""Python verifiers (a fresh process per call) vs the same functions as plain tests.

A test module with N ``@verifier`` functions that return True against a module with the
same N functions written as plain tests, at two sizes (N and 4N), all four subjects
alternating round by round through ``python -m pytest``. Two figures come out:

- **per-call overhead**: the slope, ((v(4N) - p(4N)) - (v(N) - p(N))) / 3N, what each
  further verifier costs over a plain test (fork from the module's zygote, job, answer,
  kill);
- **fixed overhead**: what is left at N, (v(N) - p(N)) - N * slope: starting the base
  zygote (a new interpreter importing pytest) and the module's zygote, once a session.

The floor is measured in a clean process that imported pytest: a bare ``os.fork`` +
``waitpid`` (what the zygote's fork of a child costs at least) and a socket round trip.

    python bench/verifiers.py              # N = 100 and 400, 3 rounds
    python bench/verifiers.py --quick      # N = 20 and 80, 1 round
    python bench/verifiers.py --against OTHER/.venv/bin/python   # and another tree's
                                           # plugin in the same rounds (an A/B)
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
import json, os, socket, statistics, sys, time
import pytest  # the zygote's children are forks of a process that imported pytest


def main(calls):
    out = {}
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - t)
    out["fork"] = statistics.median(times)
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        ours.close()
        while theirs.recv(16):
            theirs.send(b"x")
        os._exit(0)
    theirs.close()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        ours.send(b"x")
        ours.recv(16)
        times.append(time.perf_counter() - t)
    ours.close()
    os.waitpid(pid, 0)
    out["round_trip"] = statistics.median(times)
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]))
"""


def floors(base: Path, calls: int) -> dict[str, float]:
    script = base / "floor.py"
    script.write_text(FLOOR)
    run = run_child([sys.executable, str(script), str(calls)], cwd=base, env=clean_env())
    run.check(what="isolation floor")
    return json.loads(run.output.strip().splitlines()[-1])


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("-n", type=int, default=None, help="verifiers per run (default 100)")
    parser.add_argument("--floor-calls", type=int, default=200, help="calls per floor median")
    parser.add_argument(
        "--against",
        metavar="PYTHON",
        help="also run the verifiers with this interpreter (another tree's venv) in the "
        "same rounds; its slopes are reported against the same plain tests",
    )
    args = parser.parse_args()
    n = args.n or (20 if args.quick else 100)
    sizes = (n, 4 * n)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"verifiers: N = {sizes[0]} and {sizes[1]} verifiers vs plain tests, {rounds} rounds")
    env = clean_env()
    common = ["-p", "no:cacheprovider", "-q"]
    subjects = []
    with workdir("verifiers", keep=args.keep) as base:
        for size in sizes:
            vdir, pdir = base / f"verifiers-{size}", base / f"plain-{size}"
            vdir.mkdir()
            pdir.mkdir()
            head = "import pytest\n\nfrom pytest_vgate import verifier\n"
            (vdir / "test_verifiers.py").write_text(
                head + "".join(VERIFIER.format(i=i) for i in range(size))
            )
            plain = "import pytest\n\n\ndef _check():\n    return True\n"
            (pdir / "test_plain.py").write_text(
                plain + "".join(PLAIN.format(i=i) for i in range(size))
            )

            def verifiers(where: Path = vdir) -> Run:
                argv = pytest_argv("test_verifiers.py", *common)
                return run_child(argv, cwd=where, env=env).check(what="verifiers")

            def plain_tests(where: Path = pdir) -> Run:
                argv = pytest_argv("test_plain.py", *common)
                return run_child(argv, cwd=where, env=env).check(what="plain tests")

            subjects += [(f"verifiers N={size}", verifiers), (f"plain N={size}", plain_tests)]
            if args.against:

                def against(where: Path = vdir, python: str = args.against) -> Run:
                    argv = [python, "-m", "pytest", "test_verifiers.py", *common]
                    return run_child(argv, cwd=where, env=env).check(what="--against")

                subjects.append((f"against N={size}", against))
        series: dict[str, Series] = alternate(rounds, subjects, verbose=not args.quiet)
        floor = floors(base, 20 if args.quick else args.floor_calls)

    rows = []
    for size in sizes:
        v, p = series[f"verifiers N={size}"], series[f"plain N={size}"]
        over = (v.median - p.median) / size * 1000
        for s in (v, p):
            extra = over if s is v else 0.0
            rows.append([s.name, s.median, s.spread, s.median / size * 1000, extra, s.cpu])
    print()
    headers = ["subject", "median s", "min-max s", "ms/item", "overhead ms/item", "CPU s"]
    print(table(headers, rows))
    print()
    small, large = sizes
    gap_small = series[f"verifiers N={small}"].median - series[f"plain N={small}"].median
    gap_large = series[f"verifiers N={large}"].median - series[f"plain N={large}"].median
    per_call = (gap_large - gap_small) / (large - small) * 1000
    fixed = gap_small - small * per_call / 1000
    cpu_small = series[f"verifiers N={small}"].cpu - series[f"plain N={small}"].cpu
    cpu_large = series[f"verifiers N={large}"].cpu - series[f"plain N={large}"].cpu
    cpu_per_call = (cpu_large - cpu_small) / (large - small) * 1000
    against = []
    if args.against:
        a_small = series[f"against N={small}"].median - series[f"plain N={small}"].median
        a_large = series[f"against N={large}"].median - series[f"plain N={large}"].median
        ac_small = series[f"against N={small}"].cpu - series[f"plain N={small}"].cpu
        ac_large = series[f"against N={large}"].cpu - series[f"plain N={large}"].cpu
        against = [
            [
                "--against: per-call overhead ms (slope)",
                (a_large - a_small) / (large - small) * 1000,
            ],
            [
                "--against: per-call overhead, CPU ms (slope)",
                (ac_large - ac_small) / (large - small) * 1000,
            ],
        ]
    v_large = series[f"verifiers N={large}"].median
    print(
        table(
            ["measure", "value"],
            [
                [
                    f"verifiers/plain (wall) N={large}",
                    ratio(v_large, series[f"plain N={large}"].median),
                ],
                ["per-call overhead ms (slope)", per_call],
                ["per-call overhead, CPU ms (slope)", cpu_per_call],
                ["fixed overhead s (zygotes' start)", fixed],
                [f"overhead per verifier at N={small} ms", gap_small / small * 1000],
                [
                    "target per call <= 3 ms (wall slope)",
                    verdict(per_call, 3.0, at_most=True) if per_call > 0 else "? (noise)",
                ],
                ["floor: os.fork + waitpid, pytest imported, ms", floor["fork"] * 1000],
                ["floor: socket round trip between processes ms", floor["round_trip"] * 1000],
                *against,
            ],
        )
    )


if __name__ == "__main__":
    main()
