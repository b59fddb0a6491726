"""End to end: command gates in real pytest sessions, plain and under ``-n 2``."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.junit import junit_cases
from helpers.peak_memory import PEAK_KIB
from helpers.procs import SLEEPER, kill_all, new_marker, survivors
from helpers.report import read_report

PY = shlex.quote(sys.executable)


def write_gates(pytester: pytest.Pytester, body: str, name: str = "gates.yaml") -> Path:
    path = pytester.path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


MODES_YAML = f"""
gates:
  - id: passes
    claim: exits 0
    check: {PY} -c "pass"
  - id: answers-no
    check: {PY} -c "raise SystemExit(3)"
  - id: expect-list
    check: {PY} -c "raise SystemExit(3)"
    expect: [0, 3]
  - id: hangs
    check: {PY} -c "import time; time.sleep(300)"
    timeout: 2
  - id: missing-tool
    check: no-such-program-vgate-xyz --flag
  - id: signal-kill
    check: {PY} -c "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
  - id: not-executable
    check: ./plain.txt
  - id: blank
    check: "   "
  - id: judged
    type: semantic
    claim: reads well
"""

EXPECTED = {
    "passes": ("passed", "pass", None),
    "answers-no": ("failure", "fail", "product"),
    "expect-list": ("passed", "pass", None),
    "hangs": ("failure", "timeout", "environment"),
    "missing-tool": ("failure", "unavailable", "environment"),
    "signal-kill": ("failure", "crash", "environment"),
    "not-executable": ("failure", "crash", "environment"),
    "blank": ("failure", "blank", "broken_test"),
    "judged": ("skipped", "judgment", None),
}


@pytest.mark.slow
def test_every_mode_from_a_real_command(run_vgate, pytester: pytest.Pytester) -> None:
    write_gates(pytester, MODES_YAML)
    plain = pytester.path / "plain.txt"
    plain.write_text("not a program\n")
    plain.chmod(0o644)
    result, cases = run_vgate("--vgate", "gates.yaml", "-rs")
    assert result.ret == 1, result.stdout.str()
    for gate_id, (outcome, mode, cause) in EXPECTED.items():
        case = cases[gate_id]
        assert case["outcome"] == outcome, (gate_id, case)
        assert case["vgate_mode"] == mode, (gate_id, case)
        assert case.get("vgate_cause") == cause, (gate_id, case)
    assert cases["answers-no"]["vgate_exit_code"] == "3"
    assert cases["passes"]["vgate_exit_code"] == "0"
    out = result.stdout.str()
    assert "need a rubric" in out
    assert "INTERNALERROR" not in out
    assert "gates: 9" in out


def test_strict_fails_judgment_gates(run_vgate, pytester: pytest.Pytester) -> None:
    write_gates(pytester, "gates:\n  - id: judged\n    type: self_review\n    claim: done\n")
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-strict")
    assert result.ret == 1
    assert cases["judged"]["outcome"] == "failure"
    assert cases["judged"]["vgate_mode"] == "judgment"


LOUD = "import sys; print('out-line'); print('err-line', file=sys.stderr); sys.exit(2)"
LITERAL = "import sys; sys.exit(0 if sys.argv[1:] == [';', '|', '$(id)', '*'] else 9)"


def test_failure_report_shows_claim_argv_codes_and_tails(pytester: pytest.Pytester) -> None:
    write_gates(
        pytester,
        f"""
        gates:
          - id: loud
            claim: the widget frobs
            check: {PY} -c {shlex.quote(LOUD)}
        """,
    )
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 1
    for needle in (
        "claim:    the widget frobs",
        "expected 0, actual 2",
        "mode fail",
        "cause product",
        "err-line",
        "out-line",
        "duration:",
    ):
        assert needle in out, needle


def test_nothing_happens_without_the_option(pytester: pytest.Pytester) -> None:
    write_gates(pytester, f"gates:\n  - id: a\n    check: {PY} -c pass\n")
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "gates.yaml" not in result.stdout.str()
    assert "= vgate =" not in result.stdout.str()


def test_ini_twin_and_no_vgate(pytester: pytest.Pytester) -> None:
    write_gates(pytester, f"gates:\n  - id: a\n    check: {PY} -c pass\n")
    pytester.makeini("[pytest]\nvgate = gates.yaml\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["vgate: gates.yaml (1 gate)", "*gates.yaml::a PASSED*"])
    disabled = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:vgate")
    # Without the plugin the ini key is unknown and nothing is collected.
    assert disabled.ret == 5, disabled.stdout.str()


def test_collection_works_with_k_m_and_collect_only(pytester: pytest.Pytester) -> None:
    write_gates(
        pytester,
        f"""
        gates:
          - id: alpha
            check: {PY} -c pass
          - id: beta
            check: {PY} -c pass
          - id: gamma
            check: {PY} -c "raise SystemExit(1)"
        """,
    )
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    collected = pytester.runpytest_subprocess("--vgate", "gates.yaml", "--collect-only", "-q")
    collected.stdout.fnmatch_lines(
        ["gates.yaml::alpha", "gates.yaml::beta", "gates.yaml::gamma", "test_plain.py::test_ok"]
    )
    only_gates = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-m", "vgate")
    only_gates.assert_outcomes(passed=2, failed=1)
    keyword = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-k", "beta")
    keyword.assert_outcomes(passed=1)
    first = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-x", "-m", "vgate")
    first.assert_outcomes(passed=2, failed=1)
    last_failed = pytester.runpytest_subprocess("--vgate", "gates.yaml", "--lf")
    last_failed.assert_outcomes(failed=1)


def test_xdist_collects_identically(pytester: pytest.Pytester) -> None:
    body = "gates:\n" + "".join(f"  - id: g{i}\n    check: {PY} -c pass\n" for i in range(12))
    write_gates(pytester, body)
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "-n", "2", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=12)
    assert "gates: 12 (12 pass)" in result.stdout.str()


@pytest.mark.slow
def test_timeout_kills_grandchildren(pytester: pytest.Pytester) -> None:
    marker = new_marker("grandchild")  # a check's pids may be in its own namespace
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}, {marker!r}]); "
        "time.sleep(300)"
    )
    write_gates(
        pytester,
        f"gates:\n  - id: sleepy\n    check: {PY} -c {shlex.quote(script)}\n    timeout: 2\n",
    )
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-p", "no:cacheprovider")
    elapsed = time.monotonic() - started
    try:
        assert result.ret == 1
        assert elapsed < 30, elapsed
        assert survivors(marker, within=5) == [], "the grandchild survived the run"
    finally:
        kill_all(marker)


def test_secrets_do_not_reach_the_check_unless_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VGATE_FAKE_SECRET", "hunter2")
    show = "import os, sys; sys.exit(0 if os.environ.get('VGATE_FAKE_SECRET') else 7)"
    write_gates(
        pytester,
        f"""
        gates:
          - id: hidden
            check: {PY} -c {shlex.quote(show)}
          - id: named
            check: {PY} -c {shlex.quote(show)}
            env: [VGATE_FAKE_SECRET]
          - id: literal
            check: {PY} -c {shlex.quote(LITERAL)} ";" "|" "$(id)" "*"
        """,
    )
    (result,) = (
        pytester.runpytest_subprocess("--vgate", "gates.yaml", "-p", "no:cacheprovider", "-rA"),
    )
    out = result.stdout.str()
    assert "hunter2" not in out
    result.assert_outcomes(passed=2, failed=1)
    assert "gates.yaml::hidden" in out and "exit code 7" in out


def test_json_report(pytester: pytest.Pytester) -> None:
    write_gates(
        pytester,
        f"""
        gates:
          - id: good
            claim: fine
            check: {PY} -c "print('hello')"
          - id: bad
            claim: broken
            check: {PY} -c "raise SystemExit(4)"
        """,
    )
    pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-report", "out/report.json", "-n", "2"
    )
    data = read_report(pytester.path / "out" / "report.json")
    by_id = {g["id"]: g for g in data["gates"]}
    assert by_id["good"]["mode"] == "pass" and by_id["good"]["stdout"] == "hello\n"
    assert by_id["bad"]["mode"] == "fail" and by_id["bad"]["exit_code"] == 4
    assert by_id["bad"]["cause"] == "product"
    for key in (
        "id",
        "claim",
        "mode",
        "cause",
        "rbg",
        "exit_code",
        "duration",
        "command",
        "stdout",
        "stderr",
        "checks",
        "tools",
        "red",
        "green",
    ):
        assert key in by_id["good"], key
    assert by_id["good"]["tools"][0]["sha256"]


def test_internal_error_is_a_failed_item_not_a_crash(pytester: pytest.Pytester) -> None:
    """A bug of ours (here: the process layer blowing up) is mode error, never a pass."""
    write_gates(pytester, f"gates:\n  - id: a\n    check: {PY} -c pass\n")
    pytester.makeconftest(
        """
        import pytest_vgate.gate.runner as runner

        def broken(*args, **kwargs):
            raise RuntimeError("injected fault in the process layer")

        runner.run_process = broken
        """
    )
    junit = pytester.path / "j.xml"
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", f"--junitxml={junit}")
    assert result.ret == 1
    assert junit_cases(junit)["a"]["vgate_mode"] == "error"
    assert "injected fault" in result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str()


@pytest.mark.slow
def test_gigabyte_of_output_stays_bounded(pytester: pytest.Pytester) -> None:
    writer = "import sys; b = b'x' * (1 << 20); [sys.stdout.buffer.write(b) for _ in range(1024)]"
    write_gates(pytester, f"gates:\n  - id: flood\n    check: {PY} -c {shlex.quote(writer)}\n")
    probe = pytester.path / "rss.txt"
    pytester.makeconftest(
        PEAK_KIB
        + f"""
def pytest_unconfigure(config):
    with open({str(probe)!r}, "w") as fh:
        fh.write(str(peak_kib()))
"""
    )
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", "--vgate-report", "r.json")
    result.assert_outcomes(passed=1)
    peak_mib = int(probe.read_text()) / 1024
    assert peak_mib < 300, peak_mib
    gate = read_report(pytester.path / "r.json")["gates"][0]
    assert gate["stdout_bytes"] == 1 << 30
    assert len(gate["stdout"]) < 2 << 20
    assert os.path.getsize(pytester.path / "r.json") < 8 << 20


def test_ini_gates_are_not_run_again_by_a_check_that_runs_pytest(
    pytester: pytest.Pytester,
) -> None:
    """A gate running plain `pytest` would collect the ini gates again, forever."""
    pytester.makeini("[pytest]\nvgate = gates.yaml\n")
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    write_gates(
        pytester,
        f"gates:\n  - id: suite\n    check: {PY} -m pytest -q -p no:cacheprovider\n"
        "    timeout: 60\n",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate-report", "r.json")
    result.assert_outcomes(passed=2)
    gate = read_report(pytester.path / "r.json")["gates"][0]
    assert "1 passed" in gate["stdout"]  # the inner session ran the plain test only


def test_ini_gates_join_like_testpaths(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nvgate = gates.yaml\n")
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    write_gates(pytester, f"gates:\n  - id: a\n    check: {PY} -c pass\n")
    named = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_plain.py")
    named.assert_outcomes(passed=1)
    explicit = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_plain.py", "--vgate", "gates.yaml"
    )
    explicit.assert_outcomes(passed=2)


def test_gate_options_without_gates_warn(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate-require-red")
    result.assert_outcomes(passed=1, warnings=1)
    assert "--vgate-require-red has no effect without --vgate" in result.stdout.str()


@pytest.mark.parametrize("how", [("-W", "error"), ("-o", "filterwarnings=error")])
def test_gate_options_without_gates_under_warnings_as_errors(
    pytester: pytest.Pytester, how: tuple[str, str]
) -> None:
    """``filterwarnings = error`` turned the warning into an INTERNALERROR."""
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate-strict", *how)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out
    assert "--vgate-strict has no effect without --vgate" in result.stderr.str()


BAD_FILES = {
    "syntax": ("gates:\n  - id: a\n    check: [unclosed\n", "gates.yaml:4", "from line 3"),
    "unknown-key": ("gates:\n  - id: a\n    chek: true\n", "gates.yaml:3", "[chek]"),
    "duplicate-id": (
        "gates:\n  - id: a\n    check: x\n  - id: a\n    check: y\n",
        "gates.yaml:4",
        "[id]",
    ),
    "wrong-type": (
        "gates:\n  - id: a\n    check: x\n    timeout: ten\n",
        "gates.yaml:4",
        "[timeout]",
    ),
    "hostile-path": (
        "gates:\n  - id: a\n    check: x\n    cwd: ../../etc\n",
        "gates.yaml:4",
        "[cwd]",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_gates_file_is_a_collection_error_naming_file_line_and_key(
    pytester: pytest.Pytester, dist_args: list[str], kind: str
) -> None:
    text, where, key = BAD_FILES[kind]
    (pytester.path / "gates.yaml").write_text(text, encoding="utf-8")
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", *dist_args
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED), out
    assert where in out, out
    assert key is None or key in out, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
