"""End to end: tool grounding in real pytest sessions, plain and under ``-n 2``.

Every tool is a real ``/bin/sh`` script (``helpers/toolchain.py``) that appends its ``$0``
to a marker file when it runs, so "the tool ran" and "the tool did not run" are facts on
disk, not inferences from a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.git_repo import git
from helpers.junit import junit_cases
from helpers.report import read_report
from helpers.toolchain import FakeTool, make_tool, path_decoy, path_env, toolchain_tool

from pytest_vgate.process.tools import toolchain_bin

PY = shlex.quote(sys.executable)
# The `run_vgate` fixture of tests/conftest.py: (result, junit cases by test name).
RunVgate = Callable[..., tuple[pytest.RunResult, dict[str, dict[str, object]]]]


def write(pytester: pytest.Pytester, name: str, body: str) -> Path:
    path = pytester.path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report_gates(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, Any]:
    data = read_report(pytester.path / name)
    return {g["id"]: g for g in data["gates"]}


CHECKS_PY = """
from pytest_vgate import Outcome


def ask(ctx):
    \"\"\"The answer is the declared tool's exit code.\"\"\"
    run = ctx.run(ctx.tools[0])
    if run.exit_code == 0:
        return Outcome.passed("the tool said yes")
    return Outcome.failed(f"the tool said no (exit {run.exit_code})")


def trust_me(ctx):
    return Outcome.passed("looked fine, did not ask")


def sneaky(ctx):
    try:
        ctx.run("sh", "-c", "exit 0")
    except Exception:
        pass
    return Outcome.passed("caught it")
"""

MODULE_VERIFIERS = """
from pytest_vgate import Outcome, verifier


@verifier(id="module-ungrounded", tools=["yes-tool"])
def module_ungrounded(ctx):
    return Outcome.passed("did not ask")


@verifier(id="module-grounded", tools=["yes-tool"])
def module_grounded(ctx):
    run = ctx.run("yes-tool")
    return Outcome.passed() if run.ok else Outcome.failed(f"exit {run.exit_code}")
"""

VERIFIER_GATES = """
gates:
  - id: ungrounded
    type: python
    verifiers: [checks:trust_me]
    tools: [yes-tool]
  - id: tool-says-yes
    type: python
    verifiers: [checks:ask]
    tools: [yes-tool]
  - id: tool-says-no
    type: python
    verifiers: [checks:ask]
    tools: [no-tool]
  - id: undeclared-run
    type: python
    verifiers: [checks:sneaky]
    tools: [yes-tool]
"""


def test_inventory_prefers_toolchain_then_path_else_unavailable(
    run_vgate: RunVgate, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.toolchain/bin`` comes before the caller's PATH (a failing decoy there never
    runs); a tool found nowhere is ``unavailable``, not a collection error. The report and
    the ``-v`` header name the selected file and the sha256 of its bytes."""
    root = pytester.path
    pinned = toolchain_tool(root, "mytool", exit_code=0)
    decoys = root / "decoybin"
    decoy = path_decoy(decoys, "mytool", exit_code=1)
    # Control: the decoy folder really is searched (a tool that lives only there is found).
    path_only = make_tool(decoys, "pathonly", exit_code=0)
    monkeypatch.setenv("PATH", path_env(decoys, base=os.environ.get("PATH")))
    # A multi-call tool: answers yes only when started by the name `hello` (the symlink),
    # so running the symlink's target instead of the selected path would fail.
    multi = toolchain_bin(root) / "multi"
    multi.write_text('#!/bin/sh\n[ "${0##*/}" = hello ] || exit 3\n')
    multi.chmod(0o755)
    (toolchain_bin(root) / "hello").symlink_to("multi")
    write(
        pytester,
        "gates.yaml",
        """
        gates:
          - id: declared
            check: mytool --check
            tools: [mytool]
          - id: bare
            check: mytool
          - id: path-only
            check: pathonly
          - id: missing
            check: vgate-absent-tool-xyz --check
            tools: [vgate-absent-tool-xyz]
          - id: multicall
            check: hello
        """,
    )
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json", "-v")
    out = result.stdout.str()
    assert result.ret == 1, out
    passing = ("declared", "bare", "path-only", "multicall")
    assert {cases[g]["outcome"] for g in passing} == {"passed"}
    assert pinned.runs == [str(pinned.path)] * 2  # the selected path is argv[0]
    assert not decoy.ran
    assert path_only.runs == [str(path_only.path)]
    missing = cases["missing"]
    assert (missing["outcome"], missing["vgate_mode"], missing["vgate_cause"]) == (
        "failure",
        "unavailable",
        "environment",
    )
    gates = report_gates(pytester)
    expected = {"id": "mytool", "path": str(pinned.path), "sha256": sha256(pinned.path)}
    assert gates["declared"]["tools"] == [expected]
    assert gates["bare"]["tools"] == [expected]
    assert gates["path-only"]["tools"] == [
        {"id": "pathonly", "path": str(path_only.path), "sha256": sha256(path_only.path)}
    ]
    assert gates["missing"]["tools"] == []
    hello = toolchain_bin(root) / "hello"  # the link is the path; the hash is of its bytes
    assert gates["multicall"]["tools"] == [
        {"id": "hello", "path": str(hello), "sha256": sha256(multi)}
    ]
    result.stdout.fnmatch_lines(
        [
            f"vgate tool: mytool: {pinned.path} sha256:{expected['sha256']} (toolchain)",
            f"vgate tool: pathonly: {path_only.path} sha256:{sha256(path_only.path)} (path)",
            "vgate tool: vgate-absent-tool-xyz: unavailable (*not found*",
        ],
        consecutive=False,
    )
    assert "INTERNALERROR" not in out


def test_path_like_program_runs_from_the_gates_cwd_declared_or_not(
    pytester: pytest.Pytester,
) -> None:
    """A program written as a path (``./run.sh``) belongs to the tree under test: it is
    resolved against the gate's ``cwd`` when the gate runs, not against the gates root by
    the session inventory, even when a gate lists it in ``tools``. Plain only: no xdist
    hand-over is involved, the runner decides."""
    root = pytester.path
    inner = make_tool(root / "sub", "run.sh", exit_code=0)
    outer = make_tool(root, "run.sh", exit_code=1, marker=root / "outer.ran")
    write(
        pytester,
        "gates.yaml",
        """
        gates:
          - id: bare
            cwd: sub
            check: ./run.sh
          - id: declared
            cwd: sub
            check: ./run.sh
            tools: [./run.sh]
        """,
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-report", "report.json"
    )
    assert result.ret == 0, result.stdout.str()
    assert not outer.ran
    assert inner.runs == [str(inner.path)] * 2
    record = {"id": "./run.sh", "path": str(inner.path), "sha256": sha256(inner.path)}
    gates = report_gates(pytester)
    assert gates["bare"]["tools"] == gates["declared"]["tools"] == [record]


def test_tool_changed_after_the_inventory_is_sandbox_and_never_runs(
    run_vgate: RunVgate, dist_args: list[str], pytester: pytest.Pytester
) -> None:
    """A gate appends to the tool mid-session; the next gate using it is ``sandbox``.

    The inventory is taken by the controller in ``pytest_configure``, before any gate
    runs. Ordering is real: plain pytest runs a gates file in file order; under ``-n 2``
    ``--dist loadfile`` sends all items of one file to one worker, in file order, so
    ``tamper`` runs after ``before`` and before ``after`` on every run.
    """
    tool = toolchain_tool(pytester.path, "mytool", exit_code=0)
    original = sha256(tool.path)
    append = f"open({str(tool.path)!r}, 'ab').write(b'# appended by a gate\\n')"
    write(
        pytester,
        "gates.yaml",
        f"""
        gates:
          - id: before
            check: mytool
          - id: tamper
            check: {PY} -c {shlex.quote(append)}
          - id: after
            check: mytool
            tools: [mytool]
        """,
    )
    schedule = ["--dist", "loadfile"] if dist_args else []
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json", *schedule)
    out = result.stdout.str()
    assert result.ret == 1, out
    assert cases["before"]["outcome"] == "passed"
    assert cases["tamper"]["outcome"] == "passed"
    assert cases["after"]["outcome"] == "failure"
    assert cases["after"]["vgate_mode"] == "sandbox"
    assert cases["after"]["vgate_cause"] == "environment"
    assert tool.runs == [str(tool.path)]  # once, by `before`; never after the change
    found = sha256(tool.path)
    assert found != original
    assert f"inventory sha256 {original}, found {found}" in out  # the failure report
    after = report_gates(pytester)["after"]
    assert after["exit_code"] is None and after["tools"] == []
    assert "INTERNALERROR" not in out


TAMPER_BEFORE_WORKERS = """
def pytest_sessionstart(session):
    # Runs after pytest_configure, where the controller took the inventory, and before
    # xdist starts its workers (xdist's own sessionstart is trylast). Controller only.
    if not hasattr(session.config, "workerinput"):
        with open({tool!r}, "ab") as fh:
            fh.write(b"# appended after the inventory was taken\\n")
"""


def test_tool_changed_before_the_first_gate_is_sandbox_for_commands_and_verifiers(
    run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    """The tool moves between the inventory and the first execution: neither a command
    gate nor a verifier's ``ctx.run`` runs it (its marker never appears), and both are
    ``sandbox``. Deterministic in both modes: the change is made on the controller in
    ``pytest_sessionstart``, after the inventory and before any worker exists."""
    tool = toolchain_tool(pytester.path, "mytool", exit_code=0)
    original = sha256(tool.path)
    pytester.makeconftest(TAMPER_BEFORE_WORKERS.format(tool=str(tool.path)))
    write(pytester, "checks.py", CHECKS_PY)
    write(
        pytester,
        "gates.yaml",
        """
        gates:
          - id: command
            check: mytool
          - id: verifier
            type: python
            verifiers: [checks:ask]
            tools: [mytool]
        """,
    )
    result, cases = run_vgate("--vgate", "gates.yaml")
    out = result.stdout.str()
    assert result.ret == 1, out
    for name in ("command", "verifier"):
        case = cases[name]
        assert (case["outcome"], case["vgate_mode"], case["vgate_cause"]) == (
            "failure",
            "sandbox",
            "environment",
        ), (name, case)
    assert not tool.ran
    assert f"inventory sha256 {original}, found {sha256(tool.path)}" in out


def test_module_verifier_uses_the_session_inventory(pytester: pytest.Pytester) -> None:
    """A ``@verifier`` in a test module whose tool is in the session inventory (declared
    by a gate of the same root) must see the change too. Plain only: the gap is the same
    under xdist, and the test is expected to fail until items.py is fixed."""
    tool = toolchain_tool(pytester.path, "yes-tool", exit_code=0)
    pytester.makeconftest(TAMPER_BEFORE_WORKERS.format(tool=str(tool.path)))
    write(pytester, "test_module_verifiers.py", MODULE_VERIFIERS)
    write(pytester, "gates.yaml", "gates:\n  - id: uses\n    check: yes-tool\n")
    junit = pytester.path / "junit.xml"
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        "--vgate",
        "gates.yaml",
        "-k",
        "module-grounded or uses",
    )
    cases = junit_cases(junit)
    assert cases["uses"]["vgate_mode"] == "sandbox"  # the command gate: already right
    assert cases["module-grounded"]["vgate_mode"] == "sandbox"
    assert not tool.ran


def test_undeclared_program_is_a_collection_error_naming_it(
    run_vgate: RunVgate, dist_args: list[str], pytester: pytest.Pytester
) -> None:
    """``tools`` declared: argv[0] must be one of them, or the file does not collect.

    Plain pytest stops on a collection error with exit code 2; pytest-xdist reports it
    and exits 1 (as it does for a test module with a syntax error), so both are accepted
    per mode; what matters is the error text and that nothing ran.
    """
    tool = toolchain_tool(pytester.path, "mytool", exit_code=0)
    write(
        pytester,
        "gates.yaml",
        f"""
        gates:
          - id: fine
            check: {PY} -c pass
          - id: sneaky
            check: mytool --all
            tools: [python, ruff]
        """,
    )
    result, cases = run_vgate("--vgate", "gates.yaml")
    out = result.stdout.str()
    assert result.ret == (1 if dist_args else 2), out
    assert (
        "the check runs 'mytool', which is not among its declared tools ['python', 'ruff']" in out
    )
    assert "gates.yaml:5: [tools]" in out  # where the offending gate is written
    assert "1 error" in out
    assert "INTERNALERROR" not in out
    assert not tool.ran
    assert "sneaky" not in cases


def test_verifiers_pass_only_on_a_completed_tool_run(
    run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    """A verifier declaring tools must ground its pass in a ``ctx.run`` of one; when it
    does, the tool's answer decides. Gates-file verifiers and ``@verifier`` functions in
    a test module alike."""
    yes = toolchain_tool(pytester.path, "yes-tool", exit_code=0)
    no = toolchain_tool(pytester.path, "no-tool", exit_code=1)
    write(pytester, "checks.py", CHECKS_PY)
    write(pytester, "test_module_verifiers.py", MODULE_VERIFIERS)
    write(pytester, "gates.yaml", VERIFIER_GATES)
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json")
    out = result.stdout.str()
    assert result.ret == 1, out
    expected = {
        "ungrounded": ("failure", "ungrounded", "broken_test"),
        "tool-says-yes": ("passed", "pass", None),
        "tool-says-no": ("failure", "fail", "product"),
        "undeclared-run": ("failure", "error", "broken_test"),
        "module-ungrounded": ("failure", "ungrounded", "broken_test"),
        "module-grounded": ("passed", "pass", None),
    }
    for name, (outcome, mode, cause) in expected.items():
        case = cases[name]
        assert (case["outcome"], case["vgate_mode"], case.get("vgate_cause")) == (
            outcome,
            mode,
            cause,
        ), (name, case)
    assert sorted(yes.runs) == [str(yes.path)] * 2  # tool-says-yes, module-grounded
    assert no.runs == [str(no.path)]
    assert "the tool said no (exit 1)" in out
    assert "is not among the verifier's declared tools ['yes-tool']" in out
    gates = report_gates(pytester)
    assert gates["tool-says-yes"]["tools"] == [
        {"id": "yes-tool", "path": str(yes.path), "sha256": sha256(yes.path)}
    ]
    assert gates["ungrounded"]["tools"] == []


def _flag_tool(root: Path) -> FakeTool:
    """A pinned tool whose answer is the product's: yes iff ``flag.txt`` says yes."""
    body = 'read answer < flag.txt; [ "$answer" = yes ] || exit 1'
    return make_tool(toolchain_bin(root), "judge", body=body, exit_code=0)


LEDGER_GATES = """
gates:
  - id: product-fix
    claim: the product now says yes
    check: judge
  - id: tool-swap
    claim: the tool now says yes
    check: mytool
"""


def test_ledger_fingerprint_keeps_tool_versions_apart(
    run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    """Red with one tool version, green with another, proves nothing.

    Two sessions on two trees of one git repository. ``product-fix`` goes red to green
    because the product changed (the control: ``proven``); ``tool-swap`` goes red to green
    only because ``.toolchain/bin/mytool`` was replaced, so its red is another check's
    evidence and the gate stays ``unproven``.
    """
    root = pytester.path
    git(root, "init", "-q")
    write(pytester, "gates.yaml", LEDGER_GATES)
    (root / "flag.txt").write_text("no\n")
    _flag_tool(root)
    tool = toolchain_tool(root, "mytool", exit_code=1)
    git(root, "add", "gates.yaml", "flag.txt")
    git(root, "commit", "-q", "-m", "gates")
    red, red_cases = run_vgate("--vgate", "gates.yaml")
    assert red.ret == 1, red.stdout.str()
    assert red_cases["product-fix"]["vgate_mode"] == "fail"
    assert red_cases["tool-swap"]["vgate_mode"] == "fail"
    red_sha = sha256(tool.path)

    (root / "flag.txt").write_text("yes\n")
    tool = toolchain_tool(root, "mytool", exit_code=0)
    green, green_cases = run_vgate("--vgate", "gates.yaml")
    assert green.ret == 0, green.stdout.str()
    assert green_cases["product-fix"]["vgate_rbg"] == "proven"
    assert green_cases["tool-swap"]["vgate_rbg"] == "unproven"

    records = [
        json.loads(line)
        for line in (root / ".vgate" / "ledger.jsonl").read_text().splitlines()
        if line.strip()
    ]
    by_gate: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_gate.setdefault(record["gate_id"], []).append(record)
    assert [r["mode"] for r in by_gate["tool-swap"]] == ["fail", "pass"]
    red_fp, green_fp = (r["fingerprint"] for r in by_gate["tool-swap"])
    assert red_fp != green_fp
    assert red_sha != sha256(tool.path)
    assert len({r["fingerprint"] for r in by_gate["product-fix"]}) == 1
