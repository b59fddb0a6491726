"""xdist workers in another checkout (``--tx socket=…//chdir=``, ``ssh=``, ``popen//chdir=``).

Such a worker cannot use the controller's paths: it resolves its own tools, tree state and
base worktrees (one set per host and checkout, shared by the session's workers there).
What must match to give the same verdicts (the gates root, the commit and uncommitted
changes, the base commit, each tool's sha256) is compared with what the controller sent;
a worker that differs fails every gate of that root with mode ``sandbox``, cause
``environment``, saying what differs. The ledger stays the controller's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_vgate.baseline import BaselineError, BaseTrees, toplevel
from pytest_vgate.evidence import Ledger, Record, tree_state
from pytest_vgate.evidence.proof import Evidence
from pytest_vgate.gatesfile import GatesFile
from pytest_vgate.paths import relative
from pytest_vgate.plugin.session import Resources
from pytest_vgate.process.tools import ToolInventory

PROBLEMS = "remote:problems"  # Resources.cache key: {gates root: [what differs]}
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def host_identity() -> str:
    """This machine: its host name and, where the kernel tells, its boot id."""
    try:
        boot = BOOT_ID.read_text().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


def origin_payload(res: Resources, rootdir: Path, roots: Iterable[Path]) -> dict[str, Any]:
    """What the controller sends so that a worker can tell whether it is elsewhere, and
    what it must match: per gates root (relative to the rootdir) commit, dirty digest,
    tool hashes, base commits by overlay, the ledger path and its records."""
    described: dict[str, Any] = {}
    for root in roots:
        evidence = res.evidence_for(root)
        inventory = res.inventory_for(root)
        trees = res.base_trees.get(str(root))
        described[relative(root, rootdir, resolve=True, climb=True)] = {
            "commit": evidence.tree.commit,
            "dirty": evidence.tree.dirty,
            "tools": {
                tool_id: entry.sha256
                for tool_id in (inventory.ids if inventory else ())
                if (entry := inventory.get(tool_id)) is not None  # type: ignore[union-attr]
            },
            "base": {key: tree.sha for key, tree in trees.trees.items()} if trees else {},
            "ledger": str(evidence.ledger.path),
            "records": [r.to_dict() for recs in evidence.history.values() for r in recs],
        }
    return {
        "host": host_identity(),
        "rootdir": os.path.realpath(rootdir),
        "session": uuid.uuid4().hex,  # workers of this session share base trees per host
        "roots": described,
    }


def is_remote(origin: Mapping[str, Any], rootdir: Path) -> bool:
    """True when this process is on another host or in another directory than the controller."""
    return origin.get("host") != host_identity() or origin.get("rootdir") != os.path.realpath(
        rootdir
    )


def adopt_remote(
    res: Resources,
    loaded: Sequence[GatesFile],
    origin: Mapping[str, Any],
    rootdir: Path,
    *,
    tool_ids: Callable[[list[GatesFile]], list[str]],
    exclude: Sequence[Path] = (),
) -> list[SharedBase]:
    """Resolve this worker's own resources per gates root; returns the base trees it uses
    (the caller releases them at the end). Differences land in ``res.cache[PROBLEMS]``."""
    problems: dict[str, list[str]] = res.cache.setdefault(PROBLEMS, {})
    made: list[SharedBase] = []
    theirs_by_rel: Mapping[str, Any] = origin.get("roots", {})
    for root in dict.fromkeys(g.root for g in loaded):
        files = [g for g in loaded if g.root == root]
        rel = relative(root, rootdir, resolve=True, climb=True)
        found = problems.setdefault(str(root), [])
        theirs = theirs_by_rel.get(rel)
        if theirs is None:
            known = ", ".join(sorted(theirs_by_rel)) or "none"
            found.append(f"the controller has no gates root {rel!r} (it has: {known})")
            continue
        inventory = ToolInventory.build(tool_ids(files), root=root, path_env=res.starting_path)
        res.inventories[str(root)] = inventory
        found.extend(_tool_differences(theirs.get("tools", {}), inventory))
        ledger = Ledger(str(theirs.get("ledger") or Ledger.default(root).path))
        not_the_tree = (*exclude, ledger.file, *res.own_files)
        tree = tree_state(root, exclude=not_the_tree)
        if tree.commit != theirs.get("commit"):
            found.append(
                f"this checkout is at commit {tree.commit}, the controller's at "
                f"{theirs.get('commit')}; check out the same commit on every worker"
            )
        elif tree.dirty != theirs.get("dirty"):
            found.append(
                "this checkout's uncommitted changes differ from the controller's "
                f"(dirty digest {tree.dirty[:12] or 'clean'} here, "
                f"{str(theirs.get('dirty'))[:12] or 'clean'} there); commit them or "
                "copy them to every worker"
            )
        res.tree_states[str(root)] = tree
        history: dict[str, list[Record]] = {}
        for data in theirs.get("records", ()):
            record = Record.from_dict(data)
            history.setdefault(record.gate_id, []).append(record)
        res.cache[f"evidence:{root}"] = Evidence(
            root=root,
            ledger=ledger,
            tree=tree,
            history=history,
            base_ref=res.settings.base,
            not_the_tree=not_the_tree,
        )
        if res.settings.base and not found:
            shared = SharedBase.make(
                str(origin.get("session")), root, res.settings.base, files, found
            )
            made.append(shared)
            if shared.trees is not None:
                res.base_trees[str(root)] = shared.trees
                found.extend(_base_differences(theirs.get("base", {}), shared.trees))
    return made


def _tool_differences(theirs: Mapping[str, str | None], inventory: ToolInventory) -> list[str]:
    out = []
    for tool_id, expected in theirs.items():
        entry = inventory.get(tool_id)
        mine = entry.sha256 if entry is not None else None
        if mine != expected:
            where = entry.path if entry is not None and entry.path else "not found here"
            out.append(
                f"tool {tool_id!r} differs: sha256 {expected or 'not found'} on the "
                f"controller, {mine or 'none'} on this worker ({where})"
            )
    return out


class SharedBase:
    """The base worktrees of one gates root, made once per host for all the workers of a
    session that share a checkout: the first worker makes them (under a lock in the temp
    directory) and removes them once no other worker of the session uses them."""

    def __init__(self, name: str) -> None:
        folder = Path(tempfile.gettempdir())
        self.lock = folder / f"{name}.lock"
        self.users = folder / f"{name}.users"
        self.manifest = folder / f"{name}.json"
        self.trees: BaseTrees | None = None
        self.owner = False
        self._users_fd: int | None = None

    @classmethod
    def make(
        cls, session: str, root: Path, ref: str, files: Sequence[GatesFile], found: list[str]
    ) -> SharedBase:
        try:
            top = toplevel(root)
        except BaselineError as exc:
            found.append(f"--vgate-base {ref} cannot be checked out on this worker: {exc}")
            return cls("")
        key = hashlib.sha256(f"{session}\0{os.path.realpath(top)}\0{ref}".encode()).hexdigest()
        shared = cls(f"vgate-remote-{key[:20]}")
        root_rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
        overlays = [gate.overlay for g in files for gate in g.gates]
        try:
            with _locked(shared.lock):
                shared._users_fd = os.open(shared.users, os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(shared._users_fd, fcntl.LOCK_SH)  # "a worker uses the trees"
                shared.trees = shared._adopt()
                if shared.trees is None:
                    shared.trees = BaseTrees.create(top, ref, overlays, root_rel=root_rel)
                    shared.owner = True
                    shared.manifest.write_text(json.dumps(shared.trees.to_dict()))
        except (BaselineError, OSError) as exc:
            found.append(f"--vgate-base {ref} cannot be checked out on this worker: {exc}")
            shared.release()
        return shared

    def _adopt(self) -> BaseTrees | None:
        """The trees another worker of this session made, when they are still there."""
        try:
            trees = BaseTrees.from_dict(json.loads(self.manifest.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return trees if all(t.path.is_dir() for t in trees.trees.values()) else None

    def release(self) -> list[str]:
        """Stop using the trees; the maker removes them once no other worker uses them."""
        warnings: list[str] = []
        if self._users_fd is None:
            return warnings
        try:
            if self.owner and self.trees is not None:
                warnings = self._remove_when_unused(self.trees)
        finally:
            os.close(self._users_fd)
            self._users_fd = None
        return warnings

    def _remove_when_unused(self, trees: BaseTrees) -> list[str]:
        assert self._users_fd is not None
        while True:  # ends when the last other worker of the session ends (or dies)
            with _locked(self.lock):
                try:
                    fcntl.flock(self._users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    pass
                else:
                    for path in (self.manifest, self.users, self.lock):
                        path.unlink(missing_ok=True)
                    return trees.remove()
            time.sleep(0.1)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _base_differences(theirs: Mapping[str, str], trees: BaseTrees) -> list[str]:
    out = []
    for key, tree in trees.trees.items():
        expected = theirs.get(key)
        if expected != tree.sha:
            out.append(
                f"--vgate-base {tree.ref} is commit {tree.sha} here, {expected} on the "
                "controller; fetch the same base on every worker"
            )
    return out


def remote_problem(res: Resources, root: Path) -> str | None:
    """Why this (remote) worker cannot give the controller's verdicts for ``root``."""
    found = res.cache.get(PROBLEMS, {}).get(str(root))
    if not found:
        return None
    return "this xdist worker's checkout differs from the controller's: " + "; ".join(found)
