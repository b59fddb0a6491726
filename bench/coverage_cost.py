"""The cost of evidence by execution: ``--vgate-coverage on`` against ``off``.

A real library and a real bug fix: a git clone of more-itertools (``--library PATH``, any
clone of https://github.com/more-itertools/more-itertools) at commit 0e6acdf ("Raise a
clear ValueError for negative n in chunked()"), with ``--vgate-base`` its parent. The gates
run the library's own tests (the fix's test, a test class, the whole of test_more.py and
test_recipes.py, pytest and unittest). Both sides run the same session, ``--vgate-base``
included; only ``--vgate-coverage`` differs. Rounds alternate on/off. The engine is the
one of the Python that runs the bench (``sys.monitoring`` on 3.12+, ``sys.settrace``
before): run it with each. ``--with-tracer`` adds a third subject on 3.12+: coverage on,
measured with the ``sys.settrace`` engine (the one 3.10 and 3.11 use) in every process.

    python bench/coverage_cost.py --library ~/src/more-itertools
    python bench/coverage_cost.py --library ~/src/more-itertools --quick
    python3.12 bench/coverage_cost.py --library ~/src/more-itertools --with-tracer

``--regression PYTHON ...`` times instead one solo check the way a regression gate's run
is measured (it never executes the lines it is judged on, so a tracer before 3.12 stays
to the end): ``PYTHON -m pytest tests/test_recipes.py`` and one test of it, in
``--library`` (any copy of more-itertools, an sdist will do), unmeasured, measured
(``auto``) and measured by the Python tracer (``settrace``), each PYTHON in the same
alternating rounds:

    python bench/coverage_cost.py --library /tmp/more_itertools-11.1.0 \
        --regression python3.10 python3.11 --rounds 5
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
    alternate,
    base_parser,
    clean_env,
    header,
    median,
    pytest_argv,
    ratio,
    run_child,
    table,
    verdict,
    workdir,
)

FIX = "0e6acdf9b60765ecf9634d6f5c132ac1bebc616b"
LEAN = '{set: {PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}'
TRACER_PLUGIN = '''"""Bench only: measure with the sys.settrace engine in every process."""
import dataclasses

from pytest_vgate.gate import result as gate_result

_measure_change = gate_result.measure_change


def _settrace_only(change, side):
    return dataclasses.replace(_measure_change(change, side), engine="settrace")


gate_result.measure_change = _settrace_only
'''


def gates(python: str) -> str:
    pytest = f"{python} -m pytest -q -p no:cacheprovider"
    return f"""
gates:
  - id: chunked-negative
    claim: chunked() rejects a negative n with a clear ValueError
    check: {pytest} tests/test_more.py::ChunkedTests::test_negative
    env: {LEAN}
    overlay: [tests/]
  - id: chunked-class
    claim: every chunked() test passes
    check: {pytest} tests/test_more.py -k ChunkedTests
    env: {LEAN}
    overlay: [tests/]
  - id: chunked-unittest
    claim: every chunked() test passes under unittest
    check: {python} -m unittest -q tests.test_more.ChunkedTests
    overlay: [tests/]
  - id: test-more
    claim: all of test_more.py passes
    check: {pytest} tests/test_more.py
    env: {LEAN}
    overlay: [tests/]
    timeout: 900
  - id: recipes
    claim: the recipes still pass
    check: {pytest} tests/test_recipes.py
    env: {LEAN}
    red: not-required
    timeout: 900
"""


def regression(library: Path, pythons: list[str], rounds: int, quiet: bool) -> None:
    """A regression gate's solo run, measured and not: the judged line never runs."""
    import os
    import time

    from pytest_vgate.context import RunContext
    from pytest_vgate.gate.runner import run_check
    from pytest_vgate.gatesfile import gate_from_mapping
    from pytest_vgate.process.measure import MEASURED_KEY, MeasureSpec

    more = os.path.realpath(library / "more_itertools" / "more.py")
    blank = next(n for n, t in enumerate(Path(more).read_text().splitlines(), 1) if not t)
    checks = {"test_recipes.py": "tests/test_recipes.py",
              "one test": "tests/test_recipes.py::TakeTests::test_simple_take"}  # fmt: skip
    rows = []
    for python in pythons:
        for label, target in checks.items():
            gate = gate_from_mapping(
                {"id": "g", "check": f"{python} -m pytest -q -p no:cacheprovider {target}",
                 "env": {"set": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}}, "timeout": 900},
                root=library,
            )  # fmt: skip
            engines = {"unmeasured": None, "auto": "auto", "settrace": "settrace"}
            if label != "one test":  # the Python tracer on a whole file: minutes a round
                engines = {"unmeasured": None, "auto": "auto"}
            times: dict[str, list[float]] = {name: [] for name in engines}
            seen = ""
            for r in range(rounds):
                names = list(engines)[r % len(engines) :] + list(engines)[: r % len(engines)]
                for name in names:
                    engine = engines[name]
                    spec = None
                    if engine is not None:
                        spec = MeasureSpec((more,), lines=((more, (blank,)),), engine=engine)
                    started = time.perf_counter()
                    verdict = run_check(gate, RunContext(root=library, measure=spec))
                    times[name].append(time.perf_counter() - started)
                    found = verdict.extra.get(MEASURED_KEY)
                    if found is not None and name == "auto":
                        seen = f"{found.engines[0]}, measured {found.measured}"
                    if not quiet:
                        print(f"  {python} {label} {name:<10} {times[name][-1]:7.2f} s", flush=True)
            base = median(times["unmeasured"])
            slow = median(times.get("settrace", []))
            rows.append([python, label, base, median(times["auto"]), slow,
                         ratio(median(times["auto"]), base), ratio(slow, base), seen])  # fmt: skip
    print()
    heads = ["python", "check", "unmeasured s", "auto s", "settrace s", "auto/unmeasured",
             "settrace/unmeasured", "auto engine"]  # fmt: skip
    print(table(heads, rows))


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("--library", type=Path, required=True, help="a more-itertools clone")
    parser.add_argument(
        "--with-tracer", action="store_true", help="also time the sys.settrace engine (3.12+)"
    )
    parser.add_argument("--regression", nargs="+", metavar="PYTHON", help="see the docstring")
    args = parser.parse_args()
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    if args.regression:
        header(f"a regression gate's solo run, measured and not, {rounds} rounds")
        regression(args.library.resolve(), args.regression, rounds, args.quiet)
        return
    if args.with_tracer and sys.version_info < (3, 12):
        parser.error("--with-tracer compares the engines of Python 3.12+: sys.settrace is all")
    engine = "sys.monitoring" if sys.version_info >= (3, 12) else "sys.settrace"
    header(
        f"coverage cost: more-itertools gates with --vgate-base, on vs off, {rounds} rounds, "
        f"Python {sys.version.split()[0]} ({engine})"
    )
    with workdir("coverage", keep=args.keep) as base:
        repo = base / "more-itertools"
        subprocess.run(
            ["git", "clone", "-q", "--no-hardlinks", str(args.library), str(repo)], check=True
        )
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", FIX], check=True)
        (repo / "gates.yaml").write_text(gates(sys.executable))
        (base / "plugins").mkdir()
        (base / "plugins" / "vgate_tracer_engine.py").write_text(TRACER_PLUGIN)
        env = clean_env()

        def session(mode: str, tracer: bool = False) -> Run:
            shutil.rmtree(repo / ".vgate", ignore_errors=True)
            argv = pytest_argv(
                "-p", "no:cacheprovider", "-q", "gates.yaml", "--vgate", "gates.yaml",
                "--vgate-base", "HEAD~1", "--vgate-coverage", mode,
                *(("-p", "vgate_tracer_engine") if tracer else ()),
            )  # fmt: skip
            run_env = {**env, "PYTHONPATH": str(base / "plugins")} if tracer else env
            # test-more is never-red on the base (the fix's own test aside, it passes
            # there): the session fails by design; the bench times it.
            return run_child(argv, cwd=repo, env=run_env).check((0, 1), what=f"coverage {mode}")

        subjects = [
            ("coverage on", lambda: session("on")),
            ("coverage off", lambda: session("off")),
        ]
        if args.with_tracer:
            subjects.append(("coverage on, settrace", lambda: session("on", tracer=True)))
        series = alternate(rounds, subjects, verbose=not args.quiet)
        last = run_child(
            pytest_argv("-p", "no:cacheprovider", "-q", "gates.yaml", "--vgate", "gates.yaml",
                        "--vgate-base", "HEAD~1", "-rN"),
            cwd=repo, env=env,
        )  # fmt: skip
    on, off = series["coverage on"], series["coverage off"]
    rows = [[s.name, s.median, s.spread, s.cpu, s.peak_rss] for s in series.values()]
    print()
    print(table(["subject", "median s", "min-max s", "CPU s", "peak RSS MiB"], rows))
    slow = ratio(on.median, off.median)
    ratios = [[slow, ratio(on.cpu, off.cpu), verdict(slow, 1.5, at_most=True)]]
    heads = ["on/off wall", "on/off CPU", "on/off <= 1.5"]
    if args.with_tracer:
        tracer = series["coverage on, settrace"]
        ratios[0] += [ratio(tracer.median, off.median), ratio(tracer.cpu, off.cpu)]
        heads += ["settrace/off wall", "settrace/off CPU"]
    print()
    print(table(heads, ratios))
    print("\nthe table of the last (coverage on) session:")
    print(last.output)


if __name__ == "__main__":
    main()
