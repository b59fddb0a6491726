"""A check executes the source as it is now, never the bytecode of an older version.

Python trusts a ``__pycache__`` entry whose source mtime (whole seconds) and size match,
so a file edited to the same size within a second runs its old bytecode. Checks run with
``PYTHONPYCACHEPREFIX`` at a cache of our own, and before every run an entry for the tree
is kept only when it was written strictly after the source's last change (``mtime`` and
``ctime``, which no user can set back); docs/environment.md, "Bytecode".
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

PREFIX_ENV = "PYTHONPYCACHEPREFIX"
CACHE_DIRNAME = "pytest-vgate"
# Installed packages inside the tree (a project's .venv) are not the tree's source: their
# entries are trusted as Python trusts them, and not walked before every check.
INSTALLED = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox"})
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# pytest-vgate bytecode cache\n"


@functools.lru_cache(maxsize=1)
def cache_prefix() -> Path | None:
    """The bytecode cache checks use (created 0700 with a CACHEDIR.TAG); None if none can be.

    ``$XDG_CACHE_HOME`` or ``~/.cache``, else a temp folder of this process (correct, but
    compiled afresh per process).
    """
    candidates = []
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        candidates.append(Path(xdg))
    home = os.path.expanduser("~")
    if os.path.isabs(home):
        candidates.append(Path(home) / ".cache")
    for base in candidates:
        prefix = base / CACHE_DIRNAME / "pycache"
        try:
            prefix.mkdir(parents=True, exist_ok=True, mode=0o700)
            tag = prefix.parent / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(_TAG)
            if os.access(prefix, os.W_OK | os.X_OK):
                return prefix
        except OSError:
            continue
    try:
        return Path(tempfile.mkdtemp(prefix="vgate-pycache-"))
    except OSError:
        return None


def mirror_of(prefix: Path, tree: Path | str) -> list[Path]:
    """Where Python keeps ``tree``'s bytecode under ``prefix`` (as given and as resolved)."""
    seen: dict[str, None] = {}
    for form in (os.path.abspath(tree), os.path.realpath(tree)):
        seen[os.path.join(os.fspath(prefix), form.lstrip(os.sep))] = None
    return [Path(p) for p in seen]


@functools.lru_cache(maxsize=256)
def _mirror_pairs(prefix: str, tree: str) -> tuple[tuple[str, str], ...]:
    """(mirror folder, the source folder it mirrors) for each form of ``tree``, worked out
    once per process: the same tree is checked before every check that runs on it."""
    return tuple(
        (os.fspath(mirror), os.sep + os.path.relpath(mirror, prefix))
        for mirror in mirror_of(Path(prefix), tree)
    )


def invalidate(prefix: Path, tree: Path | str) -> int:
    """Delete ``tree``'s cache entries that may predate their source; returns how many.

    Never raises: a cache that cannot be checked is a cache Python may still use, so an
    entry that cannot be judged is deleted, and one that cannot be deleted is left (the
    next check tries again). Where the tree's symlinks lead is worked out once per
    process (the gates root is resolved when the gates file is read).
    """
    removed = 0
    for mirror, source_base in _mirror_pairs(os.fspath(prefix), os.fspath(tree)):
        for folder, dirs, names in os.walk(mirror):
            dirs[:] = [d for d in dirs if d not in INSTALLED]
            sources = os.path.join(source_base, os.path.relpath(folder, mirror))
            for name in names:
                if name.endswith(".pyc") and _stale(
                    os.path.join(folder, name), os.path.join(sources, name.split(".", 1)[0])
                ):
                    try:
                        os.unlink(os.path.join(folder, name))
                        removed += 1
                    except OSError:
                        pass
    return removed


def _stale(pyc: str, stem: str) -> bool:
    try:
        written = os.stat(pyc).st_mtime_ns
    except OSError:
        return False  # gone already
    for suffix in (".py", ".pyw"):
        try:
            st = os.stat(stem + suffix)
        except OSError:
            continue
        return written <= max(st.st_mtime_ns, st.st_ctime_ns)
    return True  # no source any more: an orphan


def check_env(
    prefix: Path | None, set_values: dict[str, str], passed: dict[str, str]
) -> dict[str, str]:
    """``set_values`` plus ``PYTHONPYCACHEPREFIX``, unless the gate sets or passes its own."""
    if prefix is None or PREFIX_ENV in set_values or PREFIX_ENV in passed:
        return set_values
    return {PREFIX_ENV: os.fspath(prefix), **set_values}


def fresh_env(
    tree: Path | str, set_values: Mapping[str, str], passed: Mapping[str, str]
) -> dict[str, str]:
    """``set_values`` for a process about to run ``tree``'s code (a check, a verifier's
    tool): with ``PYTHONPYCACHEPREFIX`` (``check_env``) and the tree's entries there
    checked against their sources just before (``invalidate``). Python's own check reads
    whole seconds and the size: a file rewritten within a second at the same size (a
    mutant ``1`` -> ``2``) would run its old bytecode."""
    prefix = cache_prefix()
    values = check_env(prefix, dict(set_values), dict(passed))
    if prefix is not None and values.get(PREFIX_ENV) == str(prefix):
        invalidate(prefix, tree)  # this tree's bytecode is as new as its source
    return values


def forget(tree: Path | str) -> None:
    """Drop the cache's entries for a tree that is gone for good (a removed base worktree).

    Never raises. Only folders inside our own cache are removed.
    """
    prefix = cache_prefix()
    if prefix is None:
        return
    for mirror in mirror_of(prefix, tree):
        if os.path.commonpath([mirror, prefix]) == os.fspath(prefix) and mirror != prefix:
            shutil.rmtree(mirror, ignore_errors=True)


def use_fresh_bytecode(tree: Path, prefix: Path | None = None) -> None:
    """In a process of its own (a verifier's zygote): the same cache and check as a command.

    ``prefix``: the cache the pytest process chose (it checks the tree's entries before
    each call from then on); else :func:`cache_prefix`. Never raises; without a cache the
    process keeps Python's own behaviour.
    """
    try:
        if prefix is None:
            prefix = cache_prefix()
        if prefix is not None:
            invalidate(prefix, tree)
            sys.pycache_prefix = os.fspath(prefix)
    except (OSError, ValueError):  # bytecode hygiene must never cost the verdict
        return
