"""Mutants forked from a batch's collected head session: the plan, and what came of it.

Core, no pytest. ``plan`` turns the head batch's records, once its nodes ran, into the
zygote's entries (``batch_reporter.py``): for each gate green there that may be proven,
the very mutants ``evidence/discriminate.py`` would plant (the same ``executed_files`` and
``plant`` on the same lines), each with the function whose code object is swapped (the
outermost one a module or class holds), the gate's nodes that executed it and a deadline
derived from their green durations as a base run's is; a control entry per gate first,
with the unmutated functions recompiled. A mutant outside any function, or whose function
only collection executed, is planned solo. ``forked`` reads the runs back as a ``Forked``
per mutant: the verdict each attempt gives under a solo run's rules.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping, Sequence
from itertools import count
from pathlib import Path
from typing import Any

from pytest_vgate.context import RunContext, gate_timeout
from pytest_vgate.evidence.change import Change
from pytest_vgate.evidence.defined import check_modules
from pytest_vgate.evidence.discriminate import Forked, executed_files, mutant_key
from pytest_vgate.evidence.mutate import Mutant, functions, plant, seed_of
from pytest_vgate.evidence.reach import green_reach
from pytest_vgate.gate.batch import BatchRun, Nodes, Planner, Record, solo_output
from pytest_vgate.gate.runner import verdict_from_process
from pytest_vgate.gatesfile import Gate
from pytest_vgate.gatesfile.model import RedPolicy
from pytest_vgate.process import ProcessResult
from pytest_vgate.verdict import Verdict

FACTOR, MARGIN = 3.0, 2.0  # a mutant's deadline, from its nodes' green time (base_deadline's)
OUTSIDE = "code outside any function (a module or class body) runs when it is imported"


def planner(gates: Sequence[Gate], ctx: RunContext, change: Change, limit: int) -> Planner:
    """The head batch's planner for ``gates`` on ``change``, ``limit`` mutants a gate."""
    return lambda records: plan(gates, ctx, change, limit, records)


def plan(
    gates: Sequence[Gate], ctx: RunContext, change: Change, limit: int, records: Sequence[Record]
) -> list[Record]:
    """The entries for every gate whose nodes passed and executed changed code (before
    its base verdict: a gate that turns out not proven has its mutants dropped)."""
    read = Nodes.read(records)
    trees: dict[str, dict[str, Any]] = {}
    entries: list[Record] = []
    ids = count()
    for gate in gates:
        mine, problem = read.own(gate, ctx.root)
        if gate.red is RedPolicy.NOT_REQUIRED or problem or read.failed(mine):
            continue
        measured = read.measured(mine)
        if isinstance(measured, str):
            continue
        executed = green_reach(change, measured).executed
        files = executed_files(change, executed, check_modules(gate))
        mutants = plant(files, seed=seed_of(gate.id), limit=limit)
        entries += _entries(gate, ctx, change, read, mine, mutants, trees, ids)
    return entries


def _entries(
    gate: Gate,
    ctx: RunContext,
    change: Change,
    read: Nodes,
    mine: Sequence[str],
    mutants: Sequence[Mutant],
    trees: dict[str, dict[str, Any]],
    ids: count[int],
) -> list[Record]:
    control: dict[str, Record] = {}
    nodes: list[str] = []
    out: list[Record] = []
    for mutant in mutants:
        entry: Record = {"m": next(ids), "gate": gate.id, "key": mutant_key(mutant)}
        target = _target(change, mutant, trees)
        if isinstance(target, str):
            out.append({**entry, "solo": target})
            continue
        swap, body, text = target
        path = os.path.join(change.head_top, mutant.path)
        ran = [n for n in mine if body & read.lines.get(n, {}).get(path, frozenset())]
        if not ran:
            out.append({**entry, "solo": "only collection executed its function"})
            continue
        first, last = swap["first"], swap["last"]
        lines = mutant.text.split("\n")[first - 1 : last]
        control.setdefault(f"{path}:{first}", {**swap, "source": text})
        nodes += [n for n in ran if n not in nodes]
        out.append(
            {
                **entry,
                "swaps": [{**swap, "source": "\n".join(lines) + "\n"}],
                "nodes": ran,
                "deadline": _deadline(gate, ctx, read, ran),
                "attempts": 2,  # a non-result (a crash) is tried again, as a solo run is
            }
        )
    if not control:
        return out
    first_entry: Record = {
        "m": next(ids),
        "gate": gate.id,
        "control": True,
        "swaps": list(control.values()),
        "nodes": [n for n in mine if n in nodes],
        "deadline": _deadline(gate, ctx, read, nodes),
        "attempts": 1,
    }
    return [first_entry, *out]


def _target(
    change: Change, mutant: Mutant, trees: dict[str, dict[str, Any]]
) -> tuple[Record, frozenset[int], str] | str:
    """The function a mutant's swap replaces (its qualified name, first and last line),
    its body's lines and its unmutated source; or why the mutant runs solo."""
    if not mutant.function:
        return OUTSIDE
    if mutant.path not in trees:
        try:
            text = (Path(change.head_top) / mutant.path).read_text(encoding="utf-8")
            trees[mutant.path] = {"text": text, "defs": dict(functions(ast.parse(text)))}
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            trees[mutant.path] = {"text": "", "defs": {}}
    found = trees[mutant.path]
    qualname = mutant.function.split(".<locals>.")[0]
    node = found["defs"].get(qualname)
    if node is None:
        return f"{qualname} is not a function its module or class holds"
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    last = node.end_lineno or node.lineno
    source = "\n".join(found["text"].split("\n")[first - 1 : last]) + "\n"
    body = frozenset(range(node.body[0].lineno, last + 1))
    swap = {"path": os.path.join(change.head_top, mutant.path), "qualname": qualname}
    return {**swap, "first": first, "last": last}, body, source


def _deadline(gate: Gate, ctx: RunContext, read: Nodes, nodes: Sequence[str]) -> float:
    green = sum(float(r.get("duration", 0.0)) for n in nodes for r in read.ran[n].reports)
    return round(min(max(FACTOR * green, green + MARGIN), gate_timeout(gate, ctx)), 3)


def forked(gates: Sequence[Gate], run: BatchRun) -> dict[str, dict[str, Forked]]:
    """Each planned mutant of each gate as it ran in forks (by ``mutant_key``)."""
    by_id = {g.id: g for g in gates}
    runs: dict[int, list[Record]] = {}
    for record in run.records:
        if "m" in record:
            runs.setdefault(int(record["m"]), []).append(record)
    out: dict[str, dict[str, Forked]] = {}
    for entry in run.plan:
        gate = by_id.get(str(entry["gate"]))
        if gate is None or entry.get("control"):
            continue
        found = runs.get(int(entry["m"]), [])
        why = entry.get("solo") or next((str(r["solo"]) for r in found if "solo" in r), "")
        attempts = sorted((r for r in found if "a" in r), key=lambda r: int(r["a"]))
        if why or not attempts:
            result = Forked(why_solo=why or "the batch ended before this mutant ran")
        else:
            verdicts = tuple(_verdict(gate, entry, r, run.verdict) for r in attempts)
            tests = sum(
                float(r.get("duration", 0.0))
                for r in (attempts[0]["result"] or {}).get("reports", [])
            )
            result = Forked(verdicts, seconds=float(attempts[0]["elapsed"]), tests=tests)
        out.setdefault(gate.id, {})[str(entry["key"])] = result
    return out


def _verdict(
    gate: Gate, entry: Mapping[str, Any], record: Mapping[str, Any], batch: Verdict
) -> Verdict:
    """One attempt as the verdict of a solo run: its nodes' reports, or how it ended."""
    found = record.get("result")
    code: int | None
    if found is not None:
        code, stdout = solo_output(
            found.get("reports", []), len(entry["nodes"]), float(record["elapsed"])
        )
        code = int(found.get("exit", code))
        stdout += str(found.get("raised", ""))
    else:
        stdout = ""
        code = -int(record["signal"]) if "signal" in record else record.get("exit")
    result = ProcessResult(
        argv=gate.argv,
        exit_code=None if record.get("timeout") else code,
        stdout=stdout,
        stderr="",
        stdout_bytes=len(stdout.encode()),
        stderr_bytes=0,
        duration=float(record["elapsed"]),
        timed_out=bool(record.get("timeout")),
    )
    return verdict_from_process(gate, result, timeout=float(entry["deadline"]), tools=batch.tools)
