"""The pytest side of extending: calls our hooks through pluggy, registers the exporters.

Our hooks are called as pluggy calls any hook (wrappers, ``tryfirst``, tracing apply). A
hook-call monitor (``install_guard``) hands pluggy, for our hooks only, each implementation
wrapped in a guard that records its answer or exception: each answer stays attributed, and
one broken plugin silences no other. The call runs on a daemon thread within a deadline;
the rules for answers live in ``judging``. The built-in exporters register as anyone's.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pluggy import HookCaller, HookImpl, PluginManager

from pytest_vgate.payload import CheckPayload, Payload
from pytest_vgate.plugin.settings import option_path

if TYPE_CHECKING:  # judging (and the verifiers it reads answers with) loads when first used
    from pytest_vgate.context import RunContext
    from pytest_vgate.exporters.report import JsonReport
    from pytest_vgate.gatesfile import Gate
    from pytest_vgate.plugin.judging import Call, JudgeContext, P
    from pytest_vgate.verdict import Verdict

OUR_HOOKS = frozenset({"pytest_vgate_judge", "pytest_vgate_adjust_verdict", "pytest_vgate_report"})


def wrappers_of(hook: str) -> str:
    """The name an answer gets when a hook wrapper, not an implementation, gave it."""
    return f"a hook wrapper of {hook}"


class _Raised:
    """What a guarded implementation returns in place of raising: an answer, so that a
    ``firstresult`` hook stops at it as it would stop at the exception."""


class _Recorder:
    """The answers of one guarded hook call, in the order pluggy called the implementations."""

    def __init__(self, copy_of: Callable[[], object] | None, firstresult: bool) -> None:
        self.answers: list[tuple[str, Call]] = []
        self.running: str | None = None
        self.copy_of = copy_of  # pytest_vgate_report: each implementation its own report
        self.firstresult = firstresult

    def guard(self, impl: HookImpl) -> Callable[..., object]:
        from pytest_vgate.plugin.judging import Call

        function = impl.function
        name = impl.plugin_name
        report_at = impl.argnames.index("report") if "report" in impl.argnames else None

        @functools.wraps(function)
        def guarded(*args: object) -> object:
            if report_at is not None and self.copy_of is not None:
                args = (*args[:report_at], self.copy_of(), *args[report_at + 1 :])
            self.running = name
            try:
                value = function(*args)
            # Catch-all by design: plugin code's exceptions become a verdict, never a crash.
            except BaseException as exc:  # noqa: BLE001
                self.answers.append(
                    (name, Call(error=exc, error_text=traceback.format_exc(limit=8)))
                )
                return _Raised() if self.firstresult else None
            finally:
                self.running = None
            self.answers.append((name, Call(value=value)))
            return value

        return guarded


_CURRENT = threading.local()  # .recorder: the _Recorder of the hook call on this thread


def install_guard(pluginmanager: PluginManager) -> Callable[[], None]:
    """Wrap our hooks' implementations in a recording guard for guarded calls; returns the
    undo. Other hooks, and our hooks called by someone else, pass through untouched."""

    def before(hook_name: str, hook_impls: Sequence[HookImpl], kwargs: Mapping[str, Any]) -> None:
        recorder = getattr(_CURRENT, "recorder", None)
        if hook_name not in OUR_HOOKS or recorder is None or not isinstance(hook_impls, list):
            return
        _CURRENT.recorder = None  # a hook called from inside an implementation is its own
        for i, impl in enumerate(hook_impls):
            if not (impl.wrapper or impl.hookwrapper):
                hook_impls[i] = HookImpl(
                    impl.plugin, impl.plugin_name, recorder.guard(impl), impl.opts
                )

    def after(outcome: object, hook_name: str, hook_impls: object, kwargs: object) -> None:
        return None

    return pluginmanager.add_hookcall_monitoring(before, after)


@dataclass(frozen=True)
class HookCall:
    """How one guarded call of a vgate hook went: each implementation's answer, attributed,
    and the call as a whole (its result after the wrappers, or a wrapper's exception, or
    the deadline, with the plugin that was running then)."""

    answers: tuple[tuple[str, Call], ...]
    whole: Call
    running: str | None

    def result_answers(self, hook: str) -> list[tuple[str, Call]]:
        """What the call's result holds that no implementation answered: a wrapper's."""
        from pytest_vgate.plugin.judging import Call

        value = self.whole.value
        given = {id(call.value) for _, call in self.answers}
        items = value if isinstance(value, list) else [] if value is None else [value]
        return [
            (wrappers_of(hook), Call(value=item))
            for item in items
            if id(item) not in given and not isinstance(item, _Raised)
        ]

    def failure(self, hook: str) -> tuple[str, Call] | None:
        """The call itself failed: a deadline (blamed on the plugin running then) or a
        wrapper that raised."""
        if self.whole.timed_out:
            return (self.running or wrappers_of(hook), self.whole)
        if self.whole.error is not None:
            return (wrappers_of(hook), self.whole)
        return None


def call_guarded(
    hook: HookCaller,
    kwargs: Mapping[str, object],
    timeout: float,
    *,
    copy_of: Callable[[], object] | None = None,
) -> HookCall:
    """Call ``hook(**kwargs)`` through pluggy on a daemon thread, within ``timeout``."""
    from pytest_vgate.plugin.judging import call_with_deadline

    recorder = _Recorder(copy_of, bool(hook.spec and hook.spec.opts.get("firstresult")))

    def call() -> object:
        _CURRENT.recorder = recorder
        try:
            return hook(**kwargs)
        finally:
            _CURRENT.recorder = None

    whole = call_with_deadline(call, timeout, hook.name)
    return HookCall(answers=tuple(recorder.answers), whole=whole, running=recorder.running)


def judge_for(item: pytest.Item) -> Callable[[Gate, RunContext], Verdict | None] | None:
    """The ``RunContext.judge`` of an item: its judges, or None when there is none."""
    hook = item.ihook.pytest_vgate_judge
    if not hook.get_hookimpls():
        return None
    from pytest_vgate.plugin.judging import make_judge

    return make_judge(functools.partial(ask_judges, hook))


def ask_judges(hook: HookCaller, gate: Gate, context: JudgeContext) -> tuple[str, Call] | None:
    """The deciding answer of the judges (first result), attributed; None: no answer."""
    name = hook.name
    done = call_guarded(hook, {"gate": gate, "context": context}, context.remaining())
    failed = done.failure(name)
    if failed is not None:
        return failed
    value = done.whole.value
    if value is None:
        return None
    for plugin, call in done.answers:
        if call.value is value:
            return plugin, call
    if isinstance(value, _Raised):  # the last answer raised
        return done.answers[-1]
    return wrappers_of(name), done.whole  # a wrapper's own answer


def adjust(item: pytest.Item, gate: Gate, payload: P) -> P:
    """Offer a gate's final verdict to every adjuster; keep only the stricter answers.

    Every implementation's answer counts, whatever a wrapper made of the result list; a
    wrapper's own answers count too, held to the same rule.
    """
    hook = item.ihook.pytest_vgate_adjust_verdict
    if not hook.get_hookimpls():
        return payload
    from pytest_vgate.plugin.judging import Call, apply_adjustments, verdict_of_payload

    try:
        verdict = verdict_of_payload(payload)
    except (KeyError, TypeError, ValueError) as exc:  # a payload we cannot read: fail closed
        return apply_adjustments(payload, [("pytest-vgate", Call(error=exc))])
    timeout = gate.timeout if gate.timeout is not None else _default_timeout(item)
    done = call_guarded(hook, {"gate": gate, "verdict": verdict}, timeout)
    proposals = [*done.answers, *done.result_answers(hook.name)]
    failed = done.failure(hook.name)
    if failed is not None:
        proposals.append(failed)
    return apply_adjustments(payload, proposals)


def _default_timeout(item: pytest.Item) -> float:
    from pytest_vgate.plugin.session import resources

    return resources(item.config).default_timeout(item)


def emit_report(config: pytest.Config, report: JsonReport, timeout: float) -> list[str]:
    """Call ``pytest_vgate_report`` once, each implementation with its own copy of the report.

    Returns warnings for the summary: an exporter that raises, or a call that outlives
    ``timeout``, degrades the record, never the session.
    """
    hook = config.hook.pytest_vgate_report
    if not hook.get_hookimpls():  # no exporter: the report need not be encoded at all
        return []
    from pytest_vgate.plugin.judging import describe

    text = json.dumps(report, default=str)
    done = call_guarded(
        hook, {"report": json.loads(text)}, timeout, copy_of=lambda: json.loads(text)
    )
    problems = [*done.answers]
    failed = done.failure(hook.name)
    if failed is not None:
        problems.append(failed)
    warnings = []
    for name, call in problems:
        if call.timed_out:
            warnings.append(
                f"the pytest_vgate_report hook of {name!r} did not finish within {timeout:g}s; "
                "left running"
            )
        elif call.error is not None:
            warnings.append(
                f"the pytest_vgate_report hook of {name!r} raised "
                f"{type(call.error).__name__}: {describe(call.error)}"
            )
    return warnings


def adjustment_warnings(payloads: Mapping[str, Payload]) -> list[str]:
    """One summary line per adjuster answer that was ignored (an upgrade attempt)."""
    lines = []
    for nodeid, payload in payloads.items():
        if not isinstance(payload, CheckPayload):
            continue
        for note in payload.adjustments or ():
            if isinstance(note, Mapping) and note.get("action") == "ignored":
                lines.append(f"{nodeid}: {note.get('detail')}")
    return lines


# -- the built-in exporters, registered like any third-party exporter -------------------


def github_enabled(config: pytest.Config, environ: Mapping[str, str]) -> bool:
    given = config.getoption("vgate_github") or config.getini("vgate_github")
    return bool(given) or environ.get("GITHUB_ACTIONS") == "true"


def register_exporters(config: pytest.Config) -> None:
    """On the controller: the SARIF writer (``--vgate-sarif``), the page (``--vgate-html``)
    and the GitHub Actions writer (``--vgate-github`` or ``GITHUB_ACTIONS=true``), as
    ``pytest_vgate_report`` plugins; with pytest-html, its report's vgate columns."""
    sarif = option_path(config, "vgate_sarif")
    if sarif is not None:
        from pytest_vgate.exporters.sarif import SarifExporter

        config.pluginmanager.register(SarifExporter(sarif), "vgate-sarif")
    page = option_path(config, "vgate_html")
    if page is not None:
        from pytest_vgate.exporters.html import HtmlExporter

        config.pluginmanager.register(HtmlExporter(page), "vgate-html")
    if config.pluginmanager.hasplugin("html"):  # pytest-html: its report's vgate columns
        from pytest_vgate.plugin.html_columns import HtmlColumns

        config.pluginmanager.register(HtmlColumns(), "vgate-pytest-html")
    if github_enabled(config, os.environ):
        from pytest_vgate.exporters.github import CommandChannel, GithubExporter

        write_line = functools.partial(_write_line, config)
        channel = CommandChannel(write_line)
        channel.stop()  # everything printed from here on is inert for the runner
        config.pluginmanager.register(_ResumeAtEnd(channel), "vgate-github-channel")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        config.pluginmanager.register(
            GithubExporter(
                write_line=write_line,
                step_summary=Path(summary) if summary else None,
                workspace=Path(os.environ.get("GITHUB_WORKSPACE") or config.rootpath),
                channel=channel,
            ),
            "vgate-github",
        )


class _ResumeAtEnd:
    """Workflow commands are resumed after the last line of the session's output."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        self.channel.resume()


def _write_line(config: pytest.Config, line: str) -> None:
    """Workflow commands go to stdout at the start of a line, through the terminal."""
    if config.pluginmanager.get_plugin("terminalreporter") is not None:
        writer = config.get_terminal_writer()
        if writer.width_of_current_line:  # after the progress line's "[100%]"
            writer.line()
        writer.line(line)
    else:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
