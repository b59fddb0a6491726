"""Shared fixtures for the suite: run end-to-end sessions plain and under xdist."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.git_repo import BugFixRepo, git, make_bugfix_repo
from helpers.junit import junit_cases
from helpers.report import unchecked_reports

# Checks keep their bytecode in pytest-vgate's cache under XDG_CACHE_HOME (see
# docs/environment.md). pytester points HOME at each test's own folder; naming the cache
# here, before that, gives every session of the suite the one cache a user's sessions
# share, instead of compiling the standard library afresh per test.
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))
# The ledger's key (docs/red-before-green.md) is made in a temp folder of this run, never
# in the home of the machine; sessions the suite starts inherit it.
os.environ.setdefault("PYTEST_VGATE_KEY_DIR", tempfile.mkdtemp(prefix="vgate-suite-key-"))

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
XDIST_MODES = {"plain": [], "xdist": ["-n", "2"]}
GITHUB_VARIABLES = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE")
# Plugins the test extras install that no session of the suite is about: sessions the suite
# starts leave them out (each costs its import in every session and every xdist worker:
# hypothesis' plugin alone about 130 ms). A test about one of them says so with
# ``@pytest.mark.all_plugins``; a test that sets PYTEST_ADDOPTS itself replaces this.
UNRELATED_PLUGINS = ("hypothesispytest", "html", "html_fixtures", "metadata", "pytest_cov")
LEAN_ADDOPTS = " ".join(f"-p no:{name}" for name in UNRELATED_PLUGINS)


@pytest.fixture(autouse=True)
def _lean_sessions(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions the suite starts load pytest-vgate, xdist and pytest-timeout, not the rest."""
    if request.node.get_closest_marker("all_plugins") is None:
        monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_ADDOPTS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The quick loop (``-m "not slow"``) runs each end-to-end case once, plain: a case's
    xdist variant (any parameter id naming ``xdist``) is marked ``slow``, so it runs in
    the whole suite and in CI, not between two edits."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "xdist" in callspec.id:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions the suite starts never annotate the CI job that runs the suite."""
    for name in GITHUB_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _every_report_matches_its_schema(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, every JSON report and SARIF file it left behind is validated
    against report.schema.json / the SARIF 2.1.0 schema (a safety net under read_report)."""
    yield
    folders = {
        getattr(value, "path", value)
        for name, value in request.node.funcargs.items()
        if name in ("pytester", "tmp_path")
    }
    problems = [p for folder in folders for p in unchecked_reports(folder)]
    assert not problems, problems


@pytest.fixture(params=list(XDIST_MODES), ids=list(XDIST_MODES))
def dist_args(request: pytest.FixtureRequest) -> list[str]:
    """Extra pytest arguments: none, or ``-n 2`` (real xdist workers)."""
    return list(XDIST_MODES[request.param])


@pytest.fixture
def run_vgate(pytester: pytest.Pytester, dist_args: list[str]):  # type: ignore[no-untyped-def]
    """Run a real pytest session in a subprocess with junit XML; return (result, cases)."""

    def run(*args: str) -> tuple[pytest.RunResult, dict[str, dict[str, object]]]:
        junit = pytester.path / "junit.xml"
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--junitxml={junit}", *dist_args, *args
        )
        cases = junit_cases(junit) if junit.exists() else {}
        return result, cases

    return run


@pytest.fixture
def bugfix(tmp_path: Path) -> BugFixRepo:
    """The two-commit repository with a bug and its fix (``helpers/git_repo.py``)."""
    return make_bugfix_repo(tmp_path)


@pytest.fixture
def bugfix_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> BugFixRepo:
    """The bug/fix repository in pytester's folder; sessions start in its project root, as
    a user's would."""
    repo = make_bugfix_repo(pytester.path)
    monkeypatch.chdir(repo.root)
    return repo


@pytest.fixture
def bugfix_on_path(bugfix_project: BugFixRepo) -> BugFixRepo:
    """``bugfix_project`` whose own tests import ``pkg`` from the root (``pythonpath = .``,
    committed), as its CI would configure."""
    (bugfix_project.root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    git(bugfix_project.repo, "commit", "-qam", "pythonpath")
    return bugfix_project


@pytest.fixture
def examples(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project's ``examples/`` folder (no ledger, no bytecode), as the cwd."""
    copy = pytester.path / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns(".vgate*", "__pycache__"))
    monkeypatch.chdir(copy)
    return copy
