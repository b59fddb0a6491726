"""The labelled corpus (``helpers/citation_corpus.py``): figures per status over real code.

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
    docs_table,
    measure,
    render_table,
)


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
    from helpers.citation_corpus import build_corpus

    first = build_corpus(tmp_path / "a")
    second = build_corpus(tmp_path / "b")
    assert first[1] == second[1] and first[2] == second[2]
    assert first[0].read_bytes() == second[0].read_bytes()
