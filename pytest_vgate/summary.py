"""The terminal summary: gates by mode, failures, red-before-green, citations.

Written on the controller only, from the payloads the reports carried, so it is
the same plain and under xdist.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_vgate.session import Resources
from pytest_vgate.verdict import Mode

MODE_ORDER = [m.value for m in Mode]


def write_summary(
    tr: pytest.TerminalReporter, payloads: Mapping[str, Mapping[str, Any]], res: Resources
) -> None:
    gates = {n: p for n, p in payloads.items() if p.get("kind") != "citation"}
    citations = [p for p in payloads.values() if p.get("kind") == "citation"]
    if not gates and not citations and not res.warnings:
        return
    tr.write_sep("=", "vgate")
    if gates:
        _write_gates(tr, gates)
        _write_rbg(tr, gates, verbose=tr.config.option.verbose > 0)
    for warning in res.warnings:
        tr.write_line(f"vgate warning: {warning}", yellow=True)
    if citations:
        _write_citations(tr, citations, res)


def _write_gates(tr: pytest.TerminalReporter, gates: Mapping[str, Mapping[str, Any]]) -> None:
    counts = Counter(str(p.get("mode")) for p in gates.values())
    ordered = sorted(counts.items(), key=lambda kv: _mode_rank(kv[0]))
    tr.write_line(f"gates: {len(gates)} (" + ", ".join(f"{n} {mode}" for mode, n in ordered) + ")")
    failed = [
        (n, p)
        for n, p in gates.items()
        if (not p.get("ok") and p.get("mode") != "judgment") or p.get("strict_failure")
    ]
    if failed:
        tr.write_line("failed gates:")
        for nodeid, p in failed:
            cause = f" ({p['cause']})" if p.get("cause") else ""
            detail = " ".join(str(p.get("detail") or "").split())[:200]
            tr.write_line(f"  {nodeid}: {p.get('mode')}{cause} - {detail}", red=True)


def _mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def _write_rbg(
    tr: pytest.TerminalReporter, gates: Mapping[str, Mapping[str, Any]], *, verbose: bool
) -> None:
    rows = [(n, p) for n, p in gates.items() if p.get("rbg")]
    if not rows:
        return
    counts = Counter(str(p["rbg"]) for _, p in rows)
    tr.write_line(
        "red-before-green: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    )
    header = ("gate", "red evidence", "green", "status", "cause")
    table = [header]
    for nodeid, p in rows:
        if not verbose and p["rbg"] in ("proven", "regression") and p.get("ok"):
            continue
        table.append(
            (
                str(p.get("id", nodeid)),
                _red_text(p.get("red")),
                _green_text(p),
                str(p["rbg"]),
                str(p.get("cause") or "-"),
            )
        )
    if len(table) == 1:
        return
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        tr.write_line(
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        )


def _red_text(red: Any) -> str:
    if not isinstance(red, Mapping):
        return "-"
    where = red.get("where")
    tree_info = red.get("tree")
    tree = tree_info.get("label", "?") if isinstance(tree_info, Mapping) else "?"
    label = f"base {red.get('base_ref')}" if where == "base" else str(tree)
    when = str(red.get("time") or "")[:19]
    return f"{label} exit {red.get('exit_code')}" + (f" at {when}" if when else "")


def _green_text(p: Mapping[str, Any]) -> str:
    tree = p.get("tree_label") or "this tree"
    code = p.get("exit_code")
    return f"{tree} " + (f"exit {code}" if code is not None else str(p.get("mode")))


def _write_citations(
    tr: pytest.TerminalReporter, citations: list[Mapping[str, Any]], res: Resources
) -> None:
    from pytest_vgate.citations import CitationResult, summary_block

    fixed = [c for c in citations if c.get("fixed_from")]
    if fixed:
        tr.write_line(f"citations rewritten by --vgate-fix: {len(fixed)}")
        for c in fixed:
            tr.write_line(f"  {c['source']}: {c['fixed_from']} -> {c['location']}")
    results = [CitationResult.from_dict(c["result"]) for c in citations]
    block = summary_block(results, tr.config.rootpath)
    for line in block.splitlines():
        tr.write_line(line)
