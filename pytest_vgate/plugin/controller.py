"""The controller side of a session: the one place that writes anything.

Under xdist only the controller registers it: it makes the base worktrees, hands plain
values to the workers, and writes the ledger, the reports and the terminal summary.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vgate.gate.boundary import fail_closed_step
from pytest_vgate.payload import CheckPayload, CrashedPayload, Payload
from pytest_vgate.plugin import wire
from pytest_vgate.plugin.session import Resources, WorkerInput

if TYPE_CHECKING:
    from pytest_vgate.exporters.report import JsonReport
from pytest_vgate.gatesfile import GatesFile
from pytest_vgate.verdict import Mode

QUIET_RBG = ("proven", "regression", "unproven")  # statuses with no base run to explain


class Controller:
    def __init__(self, config: pytest.Config, res: Resources, loaded: list[GatesFile]) -> None:
        self.config = config
        self.res = res
        self.loaded = loaded
        self.payloads: dict[str, Payload] = {}  # nodeid -> payload, in report order
        self.origin: dict[str, Any] | None = None  # see pytest_configure_node
        self.removing: threading.Thread | None = None  # the base worktrees' removal
        self.late_warnings: list[str] = []  # what it could not do

    # -- before the session --------------------------------------------------------------

    def prepare(self) -> None:
        # Read the ledger here too, so that a damaged one is reported once, here. A session
        # that only collects checks nothing: it reads no ledger, runs no git and makes no
        # base worktree.
        only_collects = self.config.option.collectonly
        roots = () if only_collects else dict.fromkeys(g.root for g in self.loaded)
        for root in roots:
            evidence = self.res.evidence_for(root)
            self.res.warnings.extend(evidence.warnings)
            evidence.remember_built = True  # this process writes it: see _record_evidence
        if self.res.settings.report is not None:
            self._step(self._forget_earlier_report, "the JSON report")
        if self.res.settings.base and not only_collects:
            self._prepare_base(self.res.settings.base)
        if self.res.settings.fix and not only_collects:  # a listing rewrites nothing
            from pytest_vgate.plugin.citation_items import fix_all_documents

            fix_all_documents(self.config, self.res, self.loaded)

    def _prepare_base(self, ref: str) -> None:
        """One set of base worktrees per gates root, made once for all workers."""
        from pytest_vgate.baseline import BaselineError, BaseTrees, toplevel

        for root in dict.fromkeys(g.root for g in self.loaded):
            gates = [gate for g in self.loaded if g.root == root for gate in g.gates]
            listed = self.res.evidence_for(root).listing  # the tree as configure saw it
            dirty = (*listed.changed, *listed.untracked) if listed and listed.commit else None
            try:
                top = listed.top if listed is not None else toplevel(root)
                root_rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
                trees = BaseTrees.create(
                    top,
                    ref,
                    [gate.overlay for gate in gates],
                    root_rel=root_rel,
                    uncommitted=dirty,
                )
            except BaselineError as exc:
                self.release()
                raise pytest.UsageError(f"pytest-vgate: --vgate-base {ref}: {exc}") from None
            self.res.base_trees[str(root)] = trees

    # -- xdist ---------------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        data = worker_payload(self.res)
        if self.origin is None:  # made once: what a worker in another checkout must match
            from pytest_vgate.plugin.remote import origin_payload

            roots = dict.fromkeys(g.root for g in self.loaded)
            self.origin = origin_payload(self.res, self.config.rootpath, roots)
        data["origin"] = self.origin
        if self.res.settings.batch == "auto":  # the first worker to run a group shares it
            if self.res.batch_folder is None:
                import tempfile

                self.res.batch_folder = tempfile.mkdtemp(prefix="vgate-batches-")
            data["batch_folder"] = self.res.batch_folder
        node.workerinput["vgate"] = data

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        # The worker died inside this item (os._exit in an inline verifier, a segfault):
        # the item failed with mode crash, never a silent loss.
        report.user_properties.append(("vgate_mode", "crash"))
        report.user_properties.append(("vgate_cause", "environment"))
        wire.put(
            report,
            CrashedPayload(
                id=crashitem, detail="the xdist worker running this item died", nodeid=crashitem
            ),
        )

    # -- during the session --------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = wire.payload_of(self.config, report)
        if payload is None:
            return
        self.payloads[report.nodeid] = payload
        crashed = isinstance(payload, CrashedPayload) and payload.mode is Mode.CRASH
        if crashed and report.when != "teardown":
            self._close_crashed(report)

    def _close_crashed(self, report: pytest.TestReport) -> None:
        """A crashed item never gets a teardown report, and junit writes properties only
        there: log one (passed, so nothing is counted twice) carrying the crash's mode."""
        teardown = pytest.TestReport(
            nodeid=report.nodeid,
            location=report.location,
            keywords={},
            outcome="passed",
            longrepr=None,
            when="teardown",
            user_properties=list(report.user_properties),
        )
        if hasattr(report, "node"):
            teardown.node = report.node  # type: ignore[attr-defined]
        self.config.hook.pytest_runtest_logreport(report=teardown)

    # -- after the session ---------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.payloads and not self.res.warnings:
            return  # nothing to say (write_summary would say nothing either)
        from pytest_vgate.plugin.summary import write_summary

        failed = fail_closed_step(
            lambda: write_summary(terminalreporter, self.payloads, self.res), "the vgate summary"
        )
        if failed is not None:  # the verdicts stand; the summary says it is incomplete
            terminalreporter.write_line(f"vgate warning: {failed}", yellow=True)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Each step runs through the boundary: a fault in one is a warning with a mode,
        # and the steps after it still run (the ledger is written whatever the exporters do).
        built: list[JsonReport] = []  # the report, once it is built
        self._step(lambda: built.append(self._build_report()), "the JSON report")
        self._step(self._extend_adjustment_warnings, "the adjuster warnings")
        report = built[0] if built else None
        if report:
            self._step(lambda: self._export(report), "the pytest_vgate_report exporters")
        self._step(self._record_evidence, "the ledger")
        # Every run is over: the base worktrees go now, on a thread of their own while the
        # summary is written; unconfigure waits for it and says what it could not do.
        self._step(self._start_removal, "removing the base worktrees")
        if report:  # last: only a session that got here has a sealed report
            self._step(lambda: self._write_report(report, seal=True), "the JSON report")

    def _step(self, step: Callable[[], object], what: str) -> None:
        failed = fail_closed_step(step, what)
        if failed is not None:
            self.res.warnings.append(failed)

    def _forget_earlier_report(self) -> None:
        """A report left by an earlier session must not stand for this one: it goes now,
        and this session's is written at its end. No file is left in its place while the
        session runs: xdist's workers would take an existing path among the arguments
        for one to find their rootdir by."""
        path = self.res.settings.report
        if path is not None and path.is_file() and not path.is_symlink():
            path.unlink()

    def _build_report(self) -> JsonReport:
        from pytest_vgate.exporters.report import build_report
        from pytest_vgate.plugin.describe import describe_session

        report = build_report(list(self.payloads.values()), rootdir=self.config.rootpath)
        if self.res.base_trees:  # the page shows the diff: add it while the trees exist
            # Extras for readers: a fault in one is a warning, and the report still goes out.
            self._step(lambda: self._add_diffs(report), "the change's diff in the report")
            self._step(lambda: self._add_advice(report), "the advice in the report")
        report = {**report, **describe_session(self.config, self.res, self.loaded)}
        self._write_report(report, seal=False)
        return report

    def _write_report(self, report: JsonReport, *, seal: bool) -> None:
        from pytest_vgate.exporters.report import sealed, write_json_report

        if self.res.settings.report is not None:
            warning = write_json_report(
                self.res.settings.report, sealed(report) if seal else report
            )
            if warning:
                self.res.warnings.append(warning)

    def _add_diffs(self, report: JsonReport) -> None:
        from pytest_vgate.exporters.change import ChangeDiff, add_diffs

        by_root: dict[str, ChangeDiff] = {}
        for root, trees in self.res.base_trees.items():
            for tree in trees.trees.values():  # one base commit per root
                by_root[root] = ChangeDiff(tree.repo, tree.sha)
                break
        diff_for = {
            str(g.path): by_root[str(g.root)] for g in self.loaded if str(g.root) in by_root
        }
        add_diffs(report["gates"], diff_for or by_root)

    def _add_advice(self, report: JsonReport) -> None:
        """Each gate not proven by its base run gains ``advice``: the failure report's
        "what to do" sentence, for readers of the report (the page)."""
        from pytest_vgate.evidence.why import advice, decisive_lines
        from pytest_vgate.verdict import Verdict

        gates = {(str(g.path), gate.id): gate for g in self.loaded for gate in g.gates}
        for entry in report["gates"]:
            base, status = entry.get("base"), entry.get("rbg")
            gate = gates.get(
                (str(entry.get("source") or "").rpartition(":")[0], str(entry.get("id")))
            )
            if gate is None or not isinstance(base, dict) or status in (*QUIET_RBG, None):
                continue
            run = Verdict.from_dict(base)
            lines = decisive_lines(run.stdout, run.stderr)
            entry["advice"] = advice(str(status), gate, run, lines, str(entry.get("rbg_reason")))

    def _extend_adjustment_warnings(self) -> None:
        from pytest_vgate.plugin.extending import adjustment_warnings

        self.res.warnings.extend(adjustment_warnings(self.payloads))

    def _export(self, report: JsonReport) -> None:
        from pytest_vgate.plugin.extending import emit_report

        # Exporters (ours included) get the report once, here, on the controller.
        self.res.warnings.extend(emit_report(self.config, report, self.res.settings.timeout))

    def _record_evidence(self) -> None:
        """Append this session's runs to each ledger (the controller is the only writer)."""
        if not self.payloads:
            return  # nothing ran
        from pytest_vgate.evidence import Ledger, Record
        from pytest_vgate.evidence.proof import Evidence

        # A record this process made is taken back, not decoded from its own JSON (the
        # evidence already loaded only: nothing is read again here).
        evidence = {
            str(e.ledger.path): e for e in self.res.cache.values() if isinstance(e, Evidence)
        }
        by_ledger: dict[str, list[Record]] = {}
        for nodeid, payload in self.payloads.items():
            if not isinstance(payload, CheckPayload) or not payload.ledger:
                continue
            ours = evidence.get(payload.ledger)
            for data in payload.records:
                obj = data.to_dict()
                try:
                    record = ours.record_of(obj) if ours is not None else Record.from_dict(obj)
                except (ValueError, KeyError, TypeError) as exc:  # changed on its way here
                    self.res.warnings.append(
                        f"vgate ledger {payload.ledger}: a record of {nodeid} is not one "
                        f"({type(exc).__name__}: {exc}); not written, the others are"
                    )
                    continue
                by_ledger.setdefault(payload.ledger, []).append(record)
        for ledger, records in by_ledger.items():
            self.res.warnings.extend(Ledger(Path(ledger)).append(records))

    def _start_removal(self) -> None:
        trees = list(self.res.base_trees.values())
        self.res.base_trees.clear()
        if trees:  # each ``remove`` never raises: its failures are warnings
            self.removing = threading.Thread(
                target=lambda: self.late_warnings.extend(w for t in trees for w in t.remove()),
                name="vgate-base-removal",
            )
            self.removing.start()

    def pytest_unconfigure(self) -> None:
        if self.removing is not None:  # nothing of the session outlives it
            self.removing.join()
            self.removing = None
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            for warning in self.late_warnings:
                if reporter is not None:
                    reporter.write_line(f"vgate warning: {warning}", yellow=True)
        self.release()

    def release(self) -> None:
        """Remove every base worktree (idempotent; also runs at exit as a safety net)."""
        for trees in self.res.base_trees.values():
            self.res.warnings.extend(trees.remove())
        self.res.base_trees.clear()
        if self.res.batch_folder is not None:
            import shutil

            shutil.rmtree(self.res.batch_folder, ignore_errors=True)
            self.res.batch_folder = None


def worker_payload(res: Resources) -> WorkerInput:
    """What a worker needs from the controller, as plain values."""
    return {
        "inventories": {root: inv.to_dict() for root, inv in res.inventories.items()},
        "base_trees": {root: trees.to_dict() for root, trees in res.base_trees.items()},
        # One view of the tree for the whole session, even if checks write files.
        "tree_states": {root: tree.to_dict() for root, tree in res.tree_states.items()},
        "fixed_citations": res.fixed_citations,
        "starting_path": res.starting_path,
    }
