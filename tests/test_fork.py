"""Mutants forked from the batch's head session give the verdicts solo runs give.

Real sessions on the repository of ``helpers.fork_repo`` (plain and under ``-n 2``), once
with ``--vgate-batch=off`` (every mutant a solo run in a private copy) and once with
batches (every mutant a fork: swapped functions, ``super()``, module code imported from its
mutated text), compared mutant by mutant. Faults in a forked mutant (a segfault, a hang,
``os._exit``) are judged as a solo run's; a check that notices the fork gains no kill; the
tree is never written, and a session killed in the middle of a mutant leaves nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.batch_repo import session
from helpers.fork_repo import FIXED, gates_text, make_calc_repo, pytest_gate
from helpers.gated_repo import PY_DIR
from helpers.git_repo import git
from helpers.procs import new_marker, survivors

SLOW_BOUND = 1800  # seconds: two sessions with mutants, a hang bound only


def mutants(gates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What must not depend on how mutants ran, per gate."""
    out = {}
    for gate_id, g in gates.items():
        disc = g.get("discrimination") or {}
        each = [
            (m["path"], m["line"], m["operator"], m["before"], m["after"], m["killed"], m["mode"])
            for m in disc.get("mutants", [])
        ]
        out[gate_id] = (g["rbg"], disc.get("status"), disc.get("killed"), disc.get("planted"), each)
    return out


def ways(gates: dict[str, dict[str, Any]]) -> set[str]:
    return {m["how"] for g in gates.values() for m in g["discrimination"]["mutants"]}


@pytest.mark.timeout(SLOW_BOUND)
def test_forked_and_solo_mutants_give_the_same_verdicts(
    tmp_path: Path, dist_args: list[str]
) -> None:
    root = make_calc_repo(tmp_path)
    log = tmp_path / "sessions.log"  # a line per pytest session (overlaid on the base too)
    (root / "tests" / "conftest.py").write_text(
        "import sys\n\n\ndef pytest_sessionstart(session):\n"
        f"    open({str(log)!r}, 'a').write(' '.join(sys.argv) + '\\n')\n"
    )
    (root / "gates.yaml").write_text(gates_text())
    base = git(root, "rev-parse", "HEAD~1")
    solo = session(root, base, "solo", "--vgate-batch=off", *dist_args)
    log.unlink()
    forked = session(root, base, "forked", *dist_args)
    assert mutants(forked[1]) == mutants(solo[1]), forked[2]
    assert forked[0] == solo[0] == 1, forked[2]
    assert ways(solo[1]) == {"solo"} and ways(forked[1]) == {"fork"}, forked[2]
    # The verdicts are the interesting ones: each road was taken, each kind of answer given.
    found = mutants(forked[1])
    assert found["runs-only"][1] == "undiscriminating"
    assert {found[g][1] for g in ("total", "scaled", "inverse", "box")} == {"discriminating"}
    modes = {m[6] for g in found.values() for m in g[4]}
    assert modes >= {"killed", "survived", "raised-in-change"}, found
    scaled = forked[1]["scaled"]["discrimination"]["mutants"]
    assert any(m["line"] == 1 and m["killed"] for m in scaled), scaled  # RATE = 2 -> 3
    # One head batch and one base batch for the whole session, under xdist too.
    batches = [line for line in log.read_text().splitlines() if "test_calc.py::" in line]
    assert len(batches) == 2, batches


CRASHES = """\
import os
import signal
import time

from pkg.calc import total


def test_total():
    value = total([1, 2])
    if value is None:
        {action}
    assert value == 3
"""
ACTIONS = {
    "segfault": ("os.kill(os.getpid(), signal.SIGSEGV)", "unknown"),
    "hang": ("time.sleep(300)", "timeout"),
    "exit": ("os._exit(3)", "killed"),  # (or what a solo run's exit 3 is: compared)
}


@pytest.mark.slow
@pytest.mark.timeout(SLOW_BOUND)
def test_a_crash_a_hang_and_an_exit_in_a_forked_mutant_are_judged_as_solo(
    tmp_path: Path,
) -> None:
    marker = new_marker("faults")
    root = make_calc_repo(tmp_path)
    gates = ["gates:\n"]
    for name, (action, _) in ACTIONS.items():
        path = f"tests/test_{name}_{marker.replace('-', '_')}.py"
        (root / path).write_text(CRASHES.format(action=action))
        gates.append(pytest_gate(name, path, "    timeout: 20\n"))
    (root / "gates.yaml").write_text("".join(gates))
    base = git(root, "rev-parse", "HEAD~1")
    solo = session(root, base, "solo", "--vgate-batch=off", "--vgate-mutants=2")
    forked = session(root, base, "forked", "--vgate-mutants=2")
    assert mutants(forked[1]) == mutants(solo[1]), forked[2]
    for name, (_, mode) in ACTIONS.items():
        first = forked[1][name]["discrimination"]["mutants"][0]
        assert (first["after"], first["how"], first["mode"]) == ("return None", "fork", mode)
    assert survivors(marker) == []


DETECTS = """\
import os

from pkg.calc import total

BORN = os.getpid()
CODE = total.__code__


def test_total():
    assert os.getpid() == BORN and total.__code__ is CODE and total([1, 2]) != 2
"""


def test_a_check_that_notices_the_fork_gains_no_kill(tmp_path: Path) -> None:
    """It fails whenever it runs in a fork or on a swapped function, so every forked
    mutant would count as killed. Its control fork fails first: its mutants run solo,
    where it passes on them as on the real code, and it is undiscriminating."""
    root = make_calc_repo(tmp_path, tests=DETECTS)
    (root / "gates.yaml").write_text(gates_text(("total",)))
    code, gates, out = session(root, git(root, "rev-parse", "HEAD~1"), "s", "--vgate-mutants=3")
    disc = gates["total"]["discrimination"]
    assert disc["status"] == "undiscriminating", out
    assert {m["how"] for m in disc["mutants"]} == {"solo"}
    assert "sees the fork" in disc["mutants"][0]["why_solo"]
    assert code == 1


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the tree but git's own, bytecode caches and pytest's cache."""
    skip = {".git", "__pycache__", ".pytest_cache"}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not skip & set(p.relative_to(root).parts)
    }


HANGS = """\
import time

from pkg.calc import total


def test_total():
    value = total([1, 2])
    if value is None:
        open({marker!r}, "a").close()
        time.sleep(300)
    assert value == 3
"""


@pytest.mark.timeout(SLOW_BOUND)
def test_the_tree_is_never_written_even_when_the_session_is_killed_in_a_mutant(
    tmp_path: Path,
) -> None:
    marker = new_marker("killed").replace("-", "_")  # in the node: every fork's argv
    hanging = tmp_path / "hanging"
    root = make_calc_repo(tmp_path)
    test = f"tests/test_{marker}.py"
    (root / test).write_text(HANGS.format(marker=str(hanging)))
    (root / "gates.yaml").write_text("gates:\n" + pytest_gate("hangs", test, "    timeout: 300\n"))
    before = snapshot(root)
    ledger = tmp_path / "ledger"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vgate=gates.yaml",
            "--vgate-only", "--vgate-base=HEAD~1", f"--vgate-ledger={ledger}"]  # fmt: skip
    env = {**os.environ, "PATH": os.pathsep.join([PY_DIR, os.environ.get("PATH", "")])}
    run = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not hanging.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hanging.exists(), run.communicate(timeout=60)[0]
        assert survivors(marker, within=0)  # the mutant's fork, hanging
        assert (root / "pkg" / "calc.py").read_text() == FIXED
        run.kill()
        run.wait(timeout=60)
        assert survivors(marker, within=60) == []
    finally:
        run.kill()
        run.wait()
    assert snapshot(root) == before
    assert git(root, "status", "--porcelain") == "?? " + test
