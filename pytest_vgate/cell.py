"""The private environment of one check: a scratch "cell" directory and its variables.

A check sees an empty environment plus a short allowlist, with ``HOME`` and ``TMPDIR``
pointing into a per-check directory (mode 0700) that is removed afterwards, so checks
cannot read the caller's secrets, share state with each other, or litter the machine.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

# Passed from the caller when present. Each is harmless and needed for a check to behave
# as it does for the user:
#   PATH             - to find the programs the check runs (and that those run);
#   LANG, LC_ALL,    - the locale: text encoding and messages, so tools read and write
#   LC_CTYPE           UTF-8 the way they do in the user's terminal;
#   TZ               - the time zone, so dates a check prints or compares match the caller's.
# Everything else (tokens, credentials, proxies, HOME, ...) must be named by the gate.
NESTED_ENV = "PYTEST_VGATE_NESTED"  # set in every check's environment
DEFAULT_ENV_ALLOWLIST: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


@contextmanager
def check_cell(prefix: str = "vgate-", *, parent: Path | str | None = None) -> Iterator[Path]:
    """A private scratch directory (0700) with ``home/`` and ``tmp/``, removed afterwards.

    Made under the system temp dir (or ``parent``). Removal happens whether the block
    raises or not and copes with read-only files and directories the check left; a
    failure to remove is a warning, never an exception that would mask the check's result.
    """
    cell = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()  # mkdtemp: 0700
    try:
        os.chmod(cell, 0o700)
        (cell / "home").mkdir(mode=0o700)
        (cell / "tmp").mkdir(mode=0o700)
        yield cell
    finally:
        remove_tree(cell)


def remove_tree(path: Path) -> None:
    """Delete ``path`` even when it holds read-only directories; never follows symlinks."""
    for attempt in range(2):
        _make_dirs_writable(path)
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if attempt == 1:
                warnings.warn(
                    f"pytest-vgate could not remove the check directory {path}: {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )


def _make_dirs_writable(top: Path) -> None:
    """Give the owner rwx on every real directory below ``top`` so rmtree can empty it."""
    pending = [os.fspath(top)]
    while pending:
        current = pending.pop()
        try:
            st = os.lstat(current)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):  # a symlink (or file) is removed, not entered
            continue
        try:
            if stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
                os.chmod(current, stat.S_IMODE(st.st_mode) | 0o700)
            with os.scandir(current) as entries:
                pending.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue


def build_env(
    cell: Path,
    *,
    pass_names: Sequence[str],
    set_values: Mapping[str, str],
    caller_env: Mapping[str, str],
    path_prefix: Sequence[str | os.PathLike[str]] = (),
) -> dict[str, str]:
    """The complete environment of a check; nothing else of ``caller_env`` gets in.

    Built in order, later steps winning:
    1. ``DEFAULT_ENV_ALLOWLIST`` and ``pass_names``, each copied from ``caller_env`` when
       present there (a missing name is simply absent, not an empty string);
    2. ``HOME=<cell>/home`` and ``TMPDIR=<cell>/tmp`` -- unless the gate asked for them
       explicitly, by naming them in ``pass_names`` (and the caller has them) or in
    3. ``set_values``, which always win;
    4. ``path_prefix`` folders prepended to ``PATH`` (``os.defpath`` when PATH is missing
       or empty), so e.g. ``<root>/.toolchain/bin`` is searched first even when the gate
       set its own PATH.
    """
    env: dict[str, str] = {}
    for name in (*DEFAULT_ENV_ALLOWLIST, *pass_names):
        if name in caller_env:
            env[name] = caller_env[name]
    explicit = {n for n in pass_names if n in caller_env}
    # A check that runs pytest must not pick up the ini-configured gates again (a gate
    # running the gates, forever): the plugin ignores the `vgate` ini keys under this.
    env[NESTED_ENV] = "1"
    if "HOME" not in explicit:
        env["HOME"] = os.fspath(cell / "home")
    if "TMPDIR" not in explicit:
        env["TMPDIR"] = os.fspath(cell / "tmp")
    env.update(set_values)
    if path_prefix:
        base = env.get("PATH") or os.defpath
        env["PATH"] = os.pathsep.join([*(os.fspath(p) for p in path_prefix), base])
    elif not env.get("PATH"):
        env["PATH"] = os.defpath
    return env
