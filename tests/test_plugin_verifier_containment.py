"""End to end: what contains a verifier, its tools, and what its verdict records.

A verifier cannot read the session's environment through ``/proc``.
A ``type: python`` gate whose verifier prints every ``/proc/*/environ`` it can read and
the environments of its ancestors (parent, grandparent, ... by ``/proc/<pid>/stat``),
with a secret planted in the pytest process's environment. Real pytest processes, plain
and ``-n 2``; the secret must reach neither the output, the junit xml nor the report.
Nothing a verifier's tools start (a background child, a setsid daemon) outlives its gate,
however the verifier ends; and its verdict records the isolation it ran under.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from helpers.junit import junit_cases
from helpers.procs import (
    PY,
    kill_all,
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


# A verifier's tools: each starts a background child and a setsid daemon that carry the
# marker, says so in READY, and exits; the verifier then passes, fails, raises, hangs to
# the deadline, or answers before the pytest process has started the tool it asked for.
TOOLS = '''\
import os, sys, time
from pytest_vgate import Outcome

MARKER, READY, PY = {marker!r}, {ready!r}, {py!r}
SLEEP = "import time; time.sleep(300)"
BACKGROUND = f"touch {{READY}}/$1; {{PY}} -c '{{SLEEP}}' {{MARKER}}-bg-$1 & echo started"
DAEMON = f"""
import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", {{SLEEP!r}}, sys.argv[1]])
    os._exit(0)
open(os.path.join({{READY!r}}, sys.argv[2]), "w").close()
"""

def _start(ctx, tag):
    ctx.run("sh", "-c", BACKGROUND, "sh", tag)
    ctx.run("python", "-c", DAEMON, f"{{MARKER}}-daemon-{{tag}}", tag + "-daemon")

def passes(ctx):
    _start(ctx, "passes")
    ctx.run("python", "-c", "pass")
    return True

def fails(ctx):
    _start(ctx, "fails")
    return Outcome.failed("no")

def raises(ctx):
    _start(ctx, "raises")
    raise RuntimeError("boom")

def hangs(ctx):
    _start(ctx, "hangs")
    time.sleep(300)

def answers_first(ctx):
    # Requests on the call socket, and the answer before the tools have started (each
    # waits for its background child: it would run to its own deadline).
    for n in range(4):
        ctx._link.send({{"op": "run", "tool": "sh", "cwd": None, "expect": [0],
                        "args": ["-c", BACKGROUND + "; wait", "sh", "answers_first"],
                        "id": 10**6 + n}})
    return False
'''

WATCH = """\
import json, os, time
from helpers_procs import host_pids

def _left(gate):  # this gate's processes only: under -n 2 another gate runs meanwhile
    return [p for kind in ("bg", "daemon") for p in host_pids(f"{marker}-{{kind}}-{{gate}}")]

def pytest_runtest_logfinish(nodeid, location):
    gate = nodeid.rpartition("::")[2]
    end = time.monotonic() + 3
    while _left(gate) and time.monotonic() < end:
        time.sleep(0.05)
    with open({log!r}, "a") as f:
        f.write(json.dumps([nodeid, _left(gate)]) + "\\n")
"""

ENDINGS = ("passes", "fails", "raises", "hangs", "answers_first")


def test_processes_a_verifiers_tools_start_die_with_its_call(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    """Whatever the verifier does, nothing its tools started outlives its gate: each
    item's end is checked from inside the session, before the next gate runs."""
    marker = new_marker("tooltree")
    ready = pytester.path / "ready"
    ready.mkdir()
    log = pytester.path / "left.jsonl"
    helpers = Path(__file__).with_name("helpers") / "procs.py"
    (pytester.path / "helpers_procs.py").write_text(helpers.read_text(), encoding="utf-8")
    (pytester.path / "tools_checks.py").write_text(
        TOOLS.format(marker=marker, ready=str(ready), py=PY), encoding="utf-8"
    )
    (pytester.path / "conftest.py").write_text(
        WATCH.format(marker=marker, log=str(log)), encoding="utf-8"
    )
    gates = ["gates:"] + [
        f"  - {{id: {name}, type: python, tools: [sh, python], "
        f"timeout: {4 if name == 'hangs' else 60}, "
        f"verifiers: ['tools_checks:{name}']}}"
        for name in ENDINGS
    ]
    (pytester.path / "gates.yaml").write_text("\n".join(gates) + "\n", encoding="utf-8")
    report = pytester.path / "report.json"
    try:
        done = subprocess.run(
            [PY, "-m", "pytest", "-p", "no:cacheprovider", *dist_args, "--vgate",
             "gates.yaml", f"--vgate-report={report}"],
            cwd=pytester.path, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        import json

        left = [json.loads(line) for line in log.read_text().splitlines()]
        started = sorted(os.listdir(ready))
    finally:
        kill_all(marker)
    assert done.returncode == 1, done.stdout[-3000:]
    modes = {g["id"]: g["mode"] for g in json.loads(report.read_text())["gates"]}
    assert modes == {
        "passes": "ungrounded",  # its only runs are authored: no tool's answer
        "fails": "fail",
        "raises": "error",
        "hangs": "timeout",
        "answers_first": "fail",
    }, modes
    for name in ENDINGS[:-1]:  # each started its tools' processes before it ended
        assert {name, f"{name}-daemon"} <= set(started), started
    survivors = {nodeid: pids for nodeid, pids in left if pids}
    assert survivors == {}, (survivors, done.stdout[-2000:])


RECORDED = """
from pytest_vgate import verifier

def asks(ctx):
    return ctx.run("echo", "yes").exit_code == 0

@verifier(id="item", tools=["echo"])
def test_item(ctx):
    return ctx.run("echo", "yes").exit_code == 0
"""


@pytest.mark.parametrize("level", ["auto", "off"])
def test_a_verifier_verdict_records_the_isolation_it_ran_under(
    pytester: pytest.Pytester, run_vgate, level: str
) -> None:  # type: ignore[no-untyped-def]
    """junit ``vgate_isolation`` and JSON ``isolation`` of a ``type: python`` gate and of
    a ``@verifier`` item: the weakest of what contained the verifier's process and its
    tool runs (off: process groups only, for the tools too)."""
    pytester.makepyfile(test_recorded=RECORDED)
    (pytester.path / "gates.yaml").write_text(
        "gates:\n  - {id: gate, type: python, tools: [echo], verifiers: ['test_recorded:asks']}\n",
        encoding="utf-8",
    )
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "--vgate", "gates.yaml", f"--vgate-report={report}", "--vgate-isolation", level
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    expected = "namespace" if level == "auto" and NAMESPACE_HERE else "group"
    recorded = {name.rpartition("::")[2]: c.get("vgate_isolation") for name, c in cases.items()}
    assert recorded == {"gate": expected, "item": expected}, recorded
    entries = {g["id"]: g.get("isolation") for g in json.loads(report.read_text())["gates"]}
    assert entries == {"gate": expected, "item": expected}, entries
