"""Every command-line option of pytest-vgate and its ini twin, declared in one place.

Part of the entry point: it imports nothing but ``pytest_vgate.defaults``, so that
loading the plugin stays cheap in sessions that do not use it.
"""

from __future__ import annotations

import pytest

from pytest_vgate.defaults import COVERAGE_CHOICES, DEFAULT_TIMEOUT, ISOLATION_CHOICES

# (option, ini name, help). Every option has an ini twin of the same name with "_".
_HELP = {
    "vgate": "a gates file (YAML) whose gates and citations become items; repeatable",
    "vgate_base": "also run every gate on git revision REF (a worktree) to obtain red "
    "evidence; needs --vgate",
    "vgate_require_red": "a green gate without red evidence fails (cause broken_test); "
    "the default under --vgate-base (--no-vgate-require-red relaxes it)",
    "vgate_coverage": "measure what each red and green run executed with coverage.py and "
    "judge red-before-green on it: auto (on under --vgate-base), on, off",
    "vgate_repeat": "run the red and the green run N times each, interleaved; proven "
    "needs N/N (default 1)",
    "vgate_strict": "semantic/self_review gates fail instead of being skipped",
    "vgate_timeout": f"default deadline per check in seconds (default {DEFAULT_TIMEOUT:g})",
    "vgate_ledger": "evidence ledger folder (default: .vgate/ under each gates root)",
    "vgate_report": "write the JSON report of gates and citations to this file",
    "vgate_fix": "rewrite drifted citations in the documents, in place, before checking "
    "them (also with --collect-only)",
    "vgate_cite": "a document whose FILE:LINE citations become items; repeatable",
    "vgate_isolation": "how checks are contained: auto (a private PID namespace where the "
    "platform allows it, else the best available), strict (a check without a private PID "
    "namespace fails with mode sandbox), off (process group only); default auto",
    "vgate_only": "collect only the gates files and documents (not the ordinary tests), so "
    "a broken test module cannot abort the gates",
    "vgate_sarif": "write the failed gates and the citations that are not verified as "
    "SARIF 2.1.0 to this file (for code scanning)",
    "vgate_github": "print GitHub Actions annotations and append a summary to "
    "$GITHUB_STEP_SUMMARY (automatic when GITHUB_ACTIONS=true)",
    "vgate_init": "write a gates file with one gate per test added or changed since git "
    "revision BASE, print it and exit without running tests",
    "vgate_init_out": "where --vgate-init writes the gates file (default: gates.yaml)",
    "vgate_init_force": "let --vgate-init overwrite an existing file",
}


_INI_HELP = {
    "vgate": "gates files (YAML), whitespace-separated; used when no test paths are given",
    "vgate_cite": "documents whose citations become items; used when no test paths are given",
}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("vgate", "verification gates (pytest-vgate)")
    group.addoption(
        "--vgate", action="append", dest="vgate", metavar="PATH", default=None, help=_HELP["vgate"]
    )
    group.addoption(
        "--vgate-base", dest="vgate_base", metavar="REF", default=None, help=_HELP["vgate_base"]
    )
    group.addoption(
        "--vgate-require-red",
        dest="vgate_require_red",
        action="store_true",
        default=None,
        help=_HELP["vgate_require_red"],
    )
    group.addoption(
        "--no-vgate-require-red",
        dest="vgate_require_red",
        action="store_false",
        default=None,
        help="under --vgate-base, let a gate without genuine red evidence pass (its status "
        "is still shown)",
    )
    group.addoption(
        "--vgate-coverage",
        dest="vgate_coverage",
        choices=COVERAGE_CHOICES,
        default=None,
        help=_HELP["vgate_coverage"],
    )
    group.addoption(
        "--vgate-repeat",
        dest="vgate_repeat",
        metavar="N",
        default=None,
        help=_HELP["vgate_repeat"],
    )
    group.addoption(
        "--vgate-strict",
        dest="vgate_strict",
        action="store_true",
        default=None,
        help=_HELP["vgate_strict"],
    )
    group.addoption(
        "--vgate-timeout",
        dest="vgate_timeout",
        metavar="SECONDS",
        default=None,
        help=_HELP["vgate_timeout"],
    )
    group.addoption(
        "--vgate-ledger",
        dest="vgate_ledger",
        metavar="PATH",
        default=None,
        help=_HELP["vgate_ledger"],
    )
    group.addoption(
        "--vgate-report",
        dest="vgate_report",
        metavar="PATH",
        default=None,
        help=_HELP["vgate_report"],
    )
    group.addoption(
        "--vgate-fix", dest="vgate_fix", action="store_true", default=None, help=_HELP["vgate_fix"]
    )
    group.addoption(
        "--vgate-cite",
        action="append",
        dest="vgate_cite",
        metavar="FILE",
        default=None,
        help=_HELP["vgate_cite"],
    )
    group.addoption(
        "--vgate-isolation",
        dest="vgate_isolation",
        metavar="LEVEL",
        choices=ISOLATION_CHOICES,
        default=None,
        help=_HELP["vgate_isolation"],
    )
    parser.addini("vgate_isolation", _HELP["vgate_isolation"], default="")
    group.addoption(
        "--vgate-only",
        dest="vgate_only",
        action="store_true",
        default=None,
        help=_HELP["vgate_only"],
    )
    parser.addini("vgate", _INI_HELP["vgate"], type="paths", default=[])
    parser.addini("vgate_cite", _INI_HELP["vgate_cite"], type="paths", default=[])
    parser.addini("vgate_base", _HELP["vgate_base"], default="")
    parser.addini("vgate_require_red", _HELP["vgate_require_red"], type="bool", default=None)
    parser.addini("vgate_strict", _HELP["vgate_strict"], type="bool", default=False)
    parser.addini("vgate_coverage", _HELP["vgate_coverage"], default="")
    parser.addini("vgate_repeat", _HELP["vgate_repeat"], default="")
    parser.addini("vgate_timeout", _HELP["vgate_timeout"], default="")
    parser.addini("vgate_ledger", _HELP["vgate_ledger"], default="")
    parser.addini("vgate_report", _HELP["vgate_report"], default="")
    parser.addini("vgate_fix", _HELP["vgate_fix"], type="bool", default=False)
    parser.addini("vgate_only", _HELP["vgate_only"], type="bool", default=False)
    group.addoption(
        "--vgate-sarif", dest="vgate_sarif", metavar="PATH", default=None, help=_HELP["vgate_sarif"]
    )
    group.addoption(
        "--vgate-github",
        dest="vgate_github",
        action="store_true",
        default=None,
        help=_HELP["vgate_github"],
    )
    parser.addini("vgate_sarif", _HELP["vgate_sarif"], default="")
    parser.addini("vgate_github", _HELP["vgate_github"], type="bool", default=False)
    group.addoption(
        "--vgate-init", dest="vgate_init", metavar="BASE", default=None, help=_HELP["vgate_init"]
    )
    group.addoption(
        "--vgate-init-out",
        dest="vgate_init_out",
        metavar="PATH",
        default=None,
        help=_HELP["vgate_init_out"],
    )
    group.addoption(
        "--vgate-init-force",
        dest="vgate_init_force",
        action="store_true",
        default=None,
        help=_HELP["vgate_init_force"],
    )


_UNSET = ("",)  # besides None: what an option holds when it was not given

# Options that only make sense on the command line (no ini twin): --vgate-init and its two.
COMMAND_LINE_ONLY = ("vgate_init", "vgate_init_out", "vgate_init_force")


def given_options(config: pytest.Config) -> list[str]:
    """The vgate options this session was given, on the command line or in the ini file."""
    found = [name for name in _HELP if config.getoption(name, None) not in (None, *_UNSET)]
    for name in _HELP:
        if name in COMMAND_LINE_ONLY or name in found:
            continue
        value = config.getini(name)
        if value not in ("", [], None, False):
            found.append(name)
    return found
