"""Tool grounding core: resolution order, hashes, the recheck, xdist hand-off, argv[0] rules.

Real files and real processes throughout; tampering is done on disk, and whether a tool
ran is read from the marker file it writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import pytest
from helpers.toolchain import (
    append_byte,
    make_tool,
    multicall_tool,
    path_decoy,
    path_env,
    replace_same_size,
    toolchain_tool,
)

from pytest_vgate.process import run_process
from pytest_vgate.process.tools import (
    RACY_WINDOW_NS,
    TOOLCHAIN_DIRNAME,
    FileIdentity,
    ToolCheck,
    ToolEntry,
    ToolInventory,
    ToolSource,
    ToolStatus,
    UndeclaredToolError,
    UnknownToolError,
    argv0_tool,
    declared_tool_error,
    resolve_tool,
    toolchain_bin,
)
from pytest_vgate.verdict import Mode, ToolRecord


def sha256_of(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run(argv: list[str], cwd: Path) -> tuple[int | None, str]:
    result = run_process(argv, cwd=cwd, env={}, timeout=10)
    return result.exit_code, result.stdout


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    return r


@pytest.fixture
def old_python() -> str:
    """A real executable whose ctime is long past, so its stat identity is trusted."""
    path = os.path.realpath(sys.executable)
    if time.time_ns() - os.stat(path).st_ctime_ns <= 2 * RACY_WINDOW_NS:
        pytest.skip("the interpreter binary was changed too recently to be past the window")
    return path


# --- resolution ------------------------------------------------------------------------


def test_toolchain_bin_is_under_root(root: Path) -> None:
    assert toolchain_bin(root) == root / TOOLCHAIN_DIRNAME / "bin"
    assert TOOLCHAIN_DIRNAME == ".toolchain"


def test_toolchain_tool_preferred_over_path_decoy(root: Path, tmp_path: Path) -> None:
    pinned = toolchain_tool(root, "mytool", exit_code=0)
    decoy = path_decoy(tmp_path / "decoy-bin", "mytool", exit_code=1)

    entry = resolve_tool("mytool", root=root, path_env=path_env(decoy.path.parent))

    assert entry.found
    assert entry.source is ToolSource.TOOLCHAIN
    assert entry.path == str(pinned.path)
    assert entry.sha256 == sha256_of(pinned.path)
    assert entry.sha256 != sha256_of(decoy.path)
    assert run([entry.path], cwd=root)[0] == 0
    assert pinned.runs == [str(pinned.path)]
    assert not decoy.ran


@pytest.mark.parametrize("name", ["python", "python3"])
def test_python_is_the_sessions_interpreter_unless_pinned(
    root: Path, tmp_path: Path, name: str
) -> None:
    """A `python` first on PATH (another interpreter, a decoy) is not what checks run."""
    decoy = path_decoy(tmp_path / "decoy-bin", name, exit_code=3)
    entry = resolve_tool(name, root=root, path_env=path_env(decoy.path.parent))
    assert (entry.source, entry.path) == (ToolSource.SESSION, sys.executable)
    assert entry.sha256 == sha256_of(Path(sys.executable))
    pinned = toolchain_tool(root, name, exit_code=0)
    entry = resolve_tool(name, root=root, path_env=path_env(decoy.path.parent))
    assert (entry.source, entry.path) == (ToolSource.TOOLCHAIN, str(pinned.path))


def test_path_used_when_not_pinned(root: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    tool = path_decoy(tmp_path / "bin", "other", exit_code=3)

    entry = resolve_tool("other", root=root, path_env=path_env(empty, tool.path.parent))

    assert entry.source is ToolSource.PATH
    assert entry.path == str(tool.path)
    assert entry.sha256 == sha256_of(tool.path)
    assert entry.identity == FileIdentity.of(os.stat(tool.path))


def test_path_skips_non_executable_and_directories(root: Path, tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    (first / "tool").write_text("#!/bin/sh\nexit 0\n")  # no x bit
    second = tmp_path / "second"
    (second / "tool").mkdir(parents=True)  # a directory named like the tool
    real = make_tool(tmp_path / "third", "tool")

    entry = resolve_tool("tool", root=root, path_env=path_env(first, second, real.path.parent))

    assert entry.path == str(real.path)


def test_relative_path_entry_is_made_absolute(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = make_tool(tmp_path / "rel-bin", "reltool")
    monkeypatch.chdir(tmp_path)

    entry = resolve_tool("reltool", root=root, path_env="rel-bin")

    assert entry.path is not None
    assert os.path.isabs(entry.path)
    assert os.path.samefile(entry.path, tool.path)


def test_found_nowhere(root: Path, tmp_path: Path) -> None:
    entry = resolve_tool("no-such-tool-xyz", root=root, path_env=str(tmp_path))
    assert not entry.found
    assert entry.path is None
    assert entry.sha256 is None
    assert entry.source is None
    assert "no-such-tool-xyz" in entry.detail
    assert "not found" in entry.detail
    with pytest.raises(ValueError, match="no record"):
        entry.record()


def test_no_path_env_means_toolchain_only(root: Path) -> None:
    # "sh" is on any caller PATH; with path_env None it must not be found there.
    assert resolve_tool("sh", root=root, path_env=None).path is None
    assert resolve_tool("sh", root=root, path_env="").path is None
    assert resolve_tool("sh", root=root, path_env="/bin:/usr/bin").found


def test_unrunnable_pinned_name_does_not_fall_back_to_path(root: Path, tmp_path: Path) -> None:
    pinned = toolchain_tool(root, "mytool")
    pinned.path.chmod(0o644)
    decoy = path_decoy(tmp_path / "decoy-bin", "mytool")

    entry = resolve_tool("mytool", root=root, path_env=path_env(decoy.path.parent))

    assert not entry.found
    assert entry.path is None
    assert str(pinned.path) in entry.detail
    assert "PATH is not searched" in entry.detail


def test_broken_symlink_in_toolchain_is_unavailable(root: Path, tmp_path: Path) -> None:
    toolchain_bin(root).mkdir(parents=True)
    (toolchain_bin(root) / "gone").symlink_to(tmp_path / "nowhere")
    decoy = path_decoy(tmp_path / "decoy-bin", "gone")
    entry = resolve_tool("gone", root=root, path_env=path_env(decoy.path.parent))
    assert not entry.found


@pytest.mark.parametrize("bad", ["", ".", "..", "a\0b"])
def test_invalid_ids_never_raise(root: Path, bad: str) -> None:
    entry = resolve_tool(bad, root=root, path_env=os.environ.get("PATH"))
    assert not entry.found
    assert "not a valid tool id" in entry.detail


def test_relative_path_ids(root: Path) -> None:
    tool = make_tool(root / "scripts", "check.sh", exit_code=0)
    sub = root / "sub"
    (sub / "scripts").mkdir(parents=True)

    from_root = resolve_tool("scripts/check.sh", root=root, path_env=None)
    dotted = resolve_tool("./scripts/check.sh", root=root, path_env=None)
    from_sub = resolve_tool("../scripts/check.sh", root=root, path_env=None, cwd=sub)
    missing_in_cwd = resolve_tool("scripts/check.sh", root=root, path_env=None, cwd=sub)

    for entry in (from_root, dotted, from_sub):
        assert entry.found
        assert entry.source is ToolSource.EXPLICIT
        assert entry.path is not None
        assert os.path.isabs(entry.path)
        assert os.path.samefile(entry.path, tool.path)
        assert entry.sha256 == sha256_of(tool.path)
    assert not missing_in_cwd.found
    assert missing_in_cwd.source is ToolSource.EXPLICIT
    assert "not an executable regular file" in missing_in_cwd.detail


def test_path_id_must_be_executable(root: Path) -> None:
    (root / "plain.sh").write_text("#!/bin/sh\nexit 0\n")
    entry = resolve_tool("./plain.sh", root=root, path_env=None)
    assert not entry.found


def test_sha256_is_hashlib_over_a_multi_chunk_file(root: Path) -> None:
    tool = toolchain_tool(root, "big")
    with open(tool.path, "ab") as fh:  # a shell comment line longer than one hash chunk
        fh.write(b"# " + os.urandom(3 << 20).hex().encode() + b"\n")
    entry = resolve_tool("big", root=root, path_env=None)
    assert entry.sha256 == sha256_of(tool.path)


def test_multicall_symlink_runs_by_selected_name(root: Path) -> None:
    bin_dir = toolchain_bin(root)
    target, (hello, _) = multicall_tool(bin_dir, "multi", ["hello", "bye"])

    hello_entry = resolve_tool("hello", root=root, path_env=None)
    bye_entry = resolve_tool("bye", root=root, path_env=None)

    # The selected path is kept, the hash is of the bytes behind it.
    assert hello_entry.path == str(hello)
    assert hello_entry.sha256 == bye_entry.sha256 == sha256_of(target)
    assert hello_entry.identity == FileIdentity.of(os.stat(target))
    # Executing the selected path dispatches on its name; the target would not.
    assert run([hello_entry.path], cwd=root) == (0, "hello\n")
    assert run([str(bye_entry.path)], cwd=root) == (0, "bye\n")
    assert run([os.path.realpath(hello)], cwd=root) == (0, "multi\n")


def _assert_moved(check: ToolCheck, expected: str) -> None:
    assert check.status is ToolStatus.MOVED
    assert check.mode is Mode.SANDBOX
    assert not check.ok
    assert check.expected_sha256 == expected
    assert f"inventory sha256 {expected}" in check.message


# --- inventory -------------------------------------------------------------------------


def test_build_resolves_each_id_once(root: Path, tmp_path: Path) -> None:
    toolchain_tool(root, "a")
    toolchain_tool(root, "b")
    inventory = ToolInventory.build(["a", "b", "a", "missing", "a"], root=root, path_env=None)

    assert inventory.ids == ("a", "b", "missing")
    assert inventory.hash_count == 2  # the missing one has nothing to hash
    assert [r.id for r in inventory.records()] == ["a", "b"]
    missing = inventory.get("missing")
    assert missing is not None
    assert not missing.found
    assert inventory.get("never-declared") is None
    assert all(isinstance(r, ToolRecord) for r in inventory.records())
    assert any("unavailable" in line for line in inventory.summary_lines())


def test_verify_unchanged_does_not_rehash(tmp_path: Path, old_python: str) -> None:
    inventory = ToolInventory.build([old_python], root=tmp_path, path_env=None)
    before = inventory.hash_count
    for _ in range(50):
        check = inventory.verify(old_python)
        assert check.ok
        assert check.mode is None
        assert check.found_sha256 == check.expected_sha256 == sha256_of(old_python)
    assert inventory.hash_count == before


def test_fresh_file_is_rehashed_until_past_the_racy_window(root: Path) -> None:
    # A file written moments ago could change again within the same timestamp tick
    # without any stat field changing, so its identity is not trusted yet.
    toolchain_tool(root, "fresh")
    inventory = ToolInventory.build(["fresh"], root=root, path_env=None)
    assert inventory.verify("fresh").ok
    assert inventory.verify("fresh").ok
    assert inventory.hash_count == 3


@pytest.mark.slow
def test_trusted_identity_after_the_racy_window_still_sees_tampering(root: Path) -> None:
    tool = toolchain_tool(root, "fresh")
    expected = sha256_of(tool.path)
    inventory = ToolInventory.build(["fresh"], root=root, path_env=None)
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)
    assert inventory.verify("fresh").ok  # re-hash, identity now observed past the window
    count = inventory.hash_count
    assert inventory.verify("fresh").ok
    assert inventory.hash_count == count  # trusted now: answered from stat alone

    append_byte(tool.path)  # same inode, but size, mtime and ctime move
    check = inventory.verify("fresh")
    _assert_moved(check, expected)
    assert inventory.hash_count == count + 1


def test_touched_but_same_bytes_is_ok_and_identity_updated(root: Path) -> None:
    tool = toolchain_tool(root, "mytool")
    inventory = ToolInventory.build(["mytool"], root=root, path_env=None)
    os.utime(tool.path, ns=(1_000_000_000, 1_000_000_000))

    check = inventory.verify("mytool")

    assert check.ok
    assert check.found_sha256 == check.expected_sha256
    assert check.entry.identity == FileIdentity.of(os.stat(tool.path))
    assert inventory.get("mytool") == check.entry


def test_verify_moved_after_appending_a_byte(root: Path) -> None:
    tool = toolchain_tool(root, "mytool")
    inventory = ToolInventory.build(["mytool"], root=root, path_env=None)
    expected = sha256_of(tool.path)
    append_byte(tool.path)

    check = inventory.verify("mytool")

    _assert_moved(check, expected)
    assert check.found_sha256 == sha256_of(tool.path) != expected
    assert check.message.startswith(f"bytes of {tool.path} changed")
    assert check.found_sha256 is not None
    assert check.found_sha256 in check.message
    # It stays moved: the inventory keeps expecting the original bytes.
    assert inventory.verify("mytool").status is ToolStatus.MOVED
    assert not tool.ran


def test_verify_moved_after_same_size_replacement(root: Path) -> None:
    tool = toolchain_tool(root, "mytool")
    inventory = ToolInventory.build(["mytool"], root=root, path_env=None)
    expected = sha256_of(tool.path)
    size, ino = tool.path.stat().st_size, tool.path.stat().st_ino
    replace_same_size(tool.path)
    assert tool.path.stat().st_size == size
    assert tool.path.stat().st_ino != ino

    check = inventory.verify("mytool")

    _assert_moved(check, expected)
    assert check.found_sha256 == sha256_of(tool.path)


def test_verify_moved_after_delete(root: Path) -> None:
    tool = toolchain_tool(root, "mytool")
    inventory = ToolInventory.build(["mytool"], root=root, path_env=None)
    expected = sha256_of(tool.path)
    tool.path.unlink()

    check = inventory.verify("mytool")

    _assert_moved(check, expected)
    assert check.found_sha256 is None
    assert "removed" in check.message
    assert "found nothing" in check.message


def test_verify_moved_when_symlink_retargeted(root: Path) -> None:
    bin_dir = toolchain_bin(root)
    _, (hello, _) = multicall_tool(bin_dir, "multi", ["hello", "spare"])
    other = make_tool(root / "elsewhere", "other")
    inventory = ToolInventory.build(["hello"], root=root, path_env=None)
    hello.unlink()
    hello.symlink_to(other.path)

    assert inventory.verify("hello").status is ToolStatus.MOVED


def test_verify_moved_when_symlink_retargeted_to_an_old_file(root: Path, old_python: str) -> None:
    # Both targets are long untouched, so only the changed inode gives the swap away.
    other = os.path.realpath("/bin/sh")
    if time.time_ns() - os.stat(other).st_ctime_ns <= 2 * RACY_WINDOW_NS:
        pytest.skip("/bin/sh changed too recently")
    link = toolchain_bin(root) / "tool"
    link.parent.mkdir(parents=True)
    link.symlink_to(old_python)
    inventory = ToolInventory.build(["tool"], root=root, path_env=None)
    assert inventory.verify("tool").ok
    link.unlink()
    link.symlink_to(other)

    check = inventory.verify("tool")

    _assert_moved(check, sha256_of(old_python))
    assert check.found_sha256 == sha256_of(other)


def test_verify_moved_when_no_longer_executable(root: Path) -> None:
    tool = toolchain_tool(root, "mytool")
    inventory = ToolInventory.build(["mytool"], root=root, path_env=None)
    tool.path.chmod(0o644)
    check = inventory.verify("mytool")
    assert check.status is ToolStatus.MOVED
    assert "no longer an executable" in check.message


def test_fast_path_does_not_read_the_bytes(root: Path, old_python: str) -> None:
    # Evidence without counters: give the inventory a wrong expected hash. A verify that
    # read the file would report it moved; the trusted, unchanged identity answers ok.
    # This is the documented trade-off: stat identity stands in for the bytes.
    inventory = ToolInventory.build([old_python], root=root, path_env=None)
    entry = inventory.get(old_python)
    assert entry is not None
    assert entry.identity is not None
    forged = ToolInventory([ToolEntry.from_dict({**entry.to_dict(), "sha256": "0" * 64})])
    assert forged.verify(old_python).ok
    # Once the identity differs (here: as if the file had been touched), the bytes are
    # read again and the mismatch shows.
    stale = entry.identity._replace(ctime_ns=entry.identity.ctime_ns - 1)
    touched = ToolInventory(
        [ToolEntry.from_dict({**entry.to_dict(), "sha256": "0" * 64, "identity": list(stale)})]
    )
    check = touched.verify(old_python)
    assert check.status is ToolStatus.MOVED
    assert check.found_sha256 == entry.sha256


def test_verify_unavailable_and_unknown(root: Path) -> None:
    inventory = ToolInventory.build(["missing"], root=root, path_env=None)
    check = inventory.verify("missing")
    assert check.status is ToolStatus.UNAVAILABLE
    assert check.mode is Mode.UNAVAILABLE
    assert "not found" in check.message
    with pytest.raises(UnknownToolError, match="'other' is not in the tool inventory"):
        inventory.verify("other")


# --- hand-off to workers ---------------------------------------------------------------


def test_to_dict_round_trip_and_worker_verify(root: Path, old_python: str) -> None:
    tool = toolchain_tool(root, "mytool")
    controller = ToolInventory.build(["mytool", old_python, "missing"], root=root, path_env=None)

    wire = json.loads(json.dumps(controller.to_dict()))
    worker = ToolInventory.from_dict(wire)

    assert worker.ids == controller.ids
    for tool_id in controller.ids:
        assert worker.get(tool_id) == controller.get(tool_id)
    assert worker.hash_count == 0  # rebuilt from the dict: nothing resolved or hashed
    assert worker.verify(old_python).ok
    assert worker.hash_count == 0
    assert worker.verify("mytool").ok
    assert worker.verify("missing").status is ToolStatus.UNAVAILABLE
    append_byte(tool.path)
    assert worker.verify("mytool").status is ToolStatus.MOVED


def test_worker_does_not_re_resolve(root: Path, tmp_path: Path) -> None:
    decoy = path_decoy(tmp_path / "bin", "mytool")
    controller = ToolInventory.build(["mytool"], root=root, path_env=path_env(decoy.path.parent))
    toolchain_tool(root, "mytool")  # appears after the inventory was taken
    worker = ToolInventory.from_dict(controller.to_dict())
    check = worker.verify("mytool")
    assert check.ok
    assert check.entry.path == str(decoy.path)


def test_entry_round_trip_not_found() -> None:
    entry = ToolEntry("x", detail="not here")
    assert ToolEntry.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry


# --- argv[0] and declared tools --------------------------------------------------------


def test_argv0_declared() -> None:
    assert argv0_tool("python", ["ruff", "python"]) == "python"
    assert argv0_tool("./run.sh", ["./run.sh"]) == "./run.sh"


def test_argv0_undeclared_names_program_and_list() -> None:
    with pytest.raises(UndeclaredToolError) as info:
        argv0_tool("bash", ["python", "ruff"])
    assert info.value.program == "bash"
    assert info.value.declared == ("python", "ruff")
    assert "'bash'" in str(info.value)
    assert "['python', 'ruff']" in str(info.value)


def test_argv0_path_is_not_the_declared_name() -> None:
    with pytest.raises(UndeclaredToolError):
        argv0_tool("/usr/bin/python", ["python"])


def test_argv0_without_declared_tools_is_its_own_id() -> None:
    assert argv0_tool("mytool", []) == "mytool"
    with pytest.raises(ValueError, match="empty"):
        argv0_tool("", [])


def test_declared_tool_error_message_for_collection() -> None:
    assert declared_tool_error(["python", "-m", "pytest"], ["python"]) is None
    assert declared_tool_error(["mytool"], []) is None
    assert declared_tool_error([], ["python"]) is None  # blank: the runner's business
    message = declared_tool_error(["bash", "-c", "true"], ["python"])
    assert message is not None
    assert "'bash'" in message
    assert "['python']" in message


def test_one_undeclared_tool_error_for_checks_and_ctx_run() -> None:
    """A check's argv[0] and a verifier's ``ctx.run`` refuse an undeclared tool with the
    same class: a ToolUseError (mode ``error``) and a ValueError, and it pickles."""
    import pickle

    from pytest_vgate import verifiers
    from pytest_vgate.verdict import Mode

    assert verifiers.UndeclaredToolError is UndeclaredToolError
    with pytest.raises(verifiers.ToolUseError) as info:
        argv0_tool("bash", ["python"])
    assert isinstance(info.value, ValueError) and info.value.mode is Mode.ERROR
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.program, copy.declared, str(copy)) == ("bash", ("python",), str(info.value))


@pytest.mark.parametrize(("tool_id", "hinted"), [("cd", True), ("source", True), ("nosuch", False)])
def test_a_shell_builtin_is_named_as_one(tmp_path: Path, tool_id: str, hinted: bool) -> None:
    """`check: cd tests` reads like a missing install without the hint; it is a mistake."""
    entry = resolve_tool(tool_id, root=tmp_path, path_env=str(tmp_path))
    assert entry.detail.startswith(f"tool {tool_id!r} was not found in")
    assert ("is a shell builtin, not a program" in entry.detail) is hinted
    assert ("`cwd` key" in entry.detail) is hinted
