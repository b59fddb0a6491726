"""What a JSON report says about the session that wrote it, so that it can be checked
without the checkout: each gates file (its content hash, its gates, the documents it
cites), the tree each gates root ran on, the options that change a verdict, what was
selected, and what the exit-status guard found (``python -m pytest_vgate verify``,
``merge``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_vgate.exporters.report import (
    GatesFileDescription,
    SessionDescription,
    TreeDescription,
    file_sha256,
)
from pytest_vgate.gatesfile import GatesFile
from pytest_vgate.paths import relative
from pytest_vgate.plugin.session import Resources

GUARD = "vgate-verdict-guard"  # the VerdictGuard's name in the plugin manager
OPTIONS = ("base", "require_red", "strict", "timeout", "isolation", "coverage", "repeat", "only")


def describe_gates_file(loaded: GatesFile, rootdir: Path) -> GatesFileDescription:
    return {
        "path": relative(loaded.path, rootdir, resolve=True, climb=True),
        "sha256": file_sha256(loaded.path),
        "gates": [{"id": g.id, "line": g.line, "claim": g.claim} for g in loaded.gates],
        "citations": [relative(d, rootdir, resolve=True, climb=True) for d in loaded.citations],
    }


def describe_session(
    config: pytest.Config, res: Resources, loaded: Sequence[GatesFile]
) -> SessionDescription:
    rootdir = config.rootpath
    trees: dict[str, TreeDescription] = {}
    # --collect-only checks nothing: no git for a tree no verdict depends on.
    roots = () if config.option.collectonly else dict.fromkeys(g.root for g in loaded)
    for root in roots:
        tree = res.evidence_for(root).tree
        trees[relative(root, rootdir, resolve=True, climb=True)] = {
            "commit": tree.commit,
            "dirty": tree.dirty,
            "repo": tree.repo,
        }
    settings = res.settings
    options = {name: getattr(settings, name) for name in OPTIONS}
    options["deselect"] = {
        "keyword": config.option.keyword or None,
        "markexpr": config.option.markexpr or None,
    }
    guard = config.pluginmanager.get_plugin(GUARD)
    selection = getattr(guard, "selection", None)
    findings = getattr(guard, "findings", ())
    return {
        "gates_files": [describe_gates_file(g, rootdir) for g in loaded],
        "tree": trees,
        "options": options,
        "selection": {
            "selected": list(selection.selected) if selection else [],
            "deselected": list(selection.deselected) if selection else [],
            "removed": list(selection.removed) if selection else [],
        },
        "findings": [{"nodeid": f.nodeid, "what": f.what} for f in findings],
    }
