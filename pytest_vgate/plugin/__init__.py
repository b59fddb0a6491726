"""The ``pytest11`` entry point of pytest-vgate, and the pytest layer's subpackage.

Every pytest run of every user who installed the plugin loads this module, so it only
declares the options and hook specs. The pytest layer proper (``hooks``) is registered
when the session uses vgate: a gates file, document or option of ours is given, the
session is part of an xdist run, or a test module defines a ``@verifier`` or marks a test
``vgate``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Generator
from types import ModuleType

import pytest

from pytest_vgate.defaults import MARKER, NESTED_ENV
from pytest_vgate.plugin import startup as _startup  # noqa: F401 - takes PATH now
from pytest_vgate.plugin.options import add_options, given_options

MARKER_HELP = "vgate: a verification gate, verifier or citation checked by pytest-vgate"
LAYER_NAME = "vgate-layer"  # the name the pytest layer is registered under
# Every plugin object pytest-vgate registers, by name. ``-p no:NAME`` would silently drop
# one (pluggy registers nothing under a blocked name): the gates, or the exit status that
# follows their verdicts, would be gone without a word.
OWN_PLUGINS = (
    LAYER_NAME,
    "vgate-verdict-guard",
    "vgate-controller",
    "vgate-sarif",
    "vgate-html",
    "vgate-pytest-html",
    "vgate-github",
    "vgate-github-channel",
    "vgate-gc-freeze",
    "vgate-init-probe",
)
VERIFIER_MODULE = "pytest_vgate.verifiers.api"  # where @verifier is defined


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_vgate.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--vgate-init BASE``: write gates for the changed tests and exit, running none."""
    if not config.getoption("vgate_init"):
        return None
    from pytest_vgate.plugin.init_plugin import run_init

    return run_init(config)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None, None, None]:
    """A root conftest that calls ``sys.exit(0)`` would end the session with exit 0 before
    any gate ran: with gates asked for, that is a usage error, not a green session."""
    try:
        return (yield)
    except SystemExit as exc:
        if exc.code in (None, 0) and _gates_requested(early_config):
            raise pytest.UsageError(
                f"pytest-vgate: a conftest called sys.exit({exc.code}) while pytest loaded it; "
                "the session ended before any gate ran"
            ) from None
        raise


def _gates_requested(config: pytest.Config) -> bool:
    known = config.known_args_namespace
    if getattr(known, "vgate", None) or getattr(known, "vgate_cite", None):
        return True
    return bool(config.getini("vgate") or config.getini("vgate_cite"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    blocked = [name for name in OWN_PLUGINS if config.pluginmanager.is_blocked(name)]
    if blocked:
        raise pytest.UsageError(
            f"pytest-vgate: -p no:{blocked[0]} names a part of pytest-vgate, which cannot be "
            "switched off on its own (the gates or the exit status that follows their "
            "verdicts would be lost); use -p no:vgate to disable the whole plugin"
        )
    if in_use(config):
        activate(config)


def in_use(config: pytest.Config) -> bool:
    """Whether the session needs the pytest layer from its start."""
    if given_options(config) or os.environ.get(NESTED_ENV):
        return True
    # xdist: a worker, or the controller of workers (their verifiers report to it).
    return hasattr(config, "workerinput") or getattr(config.option, "dist", "no") != "no"


def activate(config: pytest.Config) -> ModuleType:
    """Register the pytest layer once; pytest replays ``pytest_configure`` for it."""
    if "pytest_vgate.plugin.hooks" not in sys.modules:
        _forget_dropped_modules()
    hooks = importlib.import_module("pytest_vgate.plugin.hooks")
    if not config.pluginmanager.is_registered(hooks):
        config.pluginmanager.register(hooks, LAYER_NAME)
    return hooks


def _forget_dropped_modules() -> None:
    """pytester's in-process runs drop from ``sys.modules`` the modules a session imported,
    but our packages, imported before, keep them as attributes: ``from pytest_vgate.plugin
    import items`` would then hand the next session the first session's copy, out of step
    with the modules it imports afresh (another stash key, another class)."""
    for name, package in list(sys.modules.items()):
        if name != "pytest_vgate" and not name.startswith("pytest_vgate."):
            continue
        for attr, value in list(vars(package).items()):
            if (
                isinstance(value, ModuleType)
                and value.__name__.startswith("pytest_vgate.")
                and sys.modules.get(value.__name__) is not value
            ):
                delattr(package, attr)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A conftest's ``pytest.exit(returncode=0)`` in ``pytest_configure`` (run before ours)
    ends the session before the layer exists: with gates asked for, not a green one."""
    session = config.pluginmanager.get_plugin("session")
    if _active(config) or session is None or not _gates_requested(config):
        return
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        sys.stderr.write(
            "pytest-vgate: the session ended (pytest.exit in a pytest_configure hook) before "
            "any gate ran; it does not end green\n"
        )


def _active(config: pytest.Config) -> bool:
    return config.pluginmanager.has_plugin(LAYER_NAME)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> pytest.Item | None:
    """A ``@verifier`` in a session that did not use vgate yet: the layer takes it over."""
    if _active(collector.config) or VERIFIER_MODULE not in sys.modules:
        return None  # nothing could carry the decorator, or the layer's own hook runs
    from pytest_vgate.verifiers import find_verifier_spec

    if find_verifier_spec(obj) is None:
        return None
    item: pytest.Item | None = activate(collector.config).pytest_pycollect_makeitem(
        collector, name, obj
    )
    return item


def pytest_itemcollected(item: pytest.Item) -> None:
    """An ordinary test marked ``vgate`` gets a mode and a cause: the layer tags it."""
    if not _active(item.config) and item.get_closest_marker(MARKER) is not None:
        activate(item.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Here, not in the layer: registered with the entry point, before any conftest, this
    wrapper keeps the place among other plugins' wrappers it has always had."""
    report = yield
    if call.when == "call" and _active(item.config):
        importlib.import_module("pytest_vgate.plugin.hooks").attach_verdict(item, call, report)
    return report
