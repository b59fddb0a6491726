"""One verifier call where it runs (the child process, or the caller for ``inline``).

:func:`execute` imports the target, builds ``ctx``, calls the function and turns whatever
happened into plain data: a mode, a cause and a bounded description. It is the only
place in the package that calls a verifier, and it never raises for anything the
verifier does; the classification is strict: only ``True`` or ``Outcome.passed()`` pass.
"""

from __future__ import annotations

import inspect
import os
import reprlib
import sys
import traceback
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from pytest_vgate import bytecode
from pytest_vgate.causes import product_frame
from pytest_vgate.tools import ToolInventory
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode, worst_mode
from pytest_vgate.verifiers.api import Outcome, find_verifier_spec
from pytest_vgate.verifiers.context import (
    RunReporter,
    Toolbox,
    ToolUnavailableError,
    ToolUse,
    VerifierContext,
)
from pytest_vgate.verifiers.target import (
    VerifierImportError,
    VerifierTarget,
    extend_sys_path,
    load_target,
)

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


def _exception_text(exc: BaseException) -> str:
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a user __str__ may raise; the type is still known
        message = "<str() of the exception raised>"
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


def classify_exception(exc: BaseException, during: str = "") -> tuple[Mode, str]:
    """Exception -> error (unavailable for a missing tool); any other BaseException -> panic."""
    prefix = f"{during}: " if during else ""
    if isinstance(exc, ToolUnavailableError):
        return Mode.UNAVAILABLE, f"{prefix}{exc}"
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


def _call(fn: Callable[..., Any], ctx: VerifierContext) -> object:
    """fn(ctx), or fn() for a function that takes no argument (a plain check)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins and odd callables: pass ctx
        return fn(ctx)
    takes_arg = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )
    return fn(ctx) if takes_arg else fn()


def _result(
    mode: Mode,
    detail: str,
    *,
    cause: Cause | None = None,
    runs: tuple[ToolUse, ...] = (),
    declared: tuple[str, ...] = (),
) -> dict[str, Any]:
    chosen = cause if cause is not None or mode is Mode.PASS else DEFAULT_CAUSE[mode]
    return {
        "mode": mode.value,
        "cause": chosen.value if chosen is not None else None,
        "detail": bounded(detail),
        "runs": [r.to_dict() for r in runs],
        "declared_tools": list(declared),
    }


def execute(
    job: Mapping[str, Any], reporter: RunReporter, *, fresh_process: bool
) -> dict[str, Any]:
    """Run the job's verifier once and describe the result as plain data (see module doc).

    ``fresh_process``: sys.path may be reordered (child) or only extended (inline).
    Raises only what the caller must see: nothing from the verifier itself.
    """
    target = VerifierTarget.from_dict(job["target"])
    if fresh_process:  # its own process: import the tree's source as it is now
        bytecode.use_fresh_bytecode(Path(job["root"]))
    extend_sys_path([str(p) for p in job.get("sys_path", ())], first=fresh_process)
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
    inventory = job.get("inventory")
    root = Path(job["root"])
    ctx = VerifierContext(
        root=root,
        cell=Path(job["cell"]),
        deadline=float(job["deadline"]),
        gate=job.get("gate"),
        declared_tools=declared,
        toolbox=Toolbox(
            root,
            inventory=ToolInventory.from_dict(inventory) if inventory else None,
            paths=job.get("tool_paths") or {},
            path_env=job.get("caller_env", {}).get("PATH"),
        ),
        caller_env=job.get("caller_env", {}),
        env_pass=job.get("env_pass", ()),
        env_set=job.get("env_set") or {},
        capture_limit=int(job.get("capture_limit", 1 << 20)),
        reporter=reporter,
    )
    cause: Cause | None = None
    try:
        returned = _call(fn, ctx)
    # Catch-all by design: this is the fail-closed boundary around the verifier's code.
    except BaseException as exc:  # noqa: BLE001
        runs, violations = ctx.close()
        mode, detail = classify_exception(exc)
        raised_at = product_frame(exc, root, _files_of(fn)) if mode is Mode.ERROR else None
        if raised_at is not None:  # the code under test raised: the product's answer
            mode, cause = Mode.FAIL, Cause.PRODUCT
            detail = f"the code under test raised at {raised_at}: {detail}"
    else:
        runs, violations = ctx.close()  # runs completing after this do not count
        mode, cause, detail = classify_return(returned)
    if violations:
        mode = worst_mode([mode, *(m for m, _ in violations)])
        cause = None
        detail = "\n".join([*(msg for _, msg in violations), detail]).strip()
    elif mode is Mode.PASS and declared and not runs:
        mode, cause = Mode.UNGROUNDED, None
        detail = (
            f"the verifier declares tools {list(declared)} but passed without a completed "
            "ctx.run() of any of them; a pass must rest on a tool's answer"
        )
    return _result(mode, detail, cause=cause, runs=runs, declared=declared)
