"""The cyclic GC leaves a gates session's long-lived objects alone (``gc.freeze``).

Thousands of gates make thousands of long-lived objects that every full collection walks
for nothing (a third of the plugin's Python time at 2,000 gates). What exists when the
gates files are loaded is frozen; once collection ends, the rest too when every selected
item is ours, else everything is unfrozen, so ordinary tests run under the GC as without
the plugin. All is unfrozen at unconfigure; nothing is frozen over another's freeze.
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
