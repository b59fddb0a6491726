"""The session owns its state: its cells and kept-ready processes end with it.

Real sessions: in a subprocess (plain and ``-n 2``), and in this very process
(``pytester.runpytest``), where nothing but ``pytest_unconfigure`` can have cleaned up --
the interpreter's exit handlers have not run yet.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
import weakref
from pathlib import Path

import pytest

# Imported before any in-process session: pytester drops the modules a session imported
# when it ends, and a second session would then pair this layer's old stash keys with
# new ones (the layer itself loads lazily, plugin/__init__.py).
import pytest_vgate.plugin.hooks  # noqa: F401
from pytest_vgate.gate.session import SessionState
from pytest_vgate.process.cell import CellPool
from pytest_vgate.verifiers import spawner

GATES = """
gates:
  - id: shows-its-home
    check: python -c "import os; open(os.environ['SEEN'], 'a').write(os.environ['HOME'] + '\\\\n')"
    env:
      pass: [SEEN]
"""

VERIFIERS = """
from pytest_vgate import verifier

@verifier
def answers_yes():
    return True

@verifier
def answers_yes_too():
    return True
"""


def processes_in(folder: Path) -> list[str]:
    """Processes (not this one) whose cwd or environment is inside ``folder``: ours."""
    found = []
    mark = str(folder).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd").encode()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")[:200]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if state != "Z" and (cwd.startswith(mark) or mark in environ):
            found.append(f"{entry.name}: {cmdline.decode(errors='replace')}")
    return found


def leftovers(folder: Path, scratch: Path, patience: float = 30.0) -> tuple[list[str], list[str]]:
    """What is still there after ``patience`` seconds (a process takes a moment to exit)."""
    deadline = time.monotonic() + patience
    while True:
        procs = processes_in(folder)
        dirs = sorted(p.name for p in scratch.iterdir())
        if (not procs and not dirs) or time.monotonic() > deadline:
            return procs, dirs
        time.sleep(0.2)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytester.makefile(".yaml", gates=GATES)
    pytester.makepyfile(test_state_verifiers=VERIFIERS)  # a name no other test module has
    scratch = pytester.path / "scratch"  # the sessions' TMPDIR: every cell is made here
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("SEEN", str(pytester.path / "seen.txt"))
    return scratch


@pytest.mark.slow
def test_a_session_leaves_no_process_and_no_folder_of_ours(
    pytester: pytest.Pytester, project: Path, dist_args: list[str]
) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *dist_args, "--vgate", "gates.yaml", "test_state_verifiers.py"
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    procs, dirs = leftovers(pytester.path, project)
    assert not procs, f"processes of the session outlived it: {procs}"
    assert not dirs, f"folders of the session outlived it: {dirs}"


def run_in_process(pytester: pytest.Pytester, scratch: Path) -> pytest.RunResult:
    """One session in this process, its temp folder ``scratch`` (tempfile caches it)."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(scratch)
    try:
        result = pytester.runpytest(
            "-p", "no:cacheprovider", "--vgate", "gates.yaml", "test_state_verifiers.py"
        )
    finally:
        tempfile.tempdir = saved
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    return result


@pytest.mark.slow
def test_unconfigure_stops_the_sessions_processes_and_removes_its_cells(
    pytester: pytest.Pytester, project: Path
) -> None:
    before = set(spawner.all_zygote_pids())  # library calls of other tests: not the session's
    run_in_process(pytester, project)
    # This process lives on: only the session's own close can have done this.
    left = set(spawner.all_zygote_pids()) - before
    assert not left, "a verifier zygote outlived its session"
    procs, dirs = leftovers(pytester.path, project, patience=10.0)
    assert not procs, f"processes of the session outlived it: {procs}"
    assert not dirs, f"cells of the session outlived it: {dirs}"


@pytest.mark.slow
def test_two_sessions_in_one_process_share_no_state(
    pytester: pytest.Pytester, project: Path
) -> None:
    seen = pytester.path / "seen.txt"
    before = set(spawner.all_zygote_pids())  # library calls of other tests: not the sessions'
    run_in_process(pytester, project)
    (first,) = seen.read_text().split()
    assert not Path(first).exists(), "the first session's cell outlived it"
    run_in_process(pytester, project)
    second = seen.read_text().split()[1]
    assert second != first, "the second session was handed the first one's cell"
    assert not Path(second).exists()
    assert set(spawner.all_zygote_pids()) <= before


def test_close_removes_the_idle_cells_and_is_idempotent(tmp_path: Path) -> None:
    state = SessionState(cells=CellPool(parent=tmp_path))
    with state.cells.cell() as cell:
        (cell / "tmp").mkdir(exist_ok=True)
    assert state.cells.idle() == (cell,)
    state.close()
    state.close()
    assert state.closed and state.cells.idle() == ()
    assert list(tmp_path.iterdir()) == []


def test_a_closed_session_is_not_kept_alive_by_exit_or_fork_handlers(tmp_path: Path) -> None:
    """A process that opens many sessions (pytester in process, a library caller) must
    not keep each one's pools, nor pile up one exit and one fork handler per session."""
    pools = []
    for _ in range(3):
        state = SessionState(cells=CellPool(parent=tmp_path))
        with state.cells.cell():
            pass  # an idle cell: the pool is held until it is removed
        shepherd = state.shepherds.take()
        if shepherd is not None:
            state.shepherds.give_back(shepherd)  # an idle shepherd, likewise
        pools += [weakref.ref(state.cells), weakref.ref(state.shepherds)]
        state.close()
        del state
    gc.collect()
    assert [ref() for ref in pools] == [None] * len(pools)
    assert list(tmp_path.iterdir()) == []


def test_close_removes_only_what_the_session_made(tmp_path: Path) -> None:
    theirs = tmp_path / "vgate-not-ours"  # named like a cell, made by someone else
    (theirs / "home").mkdir(parents=True)
    state = SessionState(cells=CellPool(parent=tmp_path))
    with state.cells.cell():
        pass
    state.close()
    assert [p.name for p in tmp_path.iterdir()] == ["vgate-not-ours"]


def test_close_stops_the_sessions_own_shepherds_and_zygotes(tmp_path: Path) -> None:
    """The shepherd a session's check ran under and its verifier zygotes are the
    session's objects: closing the session ends those processes, and no other host's."""
    from pytest_vgate.process import pid_alive, run_process
    from pytest_vgate.verifiers import VerifierCall, VerifierTarget, call_verifier

    state = SessionState.open("auto")
    result = run_process(
        [sys.executable, "-c", "pass"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=60,
        shepherds=state.shepherds,
    )
    assert result.exit_code == 0, result
    shepherd = state.shepherds.take()
    if shepherd is None:
        pytest.skip("no shepherd on this platform")
    state.shepherds.give_back(shepherd)
    (tmp_path / "vmod.py").write_text("def ok():\n    return True\n")
    answer = call_verifier(
        VerifierTarget("vmod", "ok", str(tmp_path / "vmod.py")),
        VerifierCall(root=tmp_path, timeout=60, zygotes=state.zygotes),
    )
    assert answer.mode.value == "pass", answer
    zygotes = state.zygotes.zygote_pids()
    assert zygotes, "the call did not run through the session's zygotes"
    assert all(pid_alive(pid) for pid in zygotes)
    state.close()
    end = time.monotonic() + 15
    gone = [shepherd.proc.pid, *zygotes]
    while any(pid_alive(pid) for pid in gone) and time.monotonic() < end:
        time.sleep(0.05)
    assert not [pid for pid in gone if pid_alive(pid)], "a process of the session outlived it"
    assert state.zygotes.zygote_pids() == []
