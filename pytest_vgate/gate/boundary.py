"""The fail-closed boundary of the pytest process: ``fail_closed``.

Every process pytest-vgate runs code in has exactly one place that catches everything and
turns it into a failed answer with a mode (docs/modes.md, "Internal errors"):

- the pytest process: ``gate.boundary.fail_closed`` (here) -- every check, verifier and
  citation the runner runs, and each step of the controller after the session (report,
  exporters, ledger, summary), which become a warning carrying the mode instead;
- a verifier's child: ``verifiers.child.child_main`` (answers ``internal``: mode ``error``);
- a verifier zygote: ``verifiers.zygote._import`` (the module's import is its answer);
- the shepherd: ``process.shepherd.main`` (answers ``fatal``);
- the measurement in a check's Python: ``process.bootstrap._start`` ("not measured");
- a batch's pytest, its zygotes and their forks (``process.batch_reporter``): a mutant's
  fork, ``_child`` (no answer: judged by its exit, as a solo run's).

Any other catch-all in the package is listed, with the reason it must catch everything
there, in ``tests/test_boundaries.py``; a new one fails that test.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import replace

from pytest_vgate.verdict import Mode, Verdict


def fail_closed(run: Callable[[], Verdict], what: str, argv: tuple[str, ...] = ()) -> Verdict:
    """``run()``'s verdict, or a failed one for whatever it raised. Never raises, except
    ``KeyboardInterrupt`` (the user's: it stops the session as in plain pytest).

    An ``Exception`` is mode ``error`` (a bug of ours or an exception a check provoked);
    any other ``BaseException`` (``SystemExit`` & co. from inside a check) is ``panic``.
    A verdict without a duration gets the time ``run`` took.
    """
    started = time.monotonic()
    try:
        verdict = run()
    except KeyboardInterrupt:
        raise
    # Catch-all by design: this is the pytest process's fail-closed boundary.
    except Exception as exc:  # noqa: BLE001
        verdict = Verdict.failed(
            Mode.ERROR,
            f"internal error in pytest-vgate while running {what}: {type(exc).__name__}: {exc}",
            errors=(traceback.format_exc(limit=8),),
            command=argv,
        )
    except BaseException as exc:  # noqa: BLE001 - SystemExit & co. from inside a check
        verdict = Verdict.failed(
            Mode.PANIC,
            f"{type(exc).__name__} escaped while running {what}: {exc!r}",
            command=argv,
        )
    if verdict.duration == 0.0:
        verdict = replace(verdict, duration=time.monotonic() - started)
    return verdict


def fail_closed_step(step: Callable[[], object], what: str) -> str | None:
    """Run a step that gives no verdict (writing a report, the summary): None when it
    finished, else a warning line naming the mode and what went wrong. Never raises,
    except ``KeyboardInterrupt``."""

    def run() -> Verdict:
        step()
        return Verdict(mode=Mode.PASS)

    verdict = fail_closed(run, what)
    if verdict.mode is Mode.PASS:
        return None
    return f"(mode {verdict.mode.value}) {verdict.detail}"
