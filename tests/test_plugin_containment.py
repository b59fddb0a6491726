"""End to end: a session always ends, leaves nothing running, and checks cannot see it.

- a gate that runs pytest never starts the gates again, however ``--vgate`` was given;
- SIGTERM to pytest ends the session like Ctrl-C (check killed, worktree removed, report
  written, exit status not 0);
- a check cannot read the session's environment through ``/proc``;
- the header says which isolation is in force; ``strict`` without it is ``sandbox``.

Real pytest processes, real signals, real git repositories; survivors are looked for by
a marker in their command line (a check in a PID namespace writes pids we cannot use).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.git_repo import git
from helpers.junit import junit_cases
from helpers.procs import (
    PY,
    SLEEPER,
    as_unprivileged,
    kill_all,
    new_marker,
    run_unprivileged_session,
    survivors,
    unshare_available,
    wait_running,
)

from pytest_vgate.process import contain

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc (Linux)")
NAMESPACE_HERE = contain.POOL.probe("auto")[0] == "namespace"


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# --- the nested-run guard ------------------------------------------------------------------

ROUTES = ["ini-vgate", "ini-addopts", "PYTEST_ADDOPTS", "command-line", "env-cleared"]


def _nested_setup(
    pytester: pytest.Pytester, route: str, marker: str
) -> tuple[list[str], dict[str, str]]:
    """A gate whose check runs pytest in the same folder; (outer args, outer env)."""
    inner_args = ["-q", "-p", "no:cacheprovider"]
    if route in ("command-line", "env-cleared"):
        inner_args += ["--vgate", "gates.yaml"]
    inner = f"import sys, pytest; sys.exit(pytest.main({inner_args!r}))"
    check = f"{PY} -c {shlex.quote(inner)} {marker}"
    env_names = ["PYTHONPATH"]
    if route == "env-cleared":  # the check drops PYTEST_VGATE_NESTED with everything else
        check = f"env -i PYTHONPATH={os.environ.get('PYTHONPATH', '')} {check}"
        env_names = []
    if route == "PYTEST_ADDOPTS":
        env_names.append("PYTEST_ADDOPTS")
    write(pytester.path / "test_inner.py", "def test_inner():\n    pass\n")
    gates = {
        "gates": [
            {"id": "runs-pytest", "check": check, "timeout": 60, "env": env_names,
             "tools": ["env"] if route == "env-cleared" else []},
        ]
    }  # fmt: skip
    (pytester.path / "gates.yaml").write_text(json.dumps(gates), encoding="utf-8")
    ini = {"ini-vgate": "vgate = gates.yaml\n", "ini-addopts": "addopts = --vgate gates.yaml\n"}
    write(pytester.path / "pytest.ini", "[pytest]\n" + ini.get(route, ""))
    env = dict(os.environ)
    outer: list[str] = []
    if route == "PYTEST_ADDOPTS":
        env["PYTEST_ADDOPTS"] = "--vgate gates.yaml"
    elif route in ("command-line", "env-cleared"):
        outer = ["--vgate", "gates.yaml"]
    return outer, env


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_a_gate_running_pytest_never_runs_the_gates_again(
    pytester: pytest.Pytester, route: str, dist_args: list[str]
) -> None:
    if route == "env-cleared" and not NAMESPACE_HERE and contain.POOL.probe("auto")[0] == "group":
        pytest.skip("without a shepherd only the environment marks a nested run")
    marker = new_marker("nested")
    outer, env = _nested_setup(pytester, route, marker)
    junit = pytester.path / "junit.xml"
    report = pytester.path / "report.json"
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", *dist_args, *outer,
            f"--junitxml={junit}", f"--vgate-report={report}"]  # fmt: skip
    try:
        done = subprocess.run(
            argv, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=240
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        cases = junit_cases(junit)
        assert cases["runs-pytest"]["vgate_mode"] == "pass"
        (gate,) = json.loads(report.read_text())["gates"]
        assert "1 passed" in gate["stdout"], gate["stdout"]
        assert "runs-pytest" not in gate["stdout"] and "gates.yaml" not in gate["stdout"]
        assert survivors(marker) == [], "a nested pytest outlived the session"
    finally:
        kill_all(marker)


def test_the_header_says_a_nested_session_runs_no_gates(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester.path / "gates.yaml", "gates:\n  - id: g\n    check: 'true'\n")
    write(pytester.path / "test_a.py", "def test_a():\n    pass\n")
    monkeypatch.setenv("PYTEST_VGATE_NESTED", "1")
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["vgate: inside a check (PYTEST_VGATE_NESTED=1)*"])


# --- SIGTERM -------------------------------------------------------------------------------


def _repo_with_a_sleeping_gate(path: Path, marker: str) -> None:
    git(path, "init", "-q")
    sleeper = f"{PY} -c {shlex.quote(SLEEPER)} {marker}"
    write(path / "gates.yaml", f"""\
        gates:
          - id: quick
            check: "true"
            red: not-required
          - id: sleepy
            check: {sleeper}
            red: not-required
            timeout: 300
        """)  # fmt: skip
    write(path / "test_a.py", "def test_a():\n    pass\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "gates")


@pytest.mark.slow
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name
)
def test_sigterm_ends_the_session_like_ctrl_c(
    pytester: pytest.Pytester, dist_args: list[str], signum: signal.Signals
) -> None:
    """SIGTERM (a CI cancel), SIGHUP (a closed terminal) and SIGQUIT clean up alike."""
    marker = new_marker(signum.name.lower())
    _repo_with_a_sleeping_gate(pytester.path, marker)
    report = pytester.path / "report.json"
    junit = pytester.path / "junit.xml"
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", *dist_args, "--vgate", "gates.yaml",
            "--vgate-base", "HEAD", f"--vgate-report={report}", f"--junitxml={junit}"]  # fmt: skip
    session = subprocess.Popen(
        argv, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        wait_running(marker, 1, within=120)  # the gate runs (on the base or here)
        listed = git(pytester.path, "worktree", "list", "--porcelain")
        assert listed.count("worktree ") == 2  # the base worktree exists meanwhile
        session.send_signal(signum)
        out, _ = session.communicate(timeout=90)
        assert session.returncode not in (0, None), out
        assert survivors(marker) == [], "the check outlived the session"
        listed = git(pytester.path, "worktree", "list", "--porcelain")
        assert listed.count("worktree ") == 1, listed
        holders = [Path(line.split(" at ", 1)[1]).parent for line in out.splitlines()
                   if line.startswith("vgate: base ")]  # fmt: skip
        assert holders and not [h for h in holders if h.exists()], holders
        assert json.loads(report.read_text())["gates"] is not None
        assert junit.exists()
        assert signum.name in out
    finally:
        session.kill()
        kill_all(marker)


# --- secrets -------------------------------------------------------------------------------

SNOOP = "cat /proc/$PPID/environ; for f in /proc/*/environ; do cat $f; done; exit 1"


def _snooping_session(
    pytester: pytest.Pytester, dist_args: list[str], *extra: str
) -> tuple[str, str, str, str]:
    """Run a failing gate that prints every environment it can find; what it left."""
    secret = new_marker("AKIA-secret")
    write(pytester.path / "gates.yaml", f"""\
        gates:
          - id: snoop
            check: sh -c {shlex.quote(SNOOP)}
        """)  # fmt: skip
    junit = pytester.path / "junit.xml"
    report = pytester.path / "report.json"
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": secret}
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-vv", *dist_args,
            "--vgate", "gates.yaml", f"--junitxml={junit}", f"--vgate-report={report}",
            *extra]  # fmt: skip
    done = subprocess.run(
        argv, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 1, done.stdout[-3000:]
    return secret, done.stdout + done.stderr, junit.read_text(), report.read_text()


@pytest.mark.skipif(not NAMESPACE_HERE, reason="no private PID namespace here")
def test_a_secret_in_pytests_environment_reaches_no_output(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    secret, out, junit, report = _snooping_session(pytester, dist_args)
    assert "PYTEST_VGATE_NESTED=1" in report  # the check did read environments
    assert secret not in out
    assert secret not in junit
    assert secret not in report
    assert "vgate: isolation auto: private PID namespace" in out


def test_without_isolation_the_snooping_gate_finds_the_secret(pytester: pytest.Pytester) -> None:
    """The control: the same session with --vgate-isolation off leaks it (documented)."""
    secret, out, _junit, report = _snooping_session(pytester, [], "--vgate-isolation", "off")
    assert secret in report
    assert "vgate: isolation off: process group only" in out


# --- strict ----------------------------------------------------------------------------


@pytest.mark.skipif(not unshare_available(), reason="needs unshare(1) and user namespaces")
def test_strict_without_namespaces_fails_the_gate_with_sandbox(pytester: pytest.Pytester) -> None:
    write(pytester.path / "gates.yaml", "gates:\n  - id: g\n    check: 'true'\n")
    junit = pytester.path / "junit.xml"
    done = run_unprivileged_session(
        pytester.path, "--vgate", "gates.yaml", "--vgate-isolation", "strict",
        f"--junitxml={junit}",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    cases = junit_cases(junit)
    assert (cases["g"]["vgate_mode"], cases["g"]["vgate_cause"]) == ("sandbox", "environment")
    assert "required isolation missing" in done.stdout
    assert "vgate: isolation strict: subreaper" in done.stdout
    assert "command checks and verifiers fail with mode sandbox" in done.stdout


@pytest.mark.skipif(not unshare_available(), reason="needs unshare(1) and user namespaces")
@pytest.mark.parametrize("level", ["auto", "strict"])
def test_auto_without_root_keeps_the_users_world_and_strict_trades_it(
    pytester: pytest.Pytester, level: str
) -> None:
    """Without root a PID namespace needs a user namespace, in which setuid and file owners
    mean something else: ``auto`` takes the subreaper instead (what a check sees is what it
    sees without pytest-vgate); ``strict`` takes the namespace, as documented."""
    write(
        pytester.path / "conftest.py",
        "import os\n"
        "with open('session-userns', 'w') as f:\n"
        "    f.write(os.readlink('/proc/self/ns/user'))\n",
    )
    check = (
        "import os, sys; "
        "sys.exit(os.readlink('/proc/self/ns/user') != open('session-userns').read())"
    )
    write(
        pytester.path / "gates.yaml",
        f"gates:\n  - id: same-user-namespace\n    check: {PY} -c {shlex.quote(check)}\n",
    )
    junit = pytester.path / "junit.xml"
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", "--vgate", "gates.yaml",
            "--vgate-isolation", level, f"--junitxml={junit}"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        as_unprivileged(argv, userns=True),
        cwd=pytester.path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    case = junit_cases(junit)["same-user-namespace"]
    outcome, isolation = case["vgate_mode"], case["vgate_isolation"]
    if level == "auto":
        assert (done.returncode, outcome, isolation) == (0, "pass", "contained"), done.stdout
        assert "vgate: isolation auto: subreaper" in done.stdout
    else:  # its own user namespace: the price of a private PID namespace without root
        assert (done.returncode, outcome, isolation) == (1, "fail", "namespace"), done.stdout
        assert "vgate: isolation strict: private PID namespace" in done.stdout


def test_isolation_option_rejects_unknown_levels(pytester: pytest.Pytester) -> None:
    write(pytester.path / "gates.yaml", "gates:\n  - id: g\n    check: 'true'\n")
    write(pytester.path / "pytest.ini", "[pytest]\nvgate_isolation = sometimes\n")
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*vgate_isolation in *pytest.ini must be one of auto, strict, off, not 'sometimes'*"]
    )


@pytest.mark.slow
def test_a_daemonising_gate_leaves_nothing_after_the_session(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    marker = new_marker("daemon")
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv(sys.executable, [sys.executable, '-c', {SLEEPER!r}, {marker!r}])\n"
        "    os._exit(0)\n"
        "time.sleep(1)\n"
    )
    gates = {"gates": [{"id": "daemon", "check": f"{PY} -c {shlex.quote(code)}"}]}
    (pytester.path / "gates.yaml").write_text(json.dumps(gates), encoding="utf-8")
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "-p", "no:cacheprovider", *dist_args, timeout=240
    )
    try:
        result.assert_outcomes(passed=1)
        assert time.monotonic() - started < 240
        assert survivors(marker) == [], "the daemon outlived the session"
    finally:
        kill_all(marker)
