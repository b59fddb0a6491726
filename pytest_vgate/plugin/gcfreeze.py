"""The cyclic GC leaves a gates session's long-lived objects alone (``gc.freeze``).

A session with thousands of gates holds thousands of long-lived objects (modules, items,
gates, payloads). Each full collection walks all of them and finds nothing to free: at
2,000 gates that was a third of the plugin's own Python time. So, in a session with gates
files (``--vgate``/``--vgate-cite``), what exists when the files are loaded is frozen
(moved out of the collector's sight, never freed while frozen), and once collection ends:

- every selected item is a pytest-vgate item: what collection made is frozen too, for the
  whole run (the checks run in other processes; nothing of the user's runs here);
- otherwise (ordinary tests in the same session): everything is unfrozen, so the tests run
  under the garbage collector exactly as without the plugin.

Everything is unfrozen at ``pytest_unconfigure``, before pytest's own last collections
(which report unraisable exceptions). Nothing is frozen when something else already froze
objects (``gc.get_freeze_count()``), so a freeze of the user's is never undone by ours.
"""

from __future__ import annotations

import gc

import pytest

from pytest_vgate.plugin.exit_status import is_vgate_item


class GcFreeze:
    """Registered by ``pytest_configure`` in a session that names gates files or documents."""

    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        if self.frozen or gc.get_freeze_count() == 0:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.frozen and session.items and all(is_vgate_item(i) for i in session.items):
            self.freeze()
        else:
            self.thaw()

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        self.thaw()


def start(config: pytest.Config) -> None:
    """Freeze what exists now (the gates files are loaded) and register the plugin."""
    plugin = GcFreeze()
    plugin.freeze()
    config.pluginmanager.register(plugin, "vgate-gc-freeze")
