"""cell_owner: the cells of a process that died are swept by the next; nothing else is.

Real processes make real cells in a private temp dir; one is killed with SIGKILL (as a
CI job's timeout kills), another stays alive while the sweep runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_vgate.process import cell_owner
from pytest_vgate.process.cell import CellPool, check_cell, remove_tree

REPO = Path(__file__).resolve().parents[1]
MAKES_A_CELL = """
import os, signal, sys
from pytest_vgate.process.cell import CellPool
pool = CellPool(parent=sys.argv[1])
with pool.cell() as cell:
    print(cell, flush=True)
    if sys.argv[2] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()  # alive until told
"""


SWEEPS = """
import sys
import time
from pytest_vgate.process import cell_owner
from pytest_vgate.process.cell import remove_tree
print([str(p) for p in cell_owner.sweep(sys.argv[1], remove_tree)])
"""


def start(folder: Path, how: str) -> tuple[subprocess.Popen[str], Path]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", MAKES_A_CELL, str(folder), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    cell = Path(proc.stdout.readline().strip())
    assert cell.is_dir()
    return proc, cell


def test_the_cells_of_a_killed_process_are_swept_by_the_next(tmp_path: Path) -> None:
    dead, cell = start(tmp_path, "die")
    assert dead.wait(timeout=60) == -signal.SIGKILL
    assert cell.is_dir() and Path(f"{cell}.lock").is_file()  # what SIGKILL leaves
    pool = CellPool(parent=tmp_path)
    with pool.cell() as mine:
        assert not os.path.lexists(cell), "the dead process's cell was not swept"
        assert not os.path.lexists(f"{cell}.lock")
        assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, f"{mine.name}.lock"]
    pool.close()
    assert list(tmp_path.iterdir()) == []


def test_a_live_processs_cell_is_never_swept(tmp_path: Path) -> None:
    alive, cell = start(tmp_path, "live")
    try:
        assert cell_owner.sweep(str(tmp_path), remove_tree) == []
        assert cell.is_dir() and Path(f"{cell}.lock").is_file()
    finally:
        alive.communicate("", timeout=60)  # it ends its block: its cell goes with it
    assert not os.path.lexists(cell) and not os.path.lexists(f"{cell}.lock")


def test_what_is_not_exactly_ours_is_never_touched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's")
    folder = tmp_path / "tmp"
    folder.mkdir()

    def marker(cell: Path) -> str:
        return json.dumps({"marker": cell_owner.MARKER, "cell": str(cell)})

    (folder / "vgate-nolock").mkdir()  # named like a cell, no lock file
    (folder / "vgate-nomarker").mkdir()
    (folder / "vgate-nomarker.lock").write_text("{}")  # a lock file without the marker
    (folder / "vgate-foreign").mkdir()  # names the cell, another tool's marker
    foreign = {"marker": "another tool's lock", "cell": str(folder / "vgate-foreign")}
    (folder / "vgate-foreign.lock").write_text(json.dumps(foreign))
    (folder / "vgate-other").mkdir()
    (folder / "vgate-other.lock").write_text(marker(folder / "vgate-elsewhere"))
    (folder / "vgate-link").symlink_to(outside)  # the "cell" is a symlink out
    (folder / "vgate-link.lock").write_text(marker(folder / "vgate-link"))
    (folder / "real.lock").write_text(marker(folder / "vgate-x"))
    (folder / "vgate-via.lock").symlink_to(folder / "real.lock")  # a symlinked lock
    (folder / "vgate-via").mkdir()
    before = sorted(p.name for p in folder.iterdir())
    assert cell_owner.sweep(str(folder), remove_tree) == []
    assert sorted(p.name for p in folder.iterdir()) == before
    assert (outside / "keep.txt").read_text() == "the user's"


def test_a_cell_removed_while_its_process_lives_takes_its_lock_file(tmp_path: Path) -> None:
    with check_cell(parent=tmp_path) as cell:
        assert Path(f"{cell}.lock").is_file()
        assert cell_owner.sweep(str(tmp_path), remove_tree) == []  # alive: this process
        assert json.loads(Path(f"{cell}.lock").read_text())["cell"] == str(cell)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_leaves_its_parents_lock_alone(tmp_path: Path) -> None:
    pool = CellPool(parent=tmp_path)
    with pool.cell() as cell:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: drops its copy, as at its exit
            cell_owner.release(cell)
            os._exit(0)
        os.waitpid(pid, 0)
        assert Path(f"{cell}.lock").is_file()
        swept = subprocess.run(  # another process: the lock must still be held, by us
            [sys.executable, "-c", SWEEPS, str(tmp_path)],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=60,
        )  # fmt: skip
        assert (swept.returncode, swept.stdout.strip()) == (0, "[]"), swept.stderr
        assert cell.is_dir()
    pool.close()
    assert list(tmp_path.iterdir()) == []


def test_a_session_sweeps_what_a_killed_session_left(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a session killed with SIGKILL mid-check leaves its cells; the next
    session in the same temp dir removes them, and its own, and leaves the dir empty."""
    scratch = pytester.path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    started = pytester.path / "started"
    (pytester.path / "hangs.yaml").write_text(
        'gates:\n  - id: hangs\n    check: python -c "import time; '
        f"open({str(started)!r}, 'w'); time.sleep(120)\"\n"
    )
    (pytester.path / "passes.yaml").write_text("gates:\n  - id: passes\n    check: 'true'\n")
    killed = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vgate", "hangs.yaml"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 120
        while not started.exists() and time.monotonic() < end:
            time.sleep(0.05)
        assert started.exists(), "the check never started"
    finally:
        killed.kill()
        killed.wait()
    assert any(p.name.endswith(".lock") for p in scratch.iterdir())  # what it left
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "passes.yaml")
    result.assert_outcomes(passed=1)
    assert list(scratch.iterdir()) == []
