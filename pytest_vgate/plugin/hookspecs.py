"""pytest-vgate's own hooks, added with ``pytest_addhooks`` (docs/extending.md).

Implement them in a plugin (``-p mymodule``, a ``pytest11`` entry point) or a conftest
file. pytest-vgate calls them through pluggy, so hook wrappers, ``tryfirst`` and
``trylast`` apply, and holds every implementation and wrapper to the fail-closed rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_vgate.exporters.report import JsonReport
    from pytest_vgate.gatesfile import Gate
    from pytest_vgate.plugin.judging import JudgeContext
    from pytest_vgate.verdict import Verdict
    from pytest_vgate.verifiers import Outcome


@pytest.hookspec(firstresult=True)
def pytest_vgate_judge(gate: Gate, context: JudgeContext) -> Outcome | None:
    """Judge a ``semantic`` or ``self_review`` gate (or a citation's description that no
    syntax decides, given as a ``semantic`` gate: claim the description, check the
    location): ``Outcome.passed(reason)`` or
    ``Outcome.failed(reason)``; ``None`` to leave it to another judge (with no answer at all
    the gate stays ``judgment``: skipped, or failed under ``--vgate-strict``).

    Runs where the gate runs (an xdist worker), on a thread, within the gate's deadline
    (``context.deadline``), once for this tree and, under ``--vgate-base``, once for the base
    (``context.where == "base"``, ``context.root`` inside the base worktree). A judge that
    raises (``error``/``panic``), hangs past the deadline (``timeout``) or returns anything
    but an ``Outcome`` or None (``fail``, cause ``broken_test``) fails the gate.
    """


@pytest.hookspec
def pytest_vgate_adjust_verdict(gate: Gate, verdict: Verdict) -> Verdict | None:
    """Make a gate's final verdict stricter: return a failing ``Verdict`` (any mode but
    ``pass`` and ``judgment``), or None to leave it.

    Called for every gate and verifier where it ran, after red-before-green, with the final
    mode and cause. Every implementation sees the same verdict; every failing answer is
    applied (the last one wins). An answer that would turn a failure or a skip into a pass,
    or anything into ``judgment``, is ignored and reported in the summary and the JSON report
    (``adjustments``). An adjuster that raises, hangs or returns junk fails the gate.
    """


@pytest.hookspec
def pytest_vgate_report(report: JsonReport) -> None:
    """Receive the session's JSON-able report (the ``--vgate-report`` document, with
    ``version`` and ``summary``), once per session, on the controller (never on an xdist
    worker), after every item ran. Exporters build on it; the SARIF and GitHub Actions
    writers do.

    Each implementation gets its own copy. One that raises is reported as a warning, and
    the others still run; the call as a whole (every exporter in turn) has the session's
    ``--vgate-timeout``, and one that holds it past that is named in a warning. The
    session goes on.
    """
