"""The page (``--vgate-html PATH``): one self-contained HTML file a reviewer opens.

The verdict table (failing gates first, sortable, filterable), per gate its claim, check,
red and green runs with their decisive lines and advice, the change's diff marked by what
each run executed, the surviving mutants, and each citation's lines in context. Nothing
comes from the network (an inline script allowed by its hash, a policy that forbids every
fetch), and every text of the report is escaped: it is text, never markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_vgate.clip import clip
from pytest_vgate.evidence.why import decisive_lines
from pytest_vgate.exporters.report import JsonReport, gate_state, write_atomically
from pytest_vgate.jsonable import as_array, as_object
from pytest_vgate.paths import relative

STATE_ORDER = {"failed": 0, "skipped": 1, "passed": 2}
CONTEXT_LINES = 2  # lines shown around a cited line
OUTPUT_LIMIT = 4000  # characters of a run's output shown in full (below its decisive lines)


def _resource(name: str) -> str:
    return resources.files("pytest_vgate.exporters").joinpath(name).read_text(encoding="utf-8")


# The page's own script and style, shipped next to this module. The script reads cells
# with textContent and writes no markup; the policy allows it by its hash alone.
SCRIPT = _resource("page.js")
STYLE = _resource("page.css")

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src '{script}'; img-src data:; "
    "base-uri 'none'; form-action 'none'; connect-src 'none'"
)


def esc(value: object) -> str:
    """Text as HTML text or attribute value: ``<``, ``>``, ``&`` and both quotes escaped."""
    return html.escape("" if value is None else str(value), quote=True)


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return _CSP.format(script=f"sha256-{digest}")


def build_html(report: Mapping[str, Any], *, title: str = "pytest-vgate report") -> str:
    """The page of a report (the controller's, or ``merge``'s)."""
    gates = [g for g in report.get("gates") or () if isinstance(g, Mapping)]
    ordered = sorted(enumerate(gates), key=lambda ig: (STATE_ORDER[gate_state(ig[1])], ig[0]))
    citations = [c for c in report.get("citations") or () if isinstance(c, Mapping)]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(_csp())}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<header><h1>{esc(title)}</h1>{_counts(gates, citations)}</header>",
    ]
    if gates:
        parts += [_filters(gates), _verdict_table(ordered), '<section id="gates"><h2>Gates</h2>']
        rootdir = str(report.get("rootdir") or "")
        parts += [_gate_article(number, gate, rootdir) for number, gate in ordered]
        parts.append("</section>")
    if citations:
        parts.append(_citations(citations))
    parts.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "\n".join(parts)


def _counts(gates: Sequence[Mapping[str, Any]], citations: Sequence[Mapping[str, Any]]) -> str:
    states = [gate_state(g) for g in gates]
    said = ", ".join(f"{states.count(s)} {s}" for s in STATE_ORDER if states.count(s))
    bad = sum(1 for c in citations if not c.get("ok"))
    cited = f"; {len(citations)} citations, {bad} not verified" if citations else ""
    return f'<p class="counts">{len(gates)} gates{esc(": " + said if said else "")}{esc(cited)}</p>'


def _filters(gates: Sequence[Mapping[str, Any]]) -> str:
    states = [gate_state(g) for g in gates]
    buttons = [
        f'<button type="button" data-filter="all" aria-pressed="true">all ({len(states)})</button>'
    ]
    for state in STATE_ORDER:
        buttons.append(
            f'<button type="button" data-filter="{state}" aria-pressed="false">'
            f"{state} ({states.count(state)})</button>"
        )
    return '<nav class="filter" aria-label="filter by status">show: ' + "".join(buttons) + "</nav>"


COLUMNS = ("gate", "status", "mode", "cause", "red-before-green", "coverage", "discrimination")


def _verdict_table(ordered: Sequence[tuple[int, Mapping[str, Any]]]) -> str:
    head = "".join(f'<th scope="col">{name}</th>' for name in COLUMNS)
    head += '<th scope="col" data-numeric="1">duration</th>'
    rows = []
    for number, gate in ordered:
        state = gate_state(gate)
        duration = gate.get("duration")
        seconds = float(duration) if isinstance(duration, (int, float)) else 0.0
        cells = [
            f'<td><a href="#gate-{number}">{esc(_name(gate))}</a></td>',
            f'<td class="state">{state}</td>',
            f"<td>{esc(gate.get('mode'))}</td>",
            f"<td>{esc(gate.get('cause') or '-')}</td>",
            f"<td>{esc(gate.get('rbg') or '-')}</td>",
            f"<td>{esc(as_object(gate.get('coverage')).get('status') or '-')}</td>",
            f"<td>{esc(_discrimination_text(gate))}</td>",
            f'<td data-value="{seconds:.6f}">{seconds:.2f}s</td>',
        ]
        rows.append(f'<tr class="gate-row {state}" data-state="{state}">{"".join(cells)}</tr>')
    return (
        f'<table id="verdicts"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _name(gate: Mapping[str, Any]) -> str:
    return str(gate.get("id") or gate.get("nodeid") or "?")


def _discrimination_text(gate: Mapping[str, Any]) -> str:
    found = as_object(gate.get("discrimination"))
    if not found:
        return "-"
    status = str(found.get("status") or "")
    if found.get("planted") is None:
        return status or "-"
    return f"{found.get('killed', 0)}/{found.get('planted')} {status}".strip()


def _relative(path: str, rootdir: str) -> str:
    """``path`` relative to the rootdir when it lies inside it (shorter to read)."""
    if rootdir and os.path.isabs(path):
        return relative(path, rootdir) or path
    return path


def _gate_article(number: int, gate: Mapping[str, Any], rootdir: str) -> str:
    state = gate_state(gate)
    rows: list[tuple[str, str]] = [("claim", esc(gate.get("claim") or "-"))]
    command = gate.get("command")
    if isinstance(command, list) and command:
        rows.append(("check", f"<code>{esc(' '.join(str(a) for a in command))}</code>"))
    verdict = f"mode {gate.get('mode')}" + (f", cause {gate['cause']}" if gate.get("cause") else "")
    if gate.get("exit_code") is not None:
        verdict += f", exit {gate['exit_code']}"
    rows.append(("verdict", esc(verdict)))
    if gate.get("detail"):
        rows.append(("detail", esc(gate["detail"])))
    if gate.get("rbg"):
        reason = f": {gate['rbg_reason']}" if gate.get("rbg_reason") else ""
        rows.append(("red-before-green", esc(f"{gate['rbg']}{reason}")))
    if gate.get("advice"):
        rows.append(("what to do", esc(gate["advice"])))
    if gate.get("source"):
        rows.append(("declared at", f"<code>{esc(_relative(str(gate['source']), rootdir))}</code>"))
    found = as_object(gate.get("discrimination"))
    if found:
        reason = f": {found['reason']}" if found.get("reason") else ""
        rows.append(("discrimination", esc(f"{_discrimination_text(gate)}{reason}")))
    if found.get("pseudo_tested"):
        rows.append(("pseudo-tested", esc(", ".join(map(str, as_array(found["pseudo_tested"]))))))
    listing = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    return (
        f'<article class="gate" id="gate-{number}" data-state="{state}">'
        f'<h3>{esc(_name(gate))} <span class="state {state}">{state}</span></h3>'
        f"<dl>{listing}</dl>{_runs(gate)}{_diff(gate)}</article>"
    )


def _runs(gate: Mapping[str, Any]) -> str:
    red = gate.get("red") if isinstance(gate.get("red"), Mapping) else None
    base = gate.get("base") if isinstance(gate.get("base"), Mapping) else None
    green = gate.get("green") if isinstance(gate.get("green"), Mapping) else None
    shown = []
    if red is not None:
        shown.append(_run("red run (base)", red, "red"))
    elif base is not None:
        title = "base run" if gate.get("rbg") == "regression" else "base run (no genuine red)"
        shown.append(_run(title, base, "red"))
    now = green if green is not None else gate
    if now.get("mode") is not None:
        shown.append(_run("green run (now)", now, "green"))
    return f'<div class="runs">{"".join(shown)}</div>' if shown else ""


def _run(title: str, run: Mapping[str, Any], side: str) -> str:
    stdout, stderr = str(run.get("stdout") or ""), str(run.get("stderr") or "")
    facts = [f"mode {run.get('mode')}"]
    if run.get("exit_code") is not None:
        facts.insert(0, f"exit {run['exit_code']}")
    if isinstance(run.get("duration"), (int, float)):
        facts.append(f"{float(run['duration']):.2f}s")
    if run.get("red_reason"):
        facts.append(str(run["red_reason"]))
    lines = decisive_lines(stdout, stderr) if (stdout or stderr) else []
    body = f"<p>{esc(' · '.join(facts))}</p>"
    if lines:
        shown = esc("\n".join(lines))
        body += f'<p class="legend">decisive lines</p><pre class="decisive">{shown}</pre>'
    if stdout or stderr:
        output = clip((stderr + "\n" + stdout).strip(), OUTPUT_LIMIT)
        body += f"<details><summary>output</summary><pre>{esc(output)}</pre></details>"
    return f'<div class="run {side}"><h4>{esc(title)}</h4>{body}</div>'


def _executed(coverage: Mapping[str, Any], key: str, path: str) -> frozenset[int]:
    side = coverage.get(key)
    lines = side.get(path) if isinstance(side, Mapping) else None
    return frozenset(n for n in lines or () if isinstance(n, int))


def _code(coverage: Mapping[str, Any], key: str, path: str) -> frozenset[int] | None:
    """The changed lines that are code that runs; None when the report does not say."""
    return _executed(coverage, key, path) if isinstance(coverage.get(key), Mapping) else None


def _mark(side: str, line: int | None, executed: frozenset[int], measured: bool) -> str:
    label = "R" if side == "red" else "G"
    if line is None or not measured:
        return f'<span class="mark {side} none" data-{side}="">&nbsp;</span>'
    if line in executed:
        return (
            f'<span class="mark {side} ran" data-{side}="executed" '
            f'title="the {side} run executed this line">{label}</span>'
        )
    return (
        f'<span class="mark {side} not-ran" data-{side}="not-executed" '
        f'title="the {side} run did not execute this line">{label}</span>'
    )


def _measured(coverage: Mapping[str, Any], run: str) -> bool:
    facts = coverage.get(run)
    return bool(facts.get("measured")) if isinstance(facts, Mapping) else True


def _diff(gate: Mapping[str, Any]) -> str:
    files = [f for f in gate.get("diff") or () if isinstance(f, Mapping)]
    listed = as_array(as_object(gate.get("discrimination")).get("mutants"))
    mutants = [m for m in listed if isinstance(m, Mapping)]
    if not files and not mutants:
        return ""
    coverage = as_object(gate.get("coverage"))
    red_measured, green_measured = _measured(coverage, "red"), _measured(coverage, "green")
    placed: set[int] = set()
    parts = [
        "<h4>the change</h4>",
        '<p class="legend"><span class="mark red ran">R</span> the red run (on the base) '
        'executed this removed or changed line, <span class="mark green ran">G</span> the green '
        "run (now) executed this added or changed line; dotted: it did not; none: not code "
        "that runs. Yellow rows: mutants of the line that the check did not kill.</p>",
    ]
    for f in files:
        path = str(f.get("path"))
        red_lines = _executed(coverage, "base_executed", path)
        green_lines = _executed(coverage, "head_executed", path)
        # A changed line that is not code (blank, comment, docstring) gets no mark.
        red_code, green_code = (_code(coverage, k, path) for k in ("base_changed", "head_changed"))
        at_line: dict[int, list[tuple[int, Mapping[str, Any]]]] = {}
        for index, mutant in enumerate(mutants):
            if str(mutant.get("path")) == path and isinstance(mutant.get("line"), int):
                at_line.setdefault(int(mutant["line"]), []).append((index, mutant))
        rows = []
        for hunk in f.get("hunks") or ():
            rows.append(
                f'<tr class="hunk"><td class="no"></td><td class="no"></td><td></td><td>'
                f"@@ -{esc(hunk.get('base_start'))} +{esc(hunk.get('head_start'))} @@</td></tr>"
            )
            for line in hunk.get("lines") or ():
                op = str(line.get("op"))
                base_no, head_no = line.get("base"), line.get("head")
                kind = {"+": "add", "-": "del"}.get(op, "ctx")
                # The coverage maps hold changed lines only: a context line is unmarked.
                side_no, code = (base_no, red_code) if op == "-" else (head_no, green_code)
                shown = code is None or side_no in code
                red_no = base_no if op == "-" and shown else None
                green_no = head_no if op == "+" and shown else None
                marks = _mark("red", red_no, red_lines, red_measured) + _mark(
                    "green", green_no, green_lines, green_measured
                )
                rows.append(
                    f'<tr class="line op-{kind}" data-path="{esc(path)}" '
                    f'data-base="{esc(base_no if base_no is not None else "")}" '
                    f'data-head="{esc(head_no if head_no is not None else "")}">'
                    f'<td class="no">{esc(base_no or "")}</td><td class="no">{esc(head_no or "")}'
                    f'</td><td class="marks">{marks}</td><td class="code">{esc(op)} '
                    f"{esc(line.get('text'))}</td></tr>"
                )
                if isinstance(head_no, int):
                    for index, mutant in at_line.get(head_no, ()):
                        placed.add(index)
                        rows.append(_mutant_row(mutant))
        cut = f'<p class="legend">{esc(f["cut"])} more lines not shown</p>' if f.get("cut") else ""
        parts.append(
            f"<p><code>{esc(path)}</code> ({esc(f.get('status'))})</p>"
            f'<table class="diff">{"".join(rows)}</table>{cut}'
        )
    rest = [m for i, m in enumerate(mutants) if i not in placed]
    if rest:
        parts.append(
            '<table class="diff mutants">' + "".join(_mutant_row(m) for m in rest) + "</table>"
        )
    return "".join(parts)


def _mutant_row(mutant: Mapping[str, Any]) -> str:
    verdict = "killed" if mutant.get("killed") else "survived"
    text = (
        f"mutant {verdict}  {mutant.get('path')}:{mutant.get('line')}  "
        f"{mutant.get('before')} \u2192 {mutant.get('after')}  "
        f"({mutant.get('kind')}, {mutant.get('operator')})"
    )
    if mutant.get("mode") not in (None, "", verdict):
        text += f"  [check: {mutant['mode']}]"
    return (
        f'<tr class="mutant {verdict}"><td class="no"></td><td class="no"></td><td></td>'
        f"<td>{esc(text)}</td></tr>"
    )


def _citations(citations: Iterable[Mapping[str, Any]]) -> str:
    items = []
    for entry in citations:
        state = "passed" if entry.get("ok") else "failed"
        result = as_object(entry.get("result"))
        cited = as_object(result.get("citation"))
        rows = [("status", esc(entry.get("status"))), ("written at", esc(entry.get("source")))]
        if cited.get("description"):
            rows.append(("says", esc(cited["description"])))
        if entry.get("reason"):
            rows.append(("why", esc(entry["reason"])))
        if entry.get("corrected_to"):
            rows.append(("moved to", f"<code>{esc(entry['corrected_to'])}</code>"))
        listing = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
        root = str(entry.get("root") or "")
        shown = _cited_lines(root, result, str(result.get("cited_text") or ""))
        moved = ""
        if entry.get("corrected_to"):
            moved = _moved_lines(root, str(entry["corrected_to"]), result)
        items.append(
            f'<article class="citation" data-state="{state}" '
            f'data-status="{esc(entry.get("status"))}">'
            f"<h3><code>{esc(entry.get('location') or entry.get('citation'))}</code> "
            f'<span class="state {state}">{esc(entry.get("status"))}</span></h3>'
            f"<dl>{listing}</dl>{shown}{moved}</article>"
        )
    return '<section id="citations"><h2>Citations</h2>' + "".join(items) + "</section>"


def _file_lines(root: str, rel: str) -> list[str] | None:
    """The lines of ``rel`` inside ``root``; None outside it or when it cannot be read."""
    if not root or not rel:
        return None
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    if os.path.commonpath([real_root, real]) != real_root or not os.path.isfile(real):
        return None
    try:
        with open(real, encoding="utf-8", errors="replace") as fh:
            return fh.read().split("\n")
    except OSError:
        return None


def _excerpt(lines: list[str], start: int, end: int) -> str:
    first, last = max(start - CONTEXT_LINES, 1), min(end + CONTEXT_LINES, len(lines))
    rows = []
    for number in range(first, last + 1):
        mark = " cited" if start <= number <= end else ""
        rows.append(
            f'<tr class="line{mark}"><td class="no">{number}</td>'
            f'<td class="code">{esc(clip(lines[number - 1], 400))}</td></tr>'
        )
    return f'<table class="diff excerpt">{"".join(rows)}</table>'


def _cited_lines(root: str, result: Mapping[str, Any], fallback: str) -> str:
    cited = as_object(result.get("citation"))
    start, end = cited.get("start_line"), cited.get("end_line") or cited.get("start_line")
    lines = _file_lines(root, str(result.get("resolved") or cited.get("path") or ""))
    if (
        lines is not None
        and isinstance(start, int)
        and isinstance(end, int)
        and 1 <= start <= len(lines)
    ):
        excerpt = _excerpt(lines, start, min(end, len(lines)))
        return '<p class="legend">the cited lines</p>' + excerpt
    if fallback:
        return f'<p class="legend">the cited lines</p><pre>{esc(fallback)}</pre>'
    return ""


def _moved_lines(root: str, corrected_to: str, result: Mapping[str, Any]) -> str:
    path, _, tail = corrected_to.rpartition(":")
    first, _, last = tail.partition("-")
    lines = _file_lines(root, path)
    if lines is not None and first.isdigit():
        start, end = int(first), int(last) if last.isdigit() else int(first)
        if 1 <= start <= len(lines):
            return f'<p class="legend">where it is now ({esc(corrected_to)})</p>' + _excerpt(
                lines, start, min(end, len(lines))
            )
    text = result.get("corrected_text")
    return f"<pre>{esc(text)}</pre>" if text else ""


def write_html(path: Path, page: str) -> None:
    """Write atomically (temp file + rename); raises OSError, which the caller reports."""
    write_atomically(path, page, prefix=".vgate-html-")


class HtmlExporter:
    """A ``pytest_vgate_report`` plugin: writes the page to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def pytest_vgate_report(self, report: JsonReport) -> None:
        write_html(self.path, build_html(report))
