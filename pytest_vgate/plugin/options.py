"""Every command-line option of pytest-vgate and its ini twin, declared in one place.

Part of the entry point: it imports nothing but ``pytest_vgate.defaults``, so that
loading the plugin stays cheap in sessions that do not use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_vgate.defaults import (
    BATCH_CHOICES,
    COVERAGE_CHOICES,
    DEFAULT_BATCH,
    DEFAULT_MUTANTS,
    DEFAULT_TIMEOUT,
    ISOLATION_CHOICES,
    MUTATE_CHOICES,
)

# (option, ini name, help). Every option has an ini twin of the same name with "_".
_HELP = {
    "vgate": "a gates file (YAML) whose gates and citations become items; repeatable",
    "vgate_base": "also run every gate on git revision REF (a worktree) to obtain red "
    "evidence; needs --vgate",
    "vgate_require_red": "a green gate without red evidence fails (cause broken_test); "
    "the default under --vgate-base (--no-vgate-require-red relaxes it)",
    "vgate_coverage": "measure what each red and green run executed of the change "
    "(sys.monitoring on Python 3.12+, sys.settrace before) and judge red-before-green on it: "
    "auto (on under --vgate-base), on, off",
    "vgate_repeat": "run the red and the green run N times each, interleaved; proven "
    "needs N/N (default 1)",
    "vgate_mutate": "plant mutants of the changed code each proven gate's check executed and "
    "run the check on each; a check that passes on all of them fails as undiscriminating: "
    "auto (on under --vgate-base), on, off",
    "vgate_mutants": f"mutants planted per gate, extreme ones first (default {DEFAULT_MUTANTS})",
    "vgate_batch": "run the gates whose checks are pytest on node ids with the same python, "
    "folder, environment and options as one pytest process per side (base, now), each "
    "gate's verdict taken from its own nodes: auto, off (every gate in its own process; for "
    f"suites with order-dependent tests); default {DEFAULT_BATCH}",
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
    "vgate_html": "write one self-contained HTML page (no network) with the verdict table, "
    "the runs, the diff of the change with the lines each run executed, and the citations",
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


@dataclass(frozen=True)
class Option:
    """One option: ``--vgate-x`` (dest ``vgate_x``) and its ini twin ``vgate_x``.

    ``kind``: ``value`` (takes METAVAR), ``flag`` (no argument) or ``append`` (repeatable
    paths; the ini twin is a whitespace-separated list). ``ini`` False: command line only.
    """

    dest: str
    kind: str = "value"
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    ini: bool = True

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


OPTIONS = (
    Option("vgate", "append", "PATH"),
    Option("vgate_base", metavar="REF"),
    Option("vgate_require_red", "flag"),
    Option("vgate_coverage", choices=COVERAGE_CHOICES),
    Option("vgate_repeat", metavar="N"),
    Option("vgate_mutate", choices=MUTATE_CHOICES),
    Option("vgate_mutants", metavar="N"),
    Option("vgate_batch", choices=BATCH_CHOICES),
    Option("vgate_strict", "flag"),
    Option("vgate_timeout", metavar="SECONDS"),
    Option("vgate_ledger", metavar="PATH"),
    Option("vgate_report", metavar="PATH"),
    Option("vgate_fix", "flag"),
    Option("vgate_cite", "append", "FILE"),
    Option("vgate_isolation", metavar="LEVEL", choices=ISOLATION_CHOICES),
    Option("vgate_only", "flag"),
    Option("vgate_sarif", metavar="PATH"),
    Option("vgate_html", metavar="PATH"),
    Option("vgate_github", "flag"),
    Option("vgate_init", metavar="BASE", ini=False),
    Option("vgate_init_out", metavar="PATH", ini=False),
    Option("vgate_init_force", "flag", ini=False),
)
NO_REQUIRE_RED_HELP = (
    "under --vgate-base, let a gate without genuine red evidence pass (its status is still shown)"
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("vgate", "verification gates (pytest-vgate)")
    for option in OPTIONS:
        action = {"value": "store", "flag": "store_true", "append": "append"}[option.kind]
        extra: dict[str, object] = {"metavar": option.metavar} if option.metavar else {}
        if option.choices:
            extra["choices"] = option.choices
        group.addoption(
            option.flag,
            dest=option.dest,
            action=action,
            default=None,
            help=_HELP[option.dest],
            **extra,
        )
        if option.dest == "vgate_require_red":
            group.addoption(
                "--no-vgate-require-red",
                dest="vgate_require_red",
                action="store_false",
                default=None,
                help=NO_REQUIRE_RED_HELP,
            )
        if not option.ini:
            continue
        if option.kind == "append":
            parser.addini(option.dest, _INI_HELP[option.dest], type="paths", default=[])
        elif option.kind == "flag":
            # require_red: None when unset, so that its default can follow --vgate-base.
            unset = None if option.dest == "vgate_require_red" else False
            parser.addini(option.dest, _HELP[option.dest], type="bool", default=unset)
        else:
            parser.addini(option.dest, _HELP[option.dest], default="")


def given_options(config: pytest.Config) -> list[str]:
    """The vgate options this session was given, on the command line or in the ini file.

    Reads every ini twin, once per session and first: a flag whose value is not a boolean
    is a usage error here, naming the key and the file.
    """
    found = [o.dest for o in OPTIONS if config.getoption(o.dest, None) is not None]
    for option in OPTIONS:
        if not option.ini or option.dest in found:
            continue
        value = ini_value(config, option.dest)
        if value not in ("", [], None, False):
            found.append(option.dest)
    return found


def ini_value(config: pytest.Config, name: str) -> object:
    """``config.getini(name)``; a value its type refuses names the key and the ini file
    (pytest alone says "invalid truth value 'x'", or raises ValueError before pytest 9)."""
    try:
        return config.getini(name)
    except (ValueError, pytest.UsageError):
        raw = str(config.inicfg.get(name, "")).strip()
        raise pytest.UsageError(
            f"pytest-vgate: {name} in {config.inipath or 'the ini file'} must be true or "
            f"false, not {raw[:40]!r}"
        ) from None
