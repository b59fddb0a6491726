"""process (shepherd path): nothing a check starts outlives it, and it cannot see the session.

Real escapes (``setsid()`` grandchildren, double-forked daemons), real secrets in a real
parent's environment, real restrictions on namespaces (made with ``unshare``). Survivors
are looked for by a marker in their command line, as the host sees them.
"""

from __future__ import annotations

import errno
import json
import marshal
import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from helpers.procs import (
    PY,
    SLEEPER,
    as_unprivileged,
    escaping_check,
    kill_all,
    new_marker,
    survivors,
    unshare_available,
    wait_running,
)

from pytest_vgate import process
from pytest_vgate.process import ProcessResult, contain, run_process, shepherded

REPO = Path(__file__).resolve().parents[1]
ENV = {"PATH": os.environ.get("PATH", os.defpath)}
linux_only = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc (Linux)")
needs_unshare = pytest.mark.skipif(not unshare_available(), reason="needs unshare(1) and userns")
pytestmark = linux_only


def run(argv: list[str], **kw: object) -> ProcessResult:
    kw.setdefault("timeout", 60.0)
    return run_process(argv, cwd=kw.pop("cwd", "."), env=kw.pop("env", ENV), **kw)  # type: ignore[arg-type]


def level_here() -> str:
    return contain.POOL.probe("auto")[0]


# --- every descendant dies, whatever the check did -----------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("then", ["pass", "fail", "hang"])
def test_setsid_grandchild_and_daemon_die_with_the_check(tmp_path: Path, then: str) -> None:
    marker = new_marker(then)
    argv = escaping_check(marker, str(tmp_path), then)
    r = run(argv, timeout=8 if then == "hang" else 60)
    try:
        assert "escaped: ['daemon', 'setsid']" in r.stdout, r.stderr
        assert r.isolation in ("namespace", "contained")
        expected = {"pass": (0, False), "fail": (1, False), "hang": (None, True)}[then]
        assert (r.exit_code, r.timed_out) == expected
        assert survivors(marker) == [], "a descendant outlived the check"
    finally:
        kill_all(marker)


@pytest.mark.slow
def test_off_leaves_escaped_processes_alive_as_documented(tmp_path: Path) -> None:
    """The control: a process group cannot reach them (so the test above can fail)."""
    marker = new_marker("off")
    try:
        r = run(escaping_check(marker, str(tmp_path), "pass"), isolation="off")
        assert r.exit_code == 0 and r.isolation == "group"
        time.sleep(0.5)
        assert len(survivors(marker, within=0)) == 2
    finally:
        kill_all(marker)


@pytest.mark.slow
def test_a_check_that_ignores_sigterm_is_killed_at_the_deadline(tmp_path: Path) -> None:
    marker = new_marker("term")
    code = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"if os.fork() == 0:\n    os.execv(sys.executable, [sys.executable, '-c', {SLEEPER!r}, "
        f"{marker!r}])\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    r = run([PY, "-c", code], timeout=1.5)
    try:
        assert (r.timed_out, r.exit_code, r.stdout) == (True, None, "started\n")
        assert r.duration >= 1.5 + process.KILL_GRACE * 0.9
        assert survivors(marker) == []
    finally:
        kill_all(marker)


@pytest.mark.slow
def test_the_check_dies_when_its_caller_is_killed(tmp_path: Path) -> None:
    """SIGKILL to the process running a check (a crashed worker): nothing outlives it."""
    marker = new_marker("orphan")
    code = (
        "import sys\n"
        "from pytest_vgate.process import run_process\n"
        f"argv = {escaping_check(marker, str(tmp_path), 'hang')!r}\n"
        "run_process(argv, cwd='.', env={'PATH': sys.argv[1]}, timeout=300)\n"
    )
    caller = subprocess.Popen(
        [PY, "-c", code, ENV["PATH"]], env={**ENV, "PYTHONPATH": str(REPO)}, cwd=tmp_path
    )
    try:
        wait_running(marker, 3)  # the check's sleepers, setsid and daemon
        caller.kill()
        caller.wait(timeout=30)
        assert survivors(marker) == [], "the check outlived its caller"
    finally:
        caller.kill()
        kill_all(marker)


@pytest.mark.slow
def test_interrupt_kills_the_tree_through_the_shepherd(tmp_path: Path) -> None:
    marker = new_marker("intr")
    code = (
        "import signal, sys\n"
        "from pytest_vgate.process import run_process\n"
        "def interrupt(*_): raise KeyboardInterrupt\n"
        "signal.signal(signal.SIGALRM, interrupt)\n"
        "signal.setitimer(signal.ITIMER_REAL, 3.0)\n"
        f"argv = {escaping_check(marker, str(tmp_path), 'hang')!r}\n"
        "try:\n"
        "    run_process(argv, cwd='.', env={'PATH': sys.argv[1]}, timeout=300)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    r = subprocess.run(
        [PY, "-c", code, ENV["PATH"]],
        env={**ENV, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        assert (r.returncode, r.stdout) == (0, "interrupted\n"), r.stderr
        assert survivors(marker) == []
    finally:
        kill_all(marker)


# --- a check cannot see the session --------------------------------------------------------

SNOOP = (
    "cat /proc/$PPID/environ; for f in /proc/*/environ; do cat $f; done; "
    "echo; ls /proc | grep -c '^[0-9]'"
)


def snoop_from_a_parent_with_a_secret(
    secret: str, isolation: str
) -> subprocess.CompletedProcess[str]:
    """A fresh process with ``secret`` in its environment runs the snooping check."""
    code = (
        "import sys\n"
        "from pytest_vgate.process import run_process\n"
        f"r = run_process(['sh', '-c', {SNOOP!r}], cwd='/', env={{'PATH': sys.argv[1]}}, "
        f"timeout=60, isolation={isolation!r})\n"
        "print(r.isolation, r.exit_code)\n"
        "print(r.stdout)\n"
    )
    env = {**ENV, "PYTHONPATH": str(REPO), "AWS_SECRET_ACCESS_KEY": secret}
    return subprocess.run(
        [PY, "-c", code, ENV["PATH"]], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(level_here() != "namespace", reason="no private PID namespace here")
def test_a_check_cannot_read_the_callers_environment() -> None:
    secret = new_marker("secret")
    r = snoop_from_a_parent_with_a_secret(secret, "strict")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("namespace 0\n")
    assert secret not in r.stdout
    processes = int(r.stdout.strip().splitlines()[-1])
    assert processes <= 5  # the shepherd, sh, and what sh runs: not the session's


def test_without_isolation_the_same_check_reads_it() -> None:
    """The control: the snooping check does find the secret where nothing hides it."""
    secret = new_marker("secret")
    r = snoop_from_a_parent_with_a_secret(secret, "off")
    assert r.returncode == 0, r.stderr
    assert secret in r.stdout


# --- where namespaces are not allowed ------------------------------------------------------


def _run_unprivileged(code: str, *, userns: bool) -> subprocess.CompletedProcess[str]:
    argv = as_unprivileged([PY, "-c", code, ENV["PATH"]], userns=userns)
    env = {**ENV, "PYTHONPATH": str(REPO)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


@needs_unshare
def test_strict_without_namespaces_is_a_spawn_failure_not_a_run() -> None:
    code = (
        "import sys\n"
        "from pytest_vgate.process import run_process\n"
        "r = run_process(['true'], cwd='/', env={'PATH': sys.argv[1]}, timeout=30, "
        "isolation='strict')\n"
        "print(r.spawn_target, r.exit_code)\n"
        "print(r.spawn_error)\n"
    )
    r = _run_unprivileged(code, userns=False)
    assert r.returncode == 0, r.stderr
    first, message = r.stdout.splitlines()[:2]
    assert first == "isolation None"
    assert "required isolation missing" in message


@needs_unshare
@pytest.mark.slow
def test_auto_without_namespaces_still_kills_every_descendant(tmp_path: Path) -> None:
    marker = new_marker("subreaper")
    os.chmod(tmp_path, 0o777)
    code = (
        "import sys\n"
        "from pytest_vgate.process import run_process\n"
        f"argv = {escaping_check(marker, str(tmp_path), 'pass')!r}\n"
        "r = run_process(argv, cwd='/', env={'PATH': sys.argv[1]}, timeout=60)\n"
        "print(r.isolation, r.exit_code)\n"
    )
    r = _run_unprivileged(code, userns=False)
    try:
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0] == "contained 0"
        assert survivors(marker) == []
    finally:
        kill_all(marker)


@needs_unshare
@pytest.mark.parametrize(
    ("isolation", "expected"), [("strict", "namespace"), ("auto", "contained")]
)
def test_an_unprivileged_user_gets_the_namespace_only_when_strict(
    isolation: str, expected: str
) -> None:
    """Without root, a PID namespace comes inside a user namespace: ``strict`` takes it;
    ``auto`` keeps the user's world (owners, setuid) and takes the subreaper."""
    code = (
        "import os, sys\n"
        "from pytest_vgate.process import run_process\n"
        "r = run_process(['sh', '-c', 'id -u; ls /proc | grep -c \"^[0-9]\"'], cwd='/', "
        f"env={{'PATH': sys.argv[1]}}, timeout=30, isolation={isolation!r})\n"
        "print(os.geteuid(), r.isolation, r.exit_code, r.stdout.split())\n"
    )
    r = _run_unprivileged(code, userns=True)
    assert r.returncode == 0, r.stderr
    euid, level, code_, out = r.stdout.split(" ", 3)
    assert (euid, level, code_) == ("1000", expected, "0")
    uid, count = json.loads(out.replace("'", '"'))
    assert uid == "1000"  # the check runs as the same user, not as root of a namespace
    if expected == "namespace":
        assert int(count) <= 5  # its own /proc: only its own processes


# --- the shepherd itself -------------------------------------------------------------------


def test_shepherds_are_reused_and_leave_no_processes() -> None:
    first = run(["true"])
    second = run(["true"])
    assert (first.exit_code, second.exit_code) == (0, 0)
    assert first.isolation == second.isolation != "group"
    assert len(contain.POOL._idle.get("namespace", [])) == 1


def test_a_session_pool_takes_over_an_idle_shepherd_before_starting_one() -> None:
    """A session's own pool first takes over an idle shepherd of the process's pool (the
    one its header probes used): one shepherd per session, not two; it is the session's now."""
    if level_here() == "group":
        pytest.skip("no shepherd here")
    run(["true"])  # the process's pool now has one idle shepherd
    (idle,) = contain.POOL._idle["namespace"]
    session = contain.Pool()
    try:
        r = run(["sh", "-c", "exit 5"], shepherds=session)
        assert r.exit_code == 5
        assert contain.POOL._idle.get("namespace") == []  # taken over, not copied
        assert session._idle["namespace"] == [idle]  # and given back to its new pool
    finally:
        session.close()
    assert idle.proc.poll() is not None  # stopped with the session's pool


def test_a_dead_shepherd_is_replaced_not_trusted() -> None:
    """An idle shepherd that was killed (OOM killer, a stray kill) costs no check."""
    run(["true"])
    (shepherd,) = contain.POOL._idle["namespace"]
    for pid in (shepherd.inner, shepherd.proc.pid):
        if pid:
            os.kill(pid, signal.SIGKILL)
    shepherd.proc.wait(timeout=30)
    r = run(["sh", "-c", "exit 7"])
    assert (r.exit_code, r.spawn_error) == (7, None)
    assert r.isolation == shepherd.level
    assert contain.POOL._idle["namespace"] != [shepherd]


def test_under_a_shepherd_is_seen_even_with_the_environment_cleared() -> None:
    code = "from pytest_vgate.process import contain; print(contain.under_a_shepherd())"
    r = run(["env", "-i", f"PYTHONPATH={REPO}", PY, "-c", code])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip() == ("True" if r.isolation != "group" else "False")
    assert not contain.under_a_shepherd()


def test_each_check_gets_its_own_environment_when_only_changes_are_sent() -> None:
    """The caller sends the environment only when it differs from the last one; a shepherd
    reused across different environments still gives each check exactly its own."""
    show = ["sh", "-c", 'printf "%s" "$WHO"']
    seen = [
        run(show, env={**ENV, "WHO": who}).stdout for who in ("first", "first", "second", "first")
    ]
    assert seen == ["first", "first", "second", "first"]
    assert len(contain.POOL._idle.get("namespace", [])) == 1  # one shepherd served them all


@pytest.mark.parametrize("bad", [{"A=B": "x"}, {"NUL": "a\0b"}], ids=["name", "nul"])
def test_a_bad_environment_fails_its_check_and_no_other(bad: dict[str, str]) -> None:
    good = {**ENV, "WHO": "good"}
    failed = [run(["true"], env={**ENV, **bad}) for _ in range(2)]  # sent once, kept
    after = run(["sh", "-c", 'printf "%s" "$WHO"'], env=good)
    for r in failed:
        assert (r.spawn_target, r.exit_code) == ("argv", None), r
    assert (after.exit_code, after.stdout) == (0, "good")
    if level_here() != "group":
        direct = run(["true"], env={**ENV, **bad}, isolation="off")
        assert direct.spawn_target == "argv"  # as Popen says it


@pytest.mark.parametrize("need_pid", [True, False], ids=["pid", "quiet"])
def test_a_check_gets_only_stdin_stdout_and_stderr(need_pid: bool) -> None:
    """No descriptor of ours reaches a check: not the shepherd's socket, not the copies of
    the output pipes it was handed (a check holding one would keep its own output open)."""
    show = [
        PY,
        "-c",
        "import json, os; print(json.dumps(sorted(map(int, os.listdir('/proc/self/fd')))))",
    ]
    for _ in range(2):  # the first check of a shepherd and a later one
        r = run(show, need_pid=need_pid)
        assert r.exit_code == 0, r.stderr
        opened = json.loads(r.stdout)
        assert opened[:3] == [0, 1, 2] and len(opened) <= 4, opened  # 4th: listdir's own


class _FinishedShepherd(contain.Shepherd):
    """A scripted shepherd (no process) whose check has ended by the time ``request``
    returns, as a real one's has when the caller first looks: the last output sits in the
    pipes, their write ends closed, and the exit waits in the socket, all ready at once."""

    def __init__(self) -> None:  # no process: the test plays the shepherd's side
        self.sock, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.buffer = bytearray()
        self.broken = True  # never pooled: give_back discards it
        self.level, self.inner, self.sent_env, self.owner = "contained", None, None, -1

    def request(
        self, argv: list[str], cwd: str, env: dict[str, str], out: int, err: int, *,
        quiet: bool = False,
    ) -> None:  # fmt: skip
        self.quiet = quiet
        os.write(out, b"o" * 60_000 + b"END")  # fits a pipe's buffer: no reader needed
        os.write(err, b"e" * 1_000)
        contain._proto.send(self.peer, {"exit": 0, "abandoned": False})

    def discard(self) -> None:
        self.sock.close()
        self.peer.close()


def test_output_still_in_the_pipes_when_the_exit_is_read_is_kept() -> None:
    """The exit and the check's last output can be ready together (a real shepherd closes
    its copies of the pipes just before it answers): the exit is taken first and the
    pipes are drained after it, so nothing the check wrote last is lost."""
    shepherd = _FinishedShepherd()
    start = time.monotonic()
    r = shepherded.run_shepherded(
        contain.Pool(), shepherd, ("check",), "/", ENV, start, 60.0, 1 << 20, None, False
    )
    assert (r.exit_code, r.stdout_bytes, r.stderr_bytes) == (0, 60_003, 1_000), r
    assert r.stdout.endswith("END")
    assert time.monotonic() - start < 30  # read at once, not after some grace period


@pytest.mark.parametrize("need_pid", [True, False], ids=["pid", "quiet"])
def test_the_output_is_whole_through_a_shepherd(need_pid: bool) -> None:
    """What a check wrote last, on both streams and past a pipe's buffer, is all there."""
    code = "import sys; sys.stdout.write('o' * 200_000 + 'END'); sys.stderr.write('e' * 70_000)"
    for _ in range(3):
        r = run([PY, "-c", code], need_pid=need_pid)
        assert (r.exit_code, r.stdout_bytes, r.stderr_bytes) == (0, 200_003, 70_000)
        assert r.stdout.endswith("END")


def test_a_quiet_request_gets_one_answer_the_exit() -> None:
    """A caller that needs no pid (a gate) asks quietly: the shepherd's first and only
    answer is the exit, or why the check did not start."""
    pool = contain.Pool()
    shepherd = pool.take()
    if shepherd is None:
        pytest.skip(f"no shepherd here: {pool.failure('namespace')}")
    try:
        answers = []
        for argv in (["sh", "-c", "exit 3"], ["no-such-program-vgate"]):
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            try:
                shepherd.request(argv, "/", dict(ENV), out_w, err_w, quiet=True)
            finally:
                for fd in (out_w, err_w):
                    os.close(fd)
            answers.append(shepherd._answer(30.0))
            for fd in (out_r, err_r):
                os.close(fd)
        assert answers[0] == {"exit": 3, "abandoned": False}
        assert answers[1] is not None and answers[1]["oserror"][0] == errno.ENOENT
        assert not shepherd.has_answer()
    finally:
        pool.give_back(shepherd)
        pool.close()


@pytest.mark.slow
def test_a_check_run_without_a_pid_is_contained_alike(tmp_path: Path) -> None:
    """``need_pid=False`` (how gates run): same exit codes, same spawn errors, the same
    deadline, and still nothing the check started outlives it; only the pid is unknown."""
    assert run(["sh", "-c", "exit 3"], need_pid=False).exit_code == 3
    missing = run(["no-such-program-vgate"], need_pid=False)
    assert (missing.exit_code, missing.program_not_found) == (None, True)
    marker = new_marker("quiet")
    try:
        r = run(escaping_check(marker, str(tmp_path), "hang"), timeout=4, need_pid=False)
        assert "escaped: ['daemon', 'setsid']" in r.stdout, r.stderr
        assert (r.exit_code, r.timed_out) == (None, True)
        if r.isolation != "group":
            assert r.pid is None
        assert survivors(marker) == [], "a descendant outlived the check"
    finally:
        kill_all(marker)


def test_an_exit_that_arrives_with_started_is_not_waited_for() -> None:
    """Both answers of a quick check can come in one read: the second sits in our buffer,
    not in the socket, and must be taken from there (not after the deadline)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    shepherd = contain.Shepherd.__new__(contain.Shepherd)  # the reader, on a real socket
    shepherd.sock, shepherd.buffer, shepherd.level, shepherd.broken = ours, bytearray(), "", False
    frames = b"".join(
        len(body).to_bytes(4, "big") + body
        for body in (marshal.dumps({"started": 4242}), marshal.dumps({"exit": 3}))
    )
    theirs.sendall(frames)
    sel = select.poll()
    sel.register(ours.fileno(), select.POLLIN)
    started = time.monotonic()
    try:
        timed_out, code, pid = shepherded._watch_shepherd(
            shepherd, sel, {}, time.monotonic() + 5.0, None
        )
    finally:
        ours.close()
        theirs.close()
    assert (timed_out, code, pid) == (False, 3, 4242)
    assert time.monotonic() - started < 4.0
