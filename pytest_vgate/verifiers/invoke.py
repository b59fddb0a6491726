"""One verifier call where it runs: the verifier's own process.

:func:`execute` looks up the target, builds ``ctx``, calls the function and turns
whatever happened into plain data: a mode, a cause and a bounded description. It is the
only place in the package that calls a verifier, and it never raises for anything the
verifier does; the classification is strict: only ``True`` or ``Outcome.passed()`` pass.
Whether a pass rests on the tools' answers is judged by the pytest process, which alone
holds the record of the runs (``toolhost.ground``).
"""

from __future__ import annotations

import inspect
import os
import reprlib
import sys
import traceback
import types
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol

from pytest_vgate.causes import product_frame
from pytest_vgate.process import bytecode
from pytest_vgate.process.tools import ToolUnavailableError
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode
from pytest_vgate.verifiers.api import Outcome, find_verifier_spec
from pytest_vgate.verifiers.context import VerifierContext
from pytest_vgate.verifiers.messages import ChildAnswer, DeclareMessage, Op, VerifierJob
from pytest_vgate.verifiers.target import VerifierImportError, load_target

DETAIL_LIMIT = 4000  # characters of a detail kept (head and tail)
TRACEBACK_FRAMES = 8
_NOT_THEIRS = (str(Path(__file__).parent) + os.sep, "<frozen importlib")  # frames hidden

_repr = reprlib.Repr()
_repr.maxstring = 200
_repr.maxother = 200
_repr.maxlevel = 4


def bounded(text: str, limit: int = DETAIL_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, keeping head and tail around a marker."""
    if len(text) <= limit:
        return text
    half = (limit - 40) // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"


def describe(value: object) -> str:
    """A short repr of what a verifier returned; never raises (repr is the verifier's code)."""
    kind = type(value).__name__
    try:
        text = _repr.repr(value)
    # Catch-all: a user __repr__ may raise anything, even SystemExit; the description
    # must still be produced.
    except BaseException as exc:  # noqa: BLE001
        return f"<{kind} object; its repr() raised {type(exc).__name__}>"
    return f"{text} ({kind})" if kind not in ("NoneType", "bool") else text


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # noqa: BLE001 - a user __str__ may raise; the type is still known
        return "<str() of the exception raised>"


def _exception_text(exc: BaseException) -> str:
    message = _message(exc)
    name = type(exc).__qualname__
    head = f"{name}: {message}" if message else name
    try:
        summary = traceback.extract_tb(exc.__traceback__)
        theirs = traceback.StackSummary.from_list(
            [f for f in summary if not f.filename.startswith(_NOT_THEIRS)]
        )
        frames = theirs.format()[-TRACEBACK_FRAMES:]
    except Exception:  # noqa: BLE001 - formatting a traceback must not lose the verdict
        frames = []
    tb = "".join(frames)
    return bounded(f"{head}\nTraceback (most recent call last):\n{tb}" if tb else head)


def _is_pytest_fail(exc: BaseException) -> bool:
    """``pytest.fail()`` (``_pytest.outcomes.Failed``), looked up where the verifier got it
    from: the core never imports pytest."""
    outcomes = sys.modules.get("_pytest.outcomes")
    failed = getattr(outcomes, "Failed", None)
    return isinstance(failed, type) and isinstance(exc, failed)


def classify_exception(exc: BaseException, during: str = "") -> tuple[Mode, str]:
    """A failed ``assert`` or ``pytest.fail()`` in the verifier -> fail (its answer, as for
    a test); any other Exception -> error (unavailable for a missing tool); any other
    BaseException -> panic. While importing (``during``) nothing is an answer yet."""
    prefix = f"{during}: " if during else ""
    if isinstance(exc, ToolUnavailableError):
        return Mode.UNAVAILABLE, f"{prefix}{exc}"
    if _is_pytest_fail(exc) and not during:
        return Mode.FAIL, bounded(f"pytest.fail(): {_message(exc)}")
    if isinstance(exc, AssertionError) and not during:
        return Mode.FAIL, f"assertion failed: {_exception_text(exc)}"
    if isinstance(exc, Exception):
        return Mode.ERROR, f"{prefix}raised {_exception_text(exc)}"
    return Mode.PANIC, (
        f"{prefix}raised {_exception_text(exc)}\n(a BaseException that is not an Exception "
        "is a panic: it would have stopped a plain Python program)"
    )


def classify_return(value: object) -> tuple[Mode, Cause | None, str]:
    """Only ``True`` and a passing ``Outcome`` pass; anything else fails (broken_test)."""
    if value is True:
        return Mode.PASS, None, ""
    if type(value) is Outcome:
        if value.ok is True:
            return Mode.PASS, None, bounded(value.detail)
        return Mode.FAIL, Cause.PRODUCT, bounded(value.detail or "Outcome.failed() (no detail)")
    hint = "only True or Outcome.passed() pass; return Outcome.failed('why') to fail"
    if value is None:
        return Mode.FAIL, Cause.BROKEN_TEST, f"the verifier returned None (no return?); {hint}"
    if inspect.iscoroutine(value) or inspect.isgenerator(value):
        # No "never awaited" warning; whatever its finally blocks raise, the verdict stands.
        with suppress(BaseException):
            value.close()
        return (
            Mode.FAIL,
            Cause.BROKEN_TEST,
            (
                f"the verifier returned {type(value).__name__} (async or generator function?); "
                f"a verifier is a plain function; {hint}"
            ),
        )
    return Mode.FAIL, Cause.BROKEN_TEST, f"the verifier returned {describe(value)}; {hint}"


def _files_of(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The verifier's own source files (its code object and its module), for ``causes``."""
    try:
        module = sys.modules.get(str(getattr(fn, "__module__", "") or ""))
        code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
        found = (getattr(code, "co_filename", None), getattr(module, "__file__", None))
    except Exception:  # noqa: BLE001 - an odd callable: no file is known to be the verifier's
        return ()
    return tuple(f for f in found if isinstance(f, str) and f)


# What makes ``inspect.signature`` look past a function's code (see ``_takes_argument``).
_SIGNATURE_HOOKS = frozenset(
    {"__wrapped__", "__signature__", "_partialmethod", "__partialmethod__"}
)


def _takes_argument(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a positional argument (``ctx``), as ``inspect.signature``
    says. A plain function's answer is in its code object (what ``inspect`` reads too,
    at a fraction of the objects touched: each is a page a verifier process copies);
    anything else -- a decorated function, a callable object, a builtin -- asks
    ``inspect``; TypeError/ValueError when it cannot say."""
    if isinstance(fn, types.FunctionType) and not fn.__dict__.keys() & _SIGNATURE_HOOKS:
        code = fn.__code__
        return code.co_argcount > 0 or bool(code.co_flags & inspect.CO_VARARGS)
    params = inspect.signature(fn).parameters.values()
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )


def _call(fn: Callable[..., Any], ctx: VerifierContext) -> object:
    """fn(ctx), or fn() for a function that takes no argument (a plain check)."""
    try:
        takes_arg = _takes_argument(fn)
    except (TypeError, ValueError):  # builtins and odd callables: pass ctx
        return fn(ctx)
    return fn(ctx) if takes_arg else fn()


class Link(Protocol):
    """The child's end of the call (``child.Link``): messages to the pytest process."""

    def send(self, message: Mapping[str, object]) -> None: ...

    def request(self, message: Mapping[str, object]) -> dict[str, Any]: ...


def _result(
    mode: Mode, detail: str, *, cause: Cause | None = None, declared: tuple[str, ...] = ()
) -> ChildAnswer:
    chosen = cause if cause is not None or mode is Mode.PASS else DEFAULT_CAUSE[mode]
    return ChildAnswer(mode=mode, cause=chosen, detail=bounded(detail), declared_tools=declared)


def execute(job: VerifierJob, link: Link) -> ChildAnswer:
    """Run the job's verifier once and describe the answer as plain data (module doc).

    The verifier's module is imported already (by its zygote); raises only what the
    caller must see: nothing from the verifier itself.
    """
    target = job.target
    # What the verifier imports now is the tree's source as it is now (the zygote's own
    # import had the same, at its start): the pytest process checked the cache's entries
    # for the tree just before it sent the job (``bytecode_checked``), else we do.
    if not job.bytecode_checked:
        bytecode.use_fresh_bytecode(Path(job.root))
    where = f"importing {target.module}:{target.qualname}"
    try:
        fn = load_target(target)
    except VerifierImportError as exc:
        return _result(Mode.ERROR, str(exc))
    # Catch-all: importing runs the user's module code; whatever it raises is its mode.
    except BaseException as exc:  # noqa: BLE001
        mode, detail = classify_exception(exc, where)
        return _result(mode, detail)
    spec = find_verifier_spec(fn)
    declared = tuple(dict.fromkeys([*target.tools, *(spec.tools if spec else ())]))
    if declared:  # before the first ctx.run: the pytest process enforces the declaration
        link.send(DeclareMessage(op=Op.DECLARE, tools=list(declared)))
    root = Path(job.root)
    ctx = VerifierContext(
        root=root,
        cell=Path(job.cell),
        deadline=job.deadline,
        gate=job.gate,
        declared_tools=declared,
        link=link,
    )
    cause: Cause | None = None
    try:
        returned = _call(fn, ctx)
    # Catch-all by design: this is the fail-closed boundary around the verifier's code.
    except BaseException as exc:  # noqa: BLE001
        mode, detail = classify_exception(exc)
        raised_at = product_frame(exc, root, _files_of(fn)) if mode is Mode.ERROR else None
        if raised_at is not None:  # the code under test raised: the product's answer
            mode, cause = Mode.FAIL, Cause.PRODUCT
            detail = f"the code under test raised at {raised_at}: {detail}"
    else:
        mode, cause, detail = classify_return(returned)
    return _result(mode, detail, cause=cause, declared=declared)
