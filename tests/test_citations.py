"""The citation core on real files: parse, resolve inside the root, locate, fix, summarize."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from helpers.citation_repo import CitationRepo, make_citation_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_vgate.citations import (
    Citation,
    CitationChecker,
    CitationForm,
    CitationResult,
    extract_entities,
    fix_documents,
    parse_citations,
    split_lines,
    summary_block,
)
from pytest_vgate.gatesfile import GatesFileError, load_gates_file
from pytest_vgate.verdict import CitationDescription, CitationStatus

NOT_JUDGED = CitationDescription.NOT_JUDGED


@pytest.fixture(params=["walk", "git"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> CitationRepo:
    """The fixture repository, indexed by a folder walk or by ``git ls-files``."""
    return make_citation_repo(tmp_path, git=request.param == "git")


def check_document(root: Path, answer: Path) -> list[CitationResult]:
    return [CitationChecker(root).check(c) for c in parse_citations(answer)]


# --- the acceptance document -----------------------------------------------------------


def test_every_case_has_its_outcome_and_location(repo: CitationRepo) -> None:
    results = check_document(repo.root, repo.answer)
    by_name = {r.citation.node_name: r for r in results}
    assert sorted(by_name) == sorted(repo.cases), "parsed citations differ from the cases"
    wrong = {
        name: (case.label, (r.status.value, r.corrected_to), (case.status, case.corrected_to))
        for name, case in repo.cases.items()
        if (r := by_name[name]).status.value != case.status or r.corrected_to != case.corrected_to
    }
    assert wrong == {}
    for name, case in repo.cases.items():
        assert by_name[name].beyond_end is case.beyond_end, case.label
        assert by_name[name].outside_root is case.outside_root, case.label


def test_index_source_follows_the_tree(repo: CitationRepo) -> None:
    checker = CitationChecker(repo.root)
    for citation in parse_citations(repo.answer):
        checker.check(citation)
    git = (repo.root / ".git").exists()
    assert checker.files.index_source == ("git" if git else "walk")


def test_nothing_from_outside_the_root_appears_anywhere(repo: CitationRepo) -> None:
    results = check_document(repo.root, repo.answer)
    dumped = json.dumps([r.to_dict() for r in results], ensure_ascii=False)
    dumped += summary_block(results, repo.root)
    dumped += "".join(r.reason + str(r.cited_text) + str(r.corrected_text) for r in results)
    assert repo.secret in (repo.outside / "secret.py").read_text()  # the trap is armed
    assert repo.secret not in dumped
    outside = [r for r in results if r.outside_root]
    assert len(outside) == sum(c.outside_root for c in repo.cases.values()) == 4
    assert all(r.cited_text is None and r.file_lines is None for r in outside)
    why = {c.label: r.reason for r in results if (c := repo.cases[r.citation.node_name])}
    assert "is a path that leaves the root" in why["dot-dot escape"]
    assert "is an absolute path" in why["absolute path"]
    assert "is a symlink that leads outside the root" in why["symlink out"]
    assert "is a symlink that leads outside the root" in why["symlinked folder out"]


@pytest.mark.timeout(20)
def test_outside_files_are_never_opened(tmp_path: Path) -> None:
    """A FIFO blocks whoever opens it: refusing before reading is the only way to finish."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    os.mkfifo(tmp_path / "trap.py")
    (root / "src/trap.py").symlink_to(tmp_path / "trap.py")
    (root / "copy").mkdir()
    (root / "copy/trap.py").symlink_to(tmp_path / "trap.py")
    doc = root / "a.md"
    doc.write_text(
        "- src/trap.py:1 — `x`\n- ../trap.py:1 — `x`\n"
        f"- {tmp_path}/trap.py:1 — `x`\n- missing/trap.py:1 — `x`\n"
    )
    results = check_document(root, doc)
    assert [r.status for r in results] == [CitationStatus.DROPPED] * 3 + [CitationStatus.FABRICATED]


def test_cited_and_corrected_text_are_the_real_lines(repo: CitationRepo) -> None:
    results = {r.citation.node_name: r for r in check_document(repo.root, repo.answer)}
    lines = {c.label: results[name] for name, c in repo.cases.items()}
    assert lines["form feed"].cited_text == "\x0cdef after_formfeed():"
    assert lines["CRLF + BOM"].cited_text == "def crlf_func():"  # no CR, no BOM
    assert lines["drift by 5"].corrected_text == "def drift_five():"
    assert lines["beyond end, found"].cited_text is None
    assert lines["beyond end, found"].corrected_text == "def late_binding():"
    assert lines["beyond end, found"].file_lines == len(
        (repo.root / "src/app.py").read_text().split("\n")[:-1]
    )
    assert lines["unique basename"].corrected_text == "def unique_helper():"
    assert lines["binary"].cited_text is None


def test_summary_block_counts_and_lists_fabrications(repo: CitationRepo) -> None:
    results = check_document(repo.root, repo.answer)
    statuses = [c.status for c in repo.cases.values()]
    caught = [
        (name, c) for name, c in repo.cases.items() if c.status == "fabricated" or c.beyond_end
    ]
    block = summary_block(results, repo.root)
    lines = block.split("\n")
    assert lines[:5] == [
        "VERIFICATION GATE RESULT:",
        f"- Total citations: {len(statuses)}",
        f"- Verified at original location: {statuses.count('verified')}",
        f"- Corrected (line drift): {statuses.count('corrected')}",
        "- Dropped (file/line/content not found): "
        f"{statuses.count('dropped') + statuses.count('fabricated')}",
    ]
    assert len(lines) == 8
    assert lines[5].startswith("- FABRICATIONS CAUGHT: Y — docs/answer.md:")
    assert lines[6:] == [
        "- Unsupported (description contradicted by the cited lines): "
        f"{statuses.count('unsupported')}",
        f"- Descriptions not judged: {sum(r.description is NOT_JUDGED for r in results)}",
    ]
    entries = lines[5].removeprefix("- FABRICATIONS CAUGHT: Y — ").split("; ")
    assert len(entries) == len(caught) == 4
    for entry, (name, case) in zip(entries, caught, strict=True):
        line = name.split(":")[1]
        assert entry.startswith(f"docs/answer.md:{line} {case.location} (")
    assert "line beyond end of 386-line file, found at src/app.py:385" in lines[5]


def test_summary_block_without_fabrications_says_n(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    doc = tmp_path / "answer.md"
    doc.write_text("a.py:1 — `f`\na.py:2 — `g`\n")
    block = summary_block(check_document(tmp_path, doc))
    assert block == (
        "VERIFICATION GATE RESULT:\n- Total citations: 2\n- Verified at original location: 1\n"
        "- Corrected (line drift): 0\n- Dropped (file/line/content not found): 1\n"
        "- FABRICATIONS CAUGHT: N\n"
        "- Unsupported (description contradicted by the cited lines): 0\n"
        "- Descriptions not judged: 1"
    )


# --- fixing ------------------------------------------------------------------------------


def test_fix_changes_exactly_the_corrected_citations(repo: CitationRepo) -> None:
    results = check_document(repo.root, repo.answer)
    corrected = sum(r.status is CitationStatus.CORRECTED for r in results)
    assert repo.answer.read_bytes() == repo.answer_bytes
    assert fix_documents(results) == {repo.answer: corrected}
    assert repo.answer.read_bytes() == repo.fixed_bytes  # BOM, CRLF, bad bytes all kept
    assert fix_documents(results) == {}  # idempotent
    assert repo.answer.read_bytes() == repo.fixed_bytes
    after = {r.citation.node_name: r for r in check_document(repo.root, repo.answer)}
    assert sorted(after) == sorted(repo.fixed_cases)
    for name, case in repo.fixed_cases.items():
        assert (after[name].status.value, after[name].corrected_to) == (
            case.status,
            case.corrected_to,
        ), case.label


def test_fix_works_from_results_that_crossed_a_process_boundary(repo: CitationRepo) -> None:
    results = check_document(repo.root, repo.answer)
    wire = json.loads(json.dumps([r.to_dict() for r in results]))
    back = [CitationResult.from_dict(d) for d in wire]
    assert back == results
    fix_documents(back)
    assert repo.answer.read_bytes() == repo.fixed_bytes


def test_fixing_one_citation_at_a_time_gives_the_same_bytes(repo: CitationRepo) -> None:
    results = check_document(repo.root, repo.answer)
    for result in reversed(results):  # later edits first, then earlier ones on shifted text
        fix_documents([result])
    assert repo.answer.read_bytes() == repo.fixed_bytes


def test_fixing_in_document_order_survives_shifted_columns(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("\n" * 9 + "def f():\n    pass\n\n\ndef g():\n    pass\n")
    doc = tmp_path / "answer.md"
    doc.write_text("a.py:1 — `f`; a.py:2 — `g`; a.py:3 — `f`\n")
    results = check_document(tmp_path, doc)
    assert [r.corrected_to for r in results] == ["a.py:10", "a.py:14", "a.py:10"]
    for result in results:
        fix_documents([result])
    assert doc.read_text() == "a.py:10 — `f`; a.py:14 — `g`; a.py:10 — `f`\n"


def test_fix_leaves_a_document_that_changed_since_the_check(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("\n\n\ndef f():\n    pass\n")
    doc = tmp_path / "answer.md"
    doc.write_text("a.py:1 — `f`\n")
    results = check_document(tmp_path, doc)
    assert results[0].corrected_to == "a.py:4"
    for changed in ("new intro\na.py:1 — `f`\n", "b.py:1 — `f`\n"):
        doc.write_text(changed)
        assert fix_documents(results) == {}
        assert doc.read_text() == changed


@pytest.mark.parametrize("kind", ["read-only", "hard-linked"])
def test_fix_leaves_a_read_only_or_hard_linked_document_and_says_why(
    tmp_path: Path, kind: str
) -> None:
    """A rewrite puts a new file in the document's place: it would ignore a read-only
    mode and cut the document off from its hard links. Refused, with the reason."""
    (tmp_path / "a.py").write_text("\n\n\ndef f():\n    pass\n")
    doc = tmp_path / "answer.md"
    doc.write_text("a.py:1 — `f`\n")
    results = check_document(tmp_path, doc)
    assert results[0].corrected_to == "a.py:4"
    if kind == "read-only":
        doc.chmod(0o444)
        says = "it is read-only"
    else:
        os.link(doc, tmp_path / "copy.md")
        says = "it has 2 hard links"
    refused: list[str] = []
    assert fix_documents(results, refused) == {}
    assert doc.read_text() == "a.py:1 — `f`\n"
    assert len(refused) == 1 and says in refused[0], refused
    if kind == "hard-linked":
        assert os.path.samefile(doc, tmp_path / "copy.md")


def test_fix_keeps_column_and_writes_moved_paths(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text("x = 1\n\ndef g():\n    pass\n")
    doc = tmp_path / "answer.md"
    doc.write_text("see old/mod.py:1:7 — `g`, and [old/mod.py#L1](old/mod.py#L1-L2) for `g`\n")
    results = check_document(tmp_path, doc)
    assert [r.corrected_to for r in results] == ["pkg/mod.py:3", "pkg/mod.py:3-4"]
    fix_documents(results)
    assert doc.read_text() == (
        "see pkg/mod.py:3:7 — `g`, and [pkg/mod.py#L3](pkg/mod.py#L3-L4) for `g`\n"
    )
    assert {r.status for r in check_document(tmp_path, doc)} == {CitationStatus.VERIFIED}


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prose",
    [
        "served on localhost:8000 today",
        "see http://localhost:8000/x and https://example.com:443/a.py:3",
        "we meet at 12:30 or 12:30:45",
        "version 1.2.3, v1.2.3:4 and python3.11:5",
        "the host example.com:8080 and 127.0.0.1:8000 and db.internal:5432",
        "ssh user@host:22 or git@github.com:owner/repo.git",
        "http://host/view?file=a.py:3&x=1 and <https://host/?f=b.py:4>",
        "a ratio of 3:1, chapter 4:12",
        "```\nsrc/app.py:3 — in a fence\n```",
        "~~~~python\nsrc/app.py:3\n~~~\nstill code src/app.py:4\n~~~~",
    ],
)
def test_non_citations(prose: str) -> None:
    assert parse_citations(Path("answer.md"), prose + "\n") == []


@pytest.mark.parametrize(
    ("raw", "form", "path", "start", "end", "column"),
    [
        ("src/app.py:12", CitationForm.COLON, "src/app.py", 12, 12, None),
        ("src/app.py:12-20", CitationForm.RANGE, "src/app.py", 12, 20, None),
        ("src/app.py:12–20", CitationForm.RANGE, "src/app.py", 12, 20, None),
        ("src/app.py:12:5", CitationForm.COLON_COL, "src/app.py", 12, 12, 5),
        ("src/app.py#L12", CitationForm.HASH, "src/app.py", 12, 12, None),
        ("src/app.py#L12-L20", CitationForm.HASH_RANGE, "src/app.py", 12, 20, None),
        ("src/app.py#L12-20", CitationForm.HASH_RANGE, "src/app.py", 12, 20, None),
        ("[here](src/app.py#L12)", CitationForm.MARKDOWN_LINK, "src/app.py", 12, 12, None),
        ("Makefile:7", CitationForm.COLON, "Makefile", 7, 7, None),
        ("scripts/run:7", CitationForm.COLON, "scripts/run", 7, 7, None),
        ("/etc/passwd:1", CitationForm.COLON, "/etc/passwd", 1, 1, None),
        ("../../etc/passwd:1", CitationForm.COLON, "../../etc/passwd", 1, 1, None),
    ],
)
def test_forms(
    raw: str, form: CitationForm, path: str, start: int, end: int, column: int | None
) -> None:
    (c,) = parse_citations(Path("a.md"), f"- {raw} — `thing`\n")
    assert (c.form, c.path, c.start_line, c.end_line, c.column) == (form, path, start, end, column)
    assert c.raw == raw
    assert c.entities == ("thing",)


@pytest.mark.parametrize("separator", ["—", "–", "-", ":"])
def test_separators(separator: str) -> None:
    (c,) = parse_citations(Path("a.md"), f"src/app.py:3 {separator} the `retry` loop\n")
    assert c.description == "the `retry` loop"
    assert c.entities == ("retry",)


def test_offsets_point_at_the_raw_text_in_a_bom_crlf_document(repo: CitationRepo) -> None:
    text = repo.answer.read_bytes().decode("utf-8", "surrogateescape")
    citations = parse_citations(repo.answer)
    assert citations == parse_citations(repo.answer, text)
    for c in citations:
        assert text[c.offset : c.offset + len(c.raw)] == c.raw
        line_start = text.rfind("\n", 0, c.offset) + 1
        assert c.offset - line_start == c.doc_column - 1
        assert text.count("\n", 0, c.offset) + 1 == c.line


def test_markdown_link_text_and_target() -> None:
    text = (
        "[src/a.py:3](src/a.py#L4) — `f`\n"
        "[a.py:4](src/a.py#L4) — `f`\n"
        "[the `f` helper](src/a.py#L4)\n"
        "[src/a.py:4](https://github.com/o/r/blob/main/src/a.py#L4)\n"
    )
    c = parse_citations(Path("a.md"), text)
    assert c[0].link_mismatch == "the link text says src/a.py:3 but the link target is src/a.py:4"
    assert c[1].link_mismatch is None  # a shorter path naming the same file agrees
    assert c[2].entities == ("f",)
    assert (c[3].form, c[3].raw) == (CitationForm.COLON, "src/a.py:4")  # the URL is no target
    assert (c[4].form, c[4].path, c[4].start_line) == (CitationForm.FORGE_LINK, "main/src/a.py", 4)
    assert len(c) == 5


def test_prose_fences_are_parsed_and_code_fences_are_not() -> None:
    text = "```markdown\na.py:1 — x\n```\n```\na.py:2\n```\n````\n```\na.py:3\n````\na.py:4\n"
    assert [c.start_line for c in parse_citations(Path("a.md"), text)] == [1, 4]


def test_descriptions_before_a_parenthesized_citation() -> None:
    cs = parse_citations(Path("a.md"), "In `foo` (a.py:3) and `bar` (b.py:9).\n")
    assert [(c.path, c.entities) for c in cs] == [("a.py", ("foo",)), ("b.py", ("bar",))]


def test_node_names_are_unique_and_stable() -> None:
    cs = parse_citations(Path("docs/answer.md"), "a.py:1 and a.py:1 and a.py:1:4 — x\n")
    assert [c.node_name for c in cs] == [
        "answer.md:1:a.py:1",
        "answer.md:1:a.py:1~2",
        "answer.md:1:a.py:1:4",
    ]
    assert [Citation.from_dict(c.to_dict()) for c in cs] == cs


@pytest.mark.parametrize(
    ("description", "entities"),
    [
        ("the retry loop", ()),
        ("`fetch` retries via `backoff()`", ("fetch", "backoff")),
        ("`Client.fetch` and os.path.join", ("Client.fetch", "os.path.join")),
        ("def parse_args handles argv", ("parse_args",)),
        ("class RetryPolicy and a class that counts", ("RetryPolicy",)),
        ("calls fetch() on GitHub with JavaScript", ("fetch",)),
        ("uses retry_count and maxRetries", ("retry_count", "maxRetries")),
        ("see app.py, example.com, e.g. and i.e.", ()),
        ("`@app.route` decorator", ("app.route",)),
        ("`return None` on failure", ("return None",)),
        ("`src/app.py` is the file", ()),
        ("__init__ renders bold, `__init__` does not", ("__init__",)),
        ("handles URLs and APIs", ()),
    ],
)
def test_entities(description: str, entities: tuple[str, ...]) -> None:
    assert extract_entities(description) == entities


# --- files and lines ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("a\nb\n", ["a", "b"]),
        ("a\nb", ["a", "b"]),
        ("", []),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\x0cb\nc\x1cd\x1de\x1ef\u2028g\x85h\n", ["a\x0cb", "c\x1cd\x1de\x1ef\u2028g\x85h"]),
        ("a\rb\n", ["a\rb"]),
    ],
)
def test_lines_count_by_newline_only(text: str, lines: list[str]) -> None:
    assert split_lines(text)[0] == lines


def test_large_and_binary_files_are_reported_not_read(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("def f():\n" + "# pad\n" * 400)
    (tmp_path / "late_nul.txt").write_bytes(b"x\n" * 5000 + b"\0\nneedle_word\n")
    (tmp_path / "early_nul.txt").write_bytes(b"needle_word\0\n")
    doc = tmp_path / "a.md"
    doc.write_text("big.py:1 — `f`\nlate_nul.txt:5002 — `needle_word`\nearly_nul.txt:1 — x\n")
    results = [CitationChecker(tmp_path, max_bytes=1024).check(c) for c in parse_citations(doc)]
    assert [r.status for r in results] == [
        CitationStatus.DROPPED,
        CitationStatus.DROPPED,
        CitationStatus.DROPPED,
    ]
    assert "over the 1024-byte bound" in results[0].reason
    assert "binary" in results[2].reason
    results = [CitationChecker(tmp_path).check(c) for c in parse_citations(doc)]
    assert results[1].status is CitationStatus.VERIFIED  # a NUL after 8 KiB is text


def test_a_bom_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"\xef\xbb\xbfimport os\r\nx = 1\r\n")
    doc = tmp_path / "a.md"
    doc.write_text("a.py:1 — the import\na.py:2 — `x`\n")
    assert [r.cited_text for r in check_document(tmp_path, doc)] == ["import os", "x = 1"]


def test_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\ny = b'\xff\xfe' # odd_name\n")
    doc = tmp_path / "a.md"
    doc.write_text("a.py:2 — `odd_name`\n")
    (r,) = check_document(tmp_path, doc)
    assert r.status is CitationStatus.VERIFIED
    assert r.cited_text == "y = b'\ufffd\ufffd' # odd_name"


def test_walk_skips_virtualenvs_and_caches(tmp_path: Path) -> None:
    for folder in (".venv/lib", "node_modules/x", "__pycache__", ".git/x", "env_like"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "hidden.py").write_text("def hidden():\n    pass\n")
    (tmp_path / "env_like/pyvenv.cfg").write_text("home = /usr\n")
    doc = tmp_path / "a.md"
    doc.write_text("src/hidden.py:1 — `hidden`\n")
    (r,) = check_document(tmp_path, doc)
    assert r.status is CitationStatus.FABRICATED


def test_document_folder_wins_over_the_root(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "x.py").write_text("def at_root():\n    pass\n")
    (tmp_path / "docs/x.py").write_text("def beside_doc():\n    pass\n")
    doc = tmp_path / "docs/a.md"
    doc.write_text("x.py:1 — `beside_doc`\n../x.py:1 — `at_root`\n")
    assert [(r.status, r.resolved) for r in check_document(tmp_path, doc)] == [
        (CitationStatus.VERIFIED, "docs/x.py"),
        (CitationStatus.VERIFIED, "x.py"),
    ]


def test_each_file_is_read_once_for_many_citations(tmp_path: Path) -> None:
    for i in range(5):
        body = "".join(f"def f_{i}_{k}():\n    return {k}\n" for k in range(100))
        (tmp_path / f"m{i}.py").write_text(body)
    doc = tmp_path / "a.md"
    doc.write_text(
        "".join(f"- m{i}.py:{2 * k + 1} — `f_{i}_{k}`\n" for i in range(5) for k in range(100))
        + "".join(f"- lost/m{i}.py:{2 * k + 1} — `f_{i}_{k}`\n" for i in range(5) for k in range(3))
    )
    checker = CitationChecker(tmp_path)
    results = [checker.check(c) for c in parse_citations(doc)]
    assert len(results) == 515
    assert {r.status for r in results[:500]} == {CitationStatus.VERIFIED}
    assert {r.status for r in results[500:]} == {CitationStatus.CORRECTED}
    assert checker.files.loads == 5


# --- location rules ----------------------------------------------------------------------


def _one(tmp_path: Path, source: str, citation: str, name: str = "m.py") -> CitationResult:
    (tmp_path / name).write_text(source)
    doc = tmp_path / "a.md"
    doc.write_text(citation + "\n")
    (r,) = check_document(tmp_path, doc)
    return r


def test_nearest_match_wins_within_the_window(tmp_path: Path) -> None:
    src = (
        "\n".join(["x = 0"] * 10 + ["use(thing_a)", "x", "x", "x", "x", "x", "use(thing_a)"]) + "\n"
    )
    assert _one(tmp_path, src, "m.py:13 — `thing_a`").corrected_to == "m.py:11"


def test_definitions_win_over_nearer_uses(tmp_path: Path) -> None:
    src = "\n".join(
        ["x = 0"] * 10 + ["use(thing_b)", "x", "x", "x", "x", "x", "def thing_b():", "    pass"]
    )
    assert _one(tmp_path, src + "\n", "m.py:12 — `thing_b`").corrected_to == "m.py:17"


def test_dotted_names_use_the_python_qualname(tmp_path: Path) -> None:
    src = "class Other:\n    def fetch(self):\n        pass\n\n\n"
    src += "class Client:\n    def fetch(self):\n        pass\n"
    r = _one(tmp_path, src, "m.py:1 — `Client.fetch` does it")
    assert (r.status, r.corrected_to) == (CitationStatus.CORRECTED, "m.py:7")
    assert _one(tmp_path, src, "m.py:8 — `Client.fetch`").status is CitationStatus.VERIFIED
    assert _one(tmp_path, src, "m.py:4 — `fetch`").corrected_to == "m.py:2"  # the nearest


def test_line_zero_and_reversed_ranges(tmp_path: Path) -> None:
    src = "a = 1\ndef only_one():\n    pass\n"
    assert _one(tmp_path, src, "m.py:0 — `only_one`").corrected_to == "m.py:2"
    assert _one(tmp_path, src, "m.py:3-1 — the end").status is CitationStatus.DROPPED


def test_beyond_the_end_without_entities_is_fabricated(tmp_path: Path) -> None:
    r = _one(tmp_path, "a = 1\n", "m.py:40 — the main loop")
    assert (r.status, r.beyond_end, r.file_lines) == (CitationStatus.FABRICATED, True, 1)


def test_range_reaching_past_the_end_is_a_fabrication_sign(tmp_path: Path) -> None:
    src = "a = 1\n\ndef tail_fn():\n    pass\n"
    r = _one(tmp_path, src, "m.py:3-9 — `tail_fn`")
    assert (r.status, r.corrected_to, r.beyond_end) == (CitationStatus.CORRECTED, "m.py:3-4", True)


def test_non_python_definitions(tmp_path: Path) -> None:
    src = "// x\n\n\n\nfunction renderPage(a) {\n  return a;\n}\nrenderPage(1);\n"
    r = _one(tmp_path, src, "web.js:1 — `renderPage`", name="web.js")
    assert r.corrected_to == "web.js:5"


def test_link_mismatch_without_entities_cannot_be_decided(tmp_path: Path) -> None:
    r = _one(tmp_path, "a\nb\nc\n", "[m.py:1](m.py#L2) — the thing")
    assert r.status is CitationStatus.DROPPED
    assert "link text says m.py:1" in r.reason


def test_an_internal_error_is_a_dropped_verdict(tmp_path: Path) -> None:
    bad = Citation(
        document=tmp_path / "a.md",
        line=1,
        offset=0,
        raw="x",
        path="a\0b.py",
        start_line=1,
        end_line=1,
    )
    r = CitationChecker(tmp_path).check(bad)
    assert r.status is CitationStatus.DROPPED
    assert r.reason.startswith("internal error: ValueError")


def test_the_runner_turns_a_checker_error_into_mode_error_never_a_pass(tmp_path: Path) -> None:
    from pytest_vgate.gate.runner import run_citation
    from pytest_vgate.verdict import Cause, Mode

    bad = Citation(
        document=tmp_path / "a.md", line=1, offset=0, raw="x", path="a\0b.py",
        start_line=1, end_line=1,
    )  # fmt: skip
    verdict, result = run_citation(CitationChecker(tmp_path), bad)
    assert (verdict.mode, verdict.cause, verdict.ok) == (Mode.ERROR, Cause.BROKEN_TEST, False)
    assert result.status is CitationStatus.DROPPED and "ValueError" in result.reason
    (tmp_path / "m.py").write_text(FETCH_MODULE)
    doc = tmp_path / "a.md"
    doc.write_text("- m.py:4 — `fetch`\n- m.py:3 — `fetch`\n- ghost.py:1 — `x`\n")
    outcomes = [run_citation(CitationChecker(tmp_path), c) for c in parse_citations(doc)]
    assert [(v.mode, v.cause, r.status.value) for v, r in outcomes] == [
        (Mode.PASS, None, "verified"),
        (Mode.FAIL, Cause.PRODUCT, "corrected"),
        (Mode.FAIL, Cause.PRODUCT, "fabricated"),
    ]


# --- the docs page -----------------------------------------------------------------------


def test_the_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).parent.parent / "docs/citations.md").read_text()
    (code,) = [block.split("```", 1)[0] for block in page.split("```python\n")[1:]]
    exec(compile(code, "docs/citations.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("VERIFICATION GATE RESULT:\n- Total citations: 4\n")
    assert "FABRICATIONS CAUGHT: Y — answer.md:3 app.py:40 (line beyond end of 5-line file" in out


def test_the_docs_summary_example_has_the_real_shape() -> None:
    page = (Path(__file__).parent.parent / "docs/citations.md").read_text()
    block = page.split("```text\nVERIFICATION GATE RESULT:\n", 1)[1].split("```", 1)[0]
    labels = [line.split(":", 1)[0] for line in block.splitlines()]
    empty = summary_block([]).splitlines()[1:]
    assert labels == [line.split(":", 1)[0] for line in empty]


# --- verified means the description matches what the cited lines hold ------------------

FETCH_MODULE = (
    "import time\n"  # 1
    "\n"  # 2
    "\n"  # 3
    "def fetch(url, retries=3):\n"  # 4
    "    for attempt in range(retries):\n"  # 5
    "        try:\n"  # 6
    "            return _get(url)\n"  # 7
    "        except OSError:\n"  # 8
    "            time.sleep(2**attempt)\n"  # 9
    "\n"  # 10
    "    raise TimeoutError(url)\n"  # 11
    "\n"  # 12
    "\n"  # 13
    "def _get(url):\n"  # 14
    "    # fetch calls this with the url\n"  # 15
    "    return url\n"  # 16
    "\n"  # 17
    "\n"  # 18
    "def backoff(n):\n"  # 19
    "    time.sleep(n)\n"  # 20
    "    return n\n"  # 21
) + "".join(f"# filler {i}\n" for i in range(22, 41))


@pytest.mark.parametrize(
    ("citation", "status", "corrected_to"),
    [
        # prose pointing at a blank line
        ("m.py:3 — the retry loop", "dropped", None),
        # a range covering the whole file
        ("m.py:1-40 — `fetch` retries", "corrected", "m.py:4-11"),
        ("m.py:1-40 — the whole module", "dropped", None),
        # an unrelated (secondary) identifier on the line, away from the subject
        ("m.py:20 — `fetch` sleeps with `time.sleep`", "corrected", "m.py:4"),
        # a comment that mentions the name is not the name
        ("m.py:15 — `fetch`", "corrected", "m.py:4"),
        # a blank line inside the definition
        ("m.py:10 — `fetch` gives up", "corrected", "m.py:4"),
        # the definition's range drifted by two
        ("m.py:6-13 — `fetch`", "corrected", "m.py:4-11"),
        # prose whose words are not on the line
        ("m.py:20 — the grammar tokenizer", "dropped", None),
    ],
)
def test_false_verifications_of_the_first_release(
    tmp_path: Path, citation: str, status: str, corrected_to: str | None
) -> None:
    r = _one(tmp_path, FETCH_MODULE, citation)
    assert (r.status.value, r.corrected_to) == (status, corrected_to), r.reason


@pytest.mark.parametrize(
    "citation",
    [
        "m.py:4 — `fetch` retries",  # the definition line
        "m.py:9 — `fetch` sleeps between tries",  # a line inside it
        "m.py:4-11 — `fetch`",  # its span
        "m.py:3-12 — `fetch`",  # its span with a little margin
        "m.py:7 — `_get` is called",  # a call
        "m.py:7 — `fetch` calls `_get`",  # a secondary entity inside the subject
        "m.py:9 — `time.sleep` waits",  # a dotted call
        "m.py:5 — the retry loop",  # prose: retry ~ retries
        "m.py:1 — the module imports",  # prose: imports ~ import
        "m.py:1",  # no description: the line exists
    ],
)
def test_true_citations_stay_verified(tmp_path: Path, citation: str) -> None:
    r = _one(tmp_path, FETCH_MODULE, citation)
    assert r.status is CitationStatus.VERIFIED, r.reason


def test_an_operator_alone_never_matches(tmp_path: Path) -> None:
    """A backticked ``>`` matched ``-> bool`` on an unrelated line."""
    src = "def ready(self) -> bool:\n    return True\n"
    for citation in ("m.py:1 — `>` compares the versions", "m.py:1 — `->`", "m.py:1 — `()`"):
        r = _one(tmp_path, src, citation)
        assert r.status is CitationStatus.DROPPED, (citation, r.reason)


def test_a_long_class_is_no_match_deep_inside_its_body(tmp_path: Path) -> None:
    """A secondary class name whose body spans 500 lines matched a line deep inside it."""
    body = "".join(f"    def method_{i}(self):\n        return {i}\n\n" for i in range(170))
    src = "class Secondary:\n" + body
    deep = 1 + 3 * 150 + 2  # inside method_150
    r = _one(tmp_path, src, f"m.py:{deep} — `Secondary` here")
    assert (r.status, r.corrected_to) == (CitationStatus.CORRECTED, "m.py:1"), r.reason
    assert _one(tmp_path, src, f"m.py:{deep} — `method_150`").status is CitationStatus.VERIFIED
    assert _one(tmp_path, src, "m.py:1 — `Secondary`").status is CitationStatus.VERIFIED
    # a class body cited for one of its methods is too wide for the method
    whole = f"m.py:1-{src.count(chr(10))} — `method_3`"
    assert _one(tmp_path, src, whole).corrected_to == "m.py:11-12"


def test_a_drifted_range_that_merely_mentions_the_name_is_not_verified(tmp_path: Path) -> None:
    src = "def target_fn():\n    return 1\n" + "# filler\n" * 30
    src += "def other():\n" + "    x = 1\n" * 10 + "    target_fn()\n" + "    y = 2\n" * 10
    r = _one(tmp_path, src, "m.py:33-54 — `target_fn` is called")
    assert r.status is not CitationStatus.VERIFIED
    assert (r.status, r.corrected_to) == (CitationStatus.CORRECTED, "m.py:44"), r.reason


def test_other_files_match_code_lines_with_the_same_width_rules(tmp_path: Path) -> None:
    src = "// renderPage draws\n\nfunction renderPage(a) {\n  return a;\n}\n"
    src += "".join(f"var v{i} = {i};\n" for i in range(30)) + "renderPage(1);\n"
    n = src.count("\n")
    cases = {
        "web.js:1 — `renderPage`": ("corrected", "web.js:3"),  # a comment line
        "web.js:3 — `renderPage`": ("verified", None),
        f"web.js:{n} — `renderPage` is called": ("verified", None),
        "web.js:3-5 — `renderPage`": ("verified", None),  # opened by its definition
        f"web.js:1-{n} — `renderPage`": ("corrected", "web.js:3"),  # the whole file
        "web.js:2 — the page": ("dropped", None),  # prose on a blank line
    }
    for citation, expected in cases.items():
        r = _one(tmp_path, src, citation, name="web.js")
        assert (r.status.value, r.corrected_to) == expected, (citation, r.reason)


# --- --vgate-fix never corrupts a document ---------------------------------------------

DRIFT_SOURCE = "\n" * 9 + "def target():\n    a = 1\n    b = 2\n    return a + b\n"


@pytest.mark.parametrize(
    ("written", "fixed"),
    [
        ("- a.py:3 — `target`", "- a.py:10 — `target`"),
        ("- a.py:3-6 — `target`", "- a.py:10-13 — `target`"),
        ("- a.py:3–6 — `target`", "- a.py:10–13 — `target`"),
        ("- a.py:3:7 - `target`", "- a.py:10:7 - `target`"),
        ("- a.py#L3: `target`", "- a.py#L10: `target`"),
        ("- a.py#L3-L6 — `target`", "- a.py#L10-L13 — `target`"),
        ("- a.py#L3-6 — `target`", "- a.py#L10-13 — `target`"),
        ("- [the `target`](a.py#L3)", "- [the `target`](a.py#L10)"),
        ("- [a.py:3](a.py#L3) — `target`", "- [a.py:10](a.py#L10) — `target`"),
        ("- [x](<a.py#L3>) — `target`", "- [x](<a.py#L10>) — `target`"),
        ("The `target` function (`a.py:3`) adds.", "The `target` function (`a.py:10`) adds."),
        ("| `a.py:3` | `target` |", "| `a.py:10` | `target` |"),
    ],
)
def test_every_form_is_fixed_exactly_and_once(tmp_path: Path, written: str, fixed: str) -> None:
    (tmp_path / "a.py").write_text(DRIFT_SOURCE)
    doc = tmp_path / "answer.md"
    doc.write_bytes(b"\xef\xbb\xbfintro\r\n" + written.encode() + b"\r\ncaf\xe9\n")
    (result,) = check_document(tmp_path, doc)
    assert result.status is CitationStatus.CORRECTED, result.reason
    refused: list[str] = []
    assert fix_documents([result], refused) == {doc: 1}
    assert not refused
    assert doc.read_bytes() == b"\xef\xbb\xbfintro\r\n" + fixed.encode() + b"\r\ncaf\xe9\n"
    (again,) = check_document(tmp_path, doc)
    assert again.status is CitationStatus.VERIFIED, again.reason
    before = doc.read_bytes()
    assert fix_documents(check_document(tmp_path, doc)) == {}  # a second run changes nothing
    assert doc.read_bytes() == before


def test_a_path_with_a_space_is_refused_not_mangled(tmp_path: Path) -> None:
    """The first release rewrote ``docs/app.py`` into ``my my docs/app.py``, once per run."""
    (tmp_path / "my docs").mkdir()
    (tmp_path / "my docs/app.py").write_text(DRIFT_SOURCE)
    doc = tmp_path / "answer.md"
    written = b"- see my docs/app.py:10 \xe2\x80\x94 `target`\n"
    doc.write_bytes(written)
    for _ in range(3):
        (result,) = check_document(tmp_path, doc)
        assert (result.status, result.corrected_to) == (
            CitationStatus.CORRECTED,
            "my docs/app.py:10",
        )
        refused: list[str] = []
        assert fix_documents([result], refused) == {}
        assert doc.read_bytes() == written
        (message,) = refused
        assert "answer.md:1 docs/app.py:10" in message and "'my docs/app.py'" in message
        assert "fix it by hand" in message


# --- what citations never read ----------------------------------------------------------


def test_vcs_metadata_is_refused_and_never_read(tmp_path: Path) -> None:
    token = "ghp_vgateSECRETtoken0123456789"
    for vcs in (".git", ".hg", ".svn"):
        (tmp_path / vcs).mkdir()
        (tmp_path / vcs / "config").write_text(f"url = https://x:{token}@example.com/r\n")
    (tmp_path / "cfg.ini").symlink_to(tmp_path / ".git/config")
    doc = tmp_path / "answer.md"
    doc.write_text(
        "- .git/config:1 — the `url`\n- .hg/config:1 — `url`\n- .svn/config:1 — `url`\n"
        "- sub/../.git/config:1 — `url`\n- cfg.ini:1 — `url`\n- docs/.git/config:1 — `url`\n"
    )
    checker = CitationChecker(tmp_path)
    results = [checker.check(c) for c in parse_citations(doc)]
    assert [r.status for r in results] == [CitationStatus.DROPPED] * 6
    for r in results:
        assert r.outside_root and "version-control metadata" in r.reason, r.reason
    assert checker.files.loads == 0  # nothing was opened
    dumped = json.dumps([r.to_dict() for r in results]) + summary_block(results)
    assert token not in dumped


def test_special_files_are_dropped_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    doc = tmp_path / "answer.md"
    doc.write_text("- pipe.py:1 — `reader`\n")
    (result,) = check_document(tmp_path, doc)  # a blocking open would hang here
    assert result.status is CitationStatus.DROPPED
    assert "named pipe (FIFO), not a regular file" in result.reason


def test_reading_refuses_a_file_swapped_for_a_fifo(tmp_path: Path) -> None:
    from pytest_vgate.citations.files import read_regular
    from pytest_vgate.process.regular import NotRegularFile

    os.mkfifo(tmp_path / "p")
    with pytest.raises(NotRegularFile, match="named pipe"):
        read_regular(tmp_path / "p", 1024)


# --- globs terminate and stay inside ----------------------------------------------------


def _tree(root: Path) -> None:
    for rel in ("docs/a.md", "docs/b.md", "docs/x/c.md", "docs/x/y/d.md", "docs/.hidden.md",
                "top.md", "docs/x/e.txt", "docs/[ab].md"):  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")


@pytest.mark.parametrize(
    "pattern",
    ["docs/*.md", "docs/**/*.md", "**/*.md", "*.md", "docs/a.md", "docs/?.md", "docs/[ab].md",
     "docs/x/**", "docs/**/c.md", "**", "docs/*/*.md", "nothing/*.md"],
)  # fmt: skip
def test_expansion_agrees_with_glob_on_a_plain_tree(tmp_path: Path, pattern: str) -> None:
    import glob

    from pytest_vgate.citations.documents import expand

    _tree(tmp_path)
    expected = sorted(
        (tmp_path / m).resolve()
        for m in glob.glob(pattern, root_dir=tmp_path, recursive=True)
        if (tmp_path / m).is_file()
    )
    assert expand(pattern, tmp_path) == expected


def test_expansion_terminates_on_symlink_loops_and_stays_inside(tmp_path: Path) -> None:
    """``glob.glob("docs/**/*.md")`` runs for minutes on this tree (exponential)."""
    import time

    from pytest_vgate.citations.documents import expand

    _tree(tmp_path / "root")
    root = tmp_path / "root"
    (root / "docs/x/y/up").symlink_to("../..")
    (root / "docs/x/up2").symlink_to("..")
    (root / "docs/x/y/top").symlink_to(root)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/leak.md").write_text("secret\n")
    (root / "docs/out").symlink_to(tmp_path / "outside")
    (root / "docs/leak.md").symlink_to(tmp_path / "outside/leak.md")
    (root / ".git").mkdir()
    (root / ".git/x.md").write_text("x\n")
    os.mkfifo(root / "docs/pipe.md")
    started = time.monotonic()
    found = expand("**/*.md", root)
    assert time.monotonic() - started < 30  # a generous hang bound, not a speed check
    real_root = root.resolve()
    outside = [path for path in found if not path.is_relative_to(real_root)]
    assert outside == [(tmp_path / "outside/leak.md").resolve()]  # a file link out: real path
    rels = sorted(path.relative_to(real_root).as_posix() for path in found if path not in outside)
    assert rels == ["docs/[ab].md", "docs/a.md", "docs/b.md", "docs/pipe.md", "docs/x/c.md",
                    "docs/x/y/d.md", "top.md"]  # fmt: skip
    # The gates file that names a document outside (after symlinks) is refused, never read.
    (root / "gates.yaml").write_text("gates:\n  - id: a\n    check: python -c pass\n"
                                     "citations: ['docs/*.md']\n")  # fmt: skip
    with pytest.raises(GatesFileError, match=r"leak\.md lies outside the root"):
        load_gates_file(root / "gates.yaml")


def test_c_comment_blocks_are_comments_and_preprocessor_lines_are_code(tmp_path: Path) -> None:
    src = (
        "/* The zlib_init routine\n"  # 1
        "   explains zlib_init in prose\n"  # 2
        "*/\n"  # 3
        "#define ZLIB_MAX 9\n"  # 4
        "int zlib_init(void); // zlib_init is declared\n"  # 5
    )
    cases = {
        "z.h:2 — `zlib_init`": ("corrected", "z.h:5"),  # inside the block, no `*`
        "z.h:4 — `ZLIB_MAX`": ("verified", None),
        "z.h:5 — `zlib_init`": ("verified", None),
    }
    for citation, expected in cases.items():
        r = _one(tmp_path, src, citation, name="z.h")
        assert (r.status.value, r.corrected_to) == expected, (citation, r.reason)


# --- what the line does -------------------------------------------------------------------

CACHE_SRC = '''\
def cached(cache, key=None):
    """Wrap a function with a memoizing callable."""
    if cache is None:
        raise TypeError("cache must not be None")

    def decorator(func):
        return func

    return decorator


def fetch(url, retries=3):
    for attempt in range(retries):
        try:
            return url
        except OSError:
            sleep(2**attempt)
    raise TimeoutError(url)
'''


@pytest.mark.parametrize(
    ("citation", "expected"),
    [
        # "returns" where the line raises: the description is wrong about the line
        ("m.py:4 — `cached` returns the function when the cache is None", ("unsupported", None)),
        # ... a bare "returns": the nearest line of `cached` that returns
        ("m.py:4 — `cached` returns here", ("corrected", "m.py:9")),
        ("m.py:9 — `cached` returns the decorator", ("verified", None)),
        ("m.py:15 — `fetch` raises here", ("corrected", "m.py:18")),
        ("m.py:18 — `fetch` raises `TimeoutError`", ("verified", None)),
        ("m.py:12 — `fetch` returns", ("verified", None)),  # the def line: its body returns
        ("m.py:17 — `fetch` yields here", ("unsupported", None)),  # nothing near yields
        # where it starts
        ("m.py:17 — `fetch` is defined here", ("corrected", "m.py:12")),
        ("m.py:17 — `fetch` starts here", ("corrected", "m.py:12")),
        ("m.py:13 — the signature of `fetch`", ("corrected", "m.py:12")),
        ("m.py:12 — the signature of `fetch`", ("verified", None)),
        ("m.py:17 — `fetch` sleeps between attempts", ("verified", None)),
        # words the syntax cannot decide never fail a citation
        ("m.py:15 — `url` is validated against the allow-list here", ("verified", None)),
        ("m.py:15 — `url` is returned unchanged here", ("verified", None)),  # it is
        ("m.py:17 — `fetch` is throttled by the quota broker", ("verified", None)),
    ],
)
def test_the_description_s_verbs_starts_and_words(
    tmp_path: Path, citation: str, expected: tuple[str, str | None]
) -> None:
    r = _one(tmp_path, CACHE_SRC, citation)
    assert (r.status.value, r.corrected_to) == expected, r.reason


def test_a_contradiction_says_what_the_line_does(tmp_path: Path) -> None:
    r = _one(tmp_path, CACHE_SRC, "m.py:4 — `cached` returns the function when the cache is None")
    assert "the description says returns; line 4 raises TypeError" in r.reason, r.reason
    assert r.description is CitationDescription.CONTRADICTED
    assert not r.ok


SHAPES_SRC = """\
__version__ = "8.0.2"

_THOUSANDS = {
    "fr_FR": " ",
    "de_DE": ".",
}
_DECIMAL = {
    "fr_FR": ",",
}

info = dict(
    pairwise=[
        lambda iterable: None],
)


class _Timer:
    def __init__(self, timer):
        self.timer = timer


class Cache:
    def __copy__(self):
        new = Cache.__new__(Cache)
        new.timer = _Timer(self.timer)
        return new


def fractional(number):
    whole, frac = divmod(number, 1)
    if frac == 1:
        return f"{whole + 1:.0f}"
    return f"{whole:.0f} {frac}"


def ordinal(value, gender="male"):
    suffixes = {"male": "th", "female": "e"}
    return f"{value}{suffixes[gender]}"


def natural_list(items):
    items = [str(item) for item in items]
    return ", ".join(items)
"""


@pytest.mark.parametrize(
    ("citation", "expected"),
    [
        # the shapes of true claims: verified, whatever words the syntax cannot decide
        ("m.py:1 — `__version__` is bumped to 8.0.2", ("verified", None, "shown")),
        ("m.py:12 — `pairwise` is registered with a one-argument signature",
         ("verified", None, "not-judged")),
        ("m.py:25 — builds a new `_Timer` around the copied timer",
         ("verified", None, "not-judged")),
        ("m.py:32 — `fractional` folds a 1/1 fraction into the whole number",
         ("verified", None, "not-judged")),
        ("m.py:37 — `ordinal` is now keyed by gender", ("verified", None, "not-judged")),
        ("m.py:8 — now maps \"fr_FR\" to a comma", ("verified", None, "shown")),
        ("m.py:42 — `natural_list` turns any iterable into a list of strings first",
         ("verified", None, "not-judged")),
        ("m.py:36 — `gender` defaults to \"male\"", ("verified", None, "shown")),
        # ... and the same shapes sneaking a value the lines show otherwise
        ("m.py:1 — `__version__` is bumped to 8.0.3", ("unsupported", None, "contradicted")),
        ("m.py:1 — `__version__` is bumped from 8.0.2 to 8.0.3",
         ("unsupported", None, "contradicted")),
        ("m.py:1 — `__version__` is bumped to 8.0.2rc1", ("unsupported", None, "contradicted")),
        ("m.py:1 — `__version__` is bumped to 8.0.2.", ("verified", None, "shown")),
        ("m.py:1 — `__version__` is bumped to `\"8.0.20\"`", ("unsupported", None, "contradicted")),
        ("m.py:4 — now maps \"fr_FR\" to a comma", ("unsupported", None, "contradicted")),
        ("m.py:36 — `gender` defaults to \"female\"", ("unsupported", None, "contradicted")),
        ("m.py:31 — `fractional` compares `frac` with `0`", ("unsupported", None, "contradicted")),
        ("m.py:33 — `fractional` yields the parts", ("unsupported", None, "contradicted")),
        # location first: a drifted true citation is corrected, its description judged there
        ("m.py:2 — `__version__` is bumped to 8.0.2", ("corrected", "m.py:1", "shown")),
        ("m.py:10 — `_DECIMAL` now maps \"fr_FR\" to a comma", ("corrected", "m.py:7", "shown")),
        # a line past the end whose entity is in the file: corrected, a fabrication sign
        ("m.py:400 — `ordinal` is now keyed by gender", ("corrected", "m.py:36", "not-judged")),
        ("m.py:400 — `ordinal` returns `None`", ("corrected", "m.py:36", "shown")),
    ],
)  # fmt: skip
def test_the_shapes_of_true_claims_and_the_values_that_contradict_them(
    tmp_path: Path, citation: str, expected: tuple[str, str | None, str]
) -> None:
    r = _one(tmp_path, SHAPES_SRC, citation)
    got = (r.status.value, r.corrected_to, r.description and r.description.value)
    assert got == expected, r.reason
    assert r.beyond_end == (":400 " in citation)
    assert r.ok == (expected[0] == "verified")


def test_a_same_named_entity_in_another_file_never_verifies_a_citation(tmp_path: Path) -> None:
    """The entity is the one in the cited file: its definition elsewhere, an import of
    it, or a file of the same name in another folder never stand for it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "src/m.py").write_text(SHAPES_SRC)
    (tmp_path / "src/use.py").write_text(
        "from .m import fractional\n\n\ndef half(x):\n    return fractional(x / 2)\n"
    )
    (tmp_path / "lib/m.py").write_text("def natural_list(items):\n    return items\n")
    doc = tmp_path / "a.md"
    doc.write_text(
        "- src/use.py:1 — `fractional` returns the whole number for 1/1\n"
        "- src/use.py:5 — `fractional` returns the mixed form\n"
        "- src/use.py:5 — `half` calls `fractional`\n"
        "- lib/m.py:1 — `fractional` folds a 1/1 fraction\n"
        "- src/m.py:1 — `natural_list` returns the items unchanged\n"
        "- pkg/m.py:1 — `natural_list` returns the items\n"
    )
    got = [(r.status.value, r.corrected_to) for r in check_document(tmp_path, doc)]
    assert got == [
        ("unsupported", None),  # only imported here: what it returns is in src/m.py
        ("unsupported", None),  # the return on the line is half's
        ("verified", None),
        ("dropped", None),  # lib/m.py has no fractional; src/m.py's never verifies it
        ("corrected", "src/m.py:41"),  # searched in src/m.py only, not in lib/m.py
        ("dropped", None),  # no pkg/; two m.py hold natural_list: ambiguous
    ]


TEST_SRC = """\
import pytest


def test_iterating_is_safe():
    items = [1, 2]
    for x in list(items):
        items.append(x)
    assert items == [1, 2, 1, 2]


def test_bad_step():
    value = 0
    with pytest.raises(ValueError):
        check(value)
"""


@pytest.mark.parametrize(
    ("citation", "expected"),
    [
        ("t.py:4 — `test_iterating_is_safe` checks that iterating raises `RuntimeError`",
         ("unsupported", None)),
        ("t.py:4 — `test_iterating_is_safe` checks that iterating does not raise",
         ("verified", None)),
        ("t.py:4 — `test_iterating_is_safe` asserts equality", ("verified", None)),
        ("t.py:11 — `test_bad_step` checks that a bad step raises `ValueError`",
         ("verified", None)),
        ("t.py:11 — `test_bad_step` checks that a bad step does not raise",
         ("unsupported", None)),
        # about the test, which does assert it; "here" is about the line
        ("t.py:12 — `test_bad_step` checks that a bad step raises `ValueError`",
         ("verified", None)),
        ("t.py:12 — `test_bad_step` checks here that a bad step raises `ValueError`",
         ("corrected", "t.py:13")),
    ],
)  # fmt: skip
def test_what_a_test_asserts(
    tmp_path: Path, citation: str, expected: tuple[str, str | None]
) -> None:
    r = _one(tmp_path, TEST_SRC, citation, name="t.py")
    assert (r.status.value, r.corrected_to) == expected, r.reason


def test_a_property_is_one_entity_at_its_getter(tmp_path: Path) -> None:
    src = "class Spec:\n" + "    x = 1\n" * 30  # the citation is further than the window
    src += "    @property\n    def prereleases(self):\n        return self._pre\n\n"
    src += "    @prereleases.setter\n    def prereleases(self, value):\n        self._pre = value\n"
    r = _one(tmp_path, src, "m.py:2 — `Spec.prereleases` is the property")
    assert (r.status.value, r.corrected_to) == ("corrected", "m.py:33"), r.reason
    assert _one(tmp_path, src, "m.py:38 — `prereleases` setter").status is CitationStatus.VERIFIED


def test_a_call_through_an_alias_is_the_aliased_name_at_the_call(tmp_path: Path) -> None:
    src = "from .i18n import _pgettext_noop as PS_\n" + "x = 1\n" * 5
    src += 'SUFFIXES = (\n    PS_("0", "th"),\n    PS_("1", "st"),\n)\n'
    r = _one(tmp_path, src, "m.py:8 — calls `_pgettext_noop` for the suffix")
    assert (r.status.value, r.corrected_to) == ("verified", None), r.reason
    src2 = "def _pgettext_noop(c, m):\n    return m\n\nPS_ = _pgettext_noop\n\nx = PS_('a', 'b')\n"
    r = _one(tmp_path, src2, "m.py:6 — calls `_pgettext_noop`")
    assert (r.status.value, r.corrected_to) == ("verified", None), r.reason
    # at the import, nothing is called: the call site is where it is
    r = _one(tmp_path, src, "m.py:1 — calls `_pgettext_noop`")
    assert (r.status.value, r.corrected_to) == ("corrected", "m.py:8"), r.reason


def test_a_correction_is_never_to_the_cited_line_itself(tmp_path: Path) -> None:
    src = "\n" * 1332 + "def ellipsize(text, max_len=160):\n    return text[:max_len]\n"
    doc = tmp_path / "a.md"
    for citation in ("m.py:1502 — `ellipsize`", "m.py:1502 — `ellipsize` is defined here"):
        (tmp_path / "m.py").write_text(src)
        doc.write_text(citation + "\n")
        (first,) = check_document(tmp_path, doc)
        assert (first.status.value, first.corrected_to) == ("corrected", "m.py:1333")
        fix_documents([first])
        (second,) = check_document(tmp_path, doc)
        assert second.status is CitationStatus.VERIFIED, second.reason


def test_the_block_says_when_citations_place_one_entity_in_two_definitions(
    tmp_path: Path,
) -> None:
    src = "class A:\n    def fetch(self):\n        return 1\n\n\n"
    src += "class B:\n    def fetch(self):\n        return 2\n"
    (tmp_path / "m.py").write_text(src)
    (tmp_path / "a.md").write_text("- m.py:3 — `fetch` returns\n")
    (tmp_path / "b.md").write_text("- m.py:8 — `fetch` returns\n- m.py:7 — `fetch`\n")
    results = [r for doc in ("a.md", "b.md") for r in check_document(tmp_path, tmp_path / doc)]
    assert [r.status for r in results] == [CitationStatus.VERIFIED] * 3
    block = summary_block(results, tmp_path).splitlines()
    assert block[5] == "- FABRICATIONS CAUGHT: N"
    assert block[8] == (
        "- Inconsistent (one entity, lines that cannot both hold): 1 — `fetch` at m.py:2 "
        "(a.md:1) and m.py:7 (b.md:1, b.md:2)"
    )
    alone = summary_block(results[1:], tmp_path)
    assert "Inconsistent" not in alone


def test_forge_links_of_this_repository_are_checked_and_others_listed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import time\n\n\ndef fetch(url):\n    return url\n")
    doc = tmp_path / "a.md"
    doc.write_text(
        "- https://github.com/acme/shop/blob/main/src/app.py#L4 — `fetch`\n"
        "- see https://gitlab.com/acme/sub/shop/-/blob/fix/x/src/app.py#L1-L2 for `fetch`\n"
        "- https://github.com/other/lib/blob/v1/lib/core.py#L12 — `thing`\n"
        "- [`fetch`](https://codeberg.org/acme/shop/src/branch/main/src/app.py#L1) is here\n"
    )
    results = check_document(tmp_path, doc)
    assert [c.citation.form for c in results] == [CitationForm.FORGE_LINK] * 4
    got = [(r.status.value, r.corrected_to) for r in results]
    assert got == [
        ("verified", None),
        ("corrected", "src/app.py:4-5"),
        ("not-audited", None),
        ("corrected", "src/app.py:4"),
    ]
    assert results[2].ok and not results[1].ok
    block = summary_block(results, tmp_path).splitlines()
    assert block[1] == "- Total citations: 4"
    assert block[8] == (
        "- Not audited (links to other repositories): 1 — a.md:3 "
        "https://github.com/other/lib/blob/v1/lib/core.py#L12"
    )
    fix_documents(results)
    assert doc.read_text().splitlines()[1].endswith("/-/blob/fix/x/src/app.py#L4-L5 for `fetch`")
    assert "/src/branch/main/src/app.py#L4)" in doc.read_text()
    assert all(r.ok for r in check_document(tmp_path, doc))


# --- --vgate-fix over every form: only the location, byte for byte elsewhere ------------

FUNCS = 12  # fetch_0 .. fetch_11, each `def` + 2 body lines + 2 blank lines
_P = "src/m.py"
# Each form with the written location as {a}/{b}; the fix must write the true ones.
FORMS = (
    "{p}:{a}", "{p}:{a}-{b}", "{p}:{a}–{b}", "{p}:{a}:7", "{p}#L{a}", "{p}#L{a}-L{b}",
    "{p}#L{a}-{b}", "`{p}:{a}`", "({p}:{a})",
    "[the fetch]({p}#L{a})", "[the fetch]({p}#L{a}-L{b})", "[the fetch]({p}:{a})",
    "[{p}:{a}]({p}#L{a})", "[`{p}#L{a}-L{b}`]({p}#L{a}-L{b})", "[{p}:{a}]({p}:{a})",
    "[the fetch](<{p}#L{a}>)", '[the fetch]({p}#L{a} "a title")', "[the fetch]({p}#L{a} 'x')",
    "[the fetch]( {p}#L{a} )", '[the fetch](<{p}#L{a}-L{b}> "t")',
    "https://github.com/o/r/blob/main/{p}#L{a}", "https://github.com/o/r/blob/main/{p}#L{a}-L{b}",
    "https://gitlab.com/o/r/-/blob/v1/{p}#L{a}", "https://bitbucket.org/o/r/src/main/{p}#lines-{a}:{b}",
    "[the fetch](https://github.com/o/r/blob/main/{p}#L{a})",
    "https://codeberg.org/o/r/src/branch/main/{p}#L{a}-L{b}",
    "[m.py:{a}]({p}#L{a})", "[src/m.py#L{a}]({p}:{a})", "[see docs/t.md:3 first]({p}#L{a})",
    "[`other/x.py:3`]({p}#L{a}-L{b})", "[{p}:{a}:2]({p}#L{a})", "[./{p}:{a}](./{p}#L{a})",
)  # fmt: skip
REFERENCES = (  # reference definitions; their title or tail names the entity
    '[r{n}]: {p}#L{a} "`fetch_{k}`"', '[r{n}]: <{p}#L{a}-L{b}> "the `fetch_{k}`"',
    "[r{n}]: {p}:{a} — `fetch_{k}`",
)  # fmt: skip


def _source() -> str:
    return "".join(f"def fetch_{k}():\n    x = {k}\n    return x\n\n\n" for k in range(FUNCS))


@st.composite
def drifted_documents(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Lines of a document as written (drifted) and as the fix must leave them."""
    safe = st.text(st.sampled_from("abc xyz.,;!?'()*_-—é€"), max_size=30)
    written, fixed = [], []
    for n in range(draw(st.integers(1, 8))):
        ending = draw(st.sampled_from(["\n", "\r\n"]))
        if draw(st.booleans()):
            junk = draw(safe)
            written.append(junk + ending)
            fixed.append(junk + ending)
        k = draw(st.integers(0, FUNCS - 1))
        head = 1 + 5 * k
        shift = draw(
            st.sampled_from([s for s in (-10, -5, 5, 10) if 1 <= head + s <= 5 * FUNCS - 4])
        )
        form = draw(st.sampled_from(FORMS + REFERENCES))
        if form in REFERENCES:
            text = form.replace("{n}", str(n)).replace("{k}", str(k))
        else:
            lead = draw(st.sampled_from(["- ", "", "1. ", "| "]))
            text = f"{lead}{form} — `fetch_{k}` {draw(safe)}"
        written.append(text.format(p=_P, a=head + shift, b=head + shift + 2) + ending)
        fixed.append(text.format(p=_P, a=head, b=head + 2) + ending)
    return written, fixed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drifted_documents())
def test_fix_rewrites_only_the_location_in_every_form_and_converges(
    doc: tuple[list[str], list[str]],
) -> None:
    written, fixed = doc
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        (root / _P).write_text(_source())
        answer = root / "answer.md"
        answer.write_bytes("".join(written).encode())
        first = check_document(root, answer)
        fix_documents(first)
        assert answer.read_bytes().decode() == "".join(fixed)
        second = check_document(root, answer)
        assert [r.citation.raw for r in second if r.status is not CitationStatus.VERIFIED] == []
        assert fix_documents(second) == {}
        assert answer.read_bytes().decode() == "".join(fixed)


def test_fix_makes_a_link_whose_text_and_target_disagree_agree_at_the_true_place(
    tmp_path: Path,
) -> None:
    """A link whose text cites a range and whose target one line (or the reverse), drifted:
    both move to where the entity is, a one-line place written as one line (never
    ``m.py:9-9``, never a text left disagreeing), and a second run changes nothing."""
    (tmp_path / "src").mkdir()
    (tmp_path / _P).write_text(_source())
    doc = tmp_path / "answer.md"
    doc.write_text(
        "- [src/m.py:3-5](src/m.py#L3) — `fetch_1` starts\n"
        "- [src/m.py:4](src/m.py#L4-L6) — `fetch_1` holds it\n"
    )
    fix_documents(check_document(tmp_path, doc))
    fixed = doc.read_text()
    assert fixed == (
        "- [src/m.py:6](src/m.py#L6) — `fetch_1` starts\n"
        "- [src/m.py:6](src/m.py#L6-L8) — `fetch_1` holds it\n"
    ), fixed
    assert all(r.ok for r in check_document(tmp_path, doc))
    assert fix_documents(check_document(tmp_path, doc)) == {}
    assert doc.read_text() == fixed


VARIANTS_SRC = """\
import time


def fetch(url, retries=3):
    for attempt in range(retries):
        try:
            return url
        except OSError:
            time.sleep(2**attempt)
    raise TimeoutError(url)
"""
TRUE_VARIANTS = (
    "- m.py:4 — `fetch` retries with a backoff",
    "- m.py:4 – `fetch` retries with a backoff.",
    "- m.py:4 - `fetch` retries with a backoff",
    "- m.py:4: `fetch` retries with a backoff",
    "- `fetch` retries with a backoff (m.py:4).",
    "- m.py:4 `fetch()` backs off exponentially between attempts",
    "- [`fetch`](m.py#L4) sleeps 2**attempt seconds",
    "- [m.py:4](m.py#L4) — `def fetch` is the retry loop",
    "- m.py:4 — the `fetch` function gives up after `retries` attempts",
    "- m.py:4 — `fetch` (moved here from the client) is validated against the allow-list",
    "- m.py:4 — `fetch` returns the url on success",
    "- m.py:4 — `fetch` raises `TimeoutError` when every attempt fails",
    "- m.py:4 — `fetch` raises a `LookupError`-free `TimeoutError`, an `OSError`",
    "- m.py:4 — `retries` defaults to 3",
    "- m.py:4 — `retries` defaults to 3.0",
    "- m.py:4 — `fetch` is defined here and never raises `KeyError` itself",
    "- m.py:9 — `fetch` waits between attempts",
    "- m.py:9 — calls `time.sleep` with a growing delay",
    "- m.py:4-10 — the whole of `fetch`",
    "- m.py:7 — `fetch` returns here",
    "- m.py:10 — `fetch` gives up with `TimeoutError`",
)
FALSE_VARIANTS = (
    "- m.py:4 — `retries` defaults to 5",
    "- m.py:10 — `fetch` raises `ValueError` when every attempt fails",
    "- m.py:9 — `fetch` deletes each attempt",
    "- m.py:4 — `fetch` yields each attempt",
)


def test_a_true_citation_passes_in_every_way_of_describing_it(tmp_path: Path) -> None:
    """The control of the description variants: separators, places, paraphrases, words
    no syntax decides, verbs and values the lines show; each one verified. The same
    citation with a value or verb the lines contradict is unsupported."""
    (tmp_path / "m.py").write_text(VARIANTS_SRC)
    doc = tmp_path / "a.md"
    doc.write_text("\n".join(TRUE_VARIANTS + FALSE_VARIANTS) + "\n")
    results = check_document(tmp_path, doc)
    assert len(results) == len(TRUE_VARIANTS) + len(FALSE_VARIANTS)
    wrong = [(r.citation.line, r.status.value, r.reason) for r in results if not r.ok]
    assert wrong[: len(wrong) - len(FALSE_VARIANTS)] == []
    tail = results[len(TRUE_VARIANTS) :]
    assert [r.status.value for r in tail] == ["unsupported"] * len(FALSE_VARIANTS)
