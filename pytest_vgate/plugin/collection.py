"""Collection of gates files and cited documents: always, and never at the tests' expense.

pytest's handling of overlapping collection arguments differs by version: 8.0-8.4 drop a
whole directory when a file inside it is also an argument (so ``pytest --vgate gates.yaml``
lost the ordinary suite), and 9 drops the file instead (so a gates file under a folder in
``norecursedirs`` -- ``.ci/``, ``build/``, ``venv/`` -- was never collected). Gates files and
documents are therefore not collection arguments: the plugin makes their nodes itself,
under the session, and adds their items to the collection before anything selects or
deselects (``-k``, ``-m``, ``--deselect`` and ``--lf`` then work on them as on any item).

A gates file the user names as an argument (``pytest gates.yaml::some-gate``) is collected
by pytest as usual, so node-id selection keeps working.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_vgate.plugin.citation_items import CitationDocumentNode
from pytest_vgate.plugin.items import GatesFileNode
from pytest_vgate.plugin.session import Resources
from pytest_vgate.plugin.settings import Settings


def restrict_args(config: pytest.Config, settings: Settings) -> None:
    """``--vgate-only``: keep only the arguments that name a gates file or document."""
    if not settings.only:
        return
    ours = {*settings.gates_files, *settings.cite_files}
    base = config.invocation_params.dir
    config.args[:] = [arg for arg in config.args if _arg_path(base, arg) in ours]


def _arg_path(base: Path, arg: str) -> Path:
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
