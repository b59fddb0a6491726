"""The pytest side of extending: calls our hooks' implementations, registers the exporters.

Each implementation of a vgate hook is called on its own (so a report names the plugin
that judged or adjusted a gate, and one broken exporter cannot silence the others), in
pluggy's order, with conftest files scoped to the item as pytest scopes them. The rules
for what an answer may do live in the core (``judging``); the built-in exporters (SARIF,
GitHub Actions) register here exactly as a third-party exporter would.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vgate.payload import CheckPayload, Payload
from pytest_vgate.plugin.settings import option_path

if TYPE_CHECKING:  # judging (and the verifiers it reads answers with) loads when first used
    from pytest_vgate.plugin.judging import Call, Impl, P
    from pytest_vgate.run_context import RunContext
    from pytest_vgate.spec import Gate
    from pytest_vgate.verdict import Verdict


def _hook_impls(hook: Any) -> list[Impl]:
    """(plugin name, call) per implementation, in the order pluggy would call them."""
    found: list[Impl] = []
    for impl in reversed(hook.get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            continue
        found.append((impl.plugin_name, functools.partial(_call_impl, impl)))
    return found


def _call_impl(impl: Any, **kwargs: Any) -> object:
    return impl.function(*(kwargs[name] for name in impl.argnames))


def judge_for(item: pytest.Item) -> Callable[[Gate, RunContext], Verdict | None] | None:
    """The ``RunContext.judge`` of an item: its judges, or None when there is none."""
    from pytest_vgate.plugin.judging import make_judge

    return make_judge(_hook_impls(item.ihook.pytest_vgate_judge))


def adjust(item: pytest.Item, gate: Gate, payload: P) -> P:
    """Offer a gate's final verdict to every adjuster; keep only the stricter answers."""
    impls = _hook_impls(item.ihook.pytest_vgate_adjust_verdict)
    if not impls:
        return payload
    from pytest_vgate.plugin.judging import (
        Call,
        apply_adjustments,
        call_with_deadline,
        verdict_of_payload,
    )

    try:
        verdict = verdict_of_payload(payload)
    except (KeyError, TypeError, ValueError) as exc:  # a payload we cannot read: fail closed
        return apply_adjustments(payload, [("pytest-vgate", Call(error=exc))])
    timeout = gate.timeout if gate.timeout is not None else _default_timeout(item)
    proposals: list[tuple[str, Call]] = []
    for name, fn in impls:
        proposals.append(
            (
                name,
                call_with_deadline(
                    functools.partial(fn, gate=gate, verdict=verdict), timeout, f"adjust {name}"
                ),
            )
        )
    return apply_adjustments(payload, proposals)


def _default_timeout(item: pytest.Item) -> float:
    from pytest_vgate.plugin.session import resources

    return resources(item.config).default_timeout(item)


def emit_report(config: pytest.Config, report: Mapping[str, Any], timeout: float) -> list[str]:
    """Call every ``pytest_vgate_report`` implementation with its own copy of the report.

    Returns warnings for the summary: an exporter that raises or outlives ``timeout``
    degrades the record, never the session.
    """
    impls = _hook_impls(config.hook.pytest_vgate_report)
    if not impls:  # no exporter: the report need not be encoded at all
        return []
    from pytest_vgate.plugin.judging import call_with_deadline, describe

    text = json.dumps(report, default=str)
    warnings = []
    for name, fn in impls:
        copy = json.loads(text)
        call = call_with_deadline(functools.partial(fn, report=copy), timeout, f"report {name}")
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
    given = config.getoption("vgate_github")
    if given:
        return True
    return bool(config.getini("vgate_github")) or environ.get("GITHUB_ACTIONS") == "true"


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
        from pytest_vgate.exporters.github import GithubExporter

        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        config.pluginmanager.register(
            GithubExporter(
                write_line=functools.partial(_write_line, config),
                step_summary=Path(summary) if summary else None,
                workspace=Path(os.environ.get("GITHUB_WORKSPACE") or config.rootpath),
            ),
            "vgate-github",
        )


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
