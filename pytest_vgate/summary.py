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
CITATION_KINDS = ("citation", "citation-document")


def write_summary(
    tr: pytest.TerminalReporter, payloads: Mapping[str, Mapping[str, Any]], res: Resources
) -> None:
    gates = {n: p for n, p in payloads.items() if p.get("kind") not in CITATION_KINDS}
    citations = [p for p in payloads.values() if p.get("kind") in CITATION_KINDS]
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
            detail = _shorten(" ".join(str(p.get("detail") or p.get("rbg_reason") or "").split()))
            tr.write_line(f"  {nodeid}: {p.get('mode')}{cause} - {detail}", red=True)


def _shorten(text: str, width: int = 200) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def _write_rbg(
    tr: pytest.TerminalReporter, gates: Mapping[str, Mapping[str, Any]], *, verbose: bool
) -> None:
    """One row per gate: its red evidence, its green run, status and cause.

    With ``-v`` each row is followed by the reason its status was given.
    """
    rows = [(n, p) for n, p in gates.items() if p.get("rbg")]
    if not rows:
        return
    counts = Counter(str(p["rbg"]) for _, p in rows)
    tr.write_line(
        "red-before-green: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    )
    header = ("gate", "red evidence", "green", "coverage", "status", "cause")
    table = [header]
    reasons = [""]
    for nodeid, p in rows:
        table.append(
            (
                str(p.get("id", nodeid)),
                _red_text(p),
                _green_text(p),
                _coverage_text(p),
                str(p["rbg"]),
                str(p.get("cause") or "-"),
            )
        )
        reasons.append(" ".join(str(p.get("rbg_reason") or "").split()))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row, reason in zip(table, reasons, strict=True):
        tr.write_line(
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        )
        if verbose and reason:
            tr.write_line(f"      {reason}")


def _run_text(record: Mapping[str, Any]) -> str:
    """Where a recorded run ran (tree, or ``base <ref>``), its exit code and when."""
    tree_info = record.get("tree")
    tree = tree_info.get("label", "?") if isinstance(tree_info, Mapping) else "?"
    label = f"base {record.get('base_ref')}" if record.get("where") == "base" else str(tree)
    code = record.get("exit_code")
    outcome = f"exit {code}" if code is not None else str(record.get("mode"))
    when = str(record.get("time") or "")[:19]
    return f"{label} {outcome}" + (f" at {when}" if when else "")


def _red_text(p: Mapping[str, Any]) -> str:
    """The red evidence; without one, what the base run did instead (never/weak red)."""
    red = p.get("red")
    if isinstance(red, Mapping):
        return _run_text(red)
    for record in p.get("records") or ():
        if isinstance(record, Mapping) and record.get("where") == "base":
            not_red = "passed" if record.get("mode") == "pass" else "not a genuine red"
            return f"{_run_text(record)} ({not_red})"
    return "-"


def _coverage_text(p: Mapping[str, Any]) -> str:
    """covers / partial / misses / no-change / unmeasured, or - when not measured."""
    coverage = p.get("coverage")
    return str(coverage.get("status") or "-") if isinstance(coverage, Mapping) else "-"


def _green_text(p: Mapping[str, Any]) -> str:
    tree = p.get("tree_label") or "this tree"
    code = p.get("exit_code")
    return f"{tree} " + (f"exit {code}" if code is not None else str(p.get("mode")))


def _write_citations(
    tr: pytest.TerminalReporter, payloads: list[Mapping[str, Any]], res: Resources
) -> None:
    """The audited documents, the fixes, then the VERIFICATION GATE RESULT block, in
    document order: reports arrive in any order under xdist, and the block must not
    depend on it. A citation rewritten by --vgate-fix counts as what was found."""
    from pytest_vgate.citations import CitationResult, summary_block

    citations = sorted((p for p in payloads if p.get("kind") == "citation"), key=_document_order)
    documents: dict[str, int] = {}
    for c in citations:
        documents[c["source"].rsplit(":", 1)[0]] = (
            documents.get(c["source"].rsplit(":", 1)[0], 0) + 1
        )
    unread: list[str] = []
    for p in payloads:
        if p.get("kind") == "citation-document":
            documents.setdefault(str(p["document"]), 0)
            if not p.get("ok"):
                unread.append(f"  {p['document']}: not audited: {p.get('detail')}")
    results = [
        CitationResult.from_dict(
            c["original"] if c.get("original") and c.get("ok") else c["result"]
        )
        for c in citations
    ]
    listed = ", ".join(f"{doc} ({n})" for doc, n in sorted(documents.items()))
    tr.write_line(f"citation documents: {len(documents)}: {listed}")
    for line in unread:
        tr.write_line(line, red=True)
    fixed = [c for c in citations if c.get("fixed_from")]
    if fixed:
        tr.write_line(f"citations rewritten by --vgate-fix: {len(fixed)}")
        for c in fixed:
            tr.write_line(f"  {c['source']}: {c['fixed_from']} -> {c['location']}")
    block = summary_block(results, tr.config.rootpath)
    for line in block.splitlines():
        tr.write_line(line)


def _document_order(payload: Mapping[str, Any]) -> tuple[str, int]:
    cited = payload["result"]["citation"]
    return str(cited["document"]), int(cited["offset"])
