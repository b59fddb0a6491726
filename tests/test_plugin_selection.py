"""pytest's selection options on gate, verifier and citation items: ``-k``, ``-m``,
``--collect-only``, ``--lf``, ``--ff``, plain and under ``-n 2``.

These sessions keep pytest's cache (``--lf`` and ``--ff`` read it), so they do not pass
``-p no:cacheprovider``. Deselection stays visible: every gate ``--lf`` leaves out is
listed as "deselected, not run and not verified", and ``--lf`` through ``PYTEST_ADDOPTS``
(where no command line shows it) fails the session, as ``-k`` there does.
"""

from __future__ import annotations

import pytest
from helpers.junit import junit_cases

GATES = """\
gates:
  - id: ok
    check: python -c "import flag_ok"
  - id: bad
    check: python -c "import flag_bad"
  - id: pyv
    type: python
    verifiers: [checks:first]
citations: [answer.md]
"""
VERIFIERS = """\
from pytest_vgate import verifier


@verifier(id="v-ok")
def v_ok(ctx):
    return True


@verifier(id="v-bad")
def v_bad(ctx):
    return False


def test_plain():
    pass
"""
CITED = "def f():\n    pass\n"
ANSWER = "See `mod.py:1` for f.\nAnd `mod.py:40` for nothing.\n"

PASSING = {
    "gates.yaml::ok",
    "gates.yaml::pyv",
    "gates.yaml::answer.md:1:mod.py:1",
    "test_v.py::v-ok",
    "test_v.py::test_plain",
}
FAILING = {"gates.yaml::bad", "gates.yaml::answer.md:2:mod.py:40", "test_v.py::v-bad"}
OURS_PASSING = PASSING - {"test_v.py::test_plain"}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", gates=GATES)
    pytester.makefile(".md", answer=ANSWER)
    pytester.makepyfile(checks="def first(ctx):\n    return True\n", mod=CITED, test_v=VERIFIERS)
    (pytester.path / "flag_ok.py").write_text("", encoding="utf-8")
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, str]]:
    """A session with the cache on; returns the result and {nodeid: junit outcome}."""
    junit = pytester.path / "junit.xml"
    junit.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "-rA", "-p", "no:randomly", f"--junitxml={junit}", *args
    )
    cases = junit_cases(junit) if junit.exists() else {}
    return result, {_nodeid(name): str(case["outcome"]) for name, case in cases.items()}


def _nodeid(name: str) -> str:
    """junit names a case by its item name; ours are unique within this project."""
    for nodeid in PASSING | FAILING:
        if nodeid.split("::", 1)[1] == name:
            return nodeid
    return name


def test_keyword_marker_and_collect_only_see_every_kind_of_item(
    project: pytest.Pytester, dist_args: list[str]
) -> None:
    collected = project.runpytest_subprocess("--vgate", "gates.yaml", "--co", "-q")
    listed = set(collected.stdout.lines)
    assert listed >= PASSING | FAILING, collected.stdout.str()
    result, ran = run(project, *dist_args, "-k", "v-ok or pyv or mod.py:1")
    assert set(ran) == {"test_v.py::v-ok", "gates.yaml::pyv", "gates.yaml::answer.md:1:mod.py:1"}
    assert result.ret == pytest.ExitCode.OK
    result, ran = run(project, *dist_args, "-m", "vgate")
    assert set(ran) == (PASSING | FAILING) - {"test_v.py::test_plain"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_last_failed_reruns_the_failures_and_lists_the_gates_it_leaves_out(
    project: pytest.Pytester, dist_args: list[str]
) -> None:
    _, ran = run(project, *dist_args)
    assert {n for n, outcome in ran.items() if outcome == "failure"} == FAILING, ran
    result, ran = run(project, *dist_args, "--lf")
    assert set(ran) == FAILING, result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    listed = [
        line for line in result.stdout.lines if "deselected, not run and not verified" in line
    ]
    assert len(listed) == 1, result.stdout.str()
    assert {n.strip() for n in listed[0].split("not verified: ")[1].split(",")} == OURS_PASSING


def test_failed_first_runs_every_item_the_failures_first(project: pytest.Pytester) -> None:
    run(project)
    result, ran = run(project, "--ff")
    assert set(ran) == PASSING | FAILING
    assert set(list(ran)[: len(FAILING)]) == FAILING, list(ran)
    assert "deselected" not in result.stdout.str()


def test_last_failed_through_pytest_addopts_fails_a_session_whose_gates_did_not_run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dist_args: list[str]
) -> None:
    run(project, *dist_args)
    # Now `ok` is broken and `bad` fixed: --lf alone would run `bad` only and pass.
    (project.path / "flag_ok.py").unlink()
    (project.path / "flag_bad.py").write_text("", encoding="utf-8")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--lf")
    result, ran = run(project, *dist_args, "-k", "not v-bad and not mod.py:40")
    assert set(ran) == {"gates.yaml::bad"}, result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*gates.yaml::ok: deselected through PYTEST_ADDOPTS (--lf), out of sight*"]
    )


def test_last_failed_lists_the_verifiers_it_leaves_out_without_a_gates_file(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    """Verifiers alone (no gates file; an option or xdist brings the layer from the start)."""
    pytester.makepyfile(test_v=VERIFIERS)
    args = ("-p", "no:randomly", "--vgate-timeout", "30", *dist_args)
    pytester.runpytest_subprocess(*args)
    result = pytester.runpytest_subprocess(*args, "--lf", "-rA")
    assert result.parseoutcomes()["failed"] == 1  # (xdist counts no worker's deselection)
    result.stdout.fnmatch_lines(["vgate: 1 deselected, not run and not verified: test_v.py::v-ok"])
