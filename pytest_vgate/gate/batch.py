"""Batches: gates whose checks are pytest on node ids, run as one pytest per side.

Core, no pytest. Gates whose checks run pytest (``python -m pytest``, ``pytest``) on node
ids with the same interpreter, folder, environment, options and deadline form a group
(``group_key``); ``run_batch`` runs the group's nodes in one pytest process with a
reporter of ours (``evidence/batch_reporter.py``) and gives each gate the verdict its
solo run would give: its exit code from its own nodes' reports (0 all passed or skipped,
1 a failure), the failures' text as its output, and the lines its own nodes executed
(plus collection's). What cannot be attributed is None with the reason, and the caller
runs that gate alone: a batch that crashed, timed out before the gate's nodes finished,
exited with anything but 0 or 1, failed to collect a file, never ran one of the gate's
nodes, or whose measurement saw another process or missed one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_vgate.context import RunContext, gate_timeout
from pytest_vgate.gate import batch_reporter
from pytest_vgate.gate.runner import run_check, verdict_from_process
from pytest_vgate.gatesfile import Gate, GateType
from pytest_vgate.gatesfile.model import EnvSpec
from pytest_vgate.process import ProcessResult
from pytest_vgate.process.measure import MEASURED_KEY, Measured
from pytest_vgate.verdict import Mode, Verdict

# Options that change neither which nodes run nor how each answers (output, warnings,
# plugins): any other option keeps a gate out of batches (-x, -k, --lf, -n ...).
FLAGS = frozenset(
    {"-q", "-qq", "-v", "-vv", "-s", "-l", "--showlocals", "--no-header", "--strict-markers"}
)
JOINED = ("--tb=", "--capture=", "--import-mode=", "-r", "-W", "-p", "--color=")
SEPARATE = frozenset({"-p", "-W", "--tb", "-r"})
RESERVED_ENV = frozenset({"PYTHONPATH", batch_reporter.OUT_ENV})


@dataclass(frozen=True)
class PytestCall:
    """A check that runs pytest on node ids: the words before the nodes, and the nodes."""

    head: tuple[str, ...]
    nodes: tuple[str, ...]


def pytest_call(gate: Gate) -> PytestCall | None:
    """The check as a pytest call a batch can run, or None (not pytest, or an option that
    could change which nodes run or how)."""
    argv = gate.argv
    if gate.type not in (GateType.COMMAND, GateType.CODE) or not argv:
        return None
    if argv[1:3] == ("-m", "pytest"):
        start = 3
    elif os.path.basename(argv[0]) in ("pytest", "py.test"):
        start = 1
    else:
        return None
    options: list[str] = []
    nodes: list[str] = []
    words = iter(argv[start:])
    for word in words:
        if not word.startswith("-"):
            nodes.append(word)
        elif word in FLAGS or (word.startswith(JOINED) and word not in SEPARATE):
            options.append(word)
        elif word in SEPARATE:
            value = next(words, None)
            if value is None:
                return None
            options += [word, value]
        else:
            return None
    if not nodes or any(n.startswith("/") or ".." in n.split("::")[0] for n in nodes):
        return None
    return PytestCall((*argv[:start], *options), tuple(nodes))


def group_key(gate: Gate, ctx: RunContext) -> tuple[Any, ...] | None:
    """What gates must share to run in one batch; None when the gate runs alone."""
    call = pytest_call(gate)
    if call is None or RESERVED_ENV & set(gate.env.pass_names + tuple(dict(gate.env.set_values))):
        return None
    return (
        str(ctx.root),
        gate.cwd,
        call.head,
        gate.env.pass_names,
        gate.env.set_values,
        gate.tools,
        gate_timeout(gate, ctx),
    )


@dataclass(frozen=True)
class BatchRun:
    """One side's batch: each gate's verdict (None: run it alone, ``why`` says why)."""

    verdicts: Mapping[str, Verdict | None]
    why: Mapping[str, str] = field(default_factory=dict)
    duration: float = 0.0

    def verdict(self, gate_id: str) -> Verdict | None:
        return self.verdicts.get(gate_id)


def run_batch(gates: Sequence[Gate], ctx: RunContext, timeout: float | None = None) -> BatchRun:
    """Run ``gates`` (one group) as one pytest process on ``ctx.root``. Never raises for
    the check's sake: what goes wrong leaves gates to their solo runs."""
    calls = {g.id: pytest_call(g) for g in gates}
    nodes = list(dict.fromkeys(n for c in calls.values() if c is not None for n in c.nodes))
    first = gates[0]
    call = calls[first.id]
    if call is None or len(gates) < 2:
        return _alone(gates, "not a batch")
    folder = Path(tempfile.mkdtemp(prefix="vgate-batch-"))
    try:
        module = folder / f"{batch_reporter.MODULE}.py"
        shutil.copyfile(batch_reporter.__file__, module)
        out = folder / "records"
        head = call.head
        at = 3 if head[1:3] == ("-m", "pytest") else 1
        argv = (*head[:at], "-p", batch_reporter.MODULE, *head[at:], *nodes)
        env = EnvSpec(
            first.env.pass_names,
            (
                *first.env.set_values,
                ("PYTHONPATH", str(folder)),
                (batch_reporter.OUT_ENV, str(out)),
            ),
        )
        batch_gate = replace(
            first,
            id=f"batch of {len(gates)}",
            argv=argv,
            env=env,
            expect=(0, 1),
            timeout=timeout if timeout is not None else gate_timeout(first, ctx),
        )
        verdict = run_check(batch_gate, ctx)
        records = _records(out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return attribute(gates, ctx, verdict, records)


def _alone(gates: Sequence[Gate], why: str) -> BatchRun:
    return BatchRun({g.id: None for g in gates}, {g.id: why for g in gates})


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            break  # a line cut by a kill: what follows is not known
        if isinstance(record, dict):
            out.append(record)
    return out


@dataclass
class _Node:
    reports: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False


def attribute(
    gates: Sequence[Gate], ctx: RunContext, verdict: Verdict, records: Sequence[dict[str, Any]]
) -> BatchRun:
    """Each gate's solo verdict from the batch's verdict and its reporter's records."""
    whole = _whole_batch_problem(verdict, records)
    if whole:
        return _alone(gates, whole)
    rootdir = next((str(r["rootdir"]) for r in records if "rootdir" in r), None)
    ran: dict[str, _Node] = {}
    for record in records:
        if "start" in record:
            ran.setdefault(str(record["start"]), _Node())
        elif "report" in record:
            ran.setdefault(str(record["report"]), _Node()).reports.append(record)
        elif "finish" in record:
            ran.setdefault(str(record["finish"]), _Node()).finished = True
    measured = verdict.extra.get(MEASURED_KEY)
    verdicts: dict[str, Verdict | None] = {}
    why: dict[str, str] = {}
    for gate in gates:
        call = pytest_call(gate)
        if call is None or rootdir is None:
            verdicts[gate.id], why[gate.id] = None, "the batch did not report"
            continue
        mine, problem = _own_nodes(gate, call, ctx.root, rootdir, ran)
        if not problem and isinstance(measured, Measured):
            problem = _measure_problem(measured)
        if problem:
            verdicts[gate.id], why[gate.id] = None, problem
            continue
        verdicts[gate.id] = _gate_verdict(gate, ctx, verdict, mine, ran, measured)
    return BatchRun(verdicts, why, verdict.duration)


def _whole_batch_problem(verdict: Verdict, records: Sequence[dict[str, Any]]) -> str:
    """Why no gate of the batch can be attributed, or "" (a timeout keeps what finished)."""
    if verdict.mode is Mode.TIMEOUT:
        return ""
    if verdict.exit_code is None or verdict.mode not in (Mode.PASS, Mode.FAIL):
        return f"the batch did not answer ({verdict.mode.value}: {verdict.detail})"
    if verdict.exit_code not in (0, 1):
        return f"the batch's pytest exited {verdict.exit_code}"
    errors = [str(r["collect_error"]) for r in records if "collect_error" in r]
    if errors:
        return f"the batch could not collect {errors[0] or 'a file'}"
    if not any("exit" in r for r in records):
        return "the batch's pytest never reported its end"
    return ""


def _own_nodes(
    gate: Gate, call: PytestCall, root: Path, rootdir: str, ran: Mapping[str, _Node]
) -> tuple[list[str], str]:
    """The batch's node ids a gate's arguments select, or why they cannot be told."""
    cwd = os.path.realpath(root / gate.cwd)
    mine: list[str] = []
    for arg in call.nodes:
        path, sep, rest = arg.partition("::")
        rel = os.path.relpath(os.path.realpath(os.path.join(cwd, path)), os.path.realpath(rootdir))
        if rel.startswith(".."):
            return [], f"its node {arg} lies outside the batch's rootdir"
        rel = rel.replace(os.sep, "/")
        norm = f"{rel}{sep}{rest}"
        found = [
            n
            for n in ran
            if n == norm
            or n.startswith(norm + ("[" if sep else "::"))
            or (sep and n.startswith(norm + "::"))
            or (not sep and n.startswith(rel + "/"))
        ]
        if not found:
            return [], f"its node {arg} did not run in the batch"
        mine.extend(n for n in found if n not in mine)
    unfinished = [n for n in mine if not ran[n].finished]
    if unfinished:
        return [], f"its node {unfinished[0]} did not finish in the batch"
    return mine, ""


def _measure_problem(measured: Measured) -> str:
    if not measured.measured:
        return f"the batch's measurement is incomplete ({measured.reason})"
    if measured.processes != 1 or not measured.nodes:
        return "the batch's measurement cannot be told apart by node"
    return ""


def _gate_verdict(
    gate: Gate,
    ctx: RunContext,
    batch: Verdict,
    mine: Sequence[str],
    ran: Mapping[str, _Node],
    measured: object,
) -> Verdict:
    """The verdict a solo pytest on these nodes gives: exit 1 when one failed, else 0."""
    counts: dict[str, int] = {}
    failures: list[str] = []
    for node in mine:
        outcome = "passed"
        for report in ran[node].reports:
            if report.get("outcome") == "failed":
                outcome = "error" if report.get("when") != "call" else "failed"
                failures.append(f"{'_' * 20} {node} ({report.get('when')}) {'_' * 20}")
                failures.append(str(report.get("longrepr", "")))
                break
            if report.get("outcome") == "skipped":
                outcome = "xfailed" if report.get("xfail") else "skipped"
        counts[outcome] = counts.get(outcome, 0) + 1
    failed = bool(counts.get("failed") or counts.get("error"))
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    # pytest's own tally line ("1 skipped in 0.52s"), which the red rules read as they
    # read a solo run's (a run that only skipped is no answer).
    tally = f"{summary} in {batch.duration:.2f}s (in a batch of {len(ran)} nodes)"
    stdout = "\n".join([*failures, tally, ""])
    result = ProcessResult(
        argv=gate.argv,
        exit_code=1 if failed else 0,
        stdout=stdout,
        stderr="",
        stdout_bytes=len(stdout.encode()),
        stderr_bytes=0,
        duration=batch.duration,
    )
    verdict = verdict_from_process(gate, result, timeout=gate_timeout(gate, ctx), tools=batch.tools)
    if isinstance(measured, Measured):
        files: dict[str, frozenset[int]] = {}
        for segment in ("", *mine):
            for path, lines in measured.nodes.get(segment, {}).items():
                files[path] = files.get(path, frozenset()) | lines
        own = Measured(True, files, 1, "", measured.engines)
        verdict = replace(verdict, extra={**verdict.extra, MEASURED_KEY: own})
    return verdict
