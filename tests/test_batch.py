"""``--vgate-batch auto`` gives every gate the verdict ``--vgate-batch off`` gives.

Real sessions with ``--vgate-base`` on a real two-commit repository (``helpers.batch_repo``),
once with batches and once with every gate alone, compared gate by gate: mode, cause,
red-before-green status, coverage status, exit codes on both sides, discrimination, and
the session's exit status. The faults a batch must survive (a node that segfaults, one that
hangs on the base, a file that does not collect, a node id that does not exist) fall back
to solo runs, which say so.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.batch_repo import BROKEN, CRASH, GATES, HANGS, make_batch_repo, pytest_gate, session

from pytest_vgate.context import RunContext
from pytest_vgate.gate.batch import pytest_call
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.process import bootstrap
from pytest_vgate.process.measure import MEASURED_KEY, Measured, include_for

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


def test_the_measurement_tells_each_node_its_own_lines(tmp_path: Path) -> None:
    """A batch marks each node's start (``bootstrap.NODE_EVENT``): a line two nodes run
    belongs to both, collection's lines to neither node."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(
        "def f(x):\n    return x + 1\n\n\ndef g():\n    return 0\n"
    )
    event = bootstrap.NODE_EVENT
    script = (
        f"import sys, pkg.m; sys.audit({event!r}, 'a'); pkg.m.f(1); "
        f"sys.audit({event!r}, 'b'); pkg.m.f(2); pkg.m.g()"
    )
    gate = gate_from_mapping(
        {"id": "g", "check": f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"},
        root=tmp_path,
    )
    verdict = run_check(gate, RunContext(root=tmp_path, measure=include_for([tmp_path])))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured) and measured.measured, measured
    m = str(tmp_path / "pkg" / "m.py")
    assert measured.nodes[""][m] == {1, 5}  # the module body: collection's
    assert measured.nodes["a"][m] == {2}
    assert measured.nodes["b"][m] == {2, 6}  # line 2 again: each node reports its own
    assert measured.files[m] == {1, 2, 5, 6}
