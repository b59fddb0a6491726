"""End to end: a verifier cannot read the session's environment through ``/proc``.

A ``type: python`` gate whose verifier prints every ``/proc/*/environ`` it can read and
the environments of its ancestors (parent, grandparent, ... by ``/proc/<pid>/stat``),
with a secret planted in the pytest process's environment. Real pytest processes, plain
and ``-n 2``; the secret must reach neither the output, the junit xml nor the report.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time

import pytest
from helpers.junit import junit_cases
from helpers.procs import (
    PY,
    new_marker,
    run_unprivileged_session,
    unshare_available,
)

from pytest_vgate.process import contain

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc (Linux)")
NAMESPACE_HERE = contain.POOL.probe("auto")[0] == "namespace"

SNOOP = """\
import os

def _ancestors():
    pid = os.getpid()
    for _ in range(32):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            return
        if pid <= 0:
            return
        yield pid

def snoop(ctx):
    names = [f"/proc/{p}/environ" for p in _ancestors()]
    names += [f"/proc/{d}/environ" for d in os.listdir("/proc") if d.isdigit()]
    found = 0
    for name in names:
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError:
            continue
        found += 1
        print(name, data.replace(b"\\0", b" ").decode("utf-8", "replace"))
    print("environments read:", found)
    return False
"""


def _session(pytester: pytest.Pytester, dist_args: list[str], *extra: str) -> tuple[str, str]:
    """(secret, everything the session wrote: output, junit xml, report)."""
    secret = new_marker("AKIA-secret")
    (pytester.path / "snooper.py").write_text(SNOOP, encoding="utf-8")
    (pytester.path / "gates.yaml").write_text(textwrap.dedent("""\
        gates:
          - id: snoop
            type: python
            verifiers: [snooper:snoop]
        """), encoding="utf-8")  # fmt: skip
    junit = pytester.path / "junit.xml"
    report = pytester.path / "report.json"
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": secret}
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-vv", *dist_args,
            "--vgate", "gates.yaml", f"--junitxml={junit}", f"--vgate-report={report}",
            *extra]  # fmt: skip
    done = subprocess.run(
        argv, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=240
    )
    text = done.stdout + done.stderr
    assert done.returncode == 1, text[-3000:]
    return secret, "\n".join((text, junit.read_text(), report.read_text()))


@pytest.mark.skipif(not NAMESPACE_HERE, reason="no private PID namespace here")
def test_a_verifier_cannot_read_the_sessions_environment(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    secret, written = _session(pytester, dist_args)
    assert "environments read: " in written  # the verifier ran and looked
    assert secret not in written


def test_without_isolation_the_snooping_verifier_finds_the_secret(
    pytester: pytest.Pytester,
) -> None:
    """The control: with --vgate-isolation off the same verifier leaks it (documented)."""
    secret, written = _session(pytester, [], "--vgate-isolation", "off")
    assert secret in written


SLEEPER = """
import os, time
from pytest_vgate import verifier

@verifier(id="sleeper")
def sleeper(ctx):
    (ctx.root / "ns").write_text(os.readlink("/proc/self/ns/pid"))
    time.sleep(300)

def test_plain():
    pass
"""


def _in_namespace(ns: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == ns:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not NAMESPACE_HERE, reason="no private PID namespace here")
def test_a_killed_session_leaves_nothing_in_the_verifiers_namespace(
    pytester: pytest.Pytester,
) -> None:
    """SIGKILL to pytest mid-verifier: every process of the verifiers' namespace ends
    (found by the namespace itself: the pids a verifier sees there are not ours)."""
    pytester.makepyfile(test_sleeper=SLEEPER)
    session = subprocess.Popen(
        [PY, "-m", "pytest", "-p", "no:cacheprovider", "test_sleeper.py"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    record = pytester.path / "ns"
    try:
        end = time.monotonic() + 60
        while not record.exists() and time.monotonic() < end:
            time.sleep(0.05)
        ns = record.read_text()
        assert ns != os.readlink("/proc/self/ns/pid")  # not ours: a namespace of its own
        assert _in_namespace(ns), "the verifier's namespace is not visible from here"
    finally:
        session.kill()
        session.wait()
    end = time.monotonic() + 15
    while time.monotonic() < end and _in_namespace(ns):
        time.sleep(0.05)
    assert _in_namespace(ns) == [], "a verifier or its zygote survived"


STRICT = """
from pytest_vgate import verifier

@verifier(id="strict")
def strict(ctx):
    return True

def test_plain():
    pass
"""


@pytest.mark.skipif(not unshare_available(), reason="needs unshare(1) and user namespaces")
def test_strict_without_namespaces_fails_the_verifier_with_sandbox(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_strict=STRICT)
    junit = pytester.path / "junit.xml"
    done = run_unprivileged_session(
        pytester.path, "--vgate-isolation", "strict", "-rA", f"--junitxml={junit}",
        "test_strict.py",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    cases = junit_cases(junit)
    [case] = [c for name, c in cases.items() if "strict" in name]
    assert (case["vgate_mode"], case["vgate_cause"]) == ("sandbox", "environment"), case
    assert "required isolation missing" in done.stdout
