"""Mutants forked from a batch's head session: the plan, and what came of it.

Core, no pytest. ``plan`` turns the head batch's records, once its nodes ran, into the
zygotes' entries (``batch_reporter.py``): for each gate green there that may be proven,
the very mutants ``evidence/discriminate.py`` would plant (the same ``executed_files`` and
``plant`` on the same lines). A mutant of a function executed by the gate's nodes swaps
that function's code object (the outermost one its module or class holds) and runs those
nodes, under a deadline derived from their green time as a base run's is. Any other (code
outside functions, run when its module is imported) is imported from its mutated text
before collection, once per text, and each gate that planted it runs all its nodes there.
Each gate's control entries (the unmutated code, swapped or imported the same way) come
first. ``forked`` reads the runs back as a ``Forked`` per mutant: the verdict each attempt
gives under a solo run's rules, or why it is left to a solo run.
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
from pytest_vgate.gate.result import BASE_FACTOR, BASE_MARGIN
from pytest_vgate.gate.runner import verdict_from_process
from pytest_vgate.gatesfile import Gate
from pytest_vgate.gatesfile.model import RedPolicy
from pytest_vgate.process import ProcessResult
from pytest_vgate.verdict import Verdict


def planner(gates: Sequence[Gate], ctx: RunContext, change: Change, limit: int) -> Planner:
    """The head batch's planner for ``gates`` on ``change``, ``limit`` mutants a gate."""
    return lambda records: _Plan(ctx, change, Nodes.read(records)).make(gates, limit)


class _Plan:
    def __init__(self, ctx: RunContext, change: Change, read: Nodes) -> None:
        self.ctx, self.change, self.read = ctx, change, read
        self.ids = count()
        self.texts: dict[str, tuple[str, dict[str, Any]]] = {}  # path -> text, functions
        self.imports: dict[str, Record] = {}  # by mutant key, and by path: their controls

    def make(self, gates: Sequence[Gate], limit: int) -> list[Record]:
        """Every gate whose nodes passed and executed changed code may be proven: its
        mutants are planned before its base verdict is known, and dropped if it is not."""
        swaps: list[Record] = []
        for gate in gates:
            mine, problem = self.read.own(gate, self.ctx.root)
            if gate.red is RedPolicy.NOT_REQUIRED or problem or self.read.failed(mine):
                continue
            measured = self.read.measured(mine)
            if isinstance(measured, str):
                continue
            executed = green_reach(self.change, measured).executed
            files = executed_files(self.change, executed, check_modules(gate))
            swaps += self.gate(gate, mine, plant(files, seed=seed_of(gate.id), limit=limit))
        controls = [e for key, e in self.imports.items() if key.startswith(os.sep)]
        imports = [e for key, e in self.imports.items() if not key.startswith(os.sep)]
        return swaps + controls + imports

    def gate(self, gate: Gate, mine: list[str], mutants: Sequence[Mutant]) -> list[Record]:
        """A gate's swapping entries (its control first); its other mutants join imports."""
        out: list[Record] = []
        control: dict[str, Record] = {}
        for mutant in mutants:
            path = os.path.join(self.change.head_top, mutant.path)
            swap = self.function(mutant, path)
            ran = [n for n in mine if swap and swap["body"] & self.lines(n, path)]
            if swap is None or not ran:
                self.imported(gate, mine, mutant, path)
                continue
            control.setdefault(swap["path"] + str(swap["first"]), swap)
            out.append(self.entry(gate, ran, [{**swap, "source": _lines(mutant.text, swap)}]))
            out[-1]["key"] = mutant_key(mutant)
        if not out:
            return []
        ran = [n for n in mine if any(n in e["nodes"] for e in out)]
        first = {**self.entry(gate, ran, list(control.values())), "control": True, "attempts": 1}
        return [first, *out]

    def entry(self, gate: Gate, nodes: list[str], swaps: list[Record]) -> Record:
        swaps = [{k: v for k, v in s.items() if k != "body"} for s in swaps]
        deadline = self.deadline(gate, nodes)
        return {"m": next(self.ids), "gate": gate.id, "swaps": swaps, "nodes": nodes,
                "deadline": deadline, "attempts": 2}  # fmt: skip

    def imported(self, gate: Gate, mine: list[str], mutant: Mutant, path: str) -> None:
        """The mutant's import entry (one per text), and its file's control, gain ``gate``."""
        text = self.texts[path][0]
        for name, source, extra in (
            (path, text, {"control": True, "attempts": 1}),
            (mutant_key(mutant), mutant.text, {"key": mutant_key(mutant), "attempts": 2}),
        ):
            found = self.imports.setdefault(
                name,
                {"m": next(self.ids), "path": path, "text": source,
                 "deadline": gate_timeout(gate, self.ctx), "subs": []},
            )  # fmt: skip
            if all(sub["gate"] != gate.id for sub in found["subs"]):
                sub = {"m": next(self.ids), "gate": gate.id, "nodes": mine}
                found["subs"].append({**sub, "deadline": self.deadline(gate, mine), **extra})

    def function(self, mutant: Mutant, path: str) -> Record | None:
        """Where the mutant's function is (qualified name, first and last line, the
        lines of its body) and its unmutated source; None outside functions."""
        if path not in self.texts:
            try:
                text = Path(path).read_text(encoding="utf-8")
                self.texts[path] = (text, dict(functions(ast.parse(text))))
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                self.texts[path] = ("", {})
        text, defs = self.texts[path]
        qualname = mutant.function.split(".<locals>.")[0]
        node = defs.get(qualname) if mutant.function else None
        if node is None:
            return None
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        swap = {"path": path, "qualname": qualname, "first": first, "last": node.end_lineno}
        body = frozenset(range(node.body[0].lineno, swap["last"] + 1))
        return {**swap, "source": _lines(text, swap), "body": body}

    def lines(self, node: str, path: str) -> frozenset[int]:
        return self.read.lines.get(node, {}).get(path, frozenset())

    def deadline(self, gate: Gate, nodes: Sequence[str]) -> float:
        ran = self.read.ran
        green = sum(float(r.get("duration", 0.0)) for n in nodes for r in ran[n].reports)
        return round(
            min(max(BASE_FACTOR * green, green + BASE_MARGIN), gate_timeout(gate, self.ctx)), 3
        )


def _lines(text: str, swap: Mapping[str, Any]) -> str:
    return "\n".join(text.split("\n")[swap["first"] - 1 : swap["last"]]) + "\n"


def forked(gates: Sequence[Gate], run: BatchRun) -> dict[str, dict[str, Forked]]:
    """Each planned mutant of each gate as it ran in forks (by ``mutant_key``)."""
    by_id = {g.id: g for g in gates}
    runs: dict[int, list[Record]] = {}
    for record in run.records:
        if "m" in record:
            runs.setdefault(int(record["m"]), []).append(record)
    out: dict[str, dict[str, Forked]] = {}
    for entry in (sub for e in run.plan for sub in e.get("subs", [e])):
        gate = by_id.get(str(entry["gate"]))
        if gate is None or entry.get("control"):
            continue
        found = runs.get(int(entry["m"]), [])
        why = next((str(r["solo"]) for r in found if "solo" in r), "")
        attempts = sorted((r for r in found if "a" in r), key=lambda r: int(r["a"]))
        if why or not attempts:
            result = Forked(why_solo=why or "the batch ended before this mutant ran")
        else:
            verdicts = tuple(_verdict(gate, entry, r, run.verdict) for r in attempts)
            reports = (attempts[0].get("result") or {}).get("reports", [])
            tests = sum(float(r.get("duration", 0.0)) for r in reports)
            result = Forked(verdicts, seconds=float(attempts[0]["elapsed"]), tests=tests)
        out.setdefault(gate.id, {})[str(entry["key"])] = result
    return out


def _verdict(gate: Gate, entry: Record, record: Record, batch: Verdict) -> Verdict:
    """One attempt as the verdict of a solo run: its nodes' reports, or how it ended."""
    found = record.get("result")
    elapsed = float(record["elapsed"])
    code: int | None = -int(record["signal"]) if "signal" in record else record.get("exit")
    stdout = ""
    if found is not None:
        code, stdout = solo_output(found.get("reports", []), len(entry["nodes"]), elapsed)
        code = int(found.get("exit", code))
        stdout += str(found.get("raised", ""))
    result = ProcessResult(
        argv=gate.argv,
        exit_code=None if record.get("timeout") else code,
        stdout=stdout,
        stderr="",
        stdout_bytes=len(stdout.encode()),
        stderr_bytes=0,
        duration=elapsed,
        timed_out=bool(record.get("timeout")),
    )
    return verdict_from_process(gate, result, timeout=float(entry["deadline"]), tools=batch.tools)
