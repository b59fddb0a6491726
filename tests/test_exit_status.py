"""What stays legal while the exit status follows the verdicts (the routes: test_routes.py).

Deselection, the plugin's own ``judgment`` skips, a ``skip`` marker written on a
``@verifier`` in its test module, ``--collect-only`` and an xfail over a passing gate end
green; they are shown, not hidden.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from pytest_vgate.payload import GatePayload, decode_payload
from pytest_vgate.plugin.exit_status import env_deselection, mark_reasons, nested_status, verdict_ok
from pytest_vgate.verdict import Mode

PY = shlex.quote(sys.executable)
GATES = (
    f'gates:\n  - id: answers-no\n    check: {PY} -c "raise SystemExit(3)"\n'
    f"  - id: passes\n    check: {PY} -c pass\n"
    "  - id: judged\n    type: semantic\n    claim: reads well\n"
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "gates.yaml").write_text(GATES, encoding="utf-8")
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    return pytester


@pytest.mark.parametrize(
    "how",
    [
        ("-k", "not answers"),
        ("-m", "not vgate"),
        ("--deselect", "gates.yaml::answers-no"),
    ],
    ids=["k", "m", "deselect"],
)
def test_deselection_on_the_command_line_is_legal_and_shown(
    project: pytest.Pytester, dist_args: list[str], how: tuple[str, str]
) -> None:
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", *how, *dist_args
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    out = result.stdout.str()
    assert "deselected, not run and not verified: " in out
    assert "gates.yaml::answers-no" in out.split("not run and not verified: ")[1]
    assert "results overridden" not in out


def test_judgment_skips_and_an_xfail_over_a_pass_stay_green(
    project: pytest.Pytester, dist_args: list[str]
) -> None:
    project.makeconftest(
        "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n        if item.name == 'passes':\n"
        "            item.add_marker(pytest.mark.xfail)\n"
    )
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "-k", "not answers", *dist_args
    )
    result.assert_outcomes(passed=1, skipped=1, xpassed=1)  # xdist counts no deselected
    assert result.ret == pytest.ExitCode.OK


VERIFIERS = """
import pytest
from pytest_vgate import Outcome, verifier

@pytest.mark.skip(reason="waits for the upstream fix")
@verifier(id="skipped-on-purpose")
def one(ctx):
    return Outcome.failed("no")

@verifier(id="skipped-if")
@pytest.mark.skipif(True, reason="not on this platform")
def two(ctx):
    return Outcome.failed("no")

@verifier(id="runs")
def three(ctx):
    return True
"""


def test_a_skip_marker_written_on_a_verifier_is_honoured(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    pytester.makepyfile(test_checks=VERIFIERS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", *dist_args)
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert "waits for the upstream fix" in out and "not on this platform" in out
    assert "skipped-on-purpose skipped by its own marker" in out


INTERRUPTING_CONFTEST = """
import os, signal
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if item.name == "passes":
        {how}
    return (yield)
"""


@pytest.mark.parametrize(
    "how",
    ["raise KeyboardInterrupt", "os.kill(os.getpid(), signal.SIGTERM)"],
    ids=["ctrl-c", "sigterm"],
)
def test_an_interrupted_session_says_so_and_blames_no_hook(
    pytester: pytest.Pytester, how: str
) -> None:
    """A gate interrupted after its setup passed has no verdict because the session was
    interrupted (exit 2), not because a hook rewrote a passing report."""
    (pytester.path / "gates.yaml").write_text(GATES, encoding="utf-8")
    pytester.makeconftest(INTERRUPTING_CONFTEST.format(how=how))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert "results overridden" not in out and "rewrote" not in out, out
    # the interrupted gate and the one after it
    assert "vgate: 2 not run, no verdict: the session was interrupted first\n" in out, out


def test_collect_only_is_not_a_run(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--collect-only"
    )
    assert result.ret == pytest.ExitCode.OK


def test_a_checks_pytest_keeps_its_legitimate_status(pytester: pytest.Pytester) -> None:
    """Inside a check, skips and xfails count as pytest counts them (exit 0)."""
    inner = pytester.path / ".product"
    inner.mkdir()
    (inner / "test_product.py").write_text(
        "import pytest\n\n@pytest.mark.skip\ndef test_a():\n    pass\n\n"
        "@pytest.mark.xfail\ndef test_b():\n    assert False\n",
        encoding="utf-8",
    )
    (pytester.path / "gates.yaml").write_text(
        f"gates:\n  - id: inner\n    check: {PY} -m pytest -q -p no:cacheprovider .product\n"
        "    timeout: 120\n",
        encoding="utf-8",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
    result.assert_outcomes(passed=1)


def test_the_small_rules() -> None:
    assert nested_status([]) == pytest.ExitCode.NO_TESTS_COLLECTED
    assert nested_status(["passed", "error"]) == pytest.ExitCode.TESTS_FAILED
    assert nested_status(["skipped"]) is None
    assert verdict_ok(GatePayload(id="j", mode=Mode.JUDGMENT, ok=False))
    assert not verdict_ok(GatePayload(id="j", mode=Mode.JUDGMENT, ok=False, strict_failure=True))
    cited = {"source": "a.md:1", "status": "corrected", "ok": False, "mode": "fail", "result": {}}
    assert not verdict_ok(decode_payload({"kind": "citation", **cited}))
    assert mark_reasons(pytest.mark.skip.mark) == ["unconditional skip"]
    assert mark_reasons(pytest.mark.skipif("sys.platform == 'x'").mark) == [
        "condition: sys.platform == 'x'"
    ]


@pytest.mark.parametrize(
    ("addopts", "found"),
    [
        ("-x -k 'not slow'", "-k"),
        ("--deselect=a.yaml::b", "--deselect=a.yaml::b"),
        ("-mfoo", "-mfoo"),
        ("-x --keep-duplicates", None),
        ("", None),
    ],
)
def test_env_deselection(monkeypatch: pytest.MonkeyPatch, addopts: str, found: str | None) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
    assert env_deselection() == found


def test_a_document_cited_by_both_a_gates_file_and_vgate_cite_stays_green(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    """The gates file checks it (once): its --vgate-cite node has no item of its own."""
    pytester.makepyfile(src="x = 1\n")
    (pytester.path / "answer.md").write_text("- src.py:1 sets `x`\n", encoding="utf-8")
    (pytester.path / "gates.yaml").write_text(
        f"gates:\n  - id: passes\n    check: {PY} -c pass\ncitations: [answer.md]\n",
        encoding="utf-8",
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-cite", "answer.md",
        *dist_args,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=2)
