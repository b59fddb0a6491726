"""process: real processes that exit, fail to spawn, hang, flood, fork and linger."""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_vgate import process
from pytest_vgate.process import (
    DEFAULT_CAPTURE_LIMIT,
    KILL_GRACE,
    Capture,
    ProcessResult,
    kill_process_group,
    pid_alive,
    run_git,
    run_process,
)

PY = sys.executable
REPO = Path(__file__).resolve().parents[1]
ENV = {"PATH": os.environ.get("PATH", os.defpath)}


def run(*argv: str, cwd: Path | str = ".", timeout: float = 30.0, **kw: object) -> ProcessResult:
    env = kw.pop("env", ENV)
    return run_process(argv, cwd=cwd, env=env, timeout=timeout, **kw)  # type: ignore[arg-type]


def py(code: str, *args: str, **kw: object) -> ProcessResult:
    return run(PY, "-c", code, *args, **kw)  # type: ignore[arg-type]


def wait_gone(pid: int, within: float = 5.0) -> bool:
    """Killed orphans are reaped by init a moment later; give it that moment."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        time.sleep(0.02)
    return not pid_alive(pid)


def read_pid(path: Path, within: float = 5.0) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        text = path.read_text() if path.exists() else ""
        if text.strip():
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"no pid written to {path}")


@pytest.fixture(params=["pidfd", "poll"])
def exit_detection(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test on the process-group path (``isolation="off"``) with pidfd exit
    detection and again with the polling fallback. The shepherd's path is tested with
    the same faults in test_process_contain.py."""
    if request.param == "pidfd" and not process._USE_PIDFD:
        pytest.skip("os.pidfd_open not available here")
    monkeypatch.setattr(process, "_USE_PIDFD", request.param == "pidfd")
    monkeypatch.setattr(process, "DEFAULT_ISOLATION", "off")
    return str(request.param)


@pytest.fixture
def group_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process-group path: pid files written by the check name pids we can see."""
    monkeypatch.setattr(process, "DEFAULT_ISOLATION", "off")


# --- exit codes and signals --------------------------------------------------------------


@pytest.mark.parametrize("code", [0, 1, 3, 17, 255])
def test_exit_code_is_reported(code: int) -> None:
    r = py(f"import sys; sys.exit({code})")
    assert (r.exit_code, r.timed_out, r.spawn_error, r.signal) == (code, False, None, None)


def test_stdout_and_stderr_are_separate() -> None:
    r = py("import sys; print('to out'); print('to err', file=sys.stderr)")
    assert (r.stdout, r.stderr) == ("to out\n", "to err\n")
    assert (r.stdout_bytes, r.stderr_bytes) == (7, 7)


def test_killed_by_signal_is_a_negative_exit_code() -> None:
    r = py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert r.exit_code == -signal.SIGKILL
    assert r.signal == signal.SIGKILL
    assert not r.timed_out


def test_stdin_is_closed() -> None:
    r = py("import sys; print(repr(sys.stdin.read()))", timeout=10)
    assert (r.exit_code, r.stdout, r.timed_out) == (0, "''\n", False)


# --- spawn failures ----------------------------------------------------------------------


def test_missing_program_is_a_spawn_error() -> None:
    r = run("vgate-no-such-program-xyz")
    assert r.exit_code is None
    assert r.spawn_errno == errno.ENOENT
    assert r.spawn_target == "program"
    assert r.program_not_found
    assert "vgate-no-such-program-xyz" in (r.spawn_error or "")


def test_missing_absolute_program(tmp_path: Path) -> None:
    r = run(str(tmp_path / "absent"))
    assert (r.spawn_errno, r.spawn_target, r.program_not_found) == (errno.ENOENT, "program", True)


def test_non_executable_file_is_eacces(tmp_path: Path) -> None:
    script = tmp_path / "check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    r = run(str(script))
    assert (r.exit_code, r.spawn_errno, r.spawn_target) == (None, errno.EACCES, "program")
    assert not r.program_not_found


def test_garbage_executable_is_enoexec(tmp_path: Path) -> None:
    binary = tmp_path / "bad"
    binary.write_bytes(b"\x00\x01\x02 not a program")
    binary.chmod(0o755)
    r = run(str(binary))
    assert (r.exit_code, r.spawn_errno) == (None, errno.ENOEXEC)
    assert not r.program_not_found


def test_missing_interpreter_is_told_apart_but_still_not_found(tmp_path: Path) -> None:
    script = tmp_path / "check"
    script.write_text("#!/vgate/no/such/interpreter\n")
    script.chmod(0o755)
    r = run(str(script))
    assert (r.spawn_errno, r.spawn_target) == (errno.ENOENT, "interpreter")
    assert r.program_not_found  # the tool it needs is not installed: unavailable


def test_missing_cwd_is_a_spawn_error(tmp_path: Path) -> None:
    r = run(PY, "-c", "pass", cwd=tmp_path / "gone")
    assert (r.exit_code, r.spawn_errno, r.spawn_target) == (None, errno.ENOENT, "cwd")
    assert not r.program_not_found


def test_cwd_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    r = run(PY, "-c", "pass", cwd=tmp_path / "f")
    assert (r.spawn_errno, r.spawn_target) == (errno.ENOTDIR, "cwd")


@pytest.mark.parametrize(
    "argv", [(), "echo hi", ("echo", "a\0b")], ids=["empty", "string", "nul-byte"]
)
def test_unrunnable_argv_is_a_spawn_error(argv: object) -> None:
    r = run_process(argv, cwd=".", env=ENV, timeout=5)  # type: ignore[arg-type]
    assert r.exit_code is None
    assert r.spawn_error
    assert r.spawn_target == "argv"


def test_bad_env_is_a_spawn_error() -> None:
    r = run(PY, "-c", "pass", env={"A=B": "x"})
    assert (r.exit_code, r.spawn_target) == (None, "argv")


def test_program_is_looked_up_on_the_given_path(tmp_path: Path) -> None:
    tool = tmp_path / "vgate-tool"
    tool.write_text("#!/bin/sh\necho from-tool\n")
    tool.chmod(0o755)
    assert run("vgate-tool").program_not_found  # not on the caller's PATH
    r = run("vgate-tool", env={"PATH": f"{tmp_path}:{ENV['PATH']}"})
    assert (r.exit_code, r.stdout) == (0, "from-tool\n")


# --- no shell, exact environment ---------------------------------------------------------


def test_shell_metacharacters_arrive_literally(tmp_path: Path) -> None:
    args = [";", "|", "$(touch pwned)", "`touch pwned2`", "*", ">", "out.txt", "&&", "$HOME", "'"]
    r = py("import sys, json; print(json.dumps(sys.argv[1:]))", *args, cwd=tmp_path)
    assert r.exit_code == 0
    assert json.loads(r.stdout) == args
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_env_is_exactly_what_was_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VGATE_FAKE_SECRET", "hunter2")
    env_prog = shutil.which("env")
    assert env_prog
    r = run(env_prog, env={"ONLY": "this"})
    assert (r.exit_code, r.stdout) == (0, "ONLY=this\n")
    r = run(env_prog, env={"VGATE_FAKE_SECRET": os.environ["VGATE_FAKE_SECRET"]})
    assert r.stdout == "VGATE_FAKE_SECRET=hunter2\n"


def test_runs_in_its_own_process_group() -> None:
    r = py("import os; print(os.getpid() == os.getpgrp() != os.getpgid(os.getppid()))")
    assert r.stdout == "True\n"


# The check tries to open its controlling terminal; the caller runs it without one
# (after setsid) or as the session leader of a pseudo-terminal (pty.fork).
OPEN_TTY = (
    "import os\n"
    "try:\n    os.close(os.open('/dev/tty', os.O_RDONLY | os.O_NOCTTY)); print('tty')\n"
    "except OSError as e:\n    print('no tty', e.errno)\n"
)
CALLER = """
import os, pty, sys
from pytest_vgate.process import run_process, caller_has_terminal
def check():
    r = run_process([sys.executable, "-c", sys.argv[1]], cwd=".", env={}, timeout=30)
    return f"caller tty={caller_has_terminal()} check: {r.stdout.strip()} {r.stderr.strip()}"
if sys.argv[2] == "none":
    pid = os.fork()  # a group leader cannot setsid: its child can
    if pid == 0:
        os.setsid()
        os.write(1, (check() + "\\n").encode())
        os._exit(0)
    os.waitpid(pid, 0)
else:
    pid, fd = pty.fork()
    if pid == 0:
        os.write(1, (check() + "\\n").encode())
        os._exit(0)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the pty child is gone
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    print(out.decode().strip())
"""


@pytest.mark.skipif(not os.path.exists("/dev/tty"), reason="needs /dev/tty")
@pytest.mark.parametrize("caller", ["none", "pty"])
def test_a_check_never_has_a_controlling_terminal(caller: str) -> None:
    env = {**ENV, "PYTHONPATH": str(REPO)}
    r = py(CALLER, OPEN_TTY, caller, env=env, timeout=60)
    assert r.exit_code == 0, r.stderr
    has = "True" if caller == "pty" else "False"
    assert r.stdout.strip() == f"caller tty={has} check: no tty {errno.ENXIO}", r.stderr


# --- bounded capture ---------------------------------------------------------------------


def test_undecodable_bytes_are_replaced() -> None:
    code = "import sys; sys.stdout.buffer.write(b'\\xff\\xfeok'); sys.stderr.buffer.write(b'\\x80')"
    r = py(code)
    assert (r.stdout, r.stderr) == ("\ufffd\ufffdok", "\ufffd")
    assert (r.stdout_bytes, r.stderr_bytes) == (4, 1)


def test_output_over_the_limit_keeps_head_and_tail() -> None:
    code = "import sys; sys.stdout.write(''.join(f'{i:05d}\\n' for i in range(5000)))"
    r = py(code, capture_limit=1200)
    lines = r.stdout.splitlines()
    assert r.stdout_bytes == 30000
    assert lines[:3] == ["00000", "00001", "00002"]
    assert lines[-1] == "04999"
    assert "[... pytest-vgate: 28800 bytes omitted ...]" in lines
    assert r.stdout.startswith("".join(f"{i:05d}\n" for i in range(100)))
    assert r.stdout.endswith("".join(f"{i:05d}\n" for i in range(4900, 5000)))


@pytest.mark.parametrize(("size", "marked"), [(1000, False), (1001, True)])
def test_marker_appears_only_when_bytes_were_dropped(size: int, marked: bool) -> None:
    r = py(f"import sys; sys.stdout.write('x' * {size})", capture_limit=1000)
    assert r.stdout_bytes == size
    assert ("bytes omitted" in r.stdout) is marked
    assert r.stdout.count("x") == min(size, 1000)


@given(
    chunks=st.lists(st.binary(max_size=300), max_size=30),
    limit=st.integers(min_value=0, max_value=400),
)
def test_capture_keeps_exactly_head_and_tail(chunks: list[bytes], limit: int) -> None:
    cap = Capture(limit)
    for c in chunks:
        cap.feed(c)
    data = b"".join(chunks)
    half = limit // 2
    assert cap.total == len(data)
    assert bytes(cap.head) == data[:half]
    kept_tail = b"".join(cap.tail)[-half:] if half else b""
    expected_tail = data[half:][-half:] if half else b""
    assert kept_tail == expected_tail
    assert cap.tail_len <= half + 300  # at most one chunk beyond the bound


def test_both_pipes_flooding_do_not_deadlock() -> None:
    code = (
        "import sys\n"
        "for _ in range(128):\n"
        "    sys.stderr.buffer.write(b'e' * 65536); sys.stdout.buffer.write(b'o' * 65536)\n"
    )
    r = py(code, timeout=30)
    assert (r.exit_code, r.timed_out) == (0, False)
    assert r.stdout_bytes == r.stderr_bytes == 128 * 65536


@pytest.mark.slow
def test_one_gib_of_output_is_drained_with_bounded_memory() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = (
        "import sys\nchunk = b'y' * (1 << 20)\n"
        "for _ in range(1024):\n    sys.stdout.buffer.write(chunk)\n"
    )
    r = py(code, timeout=120)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    growth = (after - before) * (1 if sys.platform == "darwin" else 1024)  # bytes
    assert (r.exit_code, r.timed_out) == (0, False)
    assert r.stdout_bytes == 2**30
    assert len(r.stdout) <= DEFAULT_CAPTURE_LIMIT + 200
    assert f"{2**30 - DEFAULT_CAPTURE_LIMIT} bytes omitted" in r.stdout
    assert growth < 300 * 2**20, f"peak RSS grew by {growth / 2**20:.0f} MiB"


# --- deadlines and process groups --------------------------------------------------------


@pytest.mark.slow
def test_deadline_kills_the_check_and_its_grandchild(tmp_path: Path, exit_detection: str) -> None:
    pidfile = tmp_path / "gc.pid"
    r = run("sh", "-c", f"sleep 300 & echo $! > {pidfile}; sleep 300", timeout=2)
    assert r.timed_out
    assert r.exit_code is None
    assert r.duration < 2 + KILL_GRACE + 8
    assert r.pid is not None
    assert wait_gone(read_pid(pidfile)), "the grandchild survived the deadline"
    assert not pid_alive(r.pid)


@pytest.mark.slow
def test_deadline_sigkills_what_ignores_sigterm(tmp_path: Path, group_path: None) -> None:
    pidfile = tmp_path / "gc.pid"
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # inherited by the fork
        "pid = os.fork()\n"
        "if pid == 0:\n    time.sleep(300)\n    os._exit(0)\n"
        f"open({str(pidfile)!r}, 'w').write(str(pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    r = py(code, timeout=1.5)
    assert r.timed_out
    assert r.exit_code is None
    assert r.stdout == "started\n"  # output before the kill is kept
    assert r.duration >= 1.5 + KILL_GRACE * 0.9  # SIGTERM was ignored: SIGKILL came later
    assert r.duration < 1.5 + KILL_GRACE + 8
    assert wait_gone(read_pid(pidfile))


def test_main_exit_ends_the_run_although_a_grandchild_holds_the_pipes(
    tmp_path: Path, exit_detection: str
) -> None:
    pidfile = tmp_path / "gc.pid"
    r = run("sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo hi", timeout=30)
    assert (r.exit_code, r.timed_out, r.stdout) == (0, False, "hi\n")
    assert r.duration < 10  # not the 30 s deadline
    assert wait_gone(read_pid(pidfile)), "the grandchild outlived the run"


def test_background_process_that_closed_its_pipes_is_killed(
    tmp_path: Path, group_path: None
) -> None:
    pidfile = tmp_path / "gc.pid"
    r = run("sh", "-c", f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}", timeout=30)
    assert (r.exit_code, r.timed_out) == (0, False)
    assert wait_gone(read_pid(pidfile))


def test_exit_after_closing_the_pipes_is_waited_for_and_cleans_up(
    tmp_path: Path, exit_detection: str
) -> None:
    """Pipes close first, the exit comes later: its code counts, its group is killed."""
    pidfile = tmp_path / "gc.pid"
    script = f"exec >/dev/null 2>&1; sleep 300 & echo $! > {pidfile}; sleep 0.3; exit 3"
    r = run("sh", "-c", script, timeout=30)
    assert (r.exit_code, r.timed_out) == (3, False)
    assert r.duration < 10  # not the 30 s deadline
    assert wait_gone(read_pid(pidfile)), "the background process outlived the run"


@pytest.mark.slow
def test_main_closing_its_pipes_still_hits_the_deadline() -> None:
    r = run("sh", "-c", "exec >/dev/null 2>&1; sleep 300", timeout=1)
    assert r.timed_out
    assert r.exit_code is None
    assert r.duration < 1 + KILL_GRACE + 8


@pytest.mark.slow
def test_escaped_session_ends_the_run_after_the_drain_grace(
    tmp_path: Path, group_path: None
) -> None:
    """A grandchild that left our group (setsid) survives: a documented limit."""
    pidfile = tmp_path / "gc.pid"
    code = (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n    os.setsid()\n    time.sleep(300)\n    os._exit(0)\n"
        f"open({str(pidfile)!r}, 'w').write(str(pid))\n"
        "print('bye')\n"
    )
    r = py(code, timeout=30)
    escaped = read_pid(pidfile)
    try:
        assert (r.exit_code, r.stdout, r.timed_out) == (0, "bye\n", False)
        assert r.duration < process.DRAIN_GRACE + 8
    finally:
        kill_process_group(escaped, signal.SIGKILL)
    assert wait_gone(escaped)


@pytest.mark.slow
def test_interrupt_while_running_leaves_nothing_behind(tmp_path: Path, group_path: None) -> None:
    """A KeyboardInterrupt in the caller still kills the check's whole group."""
    pidfile = tmp_path / "gc.pid"
    code = (
        "import signal, sys\n"
        "from pytest_vgate.process import run_process\n"
        "def interrupt(*_): raise KeyboardInterrupt\n"
        "signal.signal(signal.SIGALRM, interrupt)\n"
        "signal.setitimer(signal.ITIMER_REAL, 1.0)\n"
        f"argv = ['sh', '-c', 'sleep 300 & echo $! > {pidfile}; sleep 300']\n"
        "try:\n"
        "    run_process(\n"
        "        argv, cwd='.', env={'PATH': sys.argv[1]}, timeout=60, isolation='off'\n"
        "    )\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    env = {**ENV, "PYTHONPATH": str(REPO)}
    r = py(code, ENV["PATH"], env=env, timeout=20)
    assert (r.exit_code, r.stdout) == (0, "interrupted\n"), r.stderr
    assert wait_gone(read_pid(pidfile))


def test_no_file_descriptors_leak(tmp_path: Path) -> None:
    fd_dir = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    before = len(os.listdir(fd_dir))
    for _ in range(10):
        py("print('x')")
        run("vgate-no-such-program-xyz")
        run(PY, cwd=tmp_path / "gone")
        run("sh", "-c", "sleep 300 & echo hi")
    assert len(os.listdir(fd_dir)) == before


# --- helpers for others ------------------------------------------------------------------


def test_pid_alive_follows_a_process() -> None:
    assert pid_alive(os.getpid())
    r = py("pass")
    assert r.pid is not None
    assert not pid_alive(r.pid)
    assert not pid_alive(0)
    assert not pid_alive(-1)


def test_pid_alive_counts_a_zombie_as_dead() -> None:
    code = (
        "import os, sys, time\n"
        "from pytest_vgate.process import pid_alive\n"
        "pid = os.fork()\n"
        "if pid == 0:\n    os._exit(0)\n"
        "time.sleep(0.3)\n"  # the child exited; we do not reap it: a zombie
        "print(pid_alive(pid), os.waitpid(pid, os.WNOHANG)[0] == pid)\n"
    )
    r = py(code, env={**ENV, "PYTHONPATH": str(REPO)})
    assert r.stdout == "False True\n", r.stderr


def test_kill_process_group_ignores_a_vanished_group() -> None:
    r = py("pass")
    assert r.pid is not None
    kill_process_group(r.pid, signal.SIGKILL)  # gone: no error


@pytest.mark.parametrize("pgid", [0, -1, 1])
def test_kill_process_group_refuses_dangerous_groups(pgid: int) -> None:
    with pytest.raises(ValueError, match="refusing"):
        kill_process_group(pgid, 0)


def test_kill_process_group_refuses_our_own_group() -> None:
    with pytest.raises(ValueError, match="refusing"):
        kill_process_group(os.getpgrp(), 0)


def test_result_round_trips_through_a_dict() -> None:
    r = py("print('x')")
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert ProcessResult.from_dict(d) == r


def test_invalid_timeout_is_the_callers_bug() -> None:
    with pytest.raises(ValueError, match="invalid timeout"):
        run(PY, "-c", "pass", timeout=float("nan"))


# --- git ---------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_run_git_uses_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VGATE_FAKE_SECRET", "hunter2")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run_git(["init", "-q"], cwd=tmp_path).exit_code == 0
    r = run_git(["rev-parse", "--is-inside-work-tree"], cwd=tmp_path)
    assert (r.exit_code, r.stdout) == (0, "true\n")
    r = run_git(["-c", "alias.showenv=!env", "showenv"], cwd=tmp_path)
    seen = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert "VGATE_FAKE_SECRET" not in seen
    assert (seen["LANG"], seen["GIT_TERMINAL_PROMPT"]) == ("C", "0")
    assert seen["HOME"] == str(tmp_path)


def test_run_git_without_git_is_a_spawn_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    r = run_git(["status"], cwd=tmp_path)
    assert r.program_not_found
