"""The pytest layer of pytest-vgate; this module is the ``pytest11`` entry point.

Everything pytest-specific lives in this subpackage (hooks, items, controller, session,
options, summary, report writers); the core around it never imports pytest.
"""

from __future__ import annotations

from pytest_vgate.plugin.hooks import *  # noqa: F403 - the hook functions pytest looks up
