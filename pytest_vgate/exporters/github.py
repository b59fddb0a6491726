"""GitHub Actions: workflow-command annotations and a Markdown job summary.

``::error`` for failed gates and fabricated or dropped citations, ``::warning`` for
corrected ones, worst first and at most 10 of each (what GitHub shows per step), escaped as
actions/toolkit's ``command.ts`` escapes them. The summary (counts, failed gates,
red-before-green, the citation block) is appended to ``$GITHUB_STEP_SUMMARY``, under 1 MiB.
"""

from __future__ import annotations

import html
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_vgate.exporters.common import Finding, findings, relative_uri
from pytest_vgate.exporters.report import JsonReport

MAX_PER_LEVEL = 10  # annotations of one level GitHub shows per step
SUMMARY_BUDGET = 1_000_000  # bytes; GitHub refuses a step summary over 1 MiB
MAX_ROWS = 500  # rows per summary table before the budget is even considered


MARKDOWN_PUNCTUATION = frozenset("\\`*[]|")  # what starts markup in a table cell


def stop_commands() -> tuple[str, str]:
    """(stop line, resume line) with a fresh random token: between them the runner acts
    on no workflow command, so untrusted text (a check's output, a claim, a verifier's
    message) printed there cannot start one (``::add-mask::``, ``::error::``)."""
    token = f"vgate-{secrets.token_hex(16)}"
    return f"::stop-commands::{token}", f"::{token}::"


def markdown_text(text: str) -> str:
    """Untrusted text for a Markdown summary: HTML escaped and Markdown punctuation
    backslash-escaped, so that it renders as the text it is (no tag, link or image)."""
    escaped = html.escape(text, quote=False)
    return "".join(f"\\{c}" if c in MARKDOWN_PUNCTUATION else c for c in escaped)


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped (toolkit ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value: also ``:`` and ``,`` (toolkit ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(level: str, finding: Finding, workspace: str | Path) -> str:
    """``::error file=…,line=…,title=…::message``; file only when inside the workspace."""
    props: list[tuple[str, str]] = []
    if finding.where is not None:
        uri = relative_uri(finding.where.path, workspace)
        if uri is not None:
            props.append(("file", uri))
            if finding.where.line is not None and finding.where.line >= 1:
                props.append(("line", str(finding.where.line)))
    title = " ".join(finding.title.split())  # the runner trims properties; one line
    if title:
        props.append(("title", title))
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{level} {rendered}::{escape_data(finding.message)}"


def annotation_lines(report: Mapping[str, Any], workspace: str | Path) -> list[str]:
    """The lines to print: errors then warnings, each worst first and at most 10."""
    every = findings(report)
    lines: list[str] = []
    for level in ("error", "warning"):
        group = [f for f in every if f.level == level]
        lines.extend(workflow_command(level, f, workspace) for f in group[:MAX_PER_LEVEL])
        if len(group) > MAX_PER_LEVEL:
            lines.append(
                f"vgate: {len(group) - MAX_PER_LEVEL} more {level} annotation(s) left out (GitHub "
                f"shows {MAX_PER_LEVEL} per step); the job summary lists every failed gate"
            )
    return lines


def _cell(value: object) -> str:
    text = " ".join(str(value if value is not None else "-").split())
    return markdown_text(text) or "-"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], limit: int) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"\n_{len(rows) - limit} more rows left out (GitHub's 1 MiB limit)._")
    return lines


def _run_text(record: Mapping[str, Any]) -> str:
    tree = record.get("tree")
    label = tree.get("label", "?") if isinstance(tree, Mapping) else "?"
    if record.get("where") == "base":
        label = f"base {record.get('base_ref')}"
    code = record.get("exit_code")
    outcome = f"exit {code}" if code is not None else str(record.get("mode"))
    when = str(record.get("time") or "")[:19]
    return f"{label} {outcome}" + (f" at {when}" if when else "")


def _red_text(entry: Mapping[str, Any]) -> str:
    red = entry.get("red")
    if isinstance(red, Mapping):
        return _run_text(red)
    base = entry.get("base")
    if isinstance(base, Mapping):
        code = base.get("exit_code")
        outcome = f"exit {code}" if code is not None else str(base.get("mode"))
        not_red = "passed" if base.get("mode") == "pass" else "not a genuine red"
        return f"base {outcome} ({not_red})"
    return "-"


def _green_text(entry: Mapping[str, Any]) -> str:
    code = entry.get("exit_code")
    return str(entry.get("tree_label") or "this tree") + (
        f" exit {code}" if code is not None else f" {entry.get('mode')}"
    )


def _file_order(entry: Mapping[str, Any]) -> tuple[str, int, str]:
    """Gates-file order (reports arrive in any order under xdist)."""
    source = str(entry.get("source") or "")
    path, _, line = source.rpartition(":")
    if line.isdigit():
        return path, int(line), str(entry.get("nodeid"))
    return source, 0, str(entry.get("nodeid"))


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts.items() if n) or "none"


def step_summary(report: Mapping[str, Any], rootdir: str | Path | None = None) -> str:
    """The Markdown job summary of one session."""
    from pytest_vgate.citations import CitationResult, summary_block

    summary = report.get("summary") or {}
    gates_sum = summary.get("gates") or {}
    cit_sum = summary.get("citations") or {}
    gates = list(report.get("gates") or ())
    citations = list(report.get("citations") or ())
    failed = [f for f in findings(report) if f.kind == "gate"]

    def render(limit: int) -> str:
        out = ["## pytest-vgate", ""]
        out.append(
            f"**Gates: {gates_sum.get('total', len(gates))}** — {gates_sum.get('passed', 0)} "
            f"passed, {gates_sum.get('failed', 0)} failed, {gates_sum.get('skipped', 0)} "
            f"skipped; by mode: {_counts(gates_sum.get('by_mode') or {})}"
        )
        out.append("")
        if citations:
            out.append(
                f"**Citations: {cit_sum.get('total', len(citations))}** — "
                f"{_counts(cit_sum.get('by_status') or {})}"
            )
            out.append("")
        if failed:
            out += ["### Failed gates", ""]
            out += _table(
                ("gate", "mode", "cause", "detail"),
                [
                    (
                        f.properties.get("id"),
                        f.properties.get("mode"),
                        f.properties.get("cause"),
                        f.detail,
                    )
                    for f in failed
                ],
                limit,
            )
            out.append("")
        rbg_rows = [
            (e.get("id"), _red_text(e), _green_text(e), e.get("rbg"), e.get("cause"))
            for e in sorted(gates, key=_file_order)
            if e.get("rbg")
        ]
        if rbg_rows:
            out += ["### Red before green", ""]
            out += _table(("gate", "red evidence", "green", "status", "cause"), rbg_rows, limit)
            out.append("")
        if citations:
            results = [CitationResult.from_dict(c["result"]) for c in citations if c.get("result")]
            block = summary_block(results, Path(rootdir) if rootdir else None)
            fence = "```"
            while fence in block:
                fence += "`"
            out += ["### Citations", "", fence + "text", *block.splitlines(), fence, ""]
        return "\n".join(out).rstrip("\n") + "\n"

    limit = MAX_ROWS
    text = render(limit)
    while len(text.encode("utf-8")) > SUMMARY_BUDGET and limit > 0:
        limit //= 2
        text = render(limit)
    encoded = text.encode("utf-8")
    if len(encoded) > SUMMARY_BUDGET:  # the citation block alone is too large
        text = encoded[: SUMMARY_BUDGET - 100].decode("utf-8", "ignore") + "\n\n_(cut)_\n"
    return text


class CommandChannel:
    """The session's terminal as the Actions runner reads it: workflow commands stopped
    from the start (a check's output, a claim, a verifier's message are printed there),
    resumed only while our own annotations are printed, and at the end."""

    def __init__(self, write_line: Callable[[str], None]) -> None:
        self.write_line = write_line
        self._resume: str | None = None

    def stop(self) -> None:
        if self._resume is None:
            stop, self._resume = stop_commands()
            self.write_line(stop)

    def resume(self) -> None:
        if self._resume is not None:
            resume, self._resume = self._resume, None
            self.write_line(resume)


class GithubExporter:
    """A ``pytest_vgate_report`` plugin: annotations through ``write_line`` (commands
    resumed on ``channel`` just for them), the summary appended to ``step_summary``
    (when GitHub gave one)."""

    def __init__(
        self,
        *,
        write_line: Callable[[str], None],
        step_summary: Path | None,
        workspace: Path,
        channel: CommandChannel | None = None,
    ) -> None:
        self.write_line = write_line
        self.step_summary = step_summary
        self.workspace = workspace
        self.channel = channel

    def pytest_vgate_report(self, report: JsonReport) -> None:
        if not report.get("gates") and not report.get("citations"):
            return
        lines = annotation_lines(report, self.workspace)
        if self.channel is not None and lines:
            self.channel.resume()
        try:
            for line in lines:
                self.write_line(line)
        finally:
            if self.channel is not None and lines:
                self.channel.stop()
        if self.step_summary is not None:
            text = step_summary(report, report.get("rootdir"))
            with open(self.step_summary, "a", encoding="utf-8") as fh:
                fh.write(text)
