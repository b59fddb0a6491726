"""End to end: red before green in real pytest sessions on real git repositories.

Each test builds the two-commit bug/fix repository (``helpers.git_repo``), runs real
pytest sessions in it (plain and under ``-n 2``) and reads what a user would: junit
properties, the JSON report, the terminal summary, the ledger on disk, ``git worktree
list`` and the temp directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers.git_repo import FIX_TEST_ID, BugFixRepo, make_bugfix_repo
from helpers.junit import junit_cases
from helpers.procs import new_marker, survivors
from helpers.report import read_report

PY = shlex.quote(sys.executable)
# The fix's test, run from the gates root (``-m`` puts the cwd on sys.path). The inner
# sessions skip plugin autoload only to stay cheap on a 2-core CI machine.
RUN_FIX_TEST = f"""check: {PY} -m pytest -q {FIX_TEST_ID}
    env: {{set: {{PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}}}"""
ASSERT_ADD = f'''check: {PY} -c "from pkg.mathx import add; assert add(2, 3) == 5"'''
LEAN = ("-p", "no:hypothesispytest")  # outer sessions: a plugin these tests do not need


@pytest.fixture
def private_tmp(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR of this test only, so leftover ``vgate-base-*`` dirs are ours to see."""
    path = pytester.path / "tmp"
    path.mkdir()
    monkeypatch.setenv("TMPDIR", str(path))
    return path


def write_gates(root: Path, body: str) -> Path:
    path = root / "gates.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def read_ledger(path: Path) -> list[dict[str, object]]:
    """Every line of a ledger file, each of which must be a whole JSON record."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_nothing_left(repo: BugFixRepo, tmpdir: Path) -> None:
    assert repo.worktrees() == [str(repo.repo)]
    assert not [p.name for p in tmpdir.iterdir() if p.name.startswith("vgate-base-")]


def assert_no_crash(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text
    assert "Traceback" not in text, text


def run_plain(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict[str, dict[str, object]]]:
    """A real session without xdist, for tests whose subject is not the distribution."""
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *LEAN, f"--junitxml={junit}", *args
    )
    return result, junit_cases(junit) if junit.exists() else {}


def summary_row(result: pytest.RunResult, gate_id: str) -> str:
    """The red-before-green table row of a gate (the lines start with two spaces)."""
    rows = [ln for ln in result.stdout.lines if ln.startswith(f"  {gate_id} ")]
    assert len(rows) == 1, result.stdout.str()
    return rows[0]


# -- --vgate-base ------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs" / "red-before-green.md"


def docs_example_gates() -> str:
    """The end-to-end example's gates file from the docs, run with this interpreter."""
    text = DOCS.read_text(encoding="utf-8")
    marker = text.index("is run by tests/test_plugin_rbg.py")
    block = text[text.index("```yaml\n", marker) + len("```yaml\n") :]
    block = block[: block.index("```")]
    return block.replace("check: python ", f"check: {PY} ")


def test_base_ref_gives_every_status(
    run_vgate, bugfix_project: BugFixRepo, private_tmp: Path, pytester: pytest.Pytester
) -> None:
    write_gates(bugfix_project.root, docs_example_gates())
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert_no_crash(result)
    assert result.ret == 1, result.stdout.str()
    expected = {
        "add-proven": ("passed", "proven", "pass", None),
        "add-no-overlay": ("failure", "weak-red", "fail", "broken_test"),
        "imports": ("failure", "never-red", "fail", "broken_test"),
        "neg-kept": ("passed", "regression", "pass", None),
    }
    for gate_id, (outcome, rbg, mode, cause) in expected.items():
        case = cases[gate_id]
        assert (case["outcome"], case.get("vgate_rbg")) == (outcome, rbg), (gate_id, case)
        assert (case["vgate_mode"], case.get("vgate_cause")) == (mode, cause), (gate_id, case)

    gates = {g["id"]: g for g in read_report(report)["gates"]}
    proven = gates["add-proven"]
    assert proven["rbg"] == "proven"
    assert proven["red"]["where"] == "base" and proven["red"]["base_ref"] == "HEAD~1"
    assert proven["red"]["exit_code"] == 1
    assert proven["red"]["tree"]["commit"] == bugfix_project.bug_sha  # ran on the buggy commit
    assert proven["base"]["exit_code"] == 1 and proven["green"]["exit_code"] == 0
    # Without the overlay the fix's test does not exist on the base: pytest exit 4.
    assert gates["add-no-overlay"]["base"]["exit_code"] == 4
    assert "exit 4" in gates["add-no-overlay"]["rbg_reason"]
    assert "overlay: [tests/]" in gates["add-no-overlay"]["rbg_reason"]  # the hint
    assert gates["imports"]["base"]["exit_code"] == 0
    assert gates["neg-kept"]["base"]["exit_code"] == 0

    out = result.stdout.str()
    assert "red-before-green: 1 never-red, 1 proven, 1 regression, 1 weak-red" in out
    sha = bugfix_project.bug_sha[:10]
    # One worktree per overlay set, and the header says which is which.
    assert f"vgate: base HEAD~1 ({sha}, overlay tests) at " in out
    assert f"vgate: base HEAD~1 ({sha}, no overlay) at " in out
    assert "base HEAD~1 exit 1" in summary_row(result, "add-proven")
    assert "weak-red" in summary_row(result, "add-no-overlay")
    assert_nothing_left(bugfix_project, private_tmp)
    # The base runs are in the ledger too, next to the current ones.
    records = read_ledger(bugfix_project.root / ".vgate" / "ledger.jsonl")
    assert sorted(str(r["where"]) for r in records) == ["base"] * 4 + ["current"] * 4


@pytest.mark.parametrize(
    ("where", "base", "message"),
    [
        ("outside", "HEAD", "is not inside a git repository"),
        ("repo", "no-such-ref", "'no-such-ref' is not a commit"),
        ("missing-overlay", "HEAD~1", "overlay path 'nope' does not exist"),
    ],
    ids=["not-a-repo", "unknown-ref", "missing-overlay"],
)
def test_base_setup_errors_are_usage_errors(
    pytester: pytest.Pytester, private_tmp: Path, monkeypatch: pytest.MonkeyPatch,
    where: str, base: str, message: str,
) -> None:  # fmt: skip
    repo = None
    gates = f"gates:\n  - id: a\n    check: {PY} -c pass\n"
    if where == "outside":
        root = pytester.path / "plain"
        root.mkdir()
    else:
        repo = make_bugfix_repo(pytester.path)
        root = repo.root
        if where == "missing-overlay":
            gates += "    overlay: [nope/]\n"
    write_gates(root, gates)
    monkeypatch.chdir(root)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *LEAN, "--vgate", "gates.yaml", "--vgate-base", base
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert f"--vgate-base {base}" in result.stderr.str()
    assert message in result.stderr.str()
    assert_no_crash(result)
    if repo is not None:
        assert_nothing_left(repo, private_tmp)


# -- the ledger route ---------------------------------------------------------------------

LEDGER_GATES = f"""
gates:
  - id: add-fixed
    claim: add(2, 3) is 5
    {RUN_FIX_TEST}
  - id: add-reclaimed
    claim: @RECLAIMED@
    {ASSERT_ADD}
  - id: add-stale
    claim: add(2, 3) is 5
    {ASSERT_ADD}
    @STALE@
  - id: imports
    claim: the package imports
    check: {PY} -c "import pkg"
"""


def ledger_gates(claim: str, stale: str) -> str:
    return LEDGER_GATES.replace("@RECLAIMED@", claim).replace("@STALE@", stale)


def test_ledger_route_red_then_green(
    run_vgate, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_bugfix_repo(pytester.path, subdir="proj")  # gates root below the repo top
    monkeypatch.chdir(repo.root)
    monkeypatch.setenv("COLUMNS", "200")  # each table row on one line (summary_row)
    report = pytester.path / "report.json"
    ledger = repo.root / ".vgate" / "ledger.jsonl"
    write_gates(repo.root, ledger_gates("add works", ""))
    repo.reintroduce_bug()
    red, cases = run_vgate("gates.yaml", "--vgate", "gates.yaml", *LEAN)
    assert red.ret == 1, red.stdout.str()
    for gate_id in ("add-fixed", "add-reclaimed", "add-stale"):
        assert cases[gate_id]["outcome"] == "failure"
        assert (cases[gate_id]["vgate_mode"], cases[gate_id]["vgate_cause"]) == ("fail", "product")
        assert cases[gate_id]["vgate_exit_code"] == "1"
        assert cases[gate_id]["vgate_rbg"] == "unproven"
    # Green without red evidence passes, listed as unproven.
    assert (cases["imports"]["outcome"], cases["imports"]["vgate_rbg"]) == ("passed", "unproven")
    red_tree = next(r["tree"] for r in read_ledger(ledger) if r["gate_id"] == "add-fixed")
    assert isinstance(red_tree, dict) and "+dirty:" in red_tree["label"]

    # The fix, a reworded claim, and stale_at set after the red run; now red is required.
    repo.fix_bug()
    after_red = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    write_gates(
        repo.root,
        ledger_gates("add adds its arguments", f"stale_at: {after_red}"),
    )
    green, cases = run_vgate(
        "gates.yaml", "--vgate", "gates.yaml", "--vgate-report", str(report),
        "--vgate-require-red", *LEAN,
    )  # fmt: skip
    assert green.ret == 1, green.stdout.str()
    assert_no_crash(green)
    expected = {
        "add-fixed": ("passed", "proven", "pass", None),
        "add-reclaimed": ("failure", "requirement-changed", "fail", "requirement_changed"),
        "add-stale": ("failure", "unproven", "fail", "broken_test"),
        "imports": ("failure", "unproven", "fail", "broken_test"),
    }
    for gate_id, (outcome, rbg, mode, cause) in expected.items():
        case = cases[gate_id]
        assert (case["outcome"], case["vgate_rbg"]) == (outcome, rbg), (gate_id, case)
        assert (case["vgate_mode"], case.get("vgate_cause")) == (mode, cause), (gate_id, case)
    gates = {g["id"]: g for g in read_report(report)["gates"]}
    assert gates["add-fixed"]["red"]["tree"]["label"] == red_tree["label"]
    assert gates["add-fixed"]["red"]["exit_code"] == 1
    assert "stale_at" in gates["add-stale"]["rbg_reason"]
    assert "--vgate-require-red" in gates["imports"]["rbg_reason"]
    row = summary_row(green, "add-fixed")
    assert f"{red_tree['label']} exit 1" in row and "proven" in row
    assert "red-before-green: 1 proven, 1 requirement-changed, 2 unproven" in green.stdout.str()
    assert "red earlier (" not in green.stdout.str()  # reasons only with -v
    counts: dict[str, int] = {}
    for record in read_ledger(ledger):
        counts[str(record["gate_id"])] = counts.get(str(record["gate_id"]), 0) + 1
    assert counts == {"add-fixed": 2, "add-reclaimed": 2, "add-stale": 2, "imports": 2}


# -- a broken ledger never breaks the session ---------------------------------------------

CHEAP_GATES = f"""
gates:
  - id: add-fixed
    claim: add(2, 3) is 5
    {ASSERT_ADD}
  - id: answers-no
    check: {PY} -c "raise SystemExit(3)"
"""


def test_corrupted_ledger_warns_and_keeps_what_parses(
    bugfix_project: BugFixRepo, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # each table row on one line (summary_row)
    write_gates(bugfix_project.root, CHEAP_GATES)
    ledger = bugfix_project.root / ".vgate" / "ledger.jsonl"
    bugfix_project.reintroduce_bug()
    red, cases = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml")
    assert cases["add-fixed"]["outcome"] == "failure", red.stdout.str()
    with ledger.open("ab") as fh:  # garbage, then a torn line without its newline
        fh.write(b'\x00\xff\xfe garbage \x80\n{"gate_id": "add-fix')
    bugfix_project.fix_bug()
    result, cases = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml", "-v")
    assert_no_crash(result)
    assert result.ret == 1
    assert (cases["add-fixed"]["outcome"], cases["add-fixed"]["vgate_rbg"]) == ("passed", "proven")
    answers_no = cases["answers-no"]
    assert (answers_no["outcome"], answers_no["vgate_mode"]) == ("failure", "fail")
    assert answers_no["vgate_cause"] == "product"
    result.stdout.fnmatch_lines([f"vgate warning: vgate ledger {ledger}: skipped 2 unreadable*"])
    row = summary_row(result, "add-fixed")
    assert "proven" in row and "exit 1 at " in row
    assert result.stdout.lines[result.stdout.lines.index(row) + 1].startswith("      red earlier (")
    # This session's records were still appended, each on a line of its own.
    lines = ledger.read_bytes().split(b"\n")
    assert [json.loads(line)["gate_id"] for line in lines[-3:-1]] == ["add-fixed", "answers-no"]


def test_unwritable_ledger_warns_and_keeps_verdicts(
    run_vgate, bugfix_project: BugFixRepo, pytester: pytest.Pytester
) -> None:
    write_gates(bugfix_project.root, CHEAP_GATES)
    blocker = pytester.path / "blocker"
    blocker.write_text("a file where the ledger directory should be\n")
    ledger_dir = blocker / "ledger"
    result, cases = run_vgate(
        "gates.yaml", "--vgate", "gates.yaml", "--vgate-ledger", str(ledger_dir), *LEAN
    )
    assert_no_crash(result)
    assert result.ret == 1
    assert (cases["add-fixed"]["outcome"], cases["add-fixed"]["vgate_rbg"]) == (
        "passed", "unproven",
    )  # fmt: skip
    assert (cases["answers-no"]["outcome"], cases["answers-no"]["vgate_cause"]) == (
        "failure", "product",
    )  # fmt: skip
    named = ledger_dir / "ledger.jsonl"
    result.stdout.fnmatch_lines(
        [
            f"vgate warning: vgate ledger {named}: cannot read*",
            f"vgate warning: vgate ledger {named}: cannot open for append*2 records*",
        ],
        consecutive=False,
    )
    assert blocker.read_text().startswith("a file where")


# -- concurrent sessions ------------------------------------------------------------------


BARRIER_CONFTEST = """
import os, pathlib, time

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # Before the controller writes the ledger: say we arrived, wait for the go.
    if hasattr(session.config, "workerinput"):
        return
    here = pathlib.Path({where!r})
    (here / f"arrived-{{os.getpid()}}").touch()
    deadline = time.monotonic() + 60
    while not (here / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
"""


def test_two_sessions_writing_one_ledger_lose_nothing(
    bugfix_project: BugFixRepo, pytester: pytest.Pytester
) -> None:
    """Both sessions are held just before their ledger write, then race for its lock."""
    gate_ids = [f"g{i:02d}" for i in range(12)]
    write_gates(
        bugfix_project.root,
        "gates:\n" + "".join(f"  - id: {g}\n    check: {PY} -c pass\n" for g in gate_ids),
    )
    barrier = pytester.path / "barrier"
    barrier.mkdir()
    (bugfix_project.root / "conftest.py").write_text(BARRIER_CONFTEST.format(where=str(barrier)))
    ledger = pytester.path / "shared" / "ledger.jsonl"
    ledger.parent.mkdir()
    ledger.touch()
    sessions = []
    for extra in ([], ["-n", "2"]):
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *LEAN,
                "gates.yaml", "--vgate", "gates.yaml", "--vgate-ledger", str(ledger),
                *extra]  # fmt: skip
        sessions.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    try:
        deadline = time.monotonic() + 120
        while len(list(barrier.glob("arrived-*"))) < 2:
            assert time.monotonic() < deadline, "the sessions never reached the ledger"
            assert all(s.poll() is None for s in sessions), "a session ended early"
            time.sleep(0.05)
        holder = os.open(ledger, os.O_RDWR)
        try:
            fcntl.flock(holder, fcntl.LOCK_EX)
            (barrier / "go").touch()
            time.sleep(0.5)  # both are now trying to take the lock we hold
            assert ledger.stat().st_size == 0  # and neither wrote without it
        finally:
            os.close(holder)  # releases the lock: both append at once
    finally:
        for session in sessions:
            if session.poll() is None and not (barrier / "go").exists():
                session.kill()
    outputs = [s.communicate(timeout=120)[0].decode() for s in sessions]
    for session, output in zip(sessions, outputs, strict=True):
        assert session.returncode == 0, output
        assert "vgate ledger" not in output, output
    records = read_ledger(ledger)
    counts = {g: sum(1 for r in records if r["gate_id"] == g) for g in gate_ids}
    assert counts == dict.fromkeys(gate_ids, 2)


# -- Ctrl-C ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_leaves_no_worktree(
    bugfix_project: BugFixRepo, private_tmp: Path, pytester: pytest.Pytester
) -> None:
    marker = pytester.path / "started"
    sleeper = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(marker)!r}).write_text(str(os.getpid())); time.sleep(120)"
    )
    tag = new_marker("ctrl-c")  # found by its command line: its pid is its namespace's
    write_gates(
        bugfix_project.root,
        f"gates:\n  - id: sleepy\n    check: {PY} -c {shlex.quote(sleeper)} {tag}\n"
        "    overlay: [tests/]\n",
    )
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *LEAN, "gates.yaml",
         "--vgate", "gates.yaml", "--vgate-base", "HEAD~1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() or not marker.read_text():
            assert session.poll() is None, session.communicate()[0].decode()
            assert time.monotonic() < deadline, "the gate never started"
            time.sleep(0.05)
        assert len(bugfix_project.worktrees()) == 2  # the base worktree exists while the gate runs
        session.send_signal(signal.SIGINT)
        output = session.communicate(timeout=60)[0].decode()
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    assert "INTERNALERROR" not in output
    assert_nothing_left(bugfix_project, private_tmp)
    assert survivors(tag) == [], "the check survived Ctrl-C"
