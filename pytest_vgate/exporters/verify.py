"""``python -m pytest_vgate verify REPORT.json``: the verdict of a session, read from outside.

Code inside pytest can end the process with any status (``os._exit(0)``), which no plugin
can stop. The JSON report is sealed only when the session reached its end, and lists what
was selected: ``verify`` exits 0 only for a sealed report in which every selected item and
every declared gate was met and every verdict is ok; else it prints what is not and exits
1 (4 when the file is not a report).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pytest_vgate.exporters.report import (
    REPORT_VERSION,
    ReportFileError,
    gate_state,
    read_report_file,
    seal_problems,
)
from pytest_vgate.jsonable import JsonDict, as_array, as_object, json_objects

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 4


def problems(report: Mapping[str, object]) -> list[str]:
    """Every reason the report is not a complete, passing session; empty when it is."""
    if report.get("version") != REPORT_VERSION:
        return [f"report version {report.get('version')!r}; this verify reads {REPORT_VERSION}"]
    found = seal_problems(report)
    entries = _entries(report)
    if found or entries is None:
        return found or ["the report has no `gates`/`citations` lists"]
    present = {str(e.get("nodeid")) for x in entries for e in x if e.get("nodeid")}
    selection = report.get("selection")
    if not isinstance(selection, Mapping):
        return ["the report does not say what the session selected (no `selection`)"]
    lists = [selection.get(key) or () for key in ("selected", "deselected")]
    gates_files = report.get("gates_files") or ()
    if not all(isinstance(x, (list, tuple)) for x in (*lists, gates_files)):
        return ["the report's `selection` or `gates_files` is not a list"]
    selected = [str(n) for n in as_array(lists[0])]
    met = {*selected, *map(str, as_array(lists[1]))}
    found += [f"{n}: selected, but not in the report" for n in selected if n not in present]
    for gates_file in as_array(gates_files):
        if not isinstance(gates_file, Mapping):
            found.append(f"gates_files: {gates_file!r:.60} is not a gates file's description")
            continue
        rel = str(gates_file.get("path"))
        for gate in as_array(gates_file.get("gates")):
            nodeid = f"{rel}::{as_object(gate).get('id')}"
            if nodeid not in met and nodeid not in present:
                found.append(f"{nodeid}: declared in {rel}, but neither run nor deselected")
    findings = map(as_object, as_array(report.get("findings")))
    found += [f"{f.get('nodeid')}: {f.get('what')}" for f in findings]
    gates, citations, documents = entries
    for entry in gates:
        if gate_state(entry) == "failed":
            cause = f", cause {entry['cause']}" if entry.get("cause") else ""
            detail = str(entry.get("detail") or "").strip().splitlines()
            why = f": {detail[0]}" if detail else ""
            found.append(f"{_name(entry)}: mode {entry.get('mode')}{cause}{why}")
    for entry in citations:
        if entry.get("ok") is not True:
            found.append(f"{entry.get('source')}: citation {entry.get('citation')!r} "
                         f"{entry.get('status')}")  # fmt: skip
    for entry in documents:
        if entry.get("ok") is not True:
            found.append(f"{entry.get('document')}: {entry.get('mode')}: {entry.get('detail')}")
    return found


def _entries(report: Mapping[str, object]) -> tuple[list[JsonDict], ...] | None:
    """The gates, citations and cited documents, if each is a list of JSON objects."""
    lists = (report.get("gates"), report.get("citations"), report.get("citation_documents") or [])
    try:
        return tuple(json_objects(x) for x in lists)
    except TypeError:
        return None


def _name(entry: Mapping[str, object]) -> str:
    return str(entry.get("nodeid") or entry.get("id"))


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_vgate verify",
        description="Exit 0 only if REPORT is a complete pytest-vgate report and all is ok.",
    )
    parser.add_argument("report", type=Path, metavar="REPORT")
    args = parser.parse_args(argv)
    if not os.path.lexists(args.report):  # a session removes an earlier report first
        print(
            f"pytest-vgate verify: {args.report}: NOT VERIFIED (1)\n"
            "  incomplete: the session did not reach its end (it wrote no report)",
            file=out,
        )
        return EXIT_FAILED
    try:
        report = read_report_file(args.report)
    except ReportFileError as exc:
        print(f"pytest-vgate verify: {exc}", file=sys.stderr)
        return EXIT_USAGE
    found = problems(report)
    if found:
        head = f"pytest-vgate verify: {args.report}: NOT VERIFIED ({len(found)})"
    else:
        gates = len(as_array(report["gates"]))
        head = f"pytest-vgate verify: {args.report}: verified ({gates} gates, all ok)"
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    if github:
        _github(head, found, out)
    else:
        print(head + (":" if found else ""), file=out)
        for line in found:
            print(f"  {line}", file=out)
    return EXIT_FAILED if found else EXIT_OK


def _github(head: str, found: Sequence[str], out: TextIO) -> None:
    """Under GitHub Actions: the problems (text of the report: untrusted) printed where the
    runner acts on no workflow command, one ``::error`` each (at most 10), and a section
    appended to the job summary."""
    from pytest_vgate.exporters.github import (
        MAX_PER_LEVEL,
        escape_data,
        markdown_text,
        stop_commands,
    )

    stop, resume = stop_commands()
    print(stop, file=out)
    print(head + (":" if found else ""), file=out)
    for line in found:
        print(f"  {line}", file=out)
    print(resume, file=out)
    for line in found[:MAX_PER_LEVEL]:
        print(f"::error title=pytest-vgate verify::{escape_data(line)}", file=out)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    text = ["## pytest-vgate verify", "", markdown_text(head), ""]
    text += [f"- {markdown_text(' '.join(line.split()))}" for line in found]
    try:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write("\n".join(text) + "\n\n")
    except OSError as exc:
        print(f"pytest-vgate verify: could not write the job summary: {exc}", file=sys.stderr)
