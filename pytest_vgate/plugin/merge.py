"""``python -m pytest_vgate merge``: one verdict from the JSON reports of sharded runs.

It prints the summary a single run would have printed, writes one JSON report, SARIF log,
page and ledger, and exits 1 iff a single run would have failed on a gate or citation.
A gate the gates files declare that no shard ran fails the merge: a lost shard must not
look like a pass. Extra fields in the reports are carried through untouched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn, TextIO

from pytest_vgate.errors import VgateError
from pytest_vgate.exporters.report import (
    REPORT_VERSION,
    ReportFileError,
    file_sha256,
    gate_state,
    read_report_file,
    seal_problems,
    sealed,
    summarize,
    write_json_report,
)
from pytest_vgate.gatesfile import GatesFileError, load_gates_file
from pytest_vgate.jsonable import JsonDict, as_array, as_object
from pytest_vgate.paths import relative
from pytest_vgate.payload import (
    MissingPayload,
    Payload,
    PayloadError,
    PayloadKind,
    document_order,
    payload_of_entry,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 4  # 4: as pytest's usage error
ENTRY_KINDS = (
    ("gates", PayloadKind.GATE),  # an entry names its kind; a gate when it names none
    ("citations", PayloadKind.CITATION),
    ("citation_documents", PayloadKind.CITATION_DOCUMENT),
)


class MergeError(VgateError):
    """A report that cannot be merged; the message names the file and what is wrong."""


def read_shard(path: Path) -> JsonDict:
    """A shard report, checked: a regular file (never a FIFO or device: no read blocks),
    JSON of bounded depth, entries that are payloads, sealed by a session that reached
    its end, and describing itself (gates files, tree, selection)."""
    try:
        data = read_report_file(path)
    except ReportFileError as exc:
        raise MergeError(str(exc)) from None
    if not isinstance(data.get("gates"), list):
        raise MergeError(f"{path}: not a pytest-vgate JSON report (no `gates` list)")
    if data.get("version") != REPORT_VERSION:
        raise MergeError(
            f"{path}: report version {data.get('version')!r}, this merge reads version "
            f"{REPORT_VERSION}; merge reports written by the same pytest-vgate"
        )
    for key, kind in ENTRY_KINDS:
        entries = data.get(key)
        entries = [] if entries is None else entries
        if not isinstance(entries, list):
            raise MergeError(f"{path}: `{key}` is not a list")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise MergeError(f"{path}: {key}[{i}] is not a JSON object")
            try:
                payload_of_entry(entry, kind)
            except PayloadError as exc:
                raise MergeError(f"{path}: {key}[{i}]: {exc}") from None
    unsealed = seal_problems(data)
    if unsealed:
        raise MergeError(f"{path}: {unsealed[0]}; run its shard again")
    for key, kind_of in (("gates_files", list), ("tree", dict), ("selection", dict)):
        if not isinstance(data.get(key), kind_of):
            raise MergeError(f"{path}: the report does not describe its session (no `{key}`)")
    for i, described in enumerate(as_array(data["gates_files"])):
        if not isinstance(described, dict) or not isinstance(described.get("gates"), list):
            raise MergeError(f"{path}: gates_files[{i}] is not a gates file's description")
    return data


def identity(shard: JsonDict) -> tuple[JsonDict, dict[str, object]]:
    """What shards of one run share: each gates file's content hash, and the tree."""
    files = {str(f.get("path")): f.get("sha256") for f in _listed(shard, "gates_files")}
    return files, dict(as_object(shard["tree"]))


def check_same_run(shards: Sequence[tuple[Path, JsonDict]]) -> None:
    """Shards of different trees or gates files are not parts of one run: merging them
    would let one tree's pass stand for another's gate."""
    if not shards:
        return
    first_path, first = shards[0]
    files, tree = identity(first)
    for path, shard in shards[1:]:
        other_files, other_tree = identity(shard)
        if other_files != files:
            changed = sorted(
                k for k in {*files, *other_files} if files.get(k) != other_files.get(k)
            )
            raise MergeError(
                f"{path}: ran other gates files than {first_path} (differ: "
                f"{', '.join(changed)}); merge the shards of one run only"
            )
        if other_tree != tree:
            raise MergeError(
                f"{path}: ran on another tree than {first_path} ({other_tree} != {tree}); "
                "merge the shards of one run only"
            )


def _source_file(entry: Mapping[str, object]) -> tuple[str, int]:
    """(gates file, line) of a gate entry's ``source`` (``path:line``)."""
    source = str(entry.get("source") or "")
    path, _, line = source.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (source, 0)


def _shard_relative(path: str, rootdir: str | None) -> str:
    """A gates file as every shard names it: relative to its own rootdir."""
    if rootdir and os.path.isabs(path):
        return relative(path, rootdir, climb=True)
    return path


def _worse(old: Mapping[str, object], new: Mapping[str, object]) -> bool:
    """A gate run by two shards keeps its failing run: merging never hides a failure."""
    return gate_state(new) == "failed" and gate_state(old) != "failed"


_FROM_GATES_FILES = (PayloadKind.GATE.value, PayloadKind.MISSING.value)


def merge_reports(
    shards: Sequence[tuple[Path, JsonDict]],
    gates_files: Sequence[Path] = (),
    rootdir: Path | None = None,
) -> tuple[dict[str, object], list[str]]:
    """The merged report and the warnings met on the way.

    Gates are matched to gates files by (path relative to the rootdir, id); the gate set
    is every gates file given plus every one the shards' gates name that exists here.
    """
    root = str(rootdir or Path.cwd())
    warnings: list[str] = []
    gates: dict[str, JsonDict] = {}
    citations: dict[str, JsonDict] = {}
    documents: dict[str, JsonDict] = {}  # cited documents audited as a whole
    named: dict[str, None] = {}
    for path, shard in shards:
        shard_root = shard.get("rootdir")
        shard_root = shard_root if isinstance(shard_root, str) else None
        for entry in _listed(shard, "gates"):
            key = str(entry.get("nodeid") or entry.get("id"))
            source, _ = _source_file(entry)
            file = _shard_relative(source, shard_root) if source else ""
            entry = {**entry, "_file": file}
            # A verifier's or a marked test's source is a test module, not a gates file.
            if file and entry.get("kind") in _FROM_GATES_FILES:
                named[file] = None
            if key in gates and not _worse(gates[key], entry):
                continue
            gates[key] = entry
        for entry in _listed(shard, "citations"):
            key = str(entry.get("nodeid") or (entry.get("source"), entry.get("citation")))
            if key not in citations or (_citation_ok(citations[key]) and not _citation_ok(entry)):
                citations[key] = dict(entry)
        for entry in _listed(shard, "citation_documents"):
            key = str(entry.get("document"))
            if key not in documents or (documents[key].get("ok") and not entry.get("ok")):
                documents[key] = dict(entry)
        for warning in as_array(shard.get("warnings")):
            warnings.append(f"{path}: {warning}")
    declared: dict[str, None] = {os.path.relpath(p.resolve(), root): None for p in gates_files}
    described: dict[str, JsonDict] = {}  # what the shards say of their gates files
    for _, shard in shards:
        for desc in _listed(shard, "gates_files"):
            described.setdefault(str(desc.get("path")), desc)
    for rel, desc in described.items():
        here = Path(root) / rel
        if rel in declared or not _regular(here):
            continue
        if file_sha256(here) != desc.get("sha256"):
            raise MergeError(
                f"the gates file {rel} under {root} is not the one the shards ran (its "
                "content differs); merge in the checkout of the run, or without it"
            )
        declared[rel] = None  # here: its documents can be checked citation by citation
    for rel in named:
        if rel in declared or rel in described:
            continue
        if _regular(Path(root) / rel):
            declared[rel] = None
        else:
            warnings.append(
                f"the gates file {rel} named in the reports is not under {root}: its gates "
                "are not checked for completeness (give it with --gates)"
            )
    ran = {(e["_file"], str(e.get("id"))) for e in gates.values()}
    missing = []
    for rel, desc in described.items():
        if rel in declared:
            continue  # read from disk below
        for described_gate in map(as_object, as_array(desc.get("gates"))):
            gate_id = str(described_gate.get("id"))
            if (rel, gate_id) not in ran:
                line = described_gate.get("line")
                claim = str(described_gate.get("claim") or "")
                missing.append(
                    _missing_entry(rel, gate_id, claim, line if isinstance(line, int) else 0)
                )
        missing.extend(_unchecked_described(rel, desc, citations, documents))
    for rel in declared:
        try:
            loaded = load_gates_file(Path(root) / rel)
        except GatesFileError as exc:
            raise MergeError(f"cannot read the gates file {rel}: {exc}") from None
        for gate in loaded.gates:
            if (rel, gate.id) not in ran:
                missing.append(_missing_entry(rel, gate.id, gate.claim, gate.line))
        missing.extend(_unchecked_documents(rel, loaded.citations, citations, documents, root))
    ordered = sorted(
        gates.values(), key=lambda e: (e["_file"] == "", e["_file"], _source_file(e)[1])
    )
    entries: list[JsonDict] = [{k: v for k, v in e.items() if k != "_file"} for e in ordered]
    entries += missing
    cited = sorted(
        citations.values(), key=lambda entry: document_order(as_object(entry.get("result")))
    )
    selection: dict[str, dict[str, None]] = {"selected": {}, "deselected": {}, "removed": {}}
    for _, shard in shards:
        for key, seen in selection.items():
            listed = as_array(as_object(shard.get("selection")).get(key))
            seen.update(dict.fromkeys(map(str, listed)))
    ran_anywhere = {*selection["selected"], *(str(e.get("nodeid")) for e in gates.values())}
    deselected = [n for n in selection["deselected"] if n not in ran_anywhere]
    return {
        "version": REPORT_VERSION,
        "rootdir": root,
        "summary": summarize(entries, cited),
        "gates": entries,
        "citations": cited,
        "citation_documents": sorted(documents.values(), key=lambda d: str(d.get("document"))),
        "shards": [str(path) for path, _ in shards],
        "missing": [f"{str(e['source']).rpartition(':')[0]}::{e['id']}" for e in missing],
        "gates_files": list(described.values()),
        "tree": dict(as_object(shards[0][1].get("tree"))) if shards else {},
        "selection": {
            "selected": [*selection["selected"], *(e["nodeid"] for e in missing)],
            "deselected": deselected,
            "removed": list(selection["removed"]),
        },
        "findings": [f for _, shard in shards for f in as_array(shard.get("findings"))],
    }, warnings


def _listed(report: Mapping[str, object], key: str) -> list[JsonDict]:
    """The JSON objects listed under ``key`` (a checked shard's, or the merged report's)."""
    return [entry for entry in as_array(report.get(key)) if isinstance(entry, dict)]


def _regular(path: Path) -> bool:
    """A regular file (a FIFO or device would block or never end a read)."""
    from pytest_vgate.citations.files import file_kind

    return file_kind(str(path)) == "file"


def _unchecked_described(
    rel: str,
    desc: Mapping[str, object],
    citations: Mapping[str, Mapping[str, object]],
    documents: Mapping[str, Mapping[str, object]],
) -> list[JsonDict]:
    """Without the checkout: a document the gates file cites of which no shard checked
    any citation, nor audited it whole (a partly checked one needs the document itself)."""
    seen = {str(e.get("source") or "").rpartition(":")[0] for e in citations.values()}
    missing = []
    for document in as_array(desc.get("citations")):
        shown = str(document)
        if (
            shown not in seen
            and shown not in documents
            and not any(str(d).endswith(shown) for d in documents)
        ):
            missing.append(_missing_document(rel, shown, "any citation"))
    return missing


def _unchecked_documents(
    rel: str,
    cited: Sequence[Path],
    citations: Mapping[str, Mapping[str, object]],
    documents: Mapping[str, Mapping[str, object]],
    root: str,
) -> list[JsonDict]:
    """A missing entry per document the gates file cites whose citations no shard checked
    (all or some of them): a single run would have checked every one."""
    from pytest_vgate.citations import parse_citations

    checked = {
        (str(e.get("source")), str(e.get("citation")), _occurrence(e)) for e in citations.values()
    }
    missing = []
    for document in cited:
        shown = relative(document, root, climb=True)
        try:
            expected = parse_citations(document)
        except (OSError, ValueError):
            expected = []  # unreadable: a single run audits it as a document
        if not expected:
            if shown not in documents and str(document) not in documents:
                missing.append(_missing_document(rel, shown, "its audit"))
            continue
        keys = [(c.source(Path(root)), c.raw, c.occurrence) for c in expected]
        unchecked = [key for key in keys if key not in checked]
        if unchecked:
            what = f"{len(unchecked)} of the {len(keys)} citations (first: {unchecked[0][0]})"
            missing.append(_missing_document(rel, shown, what))
    return missing


def _occurrence(entry: Mapping[str, object]) -> int:
    cited = as_object(as_object(entry.get("result")).get("citation"))
    occurrence = cited.get("occurrence", 1)
    return occurrence if isinstance(occurrence, int) else 1


def _missing_document(rel: str, document: str, what: str) -> JsonDict:
    detail = f"no shard checked {what} of {document}, cited by {rel}: a shard was lost or "
    return _missing_entry(rel, document, "", 1, detail + "deselected them")


def _missing_entry(rel: str, name: str, claim: str, line: int, detail: str = "") -> JsonDict:
    return MissingPayload(
        id=name,
        claim=claim,
        detail=detail or f"no shard ran gate {name!r} of {rel}: a shard was lost or deselected it",
        source=f"{rel}:{line}",
        nodeid=f"{rel}::{name}",
    ).to_dict()


def _citation_ok(entry: Mapping[str, object]) -> bool:
    from pytest_vgate.citations import CitationResult

    if isinstance(entry.get("ok"), bool):  # the item's own word, when the report has it
        return bool(entry["ok"])
    try:
        ok = CitationResult.from_dict(entry["result"]).ok
    except (KeyError, TypeError, ValueError):
        return False  # fail closed: a citation we cannot read is not verified
    return bool(ok or entry.get("fixed_from"))


def merged_failed(report: Mapping[str, object]) -> bool:
    """What would have failed a single run: a failed gate, a missing gate, a bad citation."""
    if any(gate_state(e) == "failed" for e in _listed(report, "gates")):
        return True
    if not all(d.get("ok") for d in _listed(report, "citation_documents")):
        return True
    return not all(_citation_ok(c) for c in _listed(report, "citations"))


class _Terminal:
    """The few TerminalReporter calls ``summary.py`` makes, written as pytest writes them
    to a pipe (same width rule, no colour), so a merged summary reads like a single run's."""

    def __init__(self, out: TextIO, rootdir: str, verbose: int) -> None:
        self.out = out
        width = shutil.get_terminal_size(fallback=(80, 24)).columns
        self.width = width if width >= 40 else 80
        self._tw = SimpleNamespace(fullwidth=self.width)  # what summary.py reads the width from
        self.config = SimpleNamespace(
            option=SimpleNamespace(verbose=verbose), rootpath=Path(rootdir)
        )

    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None:
        if title is None:
            self.write_line(sep * (self.width // len(sep)))
            return
        half = max((self.width - len(title) - 2) // (2 * len(sep)), 1)
        line = f"{sep * half} {title} {sep * half}"
        if len(line) + len(sep.rstrip()) <= self.width:
            line += sep.rstrip()
        self.write_line(line)

    def write_line(self, line: str, **markup: bool) -> None:
        self.out.write(line + "\n")


def render_summary(
    report: Mapping[str, object], warnings: Sequence[str], out: TextIO, *, verbose: int = 0
) -> None:
    """The vgate section of a single run's terminal summary, for the merged report."""
    from pytest_vgate.plugin.summary import write_summary

    payloads: dict[str, Payload] = {}
    for entry in _listed(report, "gates"):
        payloads[str(entry.get("nodeid") or entry["id"])] = payload_of_entry(
            entry, PayloadKind.GATE
        )
    for entry in _listed(report, "citations"):
        key = str(entry.get("nodeid") or entry.get("source"))
        payloads[key] = payload_of_entry(entry, PayloadKind.CITATION)
    for entry in _listed(report, "citation_documents"):
        key = str(entry.get("nodeid") or entry.get("document"))
        payloads[key] = payload_of_entry(entry, PayloadKind.CITATION_DOCUMENT)
    terminal = _Terminal(out, str(report.get("rootdir") or Path.cwd()), verbose)
    files = dict.fromkeys(_source_file(e)[0] for e in _listed(report, "gates") if e.get("source"))
    res = SimpleNamespace(
        warnings=list(warnings), settings=SimpleNamespace(gates_files=list(files))
    )
    write_summary(terminal, payloads, res)  # type: ignore[arg-type]
    missing = as_array(report.get("missing"))
    if missing:
        terminal.write_line(f"gates missing from every shard: {len(missing)}", red=True)
        for nodeid in missing:
            terminal.write_line(f"  {nodeid}", red=True)


def append_ledger(report: Mapping[str, object], ledger: Path) -> list[str]:
    """Every shard's records in one ledger (the records ride on the report's gates)."""
    from pytest_vgate.evidence import Ledger, Record

    records = []
    for entry in _listed(report, "gates"):
        for data in as_array(entry.get("records")):
            try:
                records.append(Record.from_dict(data))
            except (KeyError, TypeError, ValueError) as exc:
                return [f"a record of gate {entry.get('id')!r} cannot be read: {exc}"]
    return Ledger(ledger).append(records)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m pytest_vgate merge",
        description="Merge the --vgate-report files of sharded runs into one verdict.",
    )
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT")
    parser.add_argument("--gates", action="append", type=Path, default=[], metavar="FILE",
                        help="a gates file whose gates must all have run (repeatable)")  # fmt: skip
    parser.add_argument("--rootdir", type=Path, default=None,
                        help="where the reports' gates files are found (default: cwd)")  # fmt: skip
    parser.add_argument("--vgate-report", type=Path, default=None, metavar="PATH",
                        help="write the merged JSON report")  # fmt: skip
    parser.add_argument("--vgate-sarif", type=Path, default=None, metavar="PATH",
                        help="write one SARIF 2.1.0 log")  # fmt: skip
    parser.add_argument("--vgate-html", type=Path, default=None, metavar="PATH",
                        help="write the page of the merged report")  # fmt: skip
    parser.add_argument("--ledger", type=Path, default=None, metavar="PATH",
                        help="append every shard's evidence records to this ledger")  # fmt: skip
    parser.add_argument("-v", "--verbose", action="count", default=0)
    return parser


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    args = build_parser().parse_args(argv)
    try:
        rootdir = _root(args.rootdir)
        shards = [(path, read_shard(path)) for path in args.reports]
        check_same_run(shards)
        for path in args.gates:
            if not _regular(path):
                raise MergeError(f"--gates {path}: no such file (or not a regular file)")
        report, warnings = merge_reports(shards, args.gates, rootdir)
    except MergeError as exc:
        print(f"pytest-vgate merge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RecursionError, MemoryError) as exc:  # a report within bounds, still too big
        print(f"pytest-vgate merge: the reports are too large to merge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.ledger is not None:
        try:
            warnings.extend(append_ledger(report, args.ledger))
        except (OSError, ValueError) as exc:
            warnings.append(f"could not write the ledger {args.ledger}: {exc}")
    if args.vgate_report is not None:
        warning = write_json_report(args.vgate_report, sealed(report))
        if warning:
            warnings.append(warning)
    if args.vgate_sarif is not None:
        from pytest_vgate.exporters.sarif import build_sarif, write_sarif

        try:
            write_sarif(args.vgate_sarif, build_sarif(report))
        except (OSError, ValueError) as exc:
            warnings.append(f"could not write the SARIF log {args.vgate_sarif}: {exc}")
    if args.vgate_html is not None:
        from pytest_vgate.exporters.html import build_html, write_html

        try:
            write_html(args.vgate_html, build_html(report))
        except OSError as exc:
            warnings.append(f"could not write the page {args.vgate_html}: {exc}")
    render_summary(report, warnings, out, verbose=args.verbose)
    return EXIT_FAILED if merged_failed(report) else EXIT_OK


def _root(rootdir: Path | None) -> Path:
    """``--rootdir`` made absolute (``.`` is the cwd); it must be a folder."""
    try:
        root = (rootdir or Path.cwd()).absolute()
        if not root.is_dir():
            raise MergeError(f"--rootdir {rootdir}: not a folder")
        return Path(os.path.realpath(root))
    except (OSError, ValueError) as exc:
        raise MergeError(f"--rootdir {rootdir}: {exc}") from None


class _Parser(argparse.ArgumentParser):
    """A bad command line is a usage error, exit 4, as for pytest."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")
