"""Batches: gates whose checks are pytest on node ids, run as one pytest per side.

Core, no pytest. ``group_key`` says which gates share a batch, ``run_batch`` runs a group's
nodes in one pytest process with our reporter (``batch_reporter.py``), and ``attribute``
gives each gate the verdict its solo run would give, or None with the reason, and the
caller runs that gate alone (docs/batch.md: what a gate gets, when it runs alone).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_vgate.context import RunContext, gate_timeout
from pytest_vgate.gate.runner import run_check, verdict_from_process
from pytest_vgate.gatesfile import Gate, GateType
from pytest_vgate.gatesfile.model import EnvSpec
from pytest_vgate.process import ProcessResult, batch_reporter
from pytest_vgate.process.measure import MEASURED_KEY, Measured, statements
from pytest_vgate.verdict import Mode, Verdict

# Options that change neither which nodes run nor how each answers (output, warnings,
# plugins): any other option keeps a gate out of batches (-x, -k, --lf, -n ...).
FLAGS = frozenset(
    {"-q", "-qq", "-v", "-vv", "-s", "-l", "--showlocals", "--no-header", "--strict-markers"}
)
JOINED = ("--tb=", "--capture=", "--import-mode=", "-r", "-W", "-p", "--color=")
SEPARATE = frozenset({"-p", "-W", "--tb", "-r"})
RESERVED_ENV = frozenset({"PYTHONPATH", "COVERAGE_CORE", batch_reporter.FOLDER_ENV})
READY_POLL = 0.1  # seconds between looks at a batch that may have died before its mutants
ENGINE = "coverage.py"

Record = dict[str, Any]  # a JSON line another process wrote: read, never trusted for types

# The head batch's records so far (its nodes all ran) -> the zygote's entries (fork.py).
Planner = Callable[[Sequence[Record]], list[Record]]


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
    """One side's batch as it ran: the process's verdict, its reporter's records and the
    mutants' plan (JSON-able: xdist workers share it through a file)."""

    verdict: Verdict
    records: tuple[Record, ...] = ()
    plan: tuple[Record, ...] = ()
    nodes_took: float = 0.0  # from its start to its nodes' end, when mutants followed

    def to_dict(self) -> Record:
        return {"verdict": self.verdict.to_dict(), "records": list(self.records),
                "plan": list(self.plan), "nodes_took": self.nodes_took}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchRun:
        verdict, records = Verdict.from_dict(data["verdict"]), tuple(data["records"])
        return cls(verdict, records, tuple(data["plan"]), float(data["nodes_took"]))

    @property
    def duration(self) -> float:
        """How long the process took to run its nodes (the mutants after them not counted)."""
        return self.nodes_took or self.verdict.duration


@dataclass(frozen=True)
class Attributed:
    """Each gate's verdict from a batch (None: run it alone, ``why`` says why)."""

    verdicts: Mapping[str, Verdict | None]
    why: Mapping[str, str] = field(default_factory=dict)

    def verdict(self, gate_id: str) -> Verdict | None:
        return self.verdicts.get(gate_id)


def run_batch(
    gates: Sequence[Gate],
    ctx: RunContext,
    timeout: float | None = None,
    planner: Planner | None = None,
) -> BatchRun:
    """Run ``gates`` (one group) as one pytest process on ``ctx.root``, measured on
    ``ctx.measure``'s files by the reporter; with ``planner``, the mutants it plans once
    the nodes ran are forked there too. On the base, where failing is the point:
    ``--tb=native`` unless the check sets ``--tb``, as pytest's styles parse each frame's
    whole file, most of a red run's time. Never raises for the check's sake."""
    calls = {g.id: pytest_call(g) for g in gates}
    nodes = list(dict.fromkeys(n for c in calls.values() if c is not None for n in c.nodes))
    first = gates[0]
    call = calls[first.id]
    if call is None:
        return BatchRun(Verdict.failed(Mode.ERROR, "not a batch"))
    folder = Path(tempfile.mkdtemp(prefix="vgate-batch-"))
    try:
        shutil.copyfile(batch_reporter.__file__, folder / f"{batch_reporter.MODULE}.py")
        include = list(ctx.measure.include) if ctx.measure is not None else None
        spec = {"include": include, "fork": planner is not None}
        (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        head = call.head
        at = 3 if head[1:3] == ("-m", "pytest") else 1
        native = ("--tb=native",) if ctx.root != first.root else ()  # the check's --tb after
        argv = (*head[:at], "-p", batch_reporter.MODULE, *native, *head[at:], *nodes)
        ours = (("PYTHONPATH", str(folder)), (batch_reporter.FOLDER_ENV, str(folder)))
        env = EnvSpec(first.env.pass_names, (*first.env.set_values, *ours))
        batch_gate = replace(
            first,
            id=f"batch of {len(gates)}",
            argv=argv,
            env=env,
            expect=(0, 1),
            timeout=timeout if timeout is not None else gate_timeout(first, ctx),
        )
        run = replace(ctx, measure=None)  # the reporter measures: no bootstrap in there
        plan: list[Record] = []
        took = 0.0
        if planner is None:
            verdict = run_check(batch_gate, run)
        else:
            verdict, plan, took = _with_mutants(batch_gate, run, folder, planner)
        records = _records(folder / "records")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return BatchRun(verdict, tuple(records), tuple(plan), took)


def _with_mutants(
    gate: Gate, ctx: RunContext, folder: Path, planner: Planner
) -> tuple[Verdict, list[Record], float]:
    """Run the batch on a thread; once its nodes ran (it writes ``ready``), hand the
    planner's entries to its zygotes through the ``plan`` (swaps) and ``plan0`` (imports)
    FIFOs."""
    for name in ("plan", "plan0", "ready"):
        os.mkfifo(folder / name, 0o600)
    ready = os.open(folder / "ready", os.O_RDWR | os.O_NONBLOCK)  # read, never EOF
    done: list[Verdict] = []
    runner = threading.Thread(target=lambda: done.append(run_check(gate, ctx)), daemon=True)
    started = time.monotonic()
    runner.start()
    plan: list[Record] = []
    took = 0.0
    try:
        while runner.is_alive():
            if select.select([ready], [], [], READY_POLL)[0]:
                took = time.monotonic() - started
                plan = planner(_records(folder / "records"))
                _send(folder / "plan", [*(e for e in plan if "text" not in e), {"end": True}])
                _send(folder / "plan0", [*(e for e in plan if "text" in e), {"end": True}])
                break
    finally:
        os.close(ready)
        runner.join()
    return done[0], plan, took


def _send(fifo: Path, entries: Sequence[Record]) -> None:
    """Write the plan to the zygote (gone: nothing to do, its batch says so)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.set_blocking(fd, True)
        os.write(fd, "".join(json.dumps(e) + "\n" for e in entries).encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _records(path: Path) -> list[Record]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[Record] = []
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
    reports: list[Record] = field(default_factory=list)
    finished: bool = False


@dataclass(frozen=True)
class Nodes:
    """A batch's records, read: its rootdir, every node, and what each segment executed
    (``""``: collection) or why it is unseen."""

    rootdir: str | None
    ran: Mapping[str, _Node]
    lines: Mapping[str, Mapping[str, frozenset[int]]]
    unseen: Mapping[str, str]
    unmeasured: str

    @classmethod
    def read(cls, records: Sequence[Record]) -> Nodes:
        rootdir = next((str(r["rootdir"]) for r in records if "rootdir" in r), None)
        ran: dict[str, _Node] = {}
        raw: dict[str, dict[str, set[int]]] = {}
        unseen: dict[str, str] = {}
        unmeasured = "the batch ended before its measurement was written"
        for record in records:
            if "start" in record:
                ran.setdefault(str(record["start"]), _Node())
            elif "report" in record:
                ran.setdefault(str(record["report"]), _Node()).reports.append(record)
            elif "finish" in record:
                ran.setdefault(str(record["finish"]), _Node()).finished = True
            elif "lines" in record:
                seg = raw.setdefault(str(record["seg"]), {})
                for path, lines in record["lines"].items():
                    seg.setdefault(path, set()).update(lines)
            elif "unseen" in record:
                unseen.setdefault(str(record["seg"]), str(record["unseen"]))
            elif "unmeasured" in record:
                unmeasured = str(record["unmeasured"])
            elif "measured" in record and unmeasured.startswith("the batch ended"):
                unmeasured = ""
        mapped = {
            seg: {path: statements(path, lines) for path, lines in files.items()}
            for seg, files in raw.items()
        }
        return cls(rootdir, ran, mapped, unseen, unmeasured)

    def own(self, gate: Gate, root: Path) -> tuple[list[str], str]:
        """The batch's node ids a gate's arguments select, or why they cannot be told."""
        call = pytest_call(gate)
        if call is None or self.rootdir is None:
            return [], "the batch did not report"
        return _own_nodes(gate, call, root, self.rootdir, self.ran)

    def measured(self, nodes: Sequence[str]) -> Measured | str:
        """What collection and ``nodes`` executed, or why it is not known."""
        files: dict[str, frozenset[int]] = {}
        for segment in ("", *nodes):
            why = self.unseen.get(segment) or self.unmeasured
            if why:
                return f"the batch's measurement is incomplete ({why})"
            for path, lines in self.lines.get(segment, {}).items():
                files[path] = files.get(path, frozenset()) | lines
        return Measured(True, files, 1, "", (ENGINE,))

    def failed(self, nodes: Sequence[str]) -> bool:
        return any(r.get("outcome") == "failed" for n in nodes for r in self.ran[n].reports)


def attribute(gates: Sequence[Gate], ctx: RunContext, run: BatchRun) -> Attributed:
    """Each gate's solo verdict from the batch's verdict and its reporter's records;
    measured when ``ctx.measure`` asked for it."""
    whole = _whole_batch_problem(run.verdict, run.records)
    if whole:
        return Attributed({g.id: None for g in gates}, {g.id: whole for g in gates})
    read = Nodes.read(run.records)
    verdicts: dict[str, Verdict | None] = {}
    why: dict[str, str] = {}
    for gate in gates:
        mine, problem = read.own(gate, ctx.root)
        measured = read.measured(mine) if ctx.measure is not None and not problem else None
        if isinstance(measured, str):
            problem = measured
        if problem:
            verdicts[gate.id], why[gate.id] = None, problem
            continue
        verdict = _gate_verdict(gate, ctx, run, mine, read.ran)
        if measured is not None:
            verdict = replace(verdict, extra={**verdict.extra, MEASURED_KEY: measured})
        verdicts[gate.id] = verdict
    return Attributed(verdicts, why)


def _whole_batch_problem(verdict: Verdict, records: Sequence[Record]) -> str:
    """Why no gate of the batch can be attributed, or "" (a timeout keeps what finished;
    a batch lost after its nodes ran, among its mutants, keeps its own exit status)."""
    ended = next((r["exit"] for r in records if "exit" in r), None)
    if verdict.mode is Mode.TIMEOUT and ended is None:
        return ""
    code = verdict.exit_code
    if ended is not None and verdict.mode in (Mode.TIMEOUT, Mode.CRASH):
        code = ended
    elif code is None or verdict.mode not in (Mode.PASS, Mode.FAIL):
        return f"the batch did not answer ({verdict.mode.value}: {verdict.detail})"
    if code not in (0, 1):
        return f"the batch's pytest exited {code}"
    errors = [str(r["collect_error"]) for r in records if "collect_error" in r]
    if errors:
        return f"the batch could not collect {errors[0] or 'a file'}"
    if ended is None:
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


def solo_output(reports: Sequence[Record], nodes: int, duration: float) -> tuple[int, str]:
    """The exit code and output a solo pytest on these nodes' reports gives: 1 when one
    failed in a phase, else 0; the failures' text and pytest's tally line ("1 skipped in
    0.52s"), which the red rules read as they read a solo run's."""
    counts: dict[str, int] = {}
    failures: list[str] = []
    outcomes: dict[str, str] = {}
    skips: list[str] = []  # pytest's -rs lines
    for report in reports:
        node = str(report.get("report", ""))
        if outcomes.get(node) in ("failed", "error"):
            continue
        if report.get("outcome") == "failed":
            outcomes[node] = "error" if report.get("when") != "call" else "failed"
            failures.append(f"{'_' * 20} {node} ({report.get('when')}) {'_' * 20}")
            failures.append(str(report.get("longrepr", "")))
        elif report.get("outcome") == "skipped":
            outcomes[node] = "xfailed" if report.get("xfail") else "skipped"
            skips += [str(report["skip"])] if report.get("skip") else []
        else:
            outcomes.setdefault(node, "passed")
    for outcome in outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    failed = bool(counts.get("failed") or counts.get("error"))
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    tally = f"{summary} in {duration:.2f}s (in a batch of {nodes} nodes)"
    return (1 if failed else 0), "\n".join([*failures, *skips, tally, ""])


def _gate_verdict(
    gate: Gate, ctx: RunContext, batch: BatchRun, mine: Sequence[str], ran: Mapping[str, _Node]
) -> Verdict:
    """The verdict a solo pytest on these nodes gives: exit 1 when one failed, else 0."""
    reports = [r for node in mine for r in ran[node].reports]
    code, stdout = solo_output(reports, len(ran), batch.duration)
    result = ProcessResult(
        argv=gate.argv,
        exit_code=code,
        stdout=stdout,
        stderr="",
        stdout_bytes=len(stdout.encode()),
        stderr_bytes=0,
        duration=batch.duration,
    )
    return verdict_from_process(
        gate, result, timeout=gate_timeout(gate, ctx), tools=batch.verdict.tools
    )
