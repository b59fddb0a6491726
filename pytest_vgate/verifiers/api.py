"""What a verifier author writes: the ``@verifier`` decorator and the ``Outcome`` it returns.

Declaring is all the decorator does: the function comes back unchanged, carrying a frozen
:class:`VerifierSpec`. Calling a verifier is the runner's job (``call_verifier``); nothing
else in the package calls one. Core module: never imports pytest.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from pytest_vgate.errors import VgateError
from pytest_vgate.jsonable import Jsonable, StrEnum

SPEC_ATTRIBUTE = "__vgate_verifier__"

F = TypeVar("F", bound=Callable[..., Any])


class Isolation(StrEnum):
    """Where a verifier call runs: always a fresh process of its own.

    ``"inline"`` (once: a thread of the pytest process) is a deprecated alias of
    ``"process"``: a verifier in pytest's own process could end the session.
    """

    PROCESS = "process"
    INLINE = "process"  # deprecated alias

    @classmethod
    def _missing_(cls, value: object) -> Isolation | None:
        return cls.PROCESS if value == "inline" else None


class VerifierDefinitionError(VgateError, ValueError):
    """A ``@verifier(...)`` declaration that cannot work; the message says what to write."""


@dataclass(frozen=True)
class Outcome(Jsonable):
    """A verifier's answer. Only ``Outcome.passed()`` (or ``True``) passes.

    ``detail`` says what was observed; it is shown on the item and in the JSON report.
    """

    ok: bool
    detail: str = ""

    def __post_init__(self) -> None:
        if type(self.ok) is not bool:
            raise TypeError(f"Outcome.ok must be True or False, not {self.ok!r}")
        if not isinstance(self.detail, str):
            raise TypeError(f"Outcome.detail must be a str, not {type(self.detail).__name__}")

    @classmethod
    def passed(cls, detail: str = "") -> Outcome:
        return cls(True, detail)

    @classmethod
    def failed(cls, detail: str) -> Outcome:
        return cls(False, detail)


@dataclass(frozen=True)
class VerifierSpec(Jsonable):
    """The declaration attached to a verifier function by ``@verifier``.

    ``id`` defaults to the function's name; ``timeout`` None means the session default;
    ``tools`` are the tool ids ``ctx.run`` may run (and one of which must complete for a
    pass); ``module``/``qualname``/``file`` locate the function for a child process.
    """

    id: str
    timeout: float | None = None
    tools: tuple[str, ...] = ()
    isolation: Isolation = Isolation.PROCESS
    module: str = ""
    qualname: str = ""
    file: str | None = None


def _check_declaration(
    id: str | None, timeout: float | None, tools: Sequence[str], isolation: str
) -> tuple[float | None, tuple[str, ...], Isolation]:
    if id is not None and (not isinstance(id, str) or not id.strip()):
        raise VerifierDefinitionError(f"@verifier(id=...) must be a non-empty string, not {id!r}")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise VerifierDefinitionError(
            f"@verifier(timeout=...) must be a positive number of seconds, not {timeout!r}"
        )
    if isinstance(tools, (str, bytes)):
        raise VerifierDefinitionError(
            f"@verifier(tools=...) takes a list of tool ids, e.g. tools=[{tools!r}], "
            f"not the string {tools!r}"
        )
    tool_ids = tuple(tools)
    for tool in tool_ids:
        if not isinstance(tool, str) or not tool:
            raise VerifierDefinitionError(
                f"@verifier(tools=...) entries must be non-empty tool ids, not {tool!r}"
            )
    try:
        mode = Isolation(isolation)
    except ValueError:
        raise VerifierDefinitionError(
            f"@verifier(isolation=...) must be 'process' (the only isolation), not {isolation!r}"
        ) from None
    if isolation == "inline":
        warnings.warn(
            "@verifier(isolation='inline') is deprecated and runs the verifier in a process "
            "of its own, like every verifier: a verifier in pytest's own process could end "
            "the session; remove the argument",
            DeprecationWarning,
            stacklevel=4,
        )
    return (None if timeout is None else float(timeout)), tool_ids, mode


@overload
def verifier(id: F, /) -> F: ...


@overload
def verifier(
    id: str | None = None,
    *,
    timeout: float | None = None,
    tools: Sequence[str] = (),
    isolation: Literal["process", "inline"] | Isolation = "process",
) -> Callable[[F], F]: ...


def verifier(
    id: str | F | None = None,
    *,
    timeout: float | None = None,
    tools: Sequence[str] = (),
    isolation: Literal["process", "inline"] | Isolation = "process",
) -> F | Callable[[F], F]:
    """Declare ``fn(ctx)`` a verifier: ``@verifier``, ``@verifier("id")`` or with options.

    The function is returned unchanged with a :class:`VerifierSpec` in ``__vgate_verifier__``.
    Mistakes in the declaration raise :class:`VerifierDefinitionError` at import time.
    """
    if callable(id):  # bare @verifier
        return verifier()(id)
    checked_timeout, tool_ids, mode = _check_declaration(id, timeout, tools, isolation)

    def decorate(fn: F) -> F:
        if not callable(fn):
            raise VerifierDefinitionError(f"@verifier decorates a function, not {fn!r}")
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise VerifierDefinitionError(
                f"{fn.__qualname__} is async; a verifier is a plain function fn(ctx) "
                "(run an event loop inside it with asyncio.run if you need one)"
            )
        code = getattr(fn, "__code__", None)
        spec = VerifierSpec(
            id=id if isinstance(id, str) else getattr(fn, "__name__", repr(fn)),
            timeout=checked_timeout,
            tools=tool_ids,
            isolation=mode,
            module=getattr(fn, "__module__", "") or "",
            qualname=getattr(fn, "__qualname__", "") or "",
            file=code.co_filename if code is not None else None,
        )
        setattr(fn, SPEC_ATTRIBUTE, spec)
        return fn

    return decorate


def find_verifier_spec(obj: object) -> VerifierSpec | None:
    """The spec of a ``@verifier`` function, or None for anything else (never raises)."""
    try:
        spec = inspect.getattr_static(obj, SPEC_ATTRIBUTE, None)
    except Exception:  # noqa: BLE001 - odd objects at collection time are simply not verifiers
        return None
    return spec if isinstance(spec, VerifierSpec) else None
