"""Find processes by a marker in their command line, as the host sees them.

A check in a private PID namespace sees other pids than we do, so a pid file it writes
names nothing here. Tests give the processes they start a unique marker argument and
look for it in ``/proc/*/cmdline`` instead: a survivor is any live process that carries
it. Also: a way to run a command as an unprivileged user, with or without the right to
make user namespaces (real restrictions, made with ``unshare``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

PY = sys.executable
SLEEPER = "import sys, time; time.sleep(300)"  # run as: PY -c SLEEPER MARKER


def new_marker(tag: str = "proc") -> str:
    return f"vgate-{tag}-{uuid.uuid4().hex[:12]}"


def host_pids(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line has an argument containing marker."""
    found = []
    needle = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        if state not in (b"Z", b"X") and any(needle in arg for arg in args):
            found.append(int(name))
    return found


def survivors(marker: str, within: float = 10.0) -> list[int]:
    """The processes carrying marker that are still alive after up to ``within`` seconds."""
    end = time.monotonic() + within
    while True:
        left = host_pids(marker)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def wait_running(marker: str, count: int, within: float = 30.0) -> list[int]:
    end = time.monotonic() + within
    while time.monotonic() < end:
        pids = host_pids(marker)
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"{count} processes with {marker} never ran: {host_pids(marker)}")


def kill_all(marker: str) -> None:
    """Clean up after a test that shows something survives."""
    import signal

    for pid in host_pids(marker):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def escaping_check(marker: str, ready_dir: str, then: str) -> list[str]:
    """argv of a check that starts a setsid() grandchild and a double-forked daemon.

    Both carry ``marker`` and announce themselves in ``ready_dir``; once both run the
    check ends as ``then`` says: ``pass`` (exit 0), ``fail`` (exit 1) or ``hang``.
    """
    code = f"""
import os, sys, time
marker, ready = sys.argv[1], sys.argv[2]
def sleeper(tag):
    open(os.path.join(ready, tag), "w").close()
    os.execv(sys.executable, [sys.executable, "-c", {SLEEPER!r}, marker + "-" + tag])
if os.fork() == 0:
    os.setsid()
    sleeper("setsid")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.chdir("/")
        sleeper("daemon")
    os._exit(0)
end = time.monotonic() + 30
while len(os.listdir(ready)) < 2 and time.monotonic() < end:
    time.sleep(0.02)
time.sleep(0.2)  # both have exec'd the sleeper by now
print("escaped:", sorted(os.listdir(ready)), flush=True)
if {then!r} == "hang":
    time.sleep(300)
sys.exit(0 if {then!r} == "pass" else 1)
"""
    return [PY, "-c", code, marker, ready_dir]


def unshare_available() -> bool:
    if shutil.which("unshare") is None or not os.path.isdir("/proc"):
        return False
    probe = ["unshare", "--user", "--map-root-user", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def as_unprivileged(argv: list[str], *, userns: bool) -> list[str]:
    """argv run as a non-root user (uid 1000 in a user namespace of ours).

    With ``userns=False`` that user may not create user namespaces (the namespace's
    ``max_user_namespaces`` is 1, used up by its own), as on hosts that forbid them.
    """
    limit = "echo 1 > /proc/sys/user/max_user_namespaces && " if not userns else ""
    inner = " ".join(_sh_quote(a) for a in argv)
    return [
        "unshare", "--user", "--map-root-user", "sh", "-c",
        f"{limit}exec unshare --user --map-user=1000 --map-group=1000 {inner}",
    ]  # fmt: skip


def _sh_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def run_unprivileged_session(
    cwd: Path, *args: str, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``cwd`` as a user who may not create user namespaces
    (``as_unprivileged(userns=False)``), importing what this suite imports."""
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", *args]
    env = {**(env or os.environ), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        as_unprivileged(argv, userns=False),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
