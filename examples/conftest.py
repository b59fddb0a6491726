"""Every session in this folder: the example judge joins it (rubric_judge.py), and one that
runs change.yaml first gets the scratch repository change.yaml names as its root
(scratch_repo.py), before the gates files are read."""

from __future__ import annotations

from pathlib import Path

import pytest
from scratch_repo import DemoError, link_scratch_repository

pytest_plugins = ["rubric_judge"]
collect_ignore = ["tinyshop"]  # tinyshop's two releases: the demo's project, not tests here

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    start = config.invocation_params.dir
    given = config.getoption("vgate", default=None) or []
    if any((start / path).resolve() == HERE / "change.yaml" for path in given):
        try:
            link_scratch_repository(HERE)
        except (DemoError, OSError) as exc:
            raise pytest.UsageError(f"the demo's scratch repository: {exc}") from None
