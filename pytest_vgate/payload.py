"""What an item hands the controller: one frozen type per payload kind, one JSON codec.

Each payload is built in one place and crosses the xdist boundary as its JSON object
(``to_dict()``, ``kind`` naming the type); :func:`decode_payload` is the one way back,
strict, because it travelled through another process and other plugins' hooks. Nested
records (a verdict, evidence, coverage) stay the JSON objects their own types wrote
(``JsonObject``), decoded by those types where they are read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, final

from pytest_vgate.gatesfile.model import GateType
from pytest_vgate.jsonable import Jsonable, JsonShapeError, StrEnum, from_json, rounded
from pytest_vgate.verdict import Cause, CitationDescription, CitationStatus, Mode, Rbg


@final
class JsonObject(Mapping[str, Any]):
    """A nested record kept as the JSON object its own type wrote (``Verdict.to_dict()``,
    ``Record.to_dict()``...), read-only: encoded as that very object and decoded whole,
    without walking it again (its readers decode it with its own type, strictly);
    decoding checks only that it is a JSON object."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"JsonObject({self._data!r})"

    def to_dict(self) -> dict[str, Any]:
        return self._data

    @classmethod
    def from_dict(cls, data: object) -> JsonObject:
        if not isinstance(data, dict):
            raise TypeError(f"expected a JSON object, got {type(data).__name__}")
        return cls(data)


def json_object(data: dict[str, Any] | None) -> JsonObject | None:
    """``data`` as a :class:`JsonObject` (None stays None)."""
    return None if data is None else JsonObject(data)


class PayloadKind(StrEnum):
    """The ``"kind"`` of an item's payload."""

    GATE = "gate"  # a gate of gates.yaml (gate_result.GateResult)
    VERIFIER = "verifier"  # a @verifier function collected as an item
    TEST = "test"  # an ordinary test marked with a mode
    CITATION = "citation"  # one citation in a document
    CITATION_DOCUMENT = "citation-document"  # a document's own result (its read, its errors)
    CRASHED = "crashed"  # the xdist worker died inside the item (or its payload was unreadable)
    MISSING = "missing"  # a selected gate with no result (merge of remote reports)


class PayloadError(ValueError):
    """A payload that cannot be read: unknown kind, unknown key, wrong type."""


@dataclass(frozen=True, kw_only=True)
class CheckPayload(Jsonable):
    """A gate's or a verifier's result (``gate_result.GateResult.to_payload``): the fields
    of a gate entry of the JSON report (``report.GATE_FIELDS``) and the failure text."""

    id: str
    claim: str = ""
    type: GateType = GateType.COMMAND
    ok: bool
    mode: Mode
    cause: Cause | None = None
    rbg: Rbg | None = None
    rbg_reason: str = ""
    exit_code: int | None = None
    isolation: str | None = None  # what contained the run now: namespace, contained, group
    duration: float = field(default=0.0, metadata=rounded(6))
    command: tuple[str, ...] = ()
    detail: str = ""
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    errors: tuple[str, ...] = ()
    checks: tuple[JsonObject, ...] = ()  # CheckResult.to_dict() each
    tools: tuple[JsonObject, ...] = ()  # ToolRecord.to_dict() each
    green: JsonObject | None = None  # Verdict.to_dict() of the run on the current tree
    base: JsonObject | None = None  # Verdict.to_dict() of the run on the base
    red: JsonObject | None = None  # the red evidence used (a ledger record)
    strict_failure: bool = False
    records: tuple[JsonObject, ...] = ()  # this session's evidence records (Record.to_dict())
    tree_label: str | None = None
    ledger: str | None = None
    coverage: JsonObject | None = None  # CoverageResult.to_dict()
    repeat: JsonObject | None = None  # every run's exit code and the 4^-N bound
    discrimination: JsonObject | None = None  # DiscriminationResult.to_dict()
    source: str | None = None  # gates file:line (test module:line for a verifier)
    report: str = ""  # the failure text the item shows
    targets: tuple[JsonObject, ...] | None = None  # where to point a failure: {path, line}
    adjustments: tuple[JsonObject, ...] | None = None  # adjusters' answers: {plugin, action...}
    nodeid: str | None = None


@dataclass(frozen=True, kw_only=True)
class GatePayload(CheckPayload):
    """A gate of a gates file."""

    kind: Literal[PayloadKind.GATE] = PayloadKind.GATE


@dataclass(frozen=True, kw_only=True)
class VerifierPayload(CheckPayload):
    """A ``@verifier`` function collected as an item: a gate payload of its own kind."""

    kind: Literal[PayloadKind.VERIFIER] = PayloadKind.VERIFIER


@dataclass(frozen=True, kw_only=True)
class TestPayload(Jsonable):
    """An ordinary test marked ``vgate``: the mode and cause of how it ended."""

    __test__ = False  # not a test class, whatever its name says to pytest

    id: str
    ok: bool
    mode: Mode
    cause: Cause | None = None
    detail: str = ""
    duration: float = field(default=0.0, metadata=rounded(6))
    nodeid: str | None = None
    kind: Literal[PayloadKind.TEST] = PayloadKind.TEST


@dataclass(frozen=True, kw_only=True)
class CrashedPayload(Jsonable):
    """An item that ended without a verdict that can be read: its xdist worker died in
    it, or its payload did not decode. Always a failure."""

    id: str
    ok: bool = False
    mode: Mode = Mode.CRASH
    cause: Cause | None = Cause.ENVIRONMENT
    detail: str = ""
    nodeid: str | None = None
    kind: Literal[PayloadKind.CRASHED] = PayloadKind.CRASHED


@dataclass(frozen=True, kw_only=True)
class CitationPayload(Jsonable):
    """One citation in a document; its JSON (without ``kind``) is a report citation entry."""

    source: str  # document:line where it was written
    citation: str = ""  # as written
    location: str = ""
    status: CitationStatus = CitationStatus.VERIFIED
    corrected_to: str | None = None
    reason: str = ""
    fixed_from: str | None = None  # the location before --vgate-fix rewrote it
    root: str = ""
    ok: bool
    mode: Mode = Mode.PASS
    cause: Cause | None = None
    result: JsonObject  # CitationResult.to_dict()
    original: JsonObject | None = None  # what checking it found before --vgate-fix
    nodeid: str | None = None
    description: CitationDescription | None = None  # None: the location failed first
    description_reason: str = ""
    kind: Literal[PayloadKind.CITATION] = PayloadKind.CITATION


def document_order(result: Mapping[str, object] | None) -> tuple[str, int]:
    """Where a citation was written (document, offset) from its result: the order of the
    citations in the report, the summary and a merged report, whatever order xdist
    delivered them in."""
    cited = (result or {}).get("citation") or {}
    if not isinstance(cited, Mapping):
        raise TypeError(f"a citation is a JSON object, not {cited!r:.60}")
    offset = cited.get("offset", 0)
    if not isinstance(offset, (int, float, str)):
        raise TypeError(f"a citation's offset is a number, not {offset!r:.60}")
    return str(cited.get("document", "")), int(offset)


@dataclass(frozen=True, kw_only=True)
class CitationDocumentPayload(Jsonable):
    """A cited document audited as a whole (it holds no citation, or cannot be read)."""

    document: str
    citations: int = 0
    ok: bool
    mode: Mode
    cause: Cause | None = None
    detail: str = ""
    nodeid: str | None = None
    kind: Literal[PayloadKind.CITATION_DOCUMENT] = PayloadKind.CITATION_DOCUMENT


@dataclass(frozen=True, kw_only=True)
class MissingPayload(Jsonable):
    """A gate a gates file declares that no shard ran (``python -m pytest_vgate merge``),
    or a document it cites whose citations no shard checked (``id``: the document);
    its JSON is the merged report's gate entry, in this order."""

    id: str
    kind: Literal[PayloadKind.MISSING] = PayloadKind.MISSING
    claim: str = ""
    mode: Mode = Mode.CRASH
    cause: Cause | None = Cause.ENVIRONMENT
    ok: bool = False
    detail: str = ""
    source: str | None = None
    nodeid: str | None = None


Payload = (
    GatePayload
    | VerifierPayload
    | TestPayload
    | CrashedPayload
    | CitationPayload
    | CitationDocumentPayload
    | MissingPayload
)
GateLike = GatePayload | VerifierPayload | TestPayload | CrashedPayload | MissingPayload
"""The payloads that are gate entries of the JSON report (all but citations and documents)."""
CitationLike = CitationPayload | CitationDocumentPayload

PAYLOAD_TYPES: dict[str, type[Payload]] = {
    PayloadKind.GATE.value: GatePayload,
    PayloadKind.VERIFIER.value: VerifierPayload,
    PayloadKind.TEST.value: TestPayload,
    PayloadKind.CRASHED.value: CrashedPayload,
    PayloadKind.CITATION.value: CitationPayload,
    PayloadKind.CITATION_DOCUMENT.value: CitationDocumentPayload,
    PayloadKind.MISSING.value: MissingPayload,
}


def verdict_ok(payload: Payload) -> bool:
    """Passed, or a skip the plugin made itself (``judgment``, not under --vgate-strict)."""
    if isinstance(payload, CheckPayload) and payload.strict_failure:
        return False
    if payload.mode is Mode.JUDGMENT:
        return True
    return payload.ok


def decode_payload(data: object) -> Payload:
    """The payload a JSON object is, by its ``kind``; :class:`PayloadError` if it is not one."""
    if not isinstance(data, Mapping):
        raise PayloadError(f"a payload is a JSON object, not {type(data).__name__}")
    return _decode(_payload_type(data.get("kind")), data)


def payload_of_entry(entry: Mapping[str, object], default: PayloadKind) -> Payload:
    """The payload of a JSON report entry (of kind ``default`` when the entry names none):
    the entry's keys that the payload type has, without its nulls (the report writes a
    null for every gate field a kind lacks); the values are checked as
    :func:`decode_payload` checks them."""
    kind = entry.get("kind") or default.value
    cls = _payload_type(kind)
    names = {f.name for f in fields(cls)}
    data = {k: v for k, v in entry.items() if k in names and v is not None}
    data["kind"] = kind
    return _decode(cls, data)


def _payload_type(kind: object) -> type[Payload]:
    cls = PAYLOAD_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise PayloadError(f"unknown payload kind {kind!r} (kinds: {', '.join(PAYLOAD_TYPES)})")
    return cls


def _decode(cls: type[Payload], data: Mapping[str, object]) -> Payload:
    try:
        payload = from_json(cls, data)
    except JsonShapeError as exc:
        raise PayloadError(str(exc)) from None
    # What every payload we build holds: a pass is mode `pass`, and an item that ended
    # without a verdict (crashed, missing) never passed. One flipped field is no pass.
    if payload.ok and (payload.mode is not Mode.PASS or cls in (CrashedPayload, MissingPayload)):
        raise PayloadError(f"a {cls.__name__} with ok true and mode {payload.mode.value}")
    return payload
