"""Shared fixtures for the suite: run end-to-end sessions plain and under xdist."""

from __future__ import annotations

import pytest
from helpers.junit import junit_cases

XDIST_MODES = {"plain": [], "xdist": ["-n", "2"]}


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
