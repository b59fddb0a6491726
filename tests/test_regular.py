"""Special files never hang a session: real FIFOs, sockets and devices, under hard bounds.

Each call under test runs in a forked child with a generous deadline; a child still
alive at the deadline is killed and the test fails ("hung"), so a regression shows as a
failure, not as a suite that never ends.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.git_repo import git, make_bugfix_repo

from pytest_vgate.evidence import Ledger, Record, TreeState, inputs_digest, make_record, tree_state
from pytest_vgate.gate.decide import is_genuine_red
from pytest_vgate.gatesfile import Gate, GatesFileError, load_gates_file
from pytest_vgate.process.regular import NotRegularFile, open_regular, read_regular
from pytest_vgate.verdict import Mode, Verdict

HANG_BOUND = 60.0  # seconds; only a hang comes anywhere near it


def _child(conn: Any, func: Callable[[], Any]) -> None:
    try:
        result: Any = ("ok", func())
    except BaseException as exc:  # noqa: BLE001 - sent back to the test as data
        result = ("raised", exc)
    try:
        conn.send(pickle.dumps(result))
    except Exception:  # noqa: BLE001 - an unpicklable result: say so
        conn.send(pickle.dumps(("raised", RuntimeError(repr(result)))))
    os._exit(0)


def bounded(func: Callable[[], Any]) -> Any:
    """``func()`` in a forked child; fail if it has not finished within HANG_BOUND."""
    parent, child_end = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(child_end, func))
    child.start()
    child_end.close()
    try:
        if not parent.poll(HANG_BOUND):
            pytest.fail(f"hung: no answer within {HANG_BOUND:g}s")
        kind, value = pickle.loads(parent.recv())
    finally:
        if child.is_alive():
            child.kill()
        child.join(10)
    if kind == "raised":
        raise value
    return value


@pytest.fixture(params=["fifo", "socket", "device"])
def special(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A special file at ``tmp_path/special``: a FIFO, a bound socket, or /dev/zero."""
    path = tmp_path / "special"
    if request.param == "fifo":
        os.mkfifo(path)
        yield path
    elif request.param == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        try:
            yield path
        finally:
            sock.close()
    else:
        path.symlink_to("/dev/zero")  # never ends when read
        yield path


def test_read_regular_refuses_special_files(special: Path) -> None:
    with pytest.raises(NotRegularFile, match="not a regular file"):
        bounded(lambda: read_regular(special))
    with pytest.raises(NotRegularFile):
        bounded(lambda: os.close(open_regular(special, os.O_RDWR | os.O_APPEND | os.O_CREAT)))


def test_read_regular_reads_files_and_creates_on_request(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    assert read_regular(tmp_path / "f") == b"abc"
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing")
    os.close(open_regular(tmp_path / "new", os.O_WRONLY | os.O_CREAT))
    assert (tmp_path / "new").read_bytes() == b""


def _record() -> Record:
    tree = TreeState(commit="a" * 40, dirty="", label="aaaaaaa")
    red = Verdict.failed(Mode.FAIL, "exit 1", exit_code=1)
    gate = Gate(id="g", argv=("true",))
    return make_record(
        gate, red, tree=tree, inputs_digest="", where="current", judged=is_genuine_red(red, gate)
    )


@pytest.mark.parametrize("form", ["file", "folder", "symlink"])
def test_a_special_file_at_the_ledger_path_is_a_warning(special: Path, form: str) -> None:
    if form == "file":  # --vgate-ledger names the .jsonl file itself
        ledger = Ledger(special.parent / "ledger.jsonl")
        special.rename(ledger.file)
    elif form == "folder":  # the default form: <folder>/ledger.jsonl
        ledger = Ledger(special.parent / "vgate")
        ledger.path.mkdir()
        special.rename(ledger.file)
    else:
        ledger = Ledger(special.parent / "via-link.jsonl")
        ledger.file.symlink_to(special)
    records, warnings = bounded(ledger.read)
    assert records == []
    assert len(warnings) == 1 and str(ledger.file) in warnings[0], warnings
    assert "not a regular file" in warnings[0]
    warnings = bounded(lambda: ledger.append([_record()]))
    assert len(warnings) == 1 and "not a regular file" in warnings[0], warnings
    assert str(ledger.file) in warnings[0]


def test_a_fifo_in_the_tree_is_fingerprinted_by_kind(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path)
    os.mkfifo(repo.root / "pipe")  # untracked: git lists no FIFO, and it is never opened
    (repo.root / "dev").symlink_to("/dev/zero")
    state = bounded(lambda: tree_state(repo.root))
    assert state.is_git and state.dirty
    assert bounded(lambda: tree_state(repo.root)) == state
    os.unlink(repo.root / "pipe")
    (repo.root / "pipe").write_text("")
    assert tree_state(repo.root) != state  # a FIFO and a regular file are told apart
    os.unlink(repo.root / "pipe")
    os.mkfifo(repo.root / "pipe")
    digest = bounded(lambda: inputs_digest(repo.root, ["*", "pkg/*"]))
    assert digest == inputs_digest(repo.root, ["pkg/*", "*"])


def test_a_tracked_file_replaced_by_a_fifo(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path)
    clean = tree_state(repo.root)
    repo.mathx.unlink()
    os.mkfifo(repo.mathx)
    state = bounded(lambda: tree_state(repo.root))
    assert state.commit == clean.commit and state.dirty != clean.dirty
    assert git(repo.repo, "status", "--porcelain")  # git itself does not hang either


def test_a_fifo_as_the_gates_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "gates.yaml"
    os.mkfifo(path)
    with pytest.raises(GatesFileError, match=r"gates\.yaml.*named pipe \(FIFO\), not a regular"):
        bounded(lambda: load_gates_file(path))


@pytest.mark.slow
def test_a_session_with_a_fifo_ledger_ends_with_a_warning(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    pytester.makefile(".yaml", gates=f"gates:\n  - id: ok\n    check: {sys.executable} -c pass\n")
    os.mkfifo(pytester.path / "ledger.jsonl")
    try:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "gates.yaml", "--vgate", "gates.yaml",
            "--vgate-ledger", "ledger.jsonl", *dist_args, timeout=HANG_BOUND * 2,
        )  # fmt: skip
    except subprocess.TimeoutExpired:  # pragma: no cover - what this test guards against
        pytest.fail("the session hung on a FIFO at the ledger path")
    text = result.stdout.str()
    assert result.ret == 0, text
    assert "named pipe (FIFO), not a regular file" in text
    assert "INTERNALERROR" not in text
