"""The terminal summary's section writers (``plugin/summary.py``), each on its own input.

Each writer is a pure function from a ``SummaryInput`` to lines; ``write_summary`` prints
``SECTIONS`` in order. The last test renders a whole summary through the same writer
``vgate-merge`` uses and compares it with the text the summary printed before it was cut
into sections.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_vgate.citations.parse import Citation
from pytest_vgate.citations.result import CitationResult
from pytest_vgate.payload import (
    CitationDocumentPayload,
    CitationLike,
    CitationPayload,
    GateLike,
    GatePayload,
    Payload,
    decode_payload,
)
from pytest_vgate.plugin import summary
from pytest_vgate.plugin.merge import _Terminal
from pytest_vgate.plugin.summary import SECTIONS, Line, SummaryInput
from pytest_vgate.verdict import CitationStatus, Mode

ROOT = Path("/repo")


def given(
    gates: Sequence[tuple[str, GateLike]] = (),
    citations: Sequence[CitationLike] = (),
    warnings: Sequence[str] = (),
    *,
    width: int = 100,
    verbose: bool = False,
) -> SummaryInput:
    return SummaryInput(gates, citations, warnings, width, verbose, ROOT)


def gate(gate_id: str, mode: str, **extra: Any) -> tuple[str, GatePayload]:
    payload = {"kind": "gate", "id": gate_id, "mode": mode, "ok": mode == "pass", **extra}
    decoded = decode_payload(payload)
    assert isinstance(decoded, GatePayload)
    return f"gates.yaml::{gate_id}", decoded


def citation(document: str, line: int, status: CitationStatus, **extra: Any) -> CitationPayload:
    cited = Citation(ROOT / document, line, line * 10, f"src/a.py:{line}", "src/a.py", line, line)
    result = CitationResult(cited, status, reason="r").to_dict()
    ok = status is CitationStatus.VERIFIED
    decoded = decode_payload(
        {
            "kind": "citation",
            "ok": ok,
            "source": f"{document}:{line}",
            "location": cited.location,
            "result": result,
            **extra,
        }
    )
    assert isinstance(decoded, CitationPayload)
    return decoded


def texts(lines: list[Line]) -> list[str]:
    return [line.text for line in lines]


def test_gate_counts_lists_modes_in_mode_order() -> None:
    gates = [gate("a", "fail"), gate("b", "pass"), gate("c", "pass"), gate("d", "timeout")]
    assert texts(summary.gate_counts(given(gates))) == ["gates: 4 (2 pass, 1 fail, 1 timeout)"]
    assert summary.gate_counts(given()) == []


def test_failed_gates_are_red_with_mode_cause_and_hint() -> None:
    gates = [
        gate("ok", "pass"),
        gate("bad", "fail", cause="product", detail="exit code 1,\n  expected 0"),
        gate("judged", "judgment"),  # skipped, not failed
        gate("strict", "judgment", strict_failure=True, rbg_reason="no judge"),
    ]
    lines = summary.failed_gates(given(gates))
    assert texts(lines) == [
        "failed gates:",
        "  gates.yaml::bad: fail (product) - exit code 1, expected 0",
        "  gates.yaml::strict: judgment - no judge",
    ]
    assert [line.color for line in lines] == [None, "red", "red"]
    assert summary.failed_gates(given([gate("ok", "pass")])) == []


def test_red_before_green_is_a_table_with_reasons_under_verbose() -> None:
    red = {"where": "base", "base_ref": "a" * 40, "exit_code": 1, "time": "t1"}
    proven = gate(
        "fixed",
        "pass",
        rbg="proven",
        exit_code=0,
        red=red,
        records=[{**red}],
        tree_label="worktree",
        rbg_reason="red on the base, green now",
    )
    plain = texts(summary.red_before_green(given([proven])))
    assert plain == [
        "red-before-green: 1 proven (now = worktree)",
        "  gate   red evidence            now     coverage  status  cause",
        "  fixed  base aaaaaaaaaa exit 1  exit 0  -         proven  -",
    ]
    verbose = texts(summary.red_before_green(given([proven], verbose=True)))
    assert verbose == [*plain, "      red on the base, green now"]
    assert summary.red_before_green(given([gate("no-evidence", "pass")])) == []


def test_session_warnings_are_yellow_one_line_each() -> None:
    long = "the base worktree /a/very/long/path/" + "x" * 200 + " was left behind"
    lines = summary.session_warnings(given(warnings=["first", long]))
    assert lines == [
        Line("vgate warning: first", "yellow"),
        Line(f"vgate warning: {long}", "yellow"),
    ]


def test_citation_documents_counts_per_document_and_lists_unread_ones() -> None:
    citations = [
        citation("b.md", 2, CitationStatus.VERIFIED),
        citation("a.md", 1, CitationStatus.VERIFIED),
        citation("b.md", 1, CitationStatus.DROPPED),
        CitationDocumentPayload(document="c.md", ok=False, mode=Mode.ERROR, detail="a FIFO"),
        CitationDocumentPayload(document="a.md", ok=True, mode=Mode.PASS),
    ]
    lines = summary.citation_documents(given(citations=citations))
    assert lines == [
        Line("citation documents: 3: a.md (1), b.md (2), c.md (0)"),
        Line("  c.md: not audited: a FIFO", "red"),
    ]
    assert summary.citation_documents(given()) == []


def test_citation_fixes_lists_each_rewrite() -> None:
    fixed = citation("a.md", 3, CitationStatus.VERIFIED, fixed_from="src/a.py:9")
    lines = summary.citation_fixes(
        given(citations=[fixed, citation("a.md", 1, CitationStatus.VERIFIED)])
    )
    assert texts(lines) == [
        "citations rewritten by --vgate-fix: 1",
        "  a.md:3: src/a.py:9 -> src/a.py:3",
    ]
    assert (
        summary.citation_fixes(given(citations=[citation("a.md", 1, CitationStatus.VERIFIED)]))
        == []
    )


def test_citation_result_is_the_design_block_with_fabrications() -> None:
    citations = [
        citation("a.md", 1, CitationStatus.VERIFIED),
        citation("a.md", 2, CitationStatus.FABRICATED),
    ]
    assert texts(summary.citation_result(given(citations=citations))) == [
        "VERIFICATION GATE RESULT:",
        "- Total citations: 2",
        "- Verified at original location: 1",
        "- Corrected (line drift): 0",
        "- Dropped (file/line/content not found): 1",
        "- FABRICATIONS CAUGHT: Y — a.md:2 src/a.py:2 (file not found in the root)",
        "- Unsupported (description contradicted by the cited lines): 0",
        "- Descriptions not judged: 0",
    ]
    assert summary.citation_result(given()) == []


def test_sections_run_in_order_and_a_new_section_is_one_entry(monkeypatch: Any) -> None:
    """Adding a section is one function and one entry in ``SECTIONS`` (docs/architecture.md)."""

    def shout(given_input: SummaryInput) -> list[Line]:
        return [Line(f"{len(given_input.gates)} gates, shouted")]

    monkeypatch.setattr(summary, "SECTIONS", (*SECTIONS[:1], shout, *SECTIONS[1:]))
    out = _render([gate("a", "pass")], [], [])
    assert out.splitlines()[1:3] == ["gates: 1 (1 pass)", "1 gates, shouted"]


def _render(
    gates: Sequence[tuple[str, GateLike]],
    citations: Sequence[CitationLike],
    warnings: Sequence[str],
    verbose: int = 0,
) -> str:
    out = io.StringIO()
    terminal = _Terminal(out, str(ROOT), verbose)
    terminal.width = 100
    terminal._tw = SimpleNamespace(fullwidth=100)
    payloads: dict[str, Payload] = dict(gates)
    payloads.update({f"c{i}": c for i, c in enumerate(citations)})
    res = SimpleNamespace(warnings=list(warnings), settings=SimpleNamespace(gates_files=[]))
    summary.write_summary(terminal, payloads, res)  # type: ignore[arg-type]
    return out.getvalue()


FULL_GATES = [
    gate(
        "b",
        "fail",
        cause="product",
        detail="exit code 1, expected 0",
        rbg="proven",
        exit_code=1,
        source="gates.yaml:9",
        rbg_reason="red on the base",
    ),
    gate(
        "a",
        "pass",
        rbg="never-red",
        exit_code=0,
        source="gates.yaml:3",
        records=[{"where": "base", "mode": "pass", "exit_code": 0, "base_ref": "HEAD~1"}],
    ),
]
FULL_CITATIONS = [
    citation("a.md", 2, CitationStatus.FABRICATED),
    citation("a.md", 1, CitationStatus.VERIFIED, fixed_from="src/a.py:7"),
    CitationDocumentPayload(document="b.md", ok=False, mode=Mode.ERROR, detail="not UTF-8"),
]
# What the summary printed for this input before it was cut into section writers.
FULL_TEXT = """\
============================================== vgate ===============================================
gates: 2 (1 pass, 1 fail)
failed gates:
  gates.yaml::b: fail (product) - exit code 1, expected 0
red-before-green: 1 never-red, 1 proven
  gate  red evidence                 now     coverage  status     cause
  a     base HEAD~1 exit 0 (passed)  exit 0  -         never-red  -
  b     -                            exit 1  -         proven     product
      red on the base
vgate warning: the base is dirty
citation documents: 2: a.md (2), b.md (0)
  b.md: not audited: not UTF-8
citations rewritten by --vgate-fix: 1
  a.md:1: src/a.py:7 -> src/a.py:1
VERIFICATION GATE RESULT:
- Total citations: 2
- Verified at original location: 1
- Corrected (line drift): 0
- Dropped (file/line/content not found): 1
- FABRICATIONS CAUGHT: Y — a.md:2 src/a.py:2 (file not found in the root)
- Unsupported (description contradicted by the cited lines): 0
- Descriptions not judged: 0
"""


def test_the_whole_summary_reads_as_before() -> None:
    out = _render(FULL_GATES, FULL_CITATIONS, ["the base is dirty"], verbose=1)
    assert out == FULL_TEXT
