"""End to end: what contains a verifier, its tools, and what its verdict records.

No check reads a secret of the session through ``/proc``: a command gate, a tool run
through ``ctx.run`` by a ``@verifier`` item or a ``type: python`` gate, and the verifier's
own process each scan every ``/proc/*/environ`` and ``cmdline`` for a secret in pytest's
environment and one in the xdist workers'. Nothing a verifier or its tools start (a
background child, a setsid child, a double-forked daemon) outlives its item or the
session, however the verifier ends. Both as root (PID namespaces) and as a user without
the right to make namespaces, plain and ``-n 2``. A verdict records the isolation it ran
under.
"""

from __future__ import annotations

import json
import os
import re
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
    survivors,
    unshare_available,
)

from pytest_vgate.process import contain

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc (Linux)")
NAMESPACE_HERE = contain.POOL.probe("auto")[0] == "namespace"

# Every way a check's process runs -- a command gate, a tool a verifier runs (a
# ``@verifier`` item's, a ``type: python`` gate's), the verifier's own process -- scans
# every /proc/*/environ and cmdline for two secrets: one in pytest's environment, one
# only the xdist workers were started with. It is given them reversed (its own command
# line holds neither) and reports what it read and where it found one.
SCAN = """\
import os, sys

def scan(label, *reversed_secrets):
    secrets = [s[::-1].encode() for s in reversed_secrets]
    read, found = 0, []
    for pid in [d for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]:
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            read += 1
            found += [f"{pid}/{name}" for s in secrets if s in data]
    return f"{label}: read {read}; found {found}"

if __name__ == "__main__":
    print(scan(*sys.argv[1:]))
"""
SNOOPER = """\
from pytest_vgate import Outcome, verifier
import scan

SECRETS = {secrets!r}

def via_tool(ctx, label="gate_tool"):
    run = ctx.run("python", "scan.py", label, *SECRETS)
    return Outcome.failed(run.stdout + run.stderr)

def directly(ctx, label="gate_direct"):
    return Outcome.failed(scan.scan(label, *SECRETS))

@verifier(id="item_tool", tools=["python"])
def item_tool(ctx):
    return via_tool(ctx, "item_tool")

@verifier(id="item_direct")
def item_direct(ctx):
    return directly(ctx, "item_direct")
"""
PLANT = """\
import os

def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # before the workers start: theirs alone
        os.environ["VGATE_WORKER_SECRET"] = {secret!r}
"""
CHECKS = ("command", "gate_tool", "gate_direct", "item_tool", "item_direct")


def _snooping_session(
    pytester: pytest.Pytester, who: str, dist_args: list[str], *extra: str
) -> tuple[tuple[str, str], str]:
    """(the two secrets, everything the session wrote: output, junit xml, report)."""
    secrets = (new_marker("AKIA-secret"), new_marker("worker-secret"))
    reversed_ = [s[::-1] for s in secrets]
    (pytester.path / "scan.py").write_text(SCAN, encoding="utf-8")
    (pytester.path / "test_snooper.py").write_text(
        SNOOPER.format(secrets=reversed_), encoding="utf-8"
    )
    (pytester.path / "conftest.py").write_text(PLANT.format(secret=secrets[1]), encoding="utf-8")
    (pytester.path / "gates.yaml").write_text(textwrap.dedent(f"""\
        gates:
          - {{id: command, tools: [python], check: python scan.py command {' '.join(reversed_)}}}
          - {{id: gate_tool, type: python, tools: [python], verifiers: ['test_snooper:via_tool']}}
          - {{id: gate_direct, type: python, verifiers: ['test_snooper:directly']}}
        """), encoding="utf-8")  # fmt: skip
    junit, report = pytester.path / "junit.xml", pytester.path / "report.json"
    args = ["-rA", "-vv", *dist_args, "--vgate", "gates.yaml", f"--junitxml={junit}",
            f"--vgate-report={report}", *extra]  # fmt: skip
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": secrets[0]}
    if who == "user":
        done = run_unprivileged_session(pytester.path, *args, env=env)
    else:
        done = subprocess.run(
            [PY, "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=pytester.path, env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    text = done.stdout + done.stderr
    assert done.returncode == 1, text[-3000:]
    return secrets, "\n".join((text, junit.read_text(), report.read_text()))


@pytest.mark.parametrize("who", ["root", "user"])
def test_no_check_reads_a_secret_of_the_session(
    pytester: pytest.Pytester, dist_args: list[str], who: str
) -> None:
    """Plain and ``-n 2``: as root each check runs in a private PID namespace (it sees its
    own processes only); without root, beside the session's processes, which it cannot
    read (they are not dumpable)."""
    if who == "root" and not (os.geteuid() == 0 and NAMESPACE_HERE):
        pytest.skip("not root, or no private PID namespace here")
    if who == "user" and not unshare_available():
        pytest.skip("needs unshare(1) and user namespaces")
    secrets, written = _snooping_session(pytester, who, dist_args)
    for label in CHECKS:  # each one ran, read environments and found nothing
        assert re.search(rf"{label}: read [1-9]\d*; found \[\]", written), (label, written[-3000:])
    assert not [s for s in secrets if s in written]


def test_without_isolation_the_snooping_checks_find_the_secret(pytester: pytest.Pytester) -> None:
    """The control: with --vgate-isolation off the same checks find it (documented)."""
    who = "user" if unshare_available() else "root"
    _secrets, written = _snooping_session(pytester, who, [], "--vgate-isolation", "off")
    assert re.search(r"command: read \d+; found \['\d+/environ'", written), written[-3000:]


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
# A verifier's helpers: its tools each start a background child and a setsid daemon
# that carry the marker, and so does the verifier's own process (a setsid child, a
# double-forked daemon); each says so in READY. The verifier then passes, fails, raises,
# hangs to the deadline, dies (os._exit), or answers before the pytest process has
# started the tool it asked for. The same run as ``type: python`` gates and as
# ``@verifier`` items (``item_...``).
TOOLS = '''\
import os, subprocess, sys, time
from pytest_vgate import Outcome, verifier

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
    subprocess.run([PY, "-c", DAEMON, f"{{MARKER}}-ddaemon-{{tag}}", tag + "-ddaemon"])
    subprocess.Popen(["sh", "-c", BACKGROUND.replace("-bg-", "-direct-") + "; wait", "sh",
                      tag + "-direct"], start_new_session=True)
    end = time.monotonic() + 60  # until the setsid child runs (the rest ran to exit)
    while tag + "-direct" not in os.listdir(READY) and time.monotonic() < end:
        time.sleep(0.01)

def passes(ctx, tag="passes"):
    _start(ctx, tag)
    ctx.run("python", "-c", "pass")
    return True

def fails(ctx, tag="fails"):
    _start(ctx, tag)
    return Outcome.failed("no")

def raises(ctx, tag="raises"):
    _start(ctx, tag)
    raise RuntimeError("boom")

def hangs(ctx, tag="hangs"):
    _start(ctx, tag)
    time.sleep(300)

def exits(ctx, tag="exits"):
    _start(ctx, tag)
    os._exit(3)

def answers_first(ctx, tag="answers_first"):
    # Requests on the call socket, and the answer before the tools have started (each
    # waits for its background child: it would run to its own deadline).
    for n in range(4):
        ctx._link.send({{"op": "run", "tool": "sh", "cwd": None, "expect": [0],
                        "args": ["-c", BACKGROUND + "; wait", "sh", tag],
                        "id": 10**6 + n}})
    return False

def _item(name):
    def item(ctx):
        return globals()[name](ctx, "item_" + name)
    item.__name__ = item.__qualname__ = "item_" + name
    timeout = 4 if name == "hangs" else 60
    return verifier(id="item_" + name, tools=["sh", "python"], timeout=timeout)(item)

for _name in ("passes", "fails", "raises", "hangs", "exits", "answers_first"):
    globals()["item_" + _name] = _item(_name)
'''

WATCH = """\
import json, os, time
from helpers_procs import host_pids

def _left(tag):  # this check's processes only: under -n 2 another one runs meanwhile
    return [p for kind in ("bg", "daemon", "direct", "ddaemon")
            for p in host_pids(f"{marker}-{{kind}}-{{tag}}")]

def pytest_runtest_logfinish(nodeid, location):
    tag = nodeid.rpartition("::")[2]
    end = time.monotonic() + 5  # a process killed a moment ago may not be gone yet
    while _left(tag) and time.monotonic() < end:
        time.sleep(0.05)
    ready = [e for e in os.listdir({ready!r}) if e == tag or e.startswith(tag + "-")]
    with open({log!r}, "a") as f:
        f.write(json.dumps([nodeid, _left(tag), ready]) + "\\n")
"""

ENDINGS = ("passes", "fails", "raises", "hangs", "exits", "answers_first")
MODES = {
    "passes": "ungrounded",  # its only runs are authored: no tool's answer
    "fails": "fail",
    "raises": "error",
    "hangs": "timeout",
    "exits": "crash",
    "answers_first": "fail",
}


@pytest.mark.parametrize("who", ["root", "user"])
def test_nothing_a_verifier_or_its_tools_start_outlives_its_item(
    pytester: pytest.Pytester, dist_args: list[str], who: str
) -> None:
    """Whatever the verifier does and however it started them, nothing its process or its
    tools started outlives its item (checked from inside the session, before the next
    item runs), nor the session; as root (in the verifiers' PID namespace) and without."""
    if who == "user" and not unshare_available():
        pytest.skip("needs unshare(1) and user namespaces")
    marker = new_marker("tooltree")
    ready = pytester.path / "ready"
    ready.mkdir()
    log = pytester.path / "left.jsonl"
    helpers = Path(__file__).with_name("helpers") / "procs.py"
    (pytester.path / "helpers_procs.py").write_text(helpers.read_text(), encoding="utf-8")
    (pytester.path / "test_tools_checks.py").write_text(
        TOOLS.format(marker=marker, ready=str(ready), py=PY), encoding="utf-8"
    )
    (pytester.path / "conftest.py").write_text(
        WATCH.format(marker=marker, log=str(log), ready=str(ready)), encoding="utf-8"
    )
    gates = ["gates:"] + [
        f"  - {{id: {name}, type: python, tools: [sh, python], "
        f"timeout: {4 if name == 'hangs' else 60}, "
        f"verifiers: ['test_tools_checks:{name}']}}"
        for name in ENDINGS
    ]
    (pytester.path / "gates.yaml").write_text("\n".join(gates) + "\n", encoding="utf-8")
    report = pytester.path / "report.json"
    args = [*dist_args, "--vgate", "gates.yaml", f"--vgate-report={report}"]
    try:
        if who == "user":
            done = run_unprivileged_session(pytester.path, *args)
        else:
            done = subprocess.run(
                [PY, "-m", "pytest", "-p", "no:cacheprovider", *args],
                cwd=pytester.path, capture_output=True, text=True, timeout=240,
            )  # fmt: skip
        left = [json.loads(line) for line in log.read_text().splitlines()]
        started = sorted(os.listdir(ready))
        after = survivors(marker, within=5)
    finally:
        kill_all(marker)
    assert done.returncode == 1, done.stdout[-3000:]
    modes = {g["id"]: g["mode"] for g in json.loads(report.read_text())["gates"]}
    assert modes == {**MODES, **{f"item_{k}": v for k, v in MODES.items()}}, modes
    for name in ENDINGS[:-1]:  # each started its processes before it ended
        for tag in (name, f"item_{name}"):
            expected = {tag, *(f"{tag}-{kind}" for kind in ("daemon", "ddaemon", "direct"))}
            assert expected <= set(started), started
    survived = {nodeid: pids for nodeid, pids, _ in left if pids}
    assert survived == {}, (survived, done.stdout[-2000:])
    tags = {nodeid.rpartition("::")[2]: set(seen) for nodeid, _, seen in left}
    late = {  # a READY entry of an item written after that item ended
        e
        for tag, seen in tags.items()
        for e in started
        if (e == tag or e.startswith(tag + "-")) and e not in seen
    }
    assert late == set(), "a tool started after its item ended"
    assert after == [], "processes outlived the session"


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
