"""Session safety in the pytest layer: SIGTERM as Ctrl-C, the nested-run guard, and the
header line that says how checks are contained.

SIGTERM (a CI cancel), SIGHUP (a closed terminal) and SIGQUIT become ``KeyboardInterrupt``,
pytest's own Ctrl-C path: the running check's process tree is killed, the reports are
written with what finished, the base worktrees and mutant copies are removed, and pytest
exits 2. A second signal during that cleanup is ignored; a handler someone else installed
is left alone. Inside a check (``PYTEST_VGATE_NESTED``) no gates run; the header says so.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest

from pytest_vgate.defaults import NESTED_ENV
from pytest_vgate.plugin.settings import Settings
from pytest_vgate.process import contain

_STATE = pytest.StashKey[dict[int, object]]()  # signal -> the handler it had
ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
)


class Terminated(KeyboardInterrupt):
    """An ending signal, delivered as the interrupt pytest already knows how to clean up
    after."""


def install_sigterm(config: pytest.Config, settings: Settings) -> None:
    """Handle SIGTERM, SIGHUP and SIGQUIT like Ctrl-C for a session that runs gates (main
    thread only); a signal whose handler someone else installed is left alone."""
    if not settings.enabled or threading.current_thread() is not threading.main_thread():
        return
    previous: dict[int, object] = {}
    for signum in ENDING_SIGNALS:
        handler = signal.getsignal(signum)
        if handler in (signal.SIG_DFL, None):
            previous[signum] = handler

    def on_signal(signum: int, frame: FrameType | None) -> None:
        for other in previous:
            signal.signal(other, signal.SIG_IGN)  # let the cleanup finish
        name = signal.Signals(signum).name
        raise Terminated(f"pytest-vgate: stopped by signal {signum} ({name})")

    for signum in previous:
        signal.signal(signum, on_signal)
    if previous:
        config.stash[_STATE] = previous


def uninstall_sigterm(config: pytest.Config) -> None:
    previous = config.stash.get(_STATE, None)
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    for signum, handler in previous.items():
        if signal.getsignal(signum) is not signal.SIG_IGN:  # not in the middle of one
            signal.signal(signum, handler)  # type: ignore[arg-type]
    del config.stash[_STATE]


def header_lines(settings: Settings) -> list[str]:
    """What the header says about nesting and about the containment of checks."""
    if settings.nested:
        return [f"vgate: inside a check ({NESTED_ENV}=1): gates and citations are not run"]
    if not settings.enabled:
        return []
    level, detail = contain.POOL.probe(settings.isolation)
    line = f"vgate: isolation {settings.isolation}: {contain.DESCRIPTIONS[level]}"
    if level != "namespace" and settings.isolation != "off":
        line += f" [{detail}]"
        if settings.isolation == "strict":
            line += "; command checks and verifiers fail with mode sandbox"
    return [line]
