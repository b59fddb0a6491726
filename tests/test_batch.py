"""``--vgate-batch auto`` gives every gate the verdict ``--vgate-batch off`` gives.

Real sessions with ``--vgate-base`` on a real two-commit repository (``helpers.batch_repo``),
once with batches and once with every gate alone, compared gate by gate: mode, cause,
red-before-green status, coverage status, exit codes on both sides, discrimination, and
the session's exit status. The faults a batch must survive (a node that segfaults, one that
hangs on the base, a file that does not collect, a node id that does not exist) fall back
to solo runs, which say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.batch_repo import (
    BROKEN,
    CRASH,
    GATES,
    HANGS,
    PYTEST,
    make_batch_repo,
    pytest_gate,
    session,
)
from helpers.measure import include_for

from pytest_vgate.context import RunContext
from pytest_vgate.gate.batch import attribute, pytest_call, run_batch
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.process.measure import MEASURED_KEY

SLOW_BOUND = 1800  # seconds: two sessions of several gates, a hang bound only
BATCHED = "in a batch of"  # what a verdict taken from a batch says in its output


def verdicts(gates: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What must not depend on batching, per gate."""
    out = {}
    for gate_id, g in gates.items():
        base = g.get("base") or {}
        disc = g.get("discrimination") or {}
        out[gate_id] = (
            g["mode"],
            g["cause"],
            g["rbg"],
            (g.get("coverage") or {}).get("status"),
            g["exit_code"],
            base.get("mode"),
            base.get("exit_code"),
            disc.get("status"),
            disc.get("killed"),
            disc.get("planted"),
        )
    return out


def both(
    tmp_path: Path, gates: str, extra: dict[str, str] | None = None, *args: str
) -> tuple[tuple[int, dict[str, dict[str, Any]], str], tuple[int, dict[str, dict[str, Any]], str]]:
    """The same session with batches off, then on, in one repository."""
    repo = make_batch_repo(tmp_path, gates=gates, extra=extra)
    off = session(repo.root, repo.bug_sha, "off", "--vgate-batch=off", *args)
    auto = session(repo.root, repo.bug_sha, "auto", "--vgate-batch=auto", *args)
    return off, auto


def assert_same(
    off: tuple[int, dict[str, Any], str], auto: tuple[int, dict[str, Any], str]
) -> None:
    assert verdicts(auto[1]) == verdicts(off[1]), auto[2]
    assert auto[0] == off[0], auto[2]


@pytest.mark.timeout(SLOW_BOUND)
def test_batches_give_the_verdicts_of_solo_runs(tmp_path: Path, dist_args: list[str]) -> None:
    off, auto = both(tmp_path, GATES, None, *dist_args)
    assert_same(off, auto)
    gates = auto[1]
    # The batch did run them: both sides of every gate came from it.
    for gate_id in ("add", "add-zero", "two-files", "basic-file", "never-red", "fails-now"):
        assert BATCHED in gates[gate_id]["stdout"], gates[gate_id]["stdout"]
        assert BATCHED in gates[gate_id]["base"]["stdout"], gates[gate_id]["base"]
        assert BATCHED not in off[1][gate_id]["stdout"]
    # and the verdicts are the interesting ones, not all alike
    assert {g["rbg"] for g in gates.values()} >= {"proven", "never-red"}
    assert gates["fails-now"]["mode"] == "fail" and gates["fails-now"]["exit_code"] == 1
    assert gates["two-files"]["coverage"]["status"] == "covers"
    assert gates["never-red"]["coverage"]["status"] == "misses"  # its own lines, not add's
    assert gates["add"]["discrimination"]["status"] == "discriminating"
    # The base's failures as Python prints them (a batch's), as pytest does (a solo run's).
    assert "AssertionError: assert -1 == 5" in gates["add"]["base"]["stdout"], gates["add"]
    assert "E       assert -1 == 5" in off[1]["add"]["base"]["stdout"], off[1]["add"]


CRASH_GATE = pytest_gate("crash", "tests/test_crash.py::test_crash")
BROKEN_GATE = pytest_gate("broken", "tests/test_broken.py::test_never")
FAULTS: dict[str, tuple[str, dict[str, str] | None]] = {
    "segfault": (CRASH_GATE, {"tests/test_crash.py": CRASH}),
    "hang-on-base": (HANGS, None),
    "collection-error": (BROKEN_GATE, {"tests/test_broken.py": BROKEN}),
    "no-such-node": (pytest_gate("missing", "tests/test_add.py::test_nope"), None),
}


@pytest.mark.slow
@pytest.mark.timeout(SLOW_BOUND)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_batch_that_cannot_answer_falls_back_to_solo_runs(tmp_path: Path, fault: str) -> None:
    gates, extra = FAULTS[fault]
    off, auto = both(tmp_path, GATES + gates, extra, "--vgate-mutate=off")
    assert_same(off, auto)
    # Whoever ran alone says so, and why.
    alone = [g for g in auto[1].values() if "alone:" in g["rbg_reason"]]
    assert alone, auto[2]
    faulty = next(iter(set(auto[1]) - set(make_ids(GATES))))
    assert "alone:" in auto[1][faulty]["rbg_reason"], auto[1][faulty]["rbg_reason"]


def make_ids(gates: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in gates.splitlines() if "- id:" in line]


@pytest.mark.parametrize(
    ("check", "batchable"),
    [
        ("python -m pytest -q -p no:cacheprovider tests/t.py::test_a", True),
        ("pytest -q --tb=short tests/t.py::C::test_a tests/u.py", True),
        ("python -m pytest -x tests/t.py::test_a", False),  # stops at the first failure
        ("python -m pytest -k add tests/t.py", False),  # selects by expression
        ("python -m pytest -n 2 tests/t.py", False),  # its own workers
        ("python -m pytest", False),  # no node ids
        ("python -m pytest /abs/t.py", False),
        ("python -c 'import pytest'", False),
        ("python -m unittest tests.t", False),
    ],
)
def test_which_checks_a_batch_can_run(check: str, batchable: bool) -> None:
    gate = gate_from_mapping({"id": "g", "check": check}, root=Path.cwd())
    assert (pytest_call(gate) is not None) is batchable


NODES = """\
import subprocess
import sys

from pkg.m import f, g


def test_a():
    f(1)


def test_b():
    f(2)
    g()


def test_c():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""


def measured_batch(
    root: Path, names: str, conftest: str = ""
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each gate's measurement (or why it runs alone) from one measured batch of ``names``."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "m.py").write_text("def f(x):\n    return x + 1\n\n\ndef g():\n    return 0\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_m.py").write_text(NODES)
    (root / "conftest.py").write_text(conftest)
    gates = [
        gate_from_mapping({"id": name, "check": f"{PYTEST} tests/test_m.py::test_{name}",
                           "env": {"set": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}}}, root=root)
        for name in names
    ]  # fmt: skip
    ctx = RunContext(root=root, measure=include_for([root]))
    found = attribute(gates, ctx, run_batch(gates, ctx))
    return {g: v.extra[MEASURED_KEY] for g, v in found.verdicts.items() if v}, dict(found.why)


def test_the_batch_measures_each_node_on_its_own(tmp_path: Path) -> None:
    """A line two nodes run belongs to both; collection's lines (the module body) to every
    gate; a node that starts a Python process the batch cannot see runs alone."""
    measured, why = measured_batch(tmp_path, "abc")
    m = str(tmp_path / "pkg" / "m.py")
    assert measured["a"].measured and measured["a"].files[m] == {1, 2, 5}
    assert measured["b"].files[m] == {1, 2, 5, 6}  # line 2 again: each node its own
    assert "c" not in measured
    assert "started a Python process" in why["c"], why


def test_a_batch_where_coverage_is_already_running_is_not_measured(tmp_path: Path) -> None:
    """The user's coverage.py (started by a conftest, as pytest-cov does) keeps its own
    numbers; the batch's gates run alone, and say why."""
    start = "import coverage\n\ncoverage.Coverage(data_file=None).start()\n"
    measured, why = measured_batch(tmp_path, "ab", conftest=start)
    assert measured == {}
    assert all("another tracer took the slot" in why[g] for g in "ab"), why


FAILING = "def test_red():\n    assert 1 + 1 == 3\n"


@pytest.mark.parametrize(
    ("own", "printed"),
    [
        ("", 'Traceback (most recent call last):\n  File "'),  # Python's own form
        ("--tb=short", "E   assert (1 + 1) == 3"),  # the check's choice wins
    ],
)
def test_the_base_batch_prints_failures_as_python_does(
    tmp_path: Path, own: str, printed: str
) -> None:
    """pytest's styles parse each frame's file to show its statement; on the base, where
    failing is the point, the batch asks for Python's own traceback instead."""
    head, base = tmp_path / "head", tmp_path / "base"  # the gate's tree, and the base's
    for root in (head, base):
        root.mkdir()
        (root / "test_r.py").write_text(FAILING)
    check = f"{PYTEST} {own} test_r.py::test_red"
    gate = gate_from_mapping({"id": "g", "check": check}, root=head)
    for side in (base, head):
        ctx = RunContext(root=side)
        found = attribute([gate], ctx, run_batch([gate], ctx))
        verdict = found.verdicts["g"]
        assert verdict is not None and verdict.exit_code == 1, found.why
        assert (printed in verdict.stdout) is (side == base or bool(own)), verdict.stdout
