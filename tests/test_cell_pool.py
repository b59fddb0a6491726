"""cell: the per-process pool of cells; a reused cell must look fresh to the next check."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_vgate.process import run_process
from pytest_vgate.process.cell import CellPool, build_env, cell_is_clean

PY = sys.executable
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[CellPool]:
    parent = tmp_path / "cells"
    parent.mkdir()
    p = CellPool(parent=parent)
    yield p
    p.close()
    assert list(parent.iterdir()) == [], "the pool left cells behind"


def run_in_cell(cell: Path, code: str) -> None:
    """Run ``code`` as a real check in ``cell`` (HOME and TMPDIR are the cell's)."""
    env = build_env(cell, pass_names=(), set_values={}, caller_env=os.environ)
    r = run_process([PY, "-c", code], cwd=cell, env=env, timeout=30)
    assert r.exit_code == 0, r.stderr


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_clean_cell_is_reused(pool: CellPool) -> None:
    with pool.cell() as first:
        run_in_cell(first, "print('nothing left behind')")
    assert pool.idle() == (first,)
    with pool.cell() as second:
        assert second == first
        assert (mode(second), mode(second / "home"), mode(second / "tmp")) == (0o700,) * 3
    pool.close()
    assert not first.exists()


def test_cells_in_use_at_once_are_distinct(pool: CellPool) -> None:
    with pool.cell() as a, pool.cell() as b:
        assert a != b
    assert set(pool.idle()) == {a, b}


def test_a_file_left_in_home_is_never_seen_by_the_next_check(pool: CellPool) -> None:
    with pool.cell() as first:
        run_in_cell(first, "import os; open(os.environ['HOME'] + '/.secret', 'w').write('x')")
    with pool.cell() as second:
        assert second != first
        assert not first.exists(), "a dirty cell must be removed, not kept"
        assert list((second / "home").iterdir()) == []
        assert list((second / "tmp").iterdir()) == []


def _chmod_cell(cell: Path) -> None:
    cell.chmod(0o755)


def _chmod_home(cell: Path) -> None:
    (cell / "home").chmod(0o750)


def _tmp_becomes_a_symlink(cell: Path) -> None:
    (cell / "tmp").rmdir()
    (cell / "tmp").symlink_to(cell.parent.parent / "outside", target_is_directory=True)


def _home_becomes_a_file(cell: Path) -> None:
    (cell / "home").rmdir()
    (cell / "home").write_text("")


def _extra_entry_in_the_cell(cell: Path) -> None:
    (cell / ".hidden").mkdir()


def _home_removed(cell: Path) -> None:
    (cell / "home").rmdir()


def _empty_subdir_in_tmp(cell: Path) -> None:
    (cell / "tmp" / "d").mkdir()


@pytest.mark.parametrize(
    "spoil",
    [
        _chmod_cell,
        _chmod_home,
        _tmp_becomes_a_symlink,
        _home_becomes_a_file,
        _extra_entry_in_the_cell,
        _home_removed,
        _empty_subdir_in_tmp,
    ],
)
def test_a_changed_cell_is_not_reused(
    pool: CellPool, tmp_path: Path, spoil: Callable[[Path], None]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    with pool.cell() as first:
        spoil(first)
    with pool.cell() as second:
        assert second != first
        assert cell_is_clean(second)
    assert not first.exists()
    assert (outside / "keep.txt").read_text() == "mine", "removal followed a symlink"


def test_a_user_xattr_on_home_is_not_reused(pool: CellPool) -> None:
    with pool.cell() as first:
        try:
            os.setxattr(first / "home", "user.vgate", b"left for the next check")
        except (AttributeError, OSError) as exc:
            pytest.skip(f"no user extended attributes here: {exc}")
    with pool.cell() as second:
        assert second != first
    assert not first.exists()


def test_an_idle_cell_spoiled_in_the_pool_is_not_handed_out(pool: CellPool) -> None:
    """Something outliving its check (a process that left the group) writes later."""
    with pool.cell() as first:
        pass
    (first / "home" / "late").write_text("written after the check ended")
    with pool.cell() as second:
        assert second != first
        assert list((second / "home").iterdir()) == []
    assert not first.exists()


def test_a_raising_block_still_returns_or_removes_the_cell(pool: CellPool) -> None:
    seen: list[Path] = []

    def use(dirty: bool) -> None:
        with pool.cell() as cell:
            seen.append(cell)
            if dirty:
                (cell / "tmp" / "f").write_text("x")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        use(dirty=True)
    with pytest.raises(RuntimeError):
        use(dirty=False)
    assert seen[1] != seen[0]
    assert not seen[0].exists()
    assert pool.idle() == (seen[1],)
    with pool.cell() as again:
        assert again == seen[1]


def test_dirty_idle_cells_are_removed_at_close(pool: CellPool) -> None:
    with pool.cell() as first:
        (first / "home" / "f").write_text("x")
    pool.close()
    assert not first.exists()


def test_a_cell_made_under_another_temp_dir_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "one"))
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    p = CellPool()
    with p.cell() as first:
        assert first.parent == tmp_path / "one"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "two"))
    with p.cell() as second:
        assert second.parent == tmp_path / "two"
    assert not first.exists()
    p.close()


def test_the_pool_keeps_at_most_keep_idle_cells(tmp_path: Path) -> None:
    p = CellPool(parent=tmp_path, keep=1)
    with p.cell() as a, p.cell() as b:
        pass
    assert len(p.idle()) == 1
    assert a.exists() != b.exists()
    p.close()
    assert list(tmp_path.iterdir()) == []


def test_a_fresh_cell_is_clean_and_a_plain_folder_is_not(tmp_path: Path) -> None:
    assert not cell_is_clean(tmp_path)
    assert not cell_is_clean(tmp_path / "missing")


EXIT_SCRIPT = """
import os, sys
from pytest_vgate.process.cell import CellPool
pooled_cell = CellPool().cell  # never closed: the exit handler is what removes its cells
with pooled_cell() as cell:
    pass
with pooled_cell() as again:
    assert again == cell, (again, cell)
print(cell)
"""


def test_pooled_cells_are_gone_when_the_process_exits() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([PY, "-c", EXIT_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    cell = Path(r.stdout.strip())
    assert cell.parent == Path(tempfile.gettempdir()).resolve()
    assert not cell.exists(), "the idle cell outlived its process"


LATE_SCRIPT = """
import atexit
held = {}
# Registered before pytest_vgate.process.cell is imported, so it runs after the module's exit
# handler: the check ends while the interpreter is already exiting (a daemon thread's
# check would).
atexit.register(lambda: held["cm"].__exit__(None, None, None))
from pytest_vgate.process.cell import CellPool
held["cm"] = CellPool().cell()
print(held["cm"].__enter__(), flush=True)
"""


def test_a_cell_given_back_during_exit_is_removed_not_kept() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([PY, "-c", LATE_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not Path(r.stdout.strip()).exists(), "a cell returned after atexit was kept"


FORK_SCRIPT = """
import os, sys
from pytest_vgate.process.cell import CellPool
pooled_cell = CellPool().cell
with pooled_cell() as parents:
    pass
pid = os.fork()
if pid == 0:
    with pooled_cell() as childs:
        assert childs != parents, "the child reused its parent's cell"
    print(childs, flush=True)
    sys.exit(0)  # runs atexit in the child: it must remove its own cell only
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
assert parents.is_dir(), "the child removed its parent's idle cell"
with pooled_cell() as again:
    assert again == parents
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_neither_reuses_nor_removes_its_parents_cells() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([PY, "-c", FORK_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not Path(r.stdout.strip()).exists(), "the child's cell outlived the child"
