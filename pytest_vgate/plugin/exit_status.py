"""The session's exit status follows the verdicts, whatever else changed pytest's reports.

Markers (``xfail``, ``skip``), hooks (a makereport wrapper that flips ``outcome``, a
``pytest_sessionfinish`` that resets ``exitstatus``) and ``pytest.exit(returncode=0)`` can
change the reports pytest derives its status from, not the verdict on ``report.vgate``.
Every selected vgate item must end with an ok verdict (or a skip of the plugin's own,
``judgment``, or its author's ``skip`` marker on a ``@verifier``); otherwise the session
exits 1 and the summary names the item. Deselection stays legal, and is shown. On xdist
workers ``VerdictGuard`` only sends what was selected; the controller judges, last.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.defaults import NESTED_ENV
from pytest_vgate.gatesfile import GatesFile, GatesFileError
from pytest_vgate.payload import Payload, TestPayload, verdict_ok
from pytest_vgate.plugin import wire
from pytest_vgate.plugin.collection import arg_path
from pytest_vgate.plugin.failures import PluginItem
from pytest_vgate.plugin.items import VerifierItem
from pytest_vgate.plugin.session import RESOURCES

SELECTION_KEY = "vgate_selection"
SKIP_ATTRIBUTE = "vgate_skip"
SOURCE_MARKS = "vgate_source_marks"
# --lf and --sw deselect what passed before: through PYTEST_ADDOPTS a gate would go unrun.
DESELECTING_OPTIONS = (
    "-k", "-m", "--deselect", "--lf", "--last-failed", "--sw", "--stepwise", "--sw-skip",
    "--stepwise-skip",
)  # fmt: skip
NEVER_RAN = "never ran: no report of its run reached pytest-vgate (a hook or pytest.exit)"


def is_vgate_item(item: pytest.Item) -> bool:
    return isinstance(item, PluginItem)


@dataclass(frozen=True)
class Finding:
    """A selected vgate item whose run did not end with an ok verdict that pytest shows."""

    nodeid: str
    what: str
    overridden: bool = True  # False: not run because the session stopped first (-x, ...)


@dataclass
class Selection:
    """What collection selected, in collection order; the same on every xdist worker.

    Ordered sets (dicts), merged from every worker: cheap for tens of thousands of items.
    """

    selected: dict[str, None] = field(default_factory=dict)
    deselected: dict[str, None] = field(default_factory=dict)
    removed: dict[str, None] = field(default_factory=dict)  # dropped without pytest_deselected

    def merge(self, data: dict[str, Any]) -> None:
        for name in ("selected", "deselected", "removed"):
            getattr(self, name).update(dict.fromkeys(data.get(name, ())))


class VerdictGuard:
    def __init__(self, config: pytest.Config, *, worker: bool) -> None:
        self.config = config
        self.worker = worker
        self.collected: dict[str, None] = {}
        self.deselected: dict[str, None] = {}
        self.selection = Selection()
        self.outcomes: dict[str, str] = {}  # nodeid -> what pytest's reports say
        self.called: dict[str, None] = {}  # nodeids whose call phase reported
        self.verdicts: dict[str, Payload] = {}
        self.skips: dict[str, dict[str, Any]] = {}
        self.findings: list[Finding] = []
        self.workers_down = 0  # xdist workers gone
        self.selection_known = False  # collection finished here, or a worker said what it chose
        self.judged = False
        self.session: pytest.Session | None = None
        # Inside a check (a gate running pytest): that session's status follows its reports.
        self.nested = bool(os.environ.get(NESTED_ENV))
        self.nested_status: pytest.ExitCode | None = None

    # -- collection (every process) -------------------------------------------------------

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if is_vgate_item(item):
            self.collected[item.nodeid] = None

    def pytest_deselected(self, items: Iterable[pytest.Item]) -> None:
        self.deselected.update((i.nodeid, None) for i in items if is_vgate_item(i))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        selected = [i.nodeid for i in session.items if is_vgate_item(i)]
        chosen = set(selected) | set(self.deselected)
        data = {
            "selected": selected,
            "deselected": list(self.deselected),
            "removed": [n for n in self.collected if n not in chosen],
        }
        if self.worker:
            self.config.workeroutput[SELECTION_KEY] = data  # type: ignore[attr-defined]
        else:
            self.selection.merge(data)
            self.selection_known = True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.skipped and call.when == "setup" and is_vgate_item(item):
            setattr(report, SKIP_ATTRIBUTE, skip_info(item, report))
        return report

    # -- the controller ---------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.workers_down += 1
        data = getattr(node, "workeroutput", {}).get(SELECTION_KEY)
        if isinstance(data, dict):
            self.selection_known = True
            self.selection.merge(data)

    @pytest.hookimpl(tryfirst=True)  # before a conftest's that may call pytest.exit
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker:
            return
        nodeid = report.nodeid
        payload = wire.payload_of(self.config, report)
        if payload is not None and not isinstance(payload, TestPayload):
            self.verdicts[nodeid] = payload
        skip = getattr(report, SKIP_ATTRIBUTE, None)
        if isinstance(skip, dict):
            self.skips[nodeid] = skip
        before = self.outcomes.get(nodeid)
        if report.when == "call":
            self.called[nodeid] = None
        if report.failed:
            self.outcomes[nodeid] = "failed" if report.when == "call" else "error"
        elif before in ("failed", "error"):
            return
        elif hasattr(report, "wasxfail"):
            self.outcomes[nodeid] = "xfailed" if report.skipped else "xpassed"
        elif report.skipped or report.when == "call" or before is None:
            self.outcomes[nodeid] = report.outcome

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        self.session = session
        self._judge_once(session)
        self._enforce()
        return (yield from self._last_word("pytest_sessionfinish"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_unconfigure(self) -> Generator[None, None, None]:
        if self.session is not None and not self.judged:
            # pytest.exit in pytest_sessionstart: pytest skips pytest_sessionfinish.
            self._judge_once(self.session)
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None and self.findings:
                write_findings(reporter, self)
        return (yield from self._last_word("pytest_unconfigure"))

    def _last_word(self, hook: str) -> Generator[None, None, None]:
        """Around the other implementations of ``hook``: the status is set again after them."""
        try:
            return (yield)
        except SystemExit as exc:
            self._absorb(exc, hook)
            return None
        finally:
            self._enforce()

    def _judge_once(self, session: pytest.Session) -> None:
        if self.judged or self.worker or self.config.option.collectonly:
            return
        self.judged = True
        self.findings = self.judge(session)
        if self.nested:
            self.nested_status = nested_status(self.outcomes.values())

    def _absorb(self, exc: SystemExit, hook: str) -> None:
        """A hook's ``sys.exit(0)`` (also from ``pytest_terminal_summary``, which runs inside
        ``pytest_sessionfinish``) would end the process with 0 past the status set here:
        when that status must not be 0, the session ends through pytest's own return."""
        failing = self.red or self.nested_status is not None
        if self.worker or self.session is None or exc.code not in (None, 0) or not failing:
            raise exc
        os.write(
            2,
            f"pytest-vgate: a {hook} hook called sys.exit({exc.code}); the session does not "
            "end green over a failed or unrun gate\n".encode(),
        )

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        write_findings(terminalreporter, self)

    def _enforce(self) -> None:
        if self.worker or self.session is None:
            return
        if self.nested_status is not None and self.session.exitstatus == pytest.ExitCode.OK:
            self.session.exitstatus = self.nested_status
        if not self.red:
            return
        if self.session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            self.session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @property
    def red(self) -> bool:
        """Some verdict is not ok, or some gate has none: whatever pytest's reports say."""
        return bool(self.findings) or any(not verdict_ok(v) for v in self.verdicts.values())

    def judge(self, session: pytest.Session) -> list[Finding]:
        findings = []
        stopped = session.shouldstop or session.shouldfail
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:  # Ctrl-C, SIGTERM
            stopped = "interrupted"
        for nodeid in self.selection.selected:
            what = self._judge_one(nodeid)
            if what == NEVER_RAN and stopped:
                why = (
                    f"stopped first ({stopped})"
                    if stopped != "interrupted"
                    else "was interrupted first"
                )
                findings.append(Finding(nodeid, f"the session {why}", False))
            elif what:
                findings.append(Finding(nodeid, what))
        findings.extend(
            Finding(n, "removed from the collection without being deselected (by a hook)")
            for n in self.selection.removed
        )
        findings.extend(self._never_collected(stopped == "interrupted"))
        channel = env_deselection()
        if channel and self.selection.deselected:
            findings.extend(
                Finding(n, f"deselected through PYTEST_ADDOPTS ({channel}), out of sight")
                for n in self.selection.deselected
            )
        return findings

    def _never_collected(self, interrupted: bool) -> list[Finding]:
        """Every gate of the gates files must be met somewhere: run, selected, deselected
        or removed. A gate that was never collected is a finding: the session ended before
        its collection got to the gates files (``pytest.exit`` in ``pytest_sessionstart``
        or while collecting), or under xdist every worker died before saying what it
        selected. The controller reads the gates files itself. A file named as an argument
        with a node id (``gates.yaml::one``) is pytest's own selection and is left out."""
        res = self.config.stash.get(RESOURCES, None)
        if res is None:
            return []
        seen = {*self.selection.selected, *self.selection.deselected, *self.selection.removed}
        seen.update(self.outcomes)
        files = {nodeid.partition("::")[0] for nodeid in seen}
        base = self.config.invocation_params.dir
        named = {arg_path(base, str(a)) for a in self.config.args if "::" in str(a)}
        loaded_files = [g for g in res.gates_files.values() if isinstance(g, GatesFile)]
        owned = {document.resolve() for g in loaded_files for document in g.citations}
        names: list[str] = []
        for path in (*res.settings.gates_files, *res.settings.cite_files):
            shown = Path(os.path.relpath(path, self.config.rootpath)).as_posix()
            loaded = res.gates_files.get(path)
            if path in named or isinstance(loaded, GatesFileError):
                continue  # pytest's own selection; a file that does not load fails anyway
            if isinstance(loaded, GatesFile):
                names.extend(n for g in loaded.gates if (n := f"{shown}::{g.id}") not in seen)
            elif shown not in files and path not in owned:  # a gates file checks it there
                names.append(shown)  # a cited document none of whose items was met
        what = (
            "never collected: every xdist worker died before saying what it selected"
            if self.workers_down and not self.selection_known
            else "never collected: the session ended before its collection got to it"
        )
        return [Finding(n, what, not interrupted) for n in names]

    def _judge_one(self, nodeid: str) -> str | None:
        outcome = self.outcomes.get(nodeid)
        verdict = self.verdicts.get(nodeid)
        if verdict is not None:
            if verdict_ok(verdict) or outcome in ("failed", "error"):
                return None  # ok, or a failure pytest counts itself
            mode = verdict.mode.value
            return f"verdict {mode}, but pytest reported it {outcome}: {overrider(outcome)}"
        skip = self.skips.get(nodeid)
        if skip is not None and skip.get("legal"):
            return None
        if outcome in ("failed", "error"):
            return None  # an error pytest counts itself (setup, teardown)
        if outcome is None or (outcome == "passed" and nodeid not in self.called):
            return NEVER_RAN  # (at most its setup reported)
        if outcome == "skipped" and skip is not None:
            return f"no verdict: skipped by a marker or hook, not by its gate ({skip['reason']})"
        return f"no verdict, but pytest reported it {outcome}: {overrider(outcome)}"


def nested_status(outcomes: Iterable[str]) -> pytest.ExitCode | None:
    """The status pytest's own rules give a check's session: 1 when a test failed, 5 when
    none ran; what a hook in the tree under test set instead does not count."""
    seen = set(outcomes)
    if seen & {"failed", "error"}:
        return pytest.ExitCode.TESTS_FAILED
    if not seen:
        return pytest.ExitCode.NO_TESTS_COLLECTED
    return None


def overrider(outcome: str | None) -> str:
    return {
        "xfailed": "an xfail marker",
        "xpassed": "an xfail marker",
        "passed": "a hook rewrote its report",
        "skipped": "a skip (marker, hook or pytest.skip) outside its run",
    }.get(str(outcome), "its report was changed")


def skip_info(item: pytest.Item, report: pytest.TestReport) -> dict[str, Any]:
    """Whether a skip before the run is the author's own ``skip``/``skipif`` on a verifier.

    Legal only for a ``@verifier`` in a test module, when every skip marker on the item
    was written in that module (on the function, its class or ``pytestmark``) and the
    skip's reason is one of theirs; a marker added by a conftest or hook is not.
    """
    reason = _skip_reason(report)
    source: list[pytest.Mark] = getattr(item, SOURCE_MARKS, [])
    marks = [*item.iter_markers("skip"), *item.iter_markers("skipif")]
    legal = (
        isinstance(item, VerifierItem)
        and bool(marks)
        and all(any(m is s for s in source) for m in marks)
        and any(r and r in reason for s in source for r in mark_reasons(s))
    )
    return {"legal": legal, "reason": reason}


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


def mark_reasons(mark: pytest.Mark) -> list[str]:
    """The reasons pytest's skipping plugin would give for this mark."""
    reasons = [str(mark.kwargs["reason"])] if mark.kwargs.get("reason") else []
    if mark.name == "skip":
        reasons.append(str(mark.args[0]) if mark.args else "unconditional skip")
    elif mark.name == "skipif":
        reasons.extend(f"condition: {c}" for c in mark.args if isinstance(c, str))
    return reasons


def source_marks(obj: object, item: pytest.Item) -> list[pytest.Mark]:
    """The function's own marks, which a plain ``pytest.Item`` does not read by itself."""
    marks = getattr(obj, "pytestmark", [])
    own = [m for m in (marks if isinstance(marks, list) else [marks]) if isinstance(m, pytest.Mark)]
    for mark in own:
        item.add_marker(getattr(pytest.mark, mark.name).with_args(*mark.args, **mark.kwargs))
    return [*item.iter_markers("skip"), *item.iter_markers("skipif")]


def env_deselection() -> str | None:
    """A deselecting option that reached pytest through PYTEST_ADDOPTS, if any."""
    try:
        words = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        return None
    for word in words:
        if word in DESELECTING_OPTIONS or word.startswith("--deselect="):
            return word
        if word[:2] in ("-k", "-m") and not word.startswith("--"):
            return word
    return None


def write_findings(tr: pytest.TerminalReporter, guard: VerdictGuard) -> None:
    """Name every gate the session fails for although pytest's reports hide it."""
    named = {f.nodeid for f in guard.findings}
    deselected = [n for n in guard.selection.deselected if n not in named]
    legal = [n for n, s in guard.skips.items() if s.get("legal") and n not in guard.verdicts]
    if deselected:
        tr.write_line(
            f"vgate: {len(deselected)} deselected, not run and not verified: "
            + ", ".join(deselected[:10])
            + (" ..." if len(deselected) > 10 else ""),
            yellow=True,
        )
    for nodeid in legal:
        tr.write_line(f"vgate: {nodeid} skipped by its own marker in the test module", yellow=True)
    not_run = [f for f in guard.findings if not f.overridden]
    if not_run:
        tr.write_line(f"vgate: {len(not_run)} not run, no verdict: {not_run[0].what}", red=True)
    overridden = [f for f in guard.findings if f.overridden]
    if not overridden:
        return
    tr.write_sep("=", "vgate: results overridden", red=True)
    tr.write_line("the session fails: no passing verdict, whatever pytest's reports say:", red=True)
    for finding in overridden:
        tr.write_line(f"  {finding.nodeid}: {finding.what}", red=True)
