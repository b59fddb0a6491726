"""The terminal summary: gates by mode, failures, red-before-green, citations.

Written on the controller from the payloads the reports carried, so it is the same plain
and under xdist: ``SECTIONS`` of pure functions from a ``SummaryInput`` to the ``Line``s
they add, printed in order under one ``vgate`` separator.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pytest_vgate.payload import (
    CheckPayload,
    CitationDocumentPayload,
    CitationLike,
    CitationPayload,
    GateLike,
    MissingPayload,
    Payload,
    VerifierPayload,
    document_order,
    verdict_ok,
)
from pytest_vgate.plugin.session import Resources
from pytest_vgate.plugin.table import leading_sentences, table_rows, wrap
from pytest_vgate.verdict import Mode

MODE_ORDER = [m.value for m in Mode]


class Line(NamedTuple):
    """One summary line and its colour (``red``, ``yellow`` or none)."""

    text: str
    color: str | None = None


@dataclass(frozen=True)
class SummaryInput:
    """What every section writer reads: the payloads split and ordered, and the terminal."""

    gates: Sequence[tuple[str, GateLike]]  # (nodeid, payload), gates-file order
    citations: Sequence[CitationLike]  # citation and citation-document payloads
    warnings: Sequence[str]
    width: int
    verbose: bool
    rootpath: Path


Section = Callable[[SummaryInput], list[Line]]


def write_summary(
    tr: pytest.TerminalReporter, payloads: Mapping[str, Payload], res: Resources
) -> None:
    gates: dict[str, GateLike] = {}
    citations: list[CitationLike] = []
    for nodeid, p in payloads.items():
        if isinstance(p, (CitationPayload, CitationDocumentPayload)):
            citations.append(p)
        else:
            gates[nodeid] = p
    if not gates and not citations and not res.warnings:
        return
    summary = SummaryInput(
        # Node ids as pytest shows them (relative to where it started): one name for a
        # gates file, in this summary, the progress lines and `FAILED ...` alike.
        gates=[
            (shown_nodeid(tr.config, n), p)
            for n, p in sorted(gates.items(), key=lambda kv: file_order(kv[1], res))
        ],
        citations=citations,
        warnings=list(res.warnings),
        width=terminal_width(tr),
        verbose=tr.config.option.verbose > 0,
        rootpath=tr.config.rootpath,
    )
    tr.write_sep("=", "vgate")
    for section in SECTIONS:
        for line in section(summary):
            tr.write_line(line.text, **({line.color: True} if line.color else {}))


def shown_nodeid(config: pytest.Config, nodeid: str) -> str:
    """A node id as pytest shows it, relative to where it started (its
    ``cwd_relative_nodeid``): one name for a gates file in every line that names it."""
    params = getattr(config, "invocation_params", None)  # vgate-merge's terminal has none
    here = getattr(params, "dir", None)
    if not isinstance(here, Path) or here == config.rootpath:
        return nodeid
    path, sep, rest = nodeid.partition("::")
    rel = Path(os.path.relpath(config.rootpath / path, here)).as_posix()
    return rel + sep + rest


def terminal_width(tr: pytest.TerminalReporter) -> int:
    """The width pytest draws its separators with (``COLUMNS`` when set), at least 40."""
    writer = getattr(tr, "_tw", None)
    width = getattr(writer, "fullwidth", None)
    if not isinstance(width, int) or width <= 0:
        width = shutil.get_terminal_size().columns
    return max(width, 40)


def file_order(payload: GateLike, res: Resources) -> tuple[int, str, int, str]:
    """Gates-file order (then test-module order for verifiers), the same plain and under
    xdist, where reports arrive in completion order."""
    source = payload.source if isinstance(payload, (CheckPayload, MissingPayload)) else None
    path, _, line = str(source or "").rpartition(":")
    files = [str(p) for p in res.settings.gates_files]
    rank = files.index(path) if path in files else len(files)
    number = int(line) if line.isdigit() else 0
    return rank, path, number, str(payload.nodeid or payload.id or "")


def gate_counts(summary: SummaryInput) -> list[Line]:
    """``gates: N (n1 pass, n2 fail, ...)`` in mode order."""
    if not summary.gates:
        return []
    counts = Counter(p.mode.value for _, p in summary.gates)
    ordered = sorted(counts.items(), key=lambda kv: _mode_rank(kv[0]))
    listed = ", ".join(f"{n} {mode}" for mode, n in ordered)
    return [Line(f"gates: {len(summary.gates)} ({listed})")]


def failed_gates(summary: SummaryInput) -> list[Line]:
    """Each failed gate (and each strict failure) with its mode, cause and a short hint."""
    failed = [(n, p) for n, p in summary.gates if not verdict_ok(p)]
    if not failed:
        return []
    lines = [Line("failed gates:")]
    for nodeid, p in failed:
        cause = f" ({p.cause.value})" if p.cause else ""
        reason = p.rbg_reason if isinstance(p, CheckPayload) else ""
        if isinstance(p, CheckPayload) and _discrimination(p).get("status") == UNDISCRIMINATING:
            disc = _discrimination(p)
            reason = f"{disc.get('reason', '')} ({_mutants_text(p)} mutants killed)"
        detail = " ".join((p.detail or reason).split())
        head = f"{nodeid}: {p.mode.value}{cause} - "
        lines += [Line(line, "red") for line in hint_lines(head, detail, summary.width)]
    return lines


HINT_LINES = 3  # lines a failed gate's hint may take in the summary (whole sentences)


def hint_lines(head: str, text: str, width: int, indent: str = "  ") -> list[str]:
    """``head`` and the leading whole sentences of ``text`` that fit in a few lines; when
    some are left out, a pointer to the gate's own failure report, which has them all."""
    budget = max(HINT_LINES * (width - len(indent) - 4) - len(head), 40)
    kept, cut = leading_sentences(text, budget)
    if cut and kept.endswith(";"):
        kept = kept[:-1] + "."
    more = " (more in its failure report above)" if cut else ""
    return wrap(head + kept + more, width, indent=indent, subsequent=indent + "    ")


def _mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def red_before_green(summary: SummaryInput) -> list[Line]:
    """One row per gate and verifier, in gates-file order: its red evidence, the run now,
    status and cause. With ``-v`` each row is followed by the reason for its status."""
    width = summary.width
    rows = [
        (n, p)
        for n, p in summary.gates
        if isinstance(p, CheckPayload) and (p.rbg or isinstance(p, VerifierPayload))
    ]
    if not rows:
        return []
    counts = Counter(p.rbg.value for _, p in rows if p.rbg)
    trees = sorted({p.tree_label for _, p in rows if p.tree_label})
    where = f" (now = {', '.join(trees)})" if trees else ""
    listed = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    title = f"red-before-green: {listed or 'no evidence'}{where}"
    lines = [Line(line) for line in wrap(title, width, subsequent="  ")]
    header = ("gate", "red evidence", "now", "coverage", "status", "cause")
    table = [
        (
            p.id,
            _red_text(p),
            _now_text(p),
            _coverage_text(p),
            p.rbg.value if p.rbg else "-",
            p.cause.value if p.cause else "-",
        )
        for _, p in rows
    ]
    # A gate id never breaks, nor does a status: the prose column gives way.
    groups = table_rows(header, table, width, whole=0, fixed=(2, 3, 4, 5))
    lines += [Line(line) for line in groups[0]]
    for (_, p), group in zip(rows, groups[1:], strict=True):
        lines += [Line(line) for line in group]
        reason = " ".join(p.rbg_reason.split())
        if summary.verbose and reason:
            lines += [Line(line) for line in wrap(reason, width, indent="      ")]
    return lines


def session_warnings(summary: SummaryInput) -> list[Line]:
    """The session's warnings, one line each: paths in them stay whole for copying."""
    return [Line(f"vgate warning: {warning}", "yellow") for warning in summary.warnings]


def _run_text(record: Mapping[str, Any], *, with_time: bool) -> str:
    """Where a recorded run ran (tree, or ``base <ref>``), its exit code, and (for a record
    of an earlier session) when."""
    tree_info = record.get("tree")
    tree = tree_info.get("label", "?") if isinstance(tree_info, Mapping) else "?"
    ref = str(record.get("base_ref"))
    ref = ref[:10] if re.fullmatch(r"[0-9a-f]{40}", ref) else ref
    label = f"base {ref}" if record.get("where") == "base" else str(tree)
    code = record.get("exit_code")
    outcome = f"exit {code}" if code is not None else str(record.get("mode"))
    outcome = "passed" if outcome == "pass" else outcome
    when = str(record.get("time") or "")[:16].replace("T", " ") if with_time else ""
    return f"{label} {outcome}" + (f" at {when}" if when else "")


def _red_text(p: CheckPayload) -> str:
    """The red evidence; without one, what the base run did instead (never/weak red)."""
    red = p.red
    this_session = {str(r.get("time")) for r in p.records if isinstance(r, Mapping)}
    if isinstance(red, Mapping):
        return _run_text(red, with_time=str(red.get("time")) not in this_session)
    for record in p.records:
        if isinstance(record, Mapping) and record.get("where") == "base":
            text = _run_text(record, with_time=False)
            if record.get("mode") == "pass":
                return text if text.endswith("passed") else f"{text} (passed)"
            return f"{text} (not a genuine red)"
    return "-"


UNDISCRIMINATING = "undiscriminating"
SHOWN_SURVIVORS = 3  # surviving mutants listed per gate in the summary


def _discrimination(p: CheckPayload) -> Mapping[str, Any]:
    return p.discrimination if p.discrimination is not None else {}


def _mutants_text(p: CheckPayload) -> str:
    """``k/m`` killed of planted, or the status when none gave an answer."""
    disc = _discrimination(p)
    if not disc:
        return "-"
    if disc.get("planted"):
        return f"{disc.get('killed', 0)}/{disc.get('planted')}"
    return str(disc.get("status") or "-")


def discrimination(summary: SummaryInput) -> list[Line]:
    """The mutants each gate's check let survive (``path:line  before → after``), and the
    gates whose change offered none, said once per reason."""
    lines: list[Line] = []
    quiet: dict[str, list[str]] = {}
    for _, p in summary.gates:
        if not isinstance(p, CheckPayload):
            continue
        disc = _discrimination(p)
        status = str(disc.get("status") or "")
        if status in ("none", "unmeasured"):
            quiet.setdefault(f"{status}: {disc.get('reason', '')}", []).append(p.id)
        mutants = disc.get("mutants")
        survived = [
            m
            for m in (mutants if isinstance(mutants, list) else [])
            if isinstance(m, Mapping) and m.get("mode") == "survived"
        ]
        if not disc.get("planted"):
            continue
        color = "red" if status == UNDISCRIMINATING else ("yellow" if survived else None)
        pseudo = disc.get("pseudo_tested") or []
        tail = f"; pseudo-tested: {', '.join(map(str, pseudo))}" if pseudo else ""
        head = f"mutants of {p.id}: {_mutants_text(p)} killed ({status}){tail}"
        lines += [Line(line, color) for line in wrap(head, summary.width, subsequent="    ")]
        for m in survived[:SHOWN_SURVIVORS]:
            where = f"{m.get('path')}:{m.get('line')}"
            lines.append(Line(f"  survived {where}  {m.get('before')} → {m.get('after')}", color))
        if len(survived) > SHOWN_SURVIVORS:
            lines.append(Line(f"  and {len(survived) - SHOWN_SURVIVORS} more", color))
    for reason, ids in quiet.items():
        head = f"discrimination {reason} ({len(ids)} gate{'s' if len(ids) != 1 else ''}: "
        lines += [Line(line) for line in wrap(head + ", ".join(ids) + ")", summary.width)]
    return lines


def _coverage_text(p: CheckPayload) -> str:
    """covers / partial / misses / no-change / unmeasured, or - when not measured."""
    coverage = p.coverage
    return str(coverage.get("status") or "-") if coverage is not None else "-"


def _now_text(p: CheckPayload) -> str:
    """The run on the current tree: what it did, not what the gate was judged."""
    if p.exit_code is not None:
        return f"exit {p.exit_code}"
    mode = p.green.get("mode") if p.green is not None else p.mode.value
    return str(mode or "-")


def _citations(summary: SummaryInput) -> list[CitationPayload]:
    """The citation payloads in document order: under xdist reports arrive in any order,
    and the summary must not depend on it."""
    found = (p for p in summary.citations if isinstance(p, CitationPayload))
    return sorted(found, key=lambda payload: document_order(payload.result))


def citation_documents(summary: SummaryInput) -> list[Line]:
    """The audited documents with their citation counts, then those that were not read."""
    if not summary.citations:
        return []
    documents: dict[str, int] = {}
    for c in _citations(summary):
        document = c.source.rsplit(":", 1)[0]
        documents[document] = documents.get(document, 0) + 1
    unread: list[Line] = []
    for p in summary.citations:
        if isinstance(p, CitationDocumentPayload):
            documents.setdefault(p.document, 0)
            if not p.ok:
                unread.append(Line(f"  {p.document}: not audited: {p.detail}", "red"))
    listed = ", ".join(f"{doc} ({n})" for doc, n in sorted(documents.items()))
    return [Line(f"citation documents: {len(documents)}: {listed}"), *unread]


def citation_fixes(summary: SummaryInput) -> list[Line]:
    """The citations ``--vgate-fix`` rewrote: where, and from what to what."""
    fixed = [c for c in _citations(summary) if c.fixed_from]
    if not fixed:
        return []
    lines = [Line(f"citations rewritten by --vgate-fix: {len(fixed)}")]
    lines += [Line(f"  {c.source}: {c.fixed_from} -> {c.location}") for c in fixed]
    return lines


def citation_result(summary: SummaryInput) -> list[Line]:
    """The VERIFICATION GATE RESULT block (verified, fabrications, ...), in document order.
    A citation rewritten by --vgate-fix counts as what was found."""
    if not summary.citations:
        return []
    from pytest_vgate.citations import CitationResult, summary_block

    results = [
        CitationResult.from_dict(c.original if c.original and c.ok else c.result)
        for c in _citations(summary)
    ]
    return [Line(line) for line in summary_block(results, summary.rootpath).splitlines()]


SECTIONS: tuple[Section, ...] = (
    gate_counts,
    failed_gates,
    red_before_green,
    discrimination,
    session_warnings,
    citation_documents,
    citation_fixes,
    citation_result,
)
