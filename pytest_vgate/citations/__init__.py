"""Code citations: find them in documents, check them inside a root, fix drifted ones.

The core of citation checking (no pytest here): ``parse_citations`` finds citations,
``CitationChecker.check`` judges each against the root's files, ``fix_documents``
rewrites corrected ones in place and ``summary_block`` renders the VERIFICATION GATE RESULT block.
"""

from __future__ import annotations

from pytest_vgate.citations.check import CitationChecker
from pytest_vgate.citations.entities import extract_entities
from pytest_vgate.citations.files import MAX_BYTES
from pytest_vgate.citations.fix import fix_documents
from pytest_vgate.citations.parse import Citation, CitationForm, parse_citations
from pytest_vgate.citations.result import CitationResult, summary_block
from pytest_vgate.citations.source import split_lines

__all__ = [
    "MAX_BYTES",
    "Citation",
    "CitationChecker",
    "CitationForm",
    "CitationResult",
    "extract_entities",
    "fix_documents",
    "parse_citations",
    "split_lines",
    "summary_block",
]
