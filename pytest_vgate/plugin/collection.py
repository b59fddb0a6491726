"""Collection of gates files and cited documents: always, and never at the tests' expense.

pytest 8.0-8.4 drop a folder argument when a file inside it is also an argument, and 9
drops the file instead; so gates files and documents are not collection arguments: their
nodes are made here, under the session, and their items join the collection before
anything selects or deselects (``-k``, ``-m``, ``--lf`` then work on them as on any item).
A gates file named by node id (``gates.yaml::gate``) is collected by pytest as usual.
``--lf`` drops the passed items of a file that failed before without deselecting them, and
skips a file with no earlier failure whole: ``KeepItems`` and ``_NoteItems`` put ours back.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.plugin.citation_items import CitationDocumentNode
from pytest_vgate.plugin.failures import PluginItem
from pytest_vgate.plugin.items import GatesFileNode
from pytest_vgate.plugin.session import Resources
from pytest_vgate.plugin.settings import Settings

_MADE = pytest.StashKey[list[pytest.Item | pytest.Collector]]()
KEEP_ITEMS = "vgate-keep-items"


class _NoteItems:
    """The innermost wrapper: notes what a file collected, before anything drops a part."""

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        if isinstance(collector, (GatesFileNode, CitationDocumentNode)) and not (
            collector.collected or report.failed
        ):  # another plugin answered for it (--lf): collect it as pytest would have
            runner: Any = collector.config.pluginmanager.get_plugin("runner")  # pytest's own
            report = runner.pytest_make_collect_report(collector)
        if isinstance(collector, pytest.File) and report.passed:
            collector.stash[_MADE] = list(report.result)
        return report


class KeepItems:
    """The outermost wrapper: puts back the gate, verifier and citation items a wrapper in
    between (``--lf``) dropped, where they were; other items stay as that wrapper left them.
    """

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        made = collector.stash.get(_MADE, None)
        if made is None:
            return report
        del collector.stash[_MADE]
        if report.passed and len(report.result) != len(made):
            kept = {id(node) for node in report.result}
            report.result[:] = [n for n in made if id(n) in kept or isinstance(n, PluginItem)]
        return report


def keep_items(config: pytest.Config) -> None:
    """Register both wrappers of ``KeepItems`` once per session."""
    if not config.pluginmanager.has_plugin(KEEP_ITEMS):
        config.pluginmanager.register(KeepItems(), KEEP_ITEMS)
        config.pluginmanager.register(_NoteItems(), f"{KEEP_ITEMS}-note")


def restrict_args(config: pytest.Config, settings: Settings) -> None:
    """``--vgate-only`` (and ``--vgate-cite DOC`` alone, ``cite_alone``): drop the arguments
    that name no gates file or document. Always: leave a gates file or document named whole
    to ``add_items`` (pytest 8.0-8.4 drop a folder argument holding a file that is also an
    argument: the project's tests went with it); a node of one (``FILE::id``) stays."""
    ours = {*settings.gates_files, *settings.cite_files}
    only = settings.only or cite_alone(config, settings)
    base = config.invocation_params.dir
    config.args[:] = [
        arg for arg in config.args if ("::" in arg if arg_path(base, arg) in ours else not only)
    ]


def cite_alone(config: pytest.Config, settings: Settings) -> bool:
    """``pytest --vgate-cite DOC`` and nothing else to collect: check the document, do
    not import and run the whole suite. Named test paths, a gates file, or documents only
    from the ini (a plain ``pytest`` that also checks them) keep the ordinary tests."""
    return (
        bool(settings.cite_files and config.getoption("vgate_cite"))
        and not settings.gates_files
        and config.args_source != pytest.Config.ArgsSource.ARGS
    )


def arg_path(base: Path, arg: str) -> Path:
    return (base / str(arg).split("::")[0]).resolve()


def node_for(file_path: Path, parent: pytest.Collector, res: Resources) -> pytest.Collector | None:
    """``pytest_collect_file``: a gates file or document named as a collection argument."""
    resolved = file_path.resolve()
    if not parent.session.isinitpath(file_path):
        return None  # collected by add_items(), once, wherever it lies
    if resolved in res.settings.gates_files:
        node: pytest.Collector = GatesFileNode.from_parent(parent, path=file_path)
        return node
    if resolved in res.settings.cite_files:
        return CitationDocumentNode.from_parent(parent, path=file_path)
    return None


def add_items(session: pytest.Session, items: list[pytest.Item], res: Resources) -> None:
    """Put the items of every gates file and document not already collected by pytest
    first, in the order the files were given (the order a plain run shows them in).

    Collection errors (a bad gates file) are reported like any collection error.
    """
    ours: list[pytest.Item] = []
    for path in (*res.settings.gates_files, *res.settings.cite_files):
        if session.isinitpath(path):
            continue
        node_type = GatesFileNode if path in res.settings.gates_files else CitationDocumentNode
        node = node_type.from_parent(session, path=path, nodeid=_nodeid(session, path))
        ours.extend(session.genitems(node))
    items[:0] = ours


def _nodeid(session: pytest.Session, path: Path) -> str:
    """The node id a gates file had as a collection argument: relative to the rootdir."""
    return Path(os.path.relpath(path, session.config.rootpath)).as_posix()
