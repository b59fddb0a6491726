"""End to end: a verifier cannot read the session's environment through ``/proc``.

A ``type: python`` gate whose verifier prints every ``/proc/*/environ`` it can read and
the environments of its ancestors (parent, grandparent, ... by ``/proc/<pid>/stat``),
with a secret planted in the pytest process's environment. Real pytest processes, plain
and ``-n 2``; the secret must reach neither the output, the junit xml nor the report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.procs import PY, new_marker, unshare_available

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
