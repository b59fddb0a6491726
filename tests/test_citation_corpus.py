"""The labelled corpora: figures per status over real code (``helpers/citation_corpus.py``)
and over PR answers about three libraries' release diffs
(``helpers/citation_release_corpus.py``).

The corpus cites the installed sources of pytest, pluggy and the standard library in
every situation the checker must tell apart; the figures in ``docs/citations.md`` are
these. Regenerate them with ``python tests/helpers/citation_corpus.py --write-docs``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from helpers.citation_corpus import (
    STATUSES,
    Case,
    Figures,
    build_corpus,
    docs_table,
    measure,
    render_table,
)
from helpers.citation_release_corpus import Measured
from helpers.citation_release_corpus import docs_table as release_docs_table
from helpers.citation_release_corpus import measure as measure_release
from helpers.citation_release_corpus import render_table as render_release


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Figures, list[tuple[Case, str, str | None]]]:
    return measure(tmp_path_factory.mktemp("corpus"))


def test_no_false_verified(corpus: tuple[Figures, list[tuple[Case, str, str | None]]]) -> None:
    figures, outcomes = corpus
    false = [
        (c.kind, c.text, c.status)
        for c, predicted, _ in outcomes
        if predicted == "verified" != c.status
    ]
    assert figures.false("verified") == 0, false


def test_no_false_dropped(corpus: tuple[Figures, list[tuple[Case, str, str | None]]]) -> None:
    figures, outcomes = corpus
    false = [
        (c.kind, c.text, c.status)
        for c, predicted, _ in outcomes
        if predicted == "dropped" != c.status
    ]
    assert figures.false("dropped") == 0, false


def test_every_citation_gets_its_true_status(
    corpus: tuple[Figures, list[tuple[Case, str, str | None]]],
) -> None:
    _, outcomes = corpus
    wrong = [(c.kind, c.text, c.status, p) for c, p, _ in outcomes if p != c.status]
    assert not wrong


def test_the_corpus_covers_every_situation_and_status(
    corpus: tuple[Figures, list[tuple[Case, str, str | None]]],
) -> None:
    figures, outcomes = corpus
    assert figures.total >= 300
    true = Counter(case.status for case, _, _ in outcomes)
    assert all(true[status] >= 30 for status in STATUSES), true
    for kind in (
        "correct def line", "correct def range", "correct call line", "correct prose",
        "blank line, code", "blank line, prose", "comment line", "whole file, code",
        "whole file, prose", "wrong entity nearby", "wrong file", "missing file",
        "past EOF, found", "past EOF, nowhere", "operator alone", "deep inside a long class",
        "secondary identifier", "prose, unrelated line",
        "returns, right line", "returns, wrong line", "returns, at the def line",
        "raises, right line", "raises, wrong line", "raises, wrong line, none near",
        "yields, right line", "yields, wrong line", "assigns, right line", "assigns, wrong line",
        "starts, body line", "starts, def line",
        "behaviour words, shown", "behaviour words, not shown", "test asserts the opposite",
        "test asserts no raise", "test asserts equality", "named case",
    ):  # fmt: skip
        assert figures.kinds.get(kind, 0) >= 5, (kind, figures.kinds)
    drifts = [c for c, _, _ in outcomes if c.kind.startswith(("drift", "range drift"))]
    assert len(drifts) >= 40
    assert {int(c.kind.rsplit(" ", 1)[1]) for c in drifts} >= {1, 20, 25}


def test_every_correction_points_where_the_label_says(
    corpus: tuple[Figures, list[tuple[Case, str, str | None]]],
) -> None:
    figures, outcomes = corpus
    wrong = [
        (c.kind, c.text, to, c.corrected_to)
        for c, predicted, to in outcomes
        if predicted == c.status == "corrected" and to != c.corrected_to
    ]
    assert not wrong
    assert figures.wrong_target == 0


def test_the_verb_cases_come_from_libraries_not_already_cited(
    corpus: tuple[Figures, list[tuple[Case, str, str | None]]],
) -> None:
    _, outcomes = corpus
    verb_kinds = ("returns", "raises", "yields", "starts", "behaviour", "test ", "named")
    files = {
        c.text.split(" ", 2)[1].split(":", 1)[0]
        for c, _, _ in outcomes
        if c.kind.startswith(verb_kinds)
    }
    assert files == {
        "lib/lrucache.py", "lib/lrucache_tests.py", "lib/naturaltime.py", "lib/textutils.py",
        "lib/versionspec.py",
    }  # fmt: skip
    assert len([c for c, _, _ in outcomes if c.kind.startswith(verb_kinds)]) >= 300


def test_fixing_converges_on_the_corpus(tmp_path: Path) -> None:
    """After --vgate-fix a second check finds nothing to fix, and every fixed citation is
    verified: a correction is never one that the next run corrects again."""
    from pytest_vgate.citations import CitationChecker, fix_documents, parse_citations

    answer, _, _ = build_corpus(tmp_path)
    first = [CitationChecker(tmp_path).check(c) for c in parse_citations(answer)]
    corrected = {r.citation.line for r in first if r.status.value == "corrected"}
    assert len(corrected) >= 300
    assert fix_documents(first) == {answer: len(corrected)}
    second = [CitationChecker(tmp_path).check(c) for c in parse_citations(answer)]
    by_line = {r.citation.line: r for r in second}
    again = [(r.citation.raw, r.reason) for r in second if r.status.value == "corrected"]
    assert again == []
    assert all(by_line[line].status.value == "verified" for line in corrected)
    unchanged = {r.citation.line: r.status for r in first if r.citation.line not in corrected}
    assert all(by_line[line].status is status for line, status in unchanged.items())
    assert fix_documents(second) == {}


def test_docs_table_is_the_measured_one(
    corpus: tuple[Figures, list[tuple[Case, str, str | None]]],
) -> None:
    figures, _ = corpus
    documented = docs_table()
    assert documented is not None, "docs/citations.md lost its corpus table markers"
    if f"`{figures.fingerprint}`" not in documented:
        pytest.skip(
            "the installed sources differ from the ones the documented figures were measured "
            f"on (fingerprint {figures.fingerprint}); the figures were still checked above"
        )
    assert documented == render_table(figures), (
        "docs/citations.md is out of date: run python tests/helpers/citation_corpus.py --write-docs"
    )


def test_the_corpus_is_deterministic(tmp_path: Path) -> None:
    first = build_corpus(tmp_path / "a")
    second = build_corpus(tmp_path / "b")
    assert first[1] == second[1] and first[2] == second[2]
    assert first[0].read_bytes() == second[0].read_bytes()


# --- the release corpus: PR answers about three libraries' release diffs ----------------


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Measured:
    return measure_release(tmp_path_factory.mktemp("release"))


def test_release_corpus_every_citation_gets_its_label(release: Measured) -> None:
    """Status, correction and the description's word, as labelled by hand."""
    assert release.wrong() == []


def test_release_corpus_no_true_citation_fails_and_no_false_one_is_verified(
    release: Measured,
) -> None:
    true_failing = [r.text for r, got, _, _ in release.rows if r.status == "verified" != got]
    false_verified = [r.text for r, got, _, _ in release.rows if got == "verified" != r.status]
    assert (true_failing, false_verified) == ([], [])


def test_release_corpus_is_large_and_varied(release: Measured) -> None:
    libraries = Counter(row.library for row, _, _, _ in release.rows)
    assert len(release.rows) >= 200 and len(libraries) >= 3, libraries
    assert all(n >= 40 for n in libraries.values()), libraries
    given = Counter(status for _, status, _, _ in release.rows)
    assert all(given[s] >= 3 for s in ("verified", "corrected", "dropped", "fabricated"))
    assert given["unsupported"] >= 20
    words = Counter(desc for _, _, _, desc in release.rows)
    assert all(words[w] >= 20 for w in ("shown", "contradicted", "not-judged")), words


def test_release_corpus_fix_converges(tmp_path: Path) -> None:
    """--vgate-fix on each library's answer: one pass, then nothing to fix, and every
    corrected citation verifies or (its description contradicted) is unsupported."""
    from pytest_vgate.citations import CitationChecker, fix_documents, parse_citations

    measure_release(tmp_path)
    for library in ("humanize", "toolz", "click"):
        answer = tmp_path / library / "answer.md"
        first = [CitationChecker(answer.parent).check(c) for c in parse_citations(answer)]
        corrected = {r.citation.line for r in first if r.status.value == "corrected"}
        assert corrected and fix_documents(first) == {answer: len(corrected)}
        second = [CitationChecker(answer.parent).check(c) for c in parse_citations(answer)]
        assert [r.citation.raw for r in second if r.status.value == "corrected"] == []
        assert all(
            r.status.value in ("verified", "unsupported")
            for r in second
            if r.citation.line in corrected
        )
        assert fix_documents(second) == {}


def test_release_docs_table_is_the_measured_one(release: Measured) -> None:
    assert release_docs_table() == render_release(release), (
        "docs/citations.md is out of date: run "
        "python tests/helpers/citation_release_corpus.py --write-docs"
    )
