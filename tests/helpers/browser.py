"""A real browser for the page tests: Debian's chromium, driven by Playwright.

Without chromium or playwright the test that asks for it skips and says how to install it
(``apt-get install -y chromium chromium-driver``, as ``.ci/run`` does as root).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless chromium (a Playwright ``Browser``), closed afterwards."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            "no chromium: install Debian's browser (apt-get install -y chromium "
            "chromium-driver), as .ci/run does"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class OpenPage:
    """A page opened from a file, with every request it made and every script error."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def open_page(browser: Any, path: Path, width: int = 1200) -> Iterator[OpenPage]:
    """Open ``path`` in a fresh context that records every request (none may leave)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        opened = OpenPage(context.new_page())

        def intercept(route: Any) -> None:  # every request the page makes passes here
            opened.requests.append(route.request.url)
            route.continue_()

        context.route("**/*", intercept)
        opened.page.on("request", lambda request: opened.requests.append(request.url))
        opened.page.on("pageerror", lambda exc: opened.errors.append(str(exc)))
        opened.page.goto(path.as_uri())
        opened.page.wait_for_load_state("networkidle")
        yield opened
    finally:
        context.close()
