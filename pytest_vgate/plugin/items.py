"""Collectors and items: gates files, gates and verifiers.

Items are thin: they ask the core for a result, put its payload where reports carry it,
and turn a non-pass into a failure whose text is the core's report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vgate.defaults import MARKER
from pytest_vgate.gatesfile import Gate, GatesFileError, GateType
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.payload import CheckPayload
from pytest_vgate.plugin.failures import PluginItem, VgateFailure
from pytest_vgate.plugin.session import resources, session_state
from pytest_vgate.process.tools import declared_tool_error
from pytest_vgate.verdict import Cause, Mode, Verdict

# What runs a check is imported when the first one runs: a session that only collects
# (``--collect-only``, or every item deselected) never loads the runner, the evidence
# rules, the verifiers or the citation checker.
if TYPE_CHECKING:
    from pytest_vgate.context import RunContext
    from pytest_vgate.verifiers import VerifierTarget


def session_context(item: pytest.Item, root: Path) -> RunContext:
    """What every check of ``item`` runs with: the session's settings and its state."""
    from pytest_vgate.context import RunContext

    res = resources(item.config)
    state = session_state(item.config)
    caller_env, sys_path = res.run_basics()
    return RunContext(
        root=root,
        default_timeout=res.default_timeout(item),
        caller_env=caller_env,
        inventory=res.inventory_for(root),
        sys_path=sys_path,
        isolation=res.settings.isolation,
        cells=state.cells,
        zygotes=state.zygotes,
        shepherds=state.shepherds,
    )


class GatesFileNode(pytest.File):
    """A gates file given with ``--vgate``: collects one item per gate, in file order."""

    collected = False  # collect() ran (another plugin may answer for it: --lf)

    def collect(self) -> Iterator[pytest.Item]:
        self.collected = True
        loaded = resources(self.config).gates_file(self.path)
        self.gates_file = loaded
        if self.get_closest_marker(MARKER) is None:
            # Once here, not per item: every item of the file inherits it (-m, -k,
            # get_closest_marker and the report's keywords see a parent's marker).
            self.add_marker(MARKER)
        for gate in loaded.gates:
            problem = declared_tool_error(gate.argv, gate.tools)
            if problem is not None:
                raise GatesFileError(self.path, gate.line, "tools", problem)
            yield GateItem.from_parent(self, name=gate.id, gate=gate)
        if not loaded.citations:
            return
        from pytest_vgate.plugin.citation_items import collect_document_citations

        for document in loaded.citations:
            yield from collect_document_citations(self, document, loaded.root)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, GatesFileError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class VgateItem(PluginItem):
    """A gate or verifier item: evaluates to a payload, fails unless it passed."""

    vgate_payload: CheckPayload | None = None

    def evaluate(self) -> CheckPayload:
        raise NotImplementedError

    def runtest(self) -> None:
        payload = self.evaluate()
        self.vgate_payload = payload
        for name, value in (
            ("mode", payload.mode),
            ("cause", payload.cause),
            ("exit_code", payload.exit_code),
            ("rbg", payload.rbg),
            ("isolation", payload.isolation),
        ):
            if value is not None and value != "":
                self.user_properties.append((f"vgate_{name}", str(value)))
        coverage = payload.coverage
        if coverage is not None and coverage.get("status"):
            self.user_properties.append(("vgate_coverage", str(coverage["status"])))
        disc = payload.discrimination
        if disc is not None and disc.get("status"):
            self.user_properties.append(("vgate_discrimination", str(disc["status"])))
            killed, planted = disc.get("killed", 0), disc.get("planted", 0)
            self.user_properties.append(("vgate_mutants", f"{killed}/{planted}"))
        if payload.mode is Mode.JUDGMENT and not payload.strict_failure:
            pytest.skip(payload.detail)
        if not payload.ok:
            raise VgateFailure(payload.report)


class GateItem(VgateItem):
    """One gate of a gates file, re-executed through the fail-closed runner."""

    def __init__(self, *, gate: Gate, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate

    def evaluate(self) -> CheckPayload:
        from pytest_vgate.exporters.report import check_targets
        from pytest_vgate.gate.result import evaluate_gate, result_of
        from pytest_vgate.plugin.extending import adjust, judge_for
        from pytest_vgate.plugin.remote import remote_problem

        res = resources(self.config)
        problem = remote_problem(res, self.gate.root)
        if problem is not None:  # a worker in another checkout that differs: no verdict
            failed = Verdict.failed(Mode.SANDBOX, problem, cause=Cause.ENVIRONMENT)
            return result_of(self.gate, failed).to_payload(nodeid=self.nodeid)
        ctx = replace(
            session_context(self, self.gate.root),
            judge=judge_for(self) if kind_of(self.gate.type).judgment else None,
        )
        base_root = res.base_root_for(self.gate)
        base_ctx = replace(ctx, root=base_root) if base_root is not None else None
        evidence = res.evidence_for(self.gate.root)
        base_tree = res.base_tree_for(self.gate)
        given = None
        if res.settings.batch == "auto":
            from pytest_vgate.gate.result import run_sides
            from pytest_vgate.plugin.batching import batched

            sides = run_sides(
                self.gate,
                ctx,
                evidence=evidence,
                base_ctx=base_ctx,
                coverage=res.settings.measure,
                base_tree=base_tree,
            )
            given = batched(self, self.gate, sides)
        result = evaluate_gate(
            self.gate,
            ctx,
            strict=res.settings.strict,
            evidence=evidence,
            base_ctx=base_ctx,
            require_red=res.settings.require_red,
            coverage=res.settings.measure,
            repeat=res.settings.repeat,
            base_tree=base_tree,
            mutants=res.settings.mutants_per_gate,
            batched=(given.green, given.red) if given is not None else None,
            forked=given.forked if given is not None else None,
        )
        if given is not None and given.note:
            reason = "; ".join(r for r in (result.rbg_reason, given.note) if r)
            result = replace(result, rbg_reason=reason)
        # where to point a failure; a pass needs no location
        targets = None if result.ok else tuple(check_targets(self.gate, self.gate.root))
        return adjust(self, self.gate, result.to_payload(nodeid=self.nodeid, targets=targets))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, max(self.gate.line - 1, 0), f"vgate: {self.gate.id}"


class VerifierItem(VgateItem):
    """A ``@verifier`` function found in a test module, run in its own process."""

    def __init__(self, *, target: VerifierTarget, line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.line = line

    def evaluate(self) -> CheckPayload:
        from pytest_vgate.gate.result import result_of
        from pytest_vgate.gate.runner import run_verifier
        from pytest_vgate.plugin.extending import adjust

        ctx = session_context(self, self.config.rootpath)
        gate = Gate(
            id=self.name,
            type=GateType.PYTHON,
            verifiers=(f"{self.target.module}:{self.target.qualname}",),
            tools=self.target.tools,
            root=self.config.rootpath,
            source=self.path,
            line=self.line,
        )
        result = result_of(gate, run_verifier(self.target, ctx))
        return adjust(self, gate, result.to_payload(nodeid=self.nodeid, verifier=True))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, max(self.line - 1, 0), f"verifier: {self.name}"
