"""End to end: citation items in real pytest sessions, plain and under ``-n 2``.

The fixture repository and its answer document (``helpers/citation_repo.py``) cover every
outcome and form; here they go through ``--vgate-cite``, a gates file's ``citations:``,
``--vgate-fix``, the summary block, the JSON report, selection and unusable documents.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from helpers.citation_repo import (
    CORRECTED,
    DROPPED,
    FABRICATED,
    UNSUPPORTED,
    VERIFIED,
    Case,
    CitationRepo,
)
from helpers.citation_repo import make_citation_repo as _make_repo
from helpers.report import read_report

DOC = "docs/answer.md"
RunVgate = Callable[..., tuple[pytest.RunResult, dict[str, dict[str, object]]]]


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> CitationRepo:
    """The fixture repository under ``pytester.path/repo``, as the working directory."""
    made = _make_repo(pytester.path)
    monkeypatch.chdir(made.root)
    return made


def doc_line(key: str) -> int:
    """``answer.md:28:src/app.py:43`` (the fixture's key) -> 28."""
    return int(key.split(":", 2)[1])


def cite_name(key: str) -> str:
    """The item name under a ``--vgate-cite`` document: ``L28:src/app.py:43``."""
    _, line, location = key.split(":", 2)
    return f"L{line}:{location}"


def not_judged(cases: dict[str, dict[str, object]]) -> int:
    """The items whose junit ``vgate_description`` says their description was not judged."""
    return sum(1 for c in cases.values() if c.get("vgate_description") == "not-judged")


def expected_block(entries: Iterable[tuple[str, Case]], root: Path, unjudged: int) -> list[str]:
    """The ``VERIFICATION GATE RESULT`` block, computed from the fixture's cases
    (``source``, case); ``unjudged`` from the items' own junit properties."""
    entries = list(entries)
    count = Counter(case.status for _, case in entries)
    caught = []
    for source, case in entries:
        if case.beyond_end:
            path = case.location.split(":")[0]
            lines = (root / path).read_bytes().count(b"\n")
            found = f"found at {case.corrected_to}" if case.status == CORRECTED else "not found"
            caught.append(
                f"{source} {case.location} (line beyond end of {lines}-line file, {found})"
            )
        elif case.status == FABRICATED:
            caught.append(f"{source} {case.location} (file not found in the root)")
    return [
        "VERIFICATION GATE RESULT:",
        f"- Total citations: {len(entries)}",
        f"- Verified at original location: {count[VERIFIED]}",
        f"- Corrected (line drift): {count[CORRECTED]}",
        f"- Dropped (file/line/content not found): {count[DROPPED] + count[FABRICATED]}",
        "- FABRICATIONS CAUGHT: " + ("Y — " + "; ".join(caught) if caught else "N"),
        f"- Unsupported (description contradicted by the cited lines): {count[UNSUPPORTED]}",
        f"- Descriptions not judged: {unjudged}",
    ]


def doc_entries(cases: dict[str, Case], document: str = DOC) -> list[tuple[str, Case]]:
    return [(f"{document}:{doc_line(key)}", case) for key, case in cases.items()]


def assert_summary_is_last_vgate_block(lines: list[str], block: list[str]) -> None:
    """The block is printed exactly, inside the vgate section, and nothing follows it there."""
    start = lines.index(block[0])
    assert lines[start : start + len(block)] == block, "\n".join(lines[start:])
    header = max(i for i, line in enumerate(lines[:start]) if line.startswith("="))
    assert " vgate " in lines[header], lines[header]
    after = lines[start + len(block) :]
    assert after and after[0].startswith("="), after[:3]


def assert_no_secret(repo: CitationRepo, *texts: str | bytes) -> None:
    for text in texts:
        data = text.encode() if isinstance(text, str) else text
        assert repo.secret.encode() not in data


def citation_counts(cases: dict[str, dict[str, object]]) -> Counter[str]:
    return Counter(str(c["vgate_citation"]) for c in cases.values() if "vgate_citation" in c)


def test_cite_option_every_outcome(
    repo: CitationRepo, run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    """--vgate-cite: every item's outcome, corrected location and source; the summary block;
    the JSON report; and not one byte of the secret outside the root, anywhere."""
    report = pytester.path / "report.json"
    result, cases = run_vgate("--vgate-cite", DOC, "--vgate-report", str(report))
    assert result.ret == 1, result.stdout.str()
    assert sum(citation_counts(cases).values()) == len(repo.cases)
    for key, case in repo.cases.items():
        got = cases[cite_name(key)]
        assert got["vgate_citation"] == case.status, (case.label, got)
        assert got.get("vgate_corrected_to") == case.corrected_to, (case.label, got)
        assert got["vgate_source"] == f"{DOC}:{doc_line(key)}", (case.label, got)
        assert got["outcome"] == ("passed" if case.status == VERIFIED else "failure"), case.label
        assert "vgate_fixed_from" not in got
        # through the one runner: a mode and a cause, like a gate's
        mode = (got["vgate_mode"], got.get("vgate_cause"))
        assert mode == (("pass", None) if case.status == VERIFIED else ("fail", "product"))
    # the block: exact, the last of the vgate section, its counts those of the items
    lines = result.stdout.lines
    block = expected_block(doc_entries(repo.cases), repo.root, not_judged(cases))
    assert_summary_is_last_vgate_block(lines, block)
    counts = citation_counts(cases)
    assert block[1:5] == [
        f"- Total citations: {sum(counts.values())}",
        f"- Verified at original location: {counts['verified']}",
        f"- Corrected (line drift): {counts['corrected']}",
        f"- Dropped (file/line/content not found): {counts['dropped'] + counts['fabricated']}",
    ]
    assert "citations rewritten by --vgate-fix" not in result.stdout.str()
    # the JSON report
    data = read_report(report)
    by_node = {entry["nodeid"]: entry for entry in data["citations"]}
    assert list(by_node) == [f"{DOC}::{cite_name(key)}" for key in repo.cases]  # document order
    for key, case in repo.cases.items():
        entry = by_node[f"{DOC}::{cite_name(key)}"]
        assert entry["source"] == f"{DOC}:{doc_line(key)}"
        assert entry["status"] == case.status
        assert entry["corrected_to"] == case.corrected_to
        assert case.location.split(":")[0] in entry["citation"]
    # a failure report shows the cited line and where the code really is
    out = result.stdout.str()
    assert "really at:  src/win.py:9: 'def crlf_second():'" in out
    assert_no_secret(repo, out, result.stderr.str(), (pytester.path / "junit.xml").read_bytes())
    assert_no_secret(repo, report.read_bytes())
    assert "INTERNALERROR" not in out


def test_gates_file_citations_with_a_glob(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run_vgate: RunVgate
) -> None:
    """``citations: ["docs/**/*.md"]`` in gates.yaml (a git work tree): every document
    matched becomes items under the gates file, named by their path, next to a gate."""
    repo = _make_repo(pytester.path, git=True)
    monkeypatch.chdir(repo.root)
    first_key, first = next(iter(repo.cases.items()))
    # the same line and location as the first citation, in a document of the same basename
    line = doc_line(first_key)
    extra = repo.root / "docs/extra/answer.md"
    extra.parent.mkdir()
    extra.write_text("# Extra\n" + "\n" * (line - 2) + f"- {first.location} — `exact_target`\n")
    check = json.dumps(f"{shlex.quote(sys.executable)} -c pass")
    (repo.root / "gates.yaml").write_text(
        f'gates:\n  - id: tree-is-here\n    check: {check}\ncitations: ["docs/**/*.md"]\n',
        encoding="utf-8",
    )
    result, cases = run_vgate("--vgate", "gates.yaml")
    assert result.ret == 1, result.stdout.str()
    assert cases["tree-is-here"]["outcome"] == "passed"
    for key, case in repo.cases.items():
        got = cases[f"docs/{key}"]
        assert got["vgate_citation"] == case.status, (case.label, got)
        assert got.get("vgate_corrected_to") == case.corrected_to, (case.label, got)
        assert got["vgate_source"] == f"{DOC}:{doc_line(key)}", (case.label, got)
    twin = cases[f"docs/extra/answer.md:{line}:{first.location}"]
    assert (twin["vgate_citation"], twin["vgate_source"]) == (
        "verified",
        f"docs/extra/answer.md:{line}",
    )
    entries = [*doc_entries(repo.cases), (f"docs/extra/answer.md:{line}", first)]
    assert_summary_is_last_vgate_block(
        result.stdout.lines, expected_block(entries, repo.root, not_judged(cases))
    )
    assert "gates: 1 (1 pass)" in result.stdout.str()
    assert_no_secret(repo, result.stdout.str(), (pytester.path / "junit.xml").read_bytes())


SPY_CONFTEST = """
import os

import pytest_vgate.citations as citations

_real = citations.fix_documents


def _logged(results, *args):
    results = list(results)
    if results:
        with open({log!r}, "a", encoding="utf-8") as fh:
            fh.write(os.environ.get("PYTEST_XDIST_WORKER", "controller") + "\\n")
    return _real(results, *args)


citations.fix_documents = _logged
"""


def test_fix_under_collect_only_rewrites_nothing(
    repo: CitationRepo, run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    """A session that only lists the items checks nothing, so it fixes nothing either
    (``vgate_fix = true`` in the ini file and a ``pytest --co`` rewrote the documents)."""
    result, _ = run_vgate("--vgate-cite", DOC, "--vgate-fix", "--collect-only")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert repo.answer.read_bytes() == repo.answer_bytes != repo.fixed_bytes


def test_fix_rewrites_exactly_the_corrected_citations(
    repo: CitationRepo,
    run_vgate: RunVgate,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--vgate-fix: the document's bytes become the fixture's fixed bytes (once, on the
    controller), the corrected items pass and say they were fixed, the block still counts
    them as corrected (and a line past the end as a fabrication); a second run verifies."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # when this suite runs in one
    log = pytester.path / "fixes.log"
    (repo.root / "conftest.py").write_text(SPY_CONFTEST.format(log=str(log)), encoding="utf-8")
    assert repo.answer.read_bytes() == repo.answer_bytes != repo.fixed_bytes
    result, cases = run_vgate("--vgate-cite", DOC, "--vgate-fix")
    assert repo.answer.read_bytes() == repo.fixed_bytes
    assert log.read_text().splitlines() == ["controller"]
    assert result.ret == 1, result.stdout.str()  # dropped and fabricated still fail
    lines = result.stdout.lines
    corrected = [
        (key, case, new_key)
        for (key, case), new_key in zip(repo.cases.items(), repo.fixed_cases, strict=True)
        if case.status == CORRECTED
    ]
    assert corrected
    assert f"citations rewritten by --vgate-fix: {len(corrected)}" in lines
    for key, case, new_key in corrected:
        got = cases[cite_name(new_key)]
        assert (got["outcome"], got["vgate_citation"]) == ("passed", "corrected"), case.label
        assert (got["vgate_mode"], got["vgate_corrected_to"]) == ("pass", case.corrected_to)
        fixed_from = got["vgate_fixed_from"]
        if case.location != case.fixed_location:
            assert fixed_from == case.location, case.label
            shown = f"  {DOC}:{doc_line(key)}: {case.location} -> {case.fixed_location}"
            assert shown in lines, shown
        else:  # a link whose text alone was wrong: the old text is named
            assert fixed_from and fixed_from != case.location, case.label
    for key, case in repo.cases.items():
        if case.status != CORRECTED:
            got = cases[cite_name(key)]
            assert got["vgate_citation"] == case.status and "vgate_fixed_from" not in got
    # the record survives the fix: counted as found, fabrications still caught
    block = expected_block(doc_entries(repo.cases), repo.root, not_judged(cases))
    assert_summary_is_last_vgate_block(lines, block)

    again, cases = run_vgate("--vgate-cite", DOC)
    assert repo.answer.read_bytes() == repo.fixed_bytes
    for key, case in repo.fixed_cases.items():
        got = cases[cite_name(key)]
        assert got["vgate_citation"] == case.status, (case.label, got)
        assert "vgate_fixed_from" not in got
    assert "- Corrected (line drift): 0" in again.stdout.lines
    assert "citations rewritten by --vgate-fix" not in again.stdout.str()
    assert log.read_text().splitlines() == ["controller"]  # nothing to fix, nothing written


def test_selection_and_stable_readable_node_ids(
    repo: CitationRepo, pytester: pytest.Pytester
) -> None:
    """``--collect-only``, ``-m vgate``, ``-k`` and a node id select citation items; the
    ids are ``DOCUMENT::LLINE:PATH:LINE``, a function of the document alone."""
    (repo.root / "test_plain.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate-cite", DOC, *args)

    collected = run("--collect-only", "-q")
    ids = [line for line in collected.stdout.lines if "::" in line]
    # The document alone: the suite (test_plain.py) is neither collected nor run.
    assert ids == [f"{DOC}::{cite_name(key)}" for key in repo.cases]

    win = [case.status for case in repo.cases.values() if case.location.startswith("src/win.py")]
    assert sorted(win) == [CORRECTED, VERIFIED]
    picked = run("-m", "vgate", "-k", "src/win.py or test_plain")
    picked.assert_outcomes(passed=1, failed=1, deselected=len(repo.cases) - 2)

    beyond = next(k for k, c in repo.cases.items() if c.beyond_end and c.status == CORRECTED)
    one = run(f"{DOC}::{cite_name(beyond)}")
    one.assert_outcomes(failed=1)
    assert "- Corrected (line drift): 1" in one.stdout.lines


def _setpriv_prefix() -> list[str] | None:
    """Root reads any file; without CAP_DAC_OVERRIDE it obeys ``chmod 000`` like a user."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


UNUSABLE = {
    # name: (file content or None for no file, expected exit code, words in the output)
    "missing": (None, pytest.ExitCode.USAGE_ERROR, ["file not found", "nowhere.md"]),
    "binary": (b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)) * 4, 1, ["binary", "doc.md"]),
    "utf-16": ("src/app.py:1 — `x`\n".encode("utf-16"), 1, ["binary", "doc.md"]),
    "unreadable": (
        b"src/app.py:1 \xe2\x80\x94 imports\n",
        1,
        ["cannot read", "doc.md", "Permission denied"],
    ),
    # not an error: stray bytes are replaced, the document's citations are still checked
    "undecodable": (b"caf\xe9 \xff\xfe: src/app.py:3 - the `functools` import\n", 0, ["1 passed"]),
}


@pytest.mark.parametrize("kind", list(UNUSABLE))
def test_unusable_document_is_a_clear_error(
    kind: str, repo: CitationRepo, pytester: pytest.Pytester
) -> None:
    """A missing document is a usage error; a binary, UTF-16 or unreadable one is a failed
    document item (mode ``error``) that names it and says why, without a traceback, and
    the block is still printed; stray non-UTF-8 bytes are no error at all."""
    content, code, words = UNUSABLE[kind]
    name = "nowhere.md" if content is None else "doc.md"
    if content is not None:
        (repo.root / name).write_bytes(content)
    prefix: list[str] = []
    if kind == "unreadable":
        (repo.root / name).chmod(0)
        unprivileged = _setpriv_prefix()
        if unprivileged is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        prefix = unprivileged
    result = pytester.run(
        *prefix, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vgate-cite", name
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == code, out
    for word in words:
        assert word in out, (word, out)
    assert "INTERNALERROR" not in out
    assert "Traceback" not in out and "citation_items.py" not in out, out
    if code == 1:
        assert "doc.md: not audited:" in out and "- Total citations: 0" in out, out


def test_a_bad_document_in_a_gates_file_spares_its_neighbours(
    repo: CitationRepo, run_vgate: RunVgate
) -> None:
    """Plain and under xdist: the binary document is one failed item (mode ``error``)
    naming it; the gates file's gate and its other document are collected and run."""
    (repo.root / "docs/blob.md").write_bytes(b"\x00\x01 src/app.py:3 - imports\n")
    (repo.root / "gates.yaml").write_text(
        'citations: ["docs/*.md"]\ngates:\n  - id: ok\n    check: python -c pass\n'
        "    tools: [python]\n    red: not-required\n",
        encoding="utf-8",
    )
    result, cases = run_vgate("--vgate", "gates.yaml")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert cases["ok"]["outcome"] == "passed", cases["ok"]
    blob = cases["docs/blob.md"]
    assert (blob["outcome"], blob["vgate_mode"], blob["vgate_cause"]) == (
        "failure",
        "error",
        "broken_test",
    )
    assert "docs/blob.md was not audited: it is binary" in out
    assert sum(1 for name in cases if name.startswith("docs/answer.md:")) == len(repo.cases)
    assert f"- Total citations: {len(repo.cases)}" in result.stdout.lines
    assert "INTERNALERROR" not in out


def test_a_folder_given_to_cite_is_a_usage_error(
    repo: CitationRepo, pytester: pytest.Pytester
) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate-cite", "docs")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "docs" in result.stderr.str()


DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "citations.md"


def marked_blocks(page: Path, marker: str) -> list[tuple[str, str]]:
    """(argument, body) of each fenced block right below ``<!-- marker: argument -->``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    for index, line in enumerate(lines):
        if line.startswith(f"<!-- {marker}: ") and line.endswith(" -->"):
            argument = line[len(f"<!-- {marker}: ") : -len(" -->")]
            end = lines.index("```", index + 2)
            blocks.append((argument, "\n".join(lines[index + 2 : end]) + "\n"))
    return blocks


def test_the_documented_session_is_what_pytest_prints(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/citations.md's example: its files, its outputs and its fixed document."""
    monkeypatch.chdir(pytester.path)
    for name, body in marked_blocks(DOCS_PAGE, "example-file"):
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text(body, encoding="utf-8")
    outputs = marked_blocks(DOCS_PAGE, "example-output")
    assert len(outputs) == 3
    for args in dict.fromkeys(args for args, _ in outputs):  # in the page's order
        lines = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args.split()).stdout.lines
        for _, body in (o for o in outputs if o[0] == args):
            shown = body.splitlines()
            start = lines.index(shown[0])
            assert lines[start : start + len(shown)] == shown, "\n".join(lines)
    ((name, fixed),) = marked_blocks(DOCS_PAGE, "example-fixed")
    assert (pytester.path / name).read_text(encoding="utf-8") == fixed


# --- every document visibly audited, once ----------------------------------------------


def test_a_document_without_citations_prints_the_block_with_zeros(
    repo: CitationRepo, run_vgate: RunVgate
) -> None:
    """Alone, it is one passing document item: the session exits 0, not 5."""
    (repo.root / "docs/empty.md").write_text("# Nothing cited here\n\nJust prose.\n")
    result, cases = run_vgate("--vgate-cite", "docs/empty.md")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert cases["document"]["outcome"] == "passed"
    assert cases["document"]["vgate_mode"] == "pass"
    assert "citation documents: 1: docs/empty.md (0)" in result.stdout.lines
    assert_summary_is_last_vgate_block(
        result.stdout.lines,
        [
            "VERIFICATION GATE RESULT:",
            "- Total citations: 0",
            "- Verified at original location: 0",
            "- Corrected (line drift): 0",
            "- Dropped (file/line/content not found): 0",
            "- FABRICATIONS CAUGHT: N",
            "- Unsupported (description contradicted by the cited lines): 0",
            "- Descriptions not judged: 0",
        ],
    )


def test_the_same_document_given_twice_is_counted_once(
    repo: CitationRepo, run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    (repo.root / "gates.yaml").write_text(f"citations: [{DOC}, 'docs/*.md']\n", encoding="utf-8")
    (repo.root / "gates2.yaml").write_text(f"citations: [{DOC}]\n", encoding="utf-8")
    report = pytester.path / "twice.json"
    result, cases = run_vgate(
        "--vgate-cite", DOC, "--vgate", "gates.yaml", "--vgate", "gates2.yaml",
        "--vgate-report", str(report),
    )  # fmt: skip
    assert f"- Total citations: {len(repo.cases)}" in result.stdout.lines, result.stdout.str()
    assert sum(citation_counts(cases).values()) == len(repo.cases)
    data = json.loads(report.read_text(encoding="utf-8"))
    assert len(data["citations"]) == len(repo.cases)
    assert all(e["nodeid"].startswith("gates.yaml::") for e in data["citations"])


def test_item_words_and_block_words_agree(repo: CitationRepo, run_vgate: RunVgate) -> None:
    """A fabricated citation says ``fabricated`` on its item and is listed under
    FABRICATIONS CAUGHT; a line past the end found elsewhere says so on both."""
    result, cases = run_vgate("--vgate-cite", DOC)
    out = result.stdout.str()
    block = next(line for line in result.stdout.lines if line.startswith("- FABRICATIONS"))
    for key, case in repo.cases.items():
        if case.status == FABRICATED or case.beyond_end:
            assert f"{DOC}:{doc_line(key)} {case.location} (" in block, case.label
            assert f"citation {case.location} ({DOC}:{doc_line(key)}) is {case.status}" in out
            got = cases[cite_name(key)]
            assert got["vgate_citation"] == case.status
        if case.beyond_end:
            assert "fabrication sign: the cited line is beyond the end of the file" in out


# --- the record survives the fix --------------------------------------------------------


def test_the_json_report_keeps_the_original_and_the_corrected_citation(
    repo: CitationRepo, run_vgate: RunVgate, pytester: pytest.Pytester
) -> None:
    report, sarif = pytester.path / "fixed.json", pytester.path / "fixed.sarif"
    result, _ = run_vgate(
        "--vgate-cite", DOC, "--vgate-fix", "--vgate-report", str(report),
        "--vgate-sarif", str(sarif),
    )  # fmt: skip
    assert repo.answer.read_bytes() == repo.fixed_bytes, result.stdout.str()
    data = json.loads(report.read_text(encoding="utf-8"))
    entries = {e["source"]: e for e in data["citations"] if e.get("original")}
    beyond = [(k, c) for k, c in repo.cases.items() if c.beyond_end and c.status == CORRECTED]
    assert beyond
    for key, case in beyond:
        entry = entries[f"{DOC}:{doc_line(key)}"]
        assert entry["status"] == "corrected" and entry["fixed_from"] == case.location
        assert entry["original"]["citation"]["raw"].endswith(case.location.split("/")[-1])
        assert entry["original"]["beyond_end"] is True
        assert entry["original"]["corrected_to"] == case.corrected_to
        assert entry["result"]["status"] == "verified"
        assert entry["location"] == case.fixed_location
    n_corrected = sum(1 for c in repo.cases.values() if c.status == CORRECTED)
    assert len(entries) == n_corrected
    # fixed in this run, the document is right now: no SARIF finding asks for a fix
    rules = [
        r.get("ruleId") for run in json.loads(sarif.read_text())["runs"] for r in run["results"]
    ]
    assert "citation-corrected" not in rules and "citation-fabricated" in rules, rules


# --- what a session never reads, and never hangs on -------------------------------------

HANG_BOUND = 240  # seconds: generous; the faults below hung for ever before


def _bounded(pytester: pytest.Pytester, dist_args: list[str], *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *dist_args, *args, timeout=HANG_BOUND
    )


def test_fifos_at_a_cited_path_and_under_a_glob_never_hang(
    repo: CitationRepo, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    os.mkfifo(repo.root / "src/pipe.py")
    os.mkfifo(repo.root / "docs/pipe.md")
    (repo.root / "docs/pipes.md").write_text("- src/pipe.py:1 — `reader`\n", encoding="utf-8")
    (repo.root / "gates.yaml").write_text('citations: ["docs/*.md"]\n', encoding="utf-8")
    junit = pytester.path / "pipes.xml"
    result = _bounded(pytester, dist_args, "--vgate", "gates.yaml", f"--junitxml={junit}")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    from helpers.junit import junit_cases

    cases = junit_cases(junit)
    pipe_doc = cases["docs/pipe.md"]
    assert (pipe_doc["outcome"], pipe_doc["vgate_mode"]) == ("failure", "error")
    assert "docs/pipe.md: not audited: it is a named pipe (FIFO), not a regular file" in out
    cited = cases["docs/pipes.md:1:src/pipe.py:1"]
    assert cited["vgate_citation"] == "dropped"
    assert "src/pipe.py is a named pipe (FIFO), not a regular file" in out
    assert f"- Total citations: {len(repo.cases) + 1}" in result.stdout.lines


def test_a_fifo_given_to_cite_is_a_usage_error_not_a_hang(
    repo: CitationRepo, pytester: pytest.Pytester
) -> None:
    os.mkfifo(repo.root / "docs/live.md")
    result = _bounded(pytester, [], "--vgate-cite", "docs/live.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "docs/live.md is not a regular file (a named pipe" in result.stderr.str()


def test_globs_with_symlink_loops_terminate(
    repo: CitationRepo, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    deep = repo.root / "docs/a/b"
    deep.mkdir(parents=True)
    (deep / "note.md").write_text("- src/app.py:3 — the `functools` import\n", encoding="utf-8")
    (deep / "up").symlink_to("../..")
    (deep / "up2").symlink_to("../../..")
    (repo.root / "docs/a/loop").symlink_to("..")
    (repo.root / "docs/root").symlink_to(repo.root)
    (repo.root / "gates.yaml").write_text('citations: ["docs/**/*.md"]\n', encoding="utf-8")
    # gates.yaml as the only collection argument: pytest's own walk of the folder (what it
    # does without arguments) follows these links too, and is pytest's, not the plugin's
    result = _bounded(pytester, dist_args, "--vgate", "gates.yaml", "gates.yaml")
    out = result.stdout.str()
    assert f"- Total citations: {len(repo.cases) + 1}" in result.stdout.lines, out
    assert "INTERNALERROR" not in out


def test_a_citation_into_git_metadata_leaks_no_token(
    repo: CitationRepo, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    token = "ghp_" + "vgateTokenNeverShown0123456789abcd"
    (repo.root / ".git").mkdir()
    (repo.root / ".git/config").write_text(
        f'[remote "origin"]\n\turl = https://bot:{token}@github.com/o/r.git\n', encoding="utf-8"
    )
    (repo.root / "docs/git.md").write_text(
        "- .git/config:2 — the `url` of origin\n- .git/config:99 — the `url`\n",
        encoding="utf-8",
    )
    junit, report = pytester.path / "git.xml", pytester.path / "git.json"
    result = _bounded(
        pytester, dist_args, "--vgate-cite", "docs/git.md", "-v", "-rA",
        f"--junitxml={junit}", "--vgate-report", str(report),
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "lies inside .git/, version-control metadata" in out
    for text in (out, junit.read_text(encoding="utf-8"), report.read_text(encoding="utf-8")):
        assert token not in text
        assert "github.com/o/r" not in text


def test_fix_refuses_a_path_with_a_space_and_says_so(
    repo: CitationRepo, pytester: pytest.Pytester
) -> None:
    (repo.root / "my docs").mkdir()
    (repo.root / "my docs/tool.py").write_text("\n" * 5 + "def spaced():\n    pass\n")
    doc = repo.root / "docs/space.md"
    written = "- see my docs/tool.py:6 — `spaced`\n".encode()
    doc.write_bytes(written)
    for _ in range(2):
        result = _bounded(pytester, [], "--vgate-cite", "docs/space.md", "--vgate-fix")
        assert doc.read_bytes() == written, result.stdout.str()
        assert "vgate warning: --vgate-fix refused: " in result.stdout.str()
        assert "'my docs/tool.py' cannot be written as a citation" in result.stdout.str()


def test_fix_then_a_plain_run_passes_every_fixed_corpus_citation(
    pytester: pytest.Pytester, run_vgate: RunVgate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The labelled corpus of what lines do, in a real session: each status as labelled
    (``unsupported`` on its own line of the block), then --vgate-fix, then a plain run in
    which every fixed citation passes and nothing is left to fix."""
    from helpers.citation_corpus import SEED
    from helpers.verb_corpus import verb_rows

    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    rows, _ = verb_rows(pytester.path, SEED)
    lines = ["# What the lines do", ""] + [text for _, text, _, _ in rows]
    (pytester.path / "answer.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = {f"L{n}:{text.split(' ', 2)[1]}": row for n, (row, text) in enumerate(
        ((row, row[1]) for row in rows), start=3)}  # fmt: skip
    result, cases = run_vgate("--vgate-cite", "answer.md", "--vgate-fix")
    assert len(cases) == len(rows) >= 300
    counts = Counter(status for _, _, status, _ in rows)
    assert f"citations rewritten by --vgate-fix: {counts[CORRECTED]}" in result.stdout.lines
    unsupported = (
        f"- Unsupported (description contradicted by the cited lines): {counts[UNSUPPORTED]}"
    )
    assert unsupported in result.stdout.lines
    assert counts[UNSUPPORTED] >= 30
    fixed_names = []
    for name, (kind, text, status, to) in labels.items():
        if status == CORRECTED:
            line = name.split(":", 1)[0]
            fixed_names.append(f"{line}:{to}")
            continue
        assert cases[name]["vgate_citation"] == status, (kind, text, cases[name])
    again, cases = run_vgate("--vgate-cite", "answer.md")
    assert "citations rewritten by --vgate-fix" not in again.stdout.str()
    for name in fixed_names:
        assert (cases[name]["outcome"], cases[name]["vgate_citation"]) == ("passed", VERIFIED)
    passed = sum(1 for case in cases.values() if case["outcome"] == "passed")
    assert passed == counts[VERIFIED] + counts[CORRECTED]
    assert "- Corrected (line drift): 0" in again.stdout.lines


# --- descriptions: judged only where the syntax can, else by a judge, fail-closed -------

JUDGED_SRC = """\
__version__ = "8.0.2"


def ordinal(value, gender="male"):
    suffixes = {"male": "th", "female": "e"}
    return f"{value}{suffixes[gender]}"
"""
JUDGES = """\
import time

import pytest
from pytest_vgate import Outcome


@pytest.hookimpl
def pytest_vgate_judge(gate, context):
    assert gate.type.value == "semantic" and gate.check.startswith("m.py:")
    claim = gate.claim
    if "gender" in claim:
        return Outcome.passed("keyed by gender: it is")
    if "quota" in claim:
        return Outcome.failed("no quota in sight")
    if "boom" in claim:
        raise RuntimeError("the judge broke")
    if "hang" in claim:
        time.sleep(30)
    if "junk" in claim:
        return True
    return None
"""
FIVE = (
    "VERIFICATION GATE RESULT:", "- Total citations: ", "- Verified at original location: ",
    "- Corrected (line drift): ", "- Dropped (file/line/content not found): ",
    "- FABRICATIONS CAUGHT: ",
)  # fmt: skip


def assert_five_contiguous(lines: list[str]) -> None:
    """The block's first line and its five counts, contiguous and in order, as consumers
    parse them; the further counts only after the FABRICATIONS line."""
    start = lines.index("VERIFICATION GATE RESULT:")
    head = lines[start : start + len(FIVE)]
    assert [line[: len(label)] for line, label in zip(head, FIVE, strict=True)] == list(FIVE)
    assert lines[start + 6].startswith("- Unsupported (description contradicted")
    assert lines[start + 7].startswith("- Descriptions not judged: ")


@pytest.mark.slow  # the hanging judge is held to a real deadline
def test_a_judge_decides_what_the_syntax_cannot_and_fails_closed(
    pytester: pytest.Pytester, run_vgate: RunVgate
) -> None:
    pytester.makefile(".py", m=JUDGED_SRC)
    pytester.makeconftest(JUDGES)
    (pytester.path / "answer.md").write_text(
        "- m.py:5 — `ordinal` is now keyed by gender\n"  # judged: passes
        "- m.py:5 — `ordinal` is throttled by the quota\n"  # judged: fails
        "- m.py:5 — `ordinal` goes boom\n"  # the judge raises: error
        "- m.py:5 — `ordinal` may hang\n"  # the judge hangs: timeout
        "- m.py:5 — `ordinal` is junk\n"  # junk: fail, broken_test
        "- m.py:5 — `ordinal` has nothing for the judge\n"  # declined: not judged, passes
        "- m.py:1 — `__version__` is bumped to 8.0.3\n"  # the syntax decides: no judge
        "- m.py:1 — `__version__` is bumped to 8.0.2\n"
    )
    report = pytester.path / "r.json"
    result, cases = run_vgate(
        "--vgate-cite", "answer.md", "--vgate-timeout", "3", f"--vgate-report={report}"
    )
    got = [
        (c["outcome"], c["vgate_citation"], c.get("vgate_description"), c["vgate_mode"],
         c.get("vgate_cause"))
        for _, c in sorted(cases.items(), key=lambda kv: int(kv[0].split(":")[0][1:]))
    ]  # fmt: skip
    assert got == [
        ("passed", "verified", "judged", "pass", None),
        ("failure", "unsupported", "judged", "fail", "product"),
        ("failure", "unsupported", "judged", "error", "broken_test"),
        ("failure", "unsupported", "judged", "timeout", "environment"),
        ("failure", "unsupported", "judged", "fail", "broken_test"),
        ("passed", "verified", "not-judged", "pass", None),
        ("failure", "unsupported", "contradicted", "fail", "product"),
        ("passed", "verified", "shown", "pass", None),
    ]
    assert result.ret == 1
    entries = read_report(report)["citations"]
    assert [e["description"] for e in entries] == [c[2] for c in got]
    assert "no quota in sight" in entries[1]["description_reason"]
    lines = result.stdout.lines
    assert_five_contiguous(lines)
    assert "- Descriptions not judged: 1" in lines


def test_the_block_is_the_same_shape_merged(
    repo: CitationRepo, run_vgate: RunVgate, tmp_path: Path
) -> None:
    """The five counts stay contiguous in a session's summary and in the merge of its
    report (``python -m pytest_vgate merge``), and both print the same block."""
    import subprocess

    report = tmp_path / "shard.json"
    result, _ = run_vgate("--vgate-cite", DOC, f"--vgate-report={report}")
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_vgate", "merge", str(report)],
        cwd=repo.root, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    lines, merged_lines = result.stdout.lines, merged.stdout.splitlines()
    assert_five_contiguous(lines)
    assert_five_contiguous(merged_lines)
    start, other = lines.index(FIVE[0]), merged_lines.index(FIVE[0])
    assert merged_lines[other : other + 8] == lines[start : start + 8]
