"""The pytest layer proper, registered by the entry point when the session uses vgate: it
gathers settings and session resources; items call the core; the controller (never an
xdist worker) writes the ledger, the JSON report and the summary.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.defaults import MARKER
from pytest_vgate.gatesfile import GatesFile, GatesFileError
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.payload import TestPayload
from pytest_vgate.plugin import VERIFIER_MODULE, gcfreeze, guard, wire
from pytest_vgate.plugin import collection as _collection
from pytest_vgate.plugin import items as _items
from pytest_vgate.plugin.controller import Controller
from pytest_vgate.plugin.exit_status import (
    SOURCE_MARKS,
    VerdictGuard,
    is_vgate_item,
    source_marks,
)
from pytest_vgate.plugin.extending import install_guard, register_exporters
from pytest_vgate.plugin.session import RESOURCES, STATE, Resources, WorkerInput, is_worker
from pytest_vgate.plugin.settings import Settings, option_path, read_settings, resolved
from pytest_vgate.plugin.startup import STARTING_PATH
from pytest_vgate.process import contain
from pytest_vgate.process.tools import ToolInventory
from pytest_vgate.verdict import DEFAULT_CAUSE, Mode


def pytest_configure(config: pytest.Config) -> None:
    settings = read_settings(config)
    # The session's cells and kept-ready processes open when the first check needs them
    # (session.session_state): a session that only collects starts no process.
    res = Resources(
        settings=settings,
        # Files this session writes are never part of the tree's identity.
        own_files=tuple(path for _, path in output_options(config, settings)),
        starting_path=STARTING_PATH,
    )
    config.stash[RESOURCES] = res
    config.add_cleanup(install_guard(config.pluginmanager))  # our hooks, held to our rules
    loaded: list[GatesFile] = []
    guard.install_sigterm(config, settings)
    if settings.isolation != "off":  # docs/environment.md: what checks cannot read
        undo = contain.keep_out_of_reach()
        if not is_worker(config):  # a worker stays so to its exit: others' checks still run
            config.add_cleanup(undo)
    _warn_about_idle_options(config, settings)
    if settings.enabled:
        for path in (*settings.gates_files, *settings.cite_files):
            if not path.exists():
                raise pytest.UsageError(f"pytest-vgate: file not found: {path}")
            if path.is_dir():
                raise pytest.UsageError(
                    f"pytest-vgate: {path} is a folder; name a gates file or a document"
                )
            if not path.is_file():  # stat only: a named pipe is never opened
                raise pytest.UsageError(
                    f"pytest-vgate: {path} is not a regular file (a named pipe, socket or "
                    "device); it is not read: name a gates file or a document"
                )
        _collection.restrict_args(config, settings)
        loaded = _load_quietly(res)
        refuse_outputs_over_inputs(config, settings, loaded)
        gcfreeze.start(config)  # thousands of gates: the GC need not walk them again
    _collection.keep_items(config)  # verifiers too, without a gates file
    config.pluginmanager.register(
        VerdictGuard(config, worker=is_worker(config)), "vgate-verdict-guard"
    )
    if is_worker(config):
        _adopt_controller_resources(config, res, loaded)
    else:
        # Always on the controller: @verifier items and crashed xdist workers need it
        # even in a session without a gates file.
        _prepare_controller_resources(config, res, loaded)


def pytest_unconfigure(config: pytest.Config) -> None:
    guard.uninstall_sigterm(config)
    state = config.stash.get(STATE, None)
    if state is not None:  # no process or folder of the session outlives it
        state.close()
        del config.stash[STATE]


def output_options(config: pytest.Config, settings: Settings) -> list[tuple[str, Path]]:
    """(the option as given, its real path) of every file this session writes."""
    found: list[tuple[str, Path]] = []
    xml = getattr(config.option, "xmlpath", None)
    if xml:
        found.append(
            (f"--junitxml {xml}", resolved(config.invocation_params.dir / xml, "junitxml"))
        )
    for name in ("vgate_report", "vgate_sarif", "vgate_html"):
        written = option_path(config, name)
        if written is not None:
            shown = config.getoption(name) or config.getini(name)
            found.append((f"--{name.replace('_', '-')} {shown}", written))
    return found


def refuse_outputs_over_inputs(
    config: pytest.Config, settings: Settings, loaded: list[GatesFile]
) -> None:
    """A report written over a gates file or a cited document would destroy it."""
    inputs = {*settings.gates_files, *settings.cite_files}
    inputs.update(document.resolve() for g in loaded for document in g.citations)
    for shown, path in output_options(config, settings):
        if path in inputs:
            raise pytest.UsageError(
                f"pytest-vgate: {shown} would write over {path}, which this session reads "
                "(a gates file or a cited document); name another file for the output"
            )


IDLE_OPTIONS = (
    "vgate_base",
    "vgate_require_red",
    "vgate_strict",
    "vgate_fix",
    "vgate_ledger",
    "vgate_only",
)


def _warn_about_idle_options(config: pytest.Config, settings: Settings) -> None:
    """Options that act on gates, given on the command line without any gates file."""
    if settings.enabled:
        return
    idle = [name for name in IDLE_OPTIONS if config.getoption(name) is not None]
    if idle:
        # Named as given: `--no-vgate-require-red` stores False in the same place.
        no = "no-" if config.getoption("vgate_require_red") is False else ""
        flags = ", ".join(
            "--" + (no if name == "vgate_require_red" else "") + name.replace("_", "-")
            for name in idle
        )
        text = f"pytest-vgate: {flags} has no effect without --vgate or --vgate-cite"
        try:
            config.issue_config_time_warning(pytest.PytestConfigWarning(text), stacklevel=2)
        except pytest.PytestConfigWarning:  # -W error: a usage error, not an INTERNALERROR
            raise pytest.UsageError(text) from None


def _load_quietly(res: Resources) -> list[GatesFile]:
    """Load gates files for session-wide work; errors are reported by collection instead."""
    loaded = []
    for path in res.settings.gates_files:
        try:
            loaded.append(res.gates_file(path))
        except GatesFileError:
            continue
    return loaded


def tool_ids(loaded: list[GatesFile]) -> list[str]:
    """Every tool the session may run by name: declared tools and bare program names.

    Programs written as a path belong to the tree under test and are resolved when they
    run, relative to the gate's cwd on that tree (docs/tools.md).
    """
    ids: dict[str, None] = {}
    for gates_file in loaded:
        for gate in gates_file.gates:
            names = [*gates_file.default_tools, *gate.tools]
            if gate.argv and kind_of(gate.type).runs_argv:
                names.append(gate.argv[0])
            ids.update(dict.fromkeys(name for name in names if "/" not in name))
    return list(ids)


def _prepare_controller_resources(
    config: pytest.Config, res: Resources, loaded: list[GatesFile]
) -> None:
    for root in dict.fromkeys(g.root for g in loaded):
        res.inventories[str(root)] = ToolInventory.build(
            tool_ids([g for g in loaded if g.root == root]),
            root=root,
            path_env=res.starting_path,
        )
    controller = Controller(config, res, loaded)
    config.pluginmanager.register(controller, "vgate-controller")
    register_exporters(config)
    controller.prepare()


def _adopt_controller_resources(
    config: pytest.Config, res: Resources, loaded: list[GatesFile]
) -> None:
    from pytest_vgate.baseline import BaseTrees
    from pytest_vgate.evidence import TreeState
    from pytest_vgate.plugin import remote

    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    data: WorkerInput = workerinput.get("vgate", {})
    res.fixed_citations = dict(data.get("fixed_citations", {}))
    origin = data.get("origin")
    if origin is not None and remote.is_remote(origin, config.rootpath):
        # Another checkout (docs/scaling.md): the controller's paths mean nothing here.
        made = remote.adopt_remote(
            res, loaded, origin, config.rootpath, tool_ids=tool_ids, exclude=_xdist_copies()
        )

        def release() -> None:  # the last worker of this host removes the base trees
            for shared in made:
                res.warnings.extend(shared.release())

        config.add_cleanup(release)
        return
    for root, inventory in data.get("inventories", {}).items():
        res.inventories[root] = ToolInventory.from_dict(inventory)
    for root, tree in data.get("tree_states", {}).items():
        res.tree_states[root] = TreeState.from_dict(tree)
    for root, trees in data.get("base_trees", {}).items():
        res.base_trees[root] = BaseTrees.from_dict(trees)
    res.starting_path = data.get("starting_path", res.starting_path)
    res.batch_folder = data.get("batch_folder")


def _xdist_copies() -> list[Path]:
    """The copies of pytest that xdist puts into a socket/ssh worker's directory: the
    same bytes as the pytest this process imported, and no part of the tree."""
    found = []
    for name in ("pytest", "_pytest"):
        spec = importlib.util.find_spec(name)
        init = Path(spec.origin if spec is not None and spec.origin else "")
        copy = Path.cwd() / init.parent.name
        try:
            if (copy / init.name).read_bytes() == init.read_bytes():
                found.append(copy)
        except OSError:
            continue
    return found


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    res = parent.config.stash.get(RESOURCES, None)
    if res is None or not res.settings.enabled:
        return None
    return _collection.node_for(file_path, parent, res)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Gates files and documents join the items before anything selects or deselects."""
    res = session.config.stash.get(RESOURCES, None)
    if res is not None and res.settings.enabled:
        _collection.add_items(session, items, res)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    res = config.stash.get(RESOURCES, None)
    if res is None:
        return None
    lines = guard.header_lines(res.settings)
    if not res.settings.enabled:
        return lines or None
    for path in res.settings.gates_files:
        loaded = res.gates_files.get(path.resolve())
        label = _shown(config, path)
        count = len(loaded.gates) if isinstance(loaded, GatesFile) else 0
        lines.append(
            f"vgate: {label} ({count} gate{'' if count == 1 else 's'})"
            if isinstance(loaded, GatesFile)
            else f"vgate: {label} (invalid: see collection errors)"
        )
    for path in res.settings.cite_files:
        lines.append(f"vgate: citations in {_shown(config, path)}")
    for trees in res.base_trees.values():
        for tree in trees.trees.values():
            carried = f"overlay {', '.join(tree.overlay)}" if tree.overlay else "no overlay"
            if tree.config:
                carried += f"; uncommitted edits of {', '.join(tree.config)} carried on"
            lines.append(f"vgate: base {tree.ref} ({tree.sha[:10]}, {carried}) at {tree.path}")
    if res.settings.coverage == "on" and res.settings.base is None:
        lines.append(
            "vgate: --vgate-coverage on measures nothing without --vgate-base: there is no "
            "change to measure the runs against"
        )
    if not is_worker(config) and not config.option.collectonly:  # the probe runs Python
        from pytest_vgate.plugin.header import origin_lines

        lines.extend(origin_lines(config, res))
    if config.option.verbose > 0:
        for inventory in res.inventories.values():
            lines.extend(f"vgate tool: {line}" for line in inventory.summary_lines())
    return lines


def _shown(config: pytest.Config, path: Path) -> str:
    """A gates file or document as pytest shows its node ids: one name everywhere."""
    nodeid = Path(os.path.relpath(path, config.rootpath)).as_posix()  # as collection names it
    from pytest_vgate.plugin.summary import shown_nodeid

    return shown_nodeid(config, nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> pytest.Item | None:
    """A ``@verifier`` function in a test module becomes a VerifierItem (named by its id)."""
    if VERIFIER_MODULE not in sys.modules:
        return None  # nothing could carry the decorator (the entry point's test, too)
    from pytest_vgate.verifiers import VerifierTarget, find_verifier_spec

    spec = find_verifier_spec(obj)
    if spec is None or not callable(obj):
        return None
    target = VerifierTarget.from_callable(obj)
    code = getattr(obj, "__code__", None)
    item = _items.VerifierItem.from_parent(
        collector,
        name=spec.id or name,
        target=target,
        line=code.co_firstlineno if code else 0,
    )
    item.add_marker(MARKER)
    setattr(item, SOURCE_MARKS, source_marks(obj, item))
    return item


# A payload leaves the process (an xdist worker's report, --report-log) as its JSON object.
pytest_report_to_serializable = wire.pytest_report_to_serializable


def attach_verdict(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """The call report of a vgate item carries its verdict; a ``vgate``-marked ordinary
    test gets a mode and a cause. Called by the entry point's ``makereport`` wrapper."""
    payload = getattr(item, "vgate_payload", None)
    if payload is not None:
        wire.put(report, payload)  # typed here; its JSON wherever the report is serialised
        if report.skipped and isinstance(item, _items.GateItem):
            # Point the skip at the gate in its gates file, not at our code.
            report.longrepr = (str(item.path), item.gate.line, f"Skipped: {payload.detail}")
    elif not is_vgate_item(item) and item.get_closest_marker(MARKER) is not None:
        tag_marked_test(item, call, report)


def tag_marked_test(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """An ordinary test marked ``vgate``: its failure gets a mode and a cause."""
    mode = mode_of_exception(call.excinfo)
    if mode is None:
        return
    cause = DEFAULT_CAUSE[mode]
    props = [("vgate_mode", mode.value)]
    if cause is not None:
        props.append(("vgate_cause", cause.value))
    # junit reads properties from the teardown report, which copies the item's list:
    # the call report's own copy alone would never reach --junitxml.
    item.user_properties.extend(props)
    report.user_properties.extend(props)
    payload = TestPayload(
        id=item.nodeid,
        ok=mode is Mode.PASS,
        mode=mode,
        cause=cause,
        detail=str(call.excinfo.value)[:500] if call.excinfo else "",
        duration=round(call.duration, 6),
        nodeid=item.nodeid,
    )
    wire.put(report, payload)


def mode_of_exception(excinfo: pytest.ExceptionInfo[BaseException] | None) -> Mode | None:
    """pass / fail (assertion, pytest.fail) / timeout (pytest-timeout) / error / panic."""
    if excinfo is None:
        return Mode.PASS
    exc = excinfo.value
    if isinstance(exc, pytest.skip.Exception):
        return None
    if isinstance(exc, pytest.fail.Exception):
        text = str(exc)  # pytest-timeout's signal method: "Timeout (>2.0s) from pytest-timeout."
        timed_out = text.startswith("Timeout (>") and "pytest-timeout" in text
        return Mode.TIMEOUT if timed_out else Mode.FAIL
    if isinstance(exc, AssertionError):
        return Mode.FAIL
    if isinstance(exc, Exception):
        return Mode.ERROR
    return Mode.PANIC


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout: our items keep their own deadline (and kill their own processes);
    its timeout becomes their default deadline instead of a thread that kills pytest."""
    if not is_vgate_item(item):
        return None
    timeout = getattr(settings, "timeout", None)
    if isinstance(timeout, (int, float)) and timeout > 0:
        from pytest_vgate.plugin.settings import check_seconds

        check_seconds(timeout, f"pytest-timeout's timeout for {item.nodeid} (a timeout marker?)")
        item.vgate_pytest_timeout = float(timeout)  # type: ignore[attr-defined]
    return True


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> bool | None:
    return True if is_vgate_item(item) else None
