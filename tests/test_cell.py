"""cell: the private directory and environment a check runs in, with real processes."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_vgate.defaults import NESTED_ENV
from pytest_vgate.process import run_process
from pytest_vgate.process.cell import DEFAULT_ENV_ALLOWLIST, build_env, check_cell

PY = sys.executable
CALLER = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "TZ": "UTC",
    "HOME": "/home/caller",
    "TMPDIR": "/caller/tmp",
    "VGATE_FAKE_SECRET": "hunter2",
    "AWS_SECRET_ACCESS_KEY": "also-secret",
}


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- check_cell --------------------------------------------------------------------------


def test_cell_is_private_and_removed() -> None:
    with check_cell() as cell:
        assert cell.is_dir()
        assert mode(cell) == 0o700
        assert (mode(cell / "home"), mode(cell / "tmp")) == (0o700, 0o700)
        assert cell.name.startswith("vgate-")
        assert cell.parent == Path(tempfile.gettempdir()).resolve()
    assert not cell.exists()


def test_each_cell_is_new() -> None:
    with check_cell() as a, check_cell() as b:
        assert a != b


def test_cell_is_removed_when_the_block_raises() -> None:
    class Boom(Exception):
        pass

    seen: list[Path] = []

    def use_and_fail() -> None:
        with check_cell() as cell:
            seen.append(cell)
            (cell / "home" / "f").write_text("x")
            raise Boom

    with pytest.raises(Boom):
        use_and_fail()
    assert not seen[0].exists()


def leave_read_only_leftovers(cell: Path) -> None:
    locked = cell / "home" / "locked"
    (locked / "deeper").mkdir(parents=True)
    (locked / "deeper" / "file").write_text("x")
    (locked / "deeper" / "file").chmod(0o444)
    (locked / "deeper").chmod(0o000)
    locked.chmod(0o500)
    (cell / "tmp" / "ro.txt").write_text("x")
    (cell / "tmp" / "ro.txt").chmod(0o400)
    (cell / "home").chmod(0o500)


def cell_used_unprivileged() -> Path:
    """Use a cell as a non-root user: for root, permissions would prove nothing."""
    if os.geteuid() != 0:
        with check_cell() as cell:
            leave_read_only_leftovers(cell)
        return cell
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to nobody, use a cell, report its path
        status = 1
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            with check_cell() as cell:
                os.write(write_end, os.fsencode(cell))
                leave_read_only_leftovers(cell)
            status = 0
        except BaseException as exc:  # noqa: BLE001 - a forked child must never return into pytest
            os.write(2, f"child failed: {exc!r}\n".encode())
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        cell = Path(os.fsdecode(f.read()))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return cell


def test_cell_is_removed_despite_read_only_leftovers() -> None:
    cell = cell_used_unprivileged()
    assert cell.name.startswith("vgate-")
    assert not cell.exists()


def test_cleanup_does_not_follow_symlinks_out_of_the_cell(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    outside.chmod(0o500)
    try:
        with check_cell() as cell:
            (cell / "home" / "link").symlink_to(outside, target_is_directory=True)
        assert not cell.exists()
        assert (outside / "keep.txt").read_text() == "mine"
        assert mode(outside) == 0o500
    finally:
        outside.chmod(0o700)


def test_files_a_real_check_writes_are_removed() -> None:
    code = (
        "import os, pathlib\n"
        "pathlib.Path(os.environ['HOME'], '.cache', 'x').mkdir(parents=True)\n"
        "p = pathlib.Path(os.environ['TMPDIR'], 'ro'); p.write_text('x'); p.chmod(0o400)\n"
        "os.chmod(os.environ['HOME'] + '/.cache', 0o500)\n"
    )
    with check_cell() as cell:
        env = build_env(cell, pass_names=(), set_values={}, caller_env=os.environ)
        r = run_process([PY, "-c", code], cwd=cell, env=env, timeout=30)
        assert r.exit_code == 0, r.stderr
        assert (cell / "home" / ".cache" / "x").is_dir()
        assert (cell / "tmp" / "ro").is_file()
    assert not cell.exists()


# --- build_env ---------------------------------------------------------------------------


def test_allowlist_only(tmp_path: Path) -> None:
    env = build_env(tmp_path, pass_names=(), set_values={}, caller_env=CALLER)
    assert env == {
        "PATH": CALLER["PATH"],
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        NESTED_ENV: "1",
    }


def test_default_allowlist_is_the_documented_one() -> None:
    assert DEFAULT_ENV_ALLOWLIST == ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def test_passed_names_come_from_the_caller_when_present(tmp_path: Path) -> None:
    env = build_env(
        tmp_path,
        pass_names=("VGATE_FAKE_SECRET", "NOT_IN_CALLER"),
        set_values={},
        caller_env=CALLER,
    )
    assert env["VGATE_FAKE_SECRET"] == "hunter2"
    assert "NOT_IN_CALLER" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env


def test_set_values_win_over_everything(tmp_path: Path) -> None:
    env = build_env(
        tmp_path,
        pass_names=("LANG",),
        set_values={"LANG": "de_DE.UTF-8", "HOME": "/explicit", "MODE": "ci"},
        caller_env=CALLER,
    )
    assert (env["LANG"], env["HOME"], env["MODE"]) == ("de_DE.UTF-8", "/explicit", "ci")
    assert env["TMPDIR"] == str(tmp_path / "tmp")


def test_explicitly_passed_home_beats_the_cell(tmp_path: Path) -> None:
    env = build_env(tmp_path, pass_names=("HOME",), set_values={}, caller_env=CALLER)
    assert (env["HOME"], env["TMPDIR"]) == ("/home/caller", str(tmp_path / "tmp"))
    missing = {k: v for k, v in CALLER.items() if k != "HOME"}
    env = build_env(tmp_path, pass_names=("HOME",), set_values={}, caller_env=missing)
    assert env["HOME"] == str(tmp_path / "home")


def test_path_prefix_goes_first(tmp_path: Path) -> None:
    tc = tmp_path / ".toolchain" / "bin"
    env = build_env(
        tmp_path, pass_names=(), set_values={}, caller_env=CALLER, path_prefix=(tc, "/opt/x")
    )
    assert env["PATH"] == f"{tc}:/opt/x:{CALLER['PATH']}"
    env = build_env(
        tmp_path, pass_names=(), set_values={"PATH": "/set"}, caller_env=CALLER, path_prefix=[tc]
    )
    assert env["PATH"] == f"{tc}:/set"


@pytest.mark.parametrize("prefix", [(), ("/tc",)])
def test_missing_path_falls_back_to_defpath(tmp_path: Path, prefix: tuple[str, ...]) -> None:
    caller = {"LANG": "C"}
    env = build_env(tmp_path, pass_names=(), set_values={}, caller_env=caller, path_prefix=prefix)
    assert env["PATH"] == os.pathsep.join([*prefix, os.defpath])


def test_a_check_sees_exactly_the_built_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VGATE_FAKE_SECRET", "hunter2")
    monkeypatch.setenv("VGATE_NAMED", "visible")
    code = "import os, json; print(json.dumps({k: os.environ.get(k) for k in os.environ}))"
    with check_cell() as cell:
        env = build_env(cell, pass_names=("VGATE_NAMED",), set_values={}, caller_env=os.environ)
        r = run_process([PY, "-c", code], cwd=cell, env=env, timeout=30)
    seen = json.loads(r.stdout)
    assert "VGATE_FAKE_SECRET" not in seen
    assert seen["VGATE_NAMED"] == "visible"
    assert seen["HOME"] == str(cell / "home")
    assert seen["TMPDIR"] == str(cell / "tmp")
    # Python may add LC_CTYPE itself (PEP 538 locale coercion); nothing else appears.
    assert set(seen) - set(env) <= {"LC_CTYPE"}
