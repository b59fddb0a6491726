"""The private environment of one check: a scratch "cell" directory and its variables.

A check sees an empty environment plus a short allowlist, with ``HOME`` and ``TMPDIR``
pointing into a per-check directory (mode 0700) that is emptied or removed afterwards,
so checks cannot read the caller's secrets, share state with each other, or litter the
machine (the cells of a process that was killed are swept later: ``cell_owner``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pytest_vgate.defaults import NESTED_ENV
from pytest_vgate.process import cell_owner

# Passed from the caller when present. Each is harmless and needed for a check to behave
# as it does for the user:
#   PATH             - to find the programs the check runs (and that those run);
#   LANG, LC_ALL,    - the locale: text encoding and messages, so tools read and write
#   LC_CTYPE           UTF-8 the way they do in the user's terminal;
#   TZ               - the time zone, so dates a check prints or compares match the caller's.
# Everything else (tokens, credentials, proxies, HOME, ...) must be named by the gate.
DEFAULT_ENV_ALLOWLIST: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
CELL_DIRS = ("home", "tmp")  # what a cell holds: HOME and TMPDIR
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def check_cell(prefix: str = "vgate-", *, parent: Path | str | None = None) -> Iterator[Path]:
    """A private scratch directory (0700) with ``home/`` and ``tmp/``, removed afterwards.

    Made under the system temp dir (or ``parent``). Removal happens whether the block
    raises or not and copes with read-only files and directories the check left; a
    failure to remove is a warning, never an exception that would mask the check's result.
    """
    cell = new_cell(prefix, parent)
    try:
        yield cell
    finally:
        remove_tree(cell)


def new_cell(prefix: str, parent: Path | str | None) -> Path:
    """A new cell in ``parent`` (default: the temp dir), held until ``remove_tree``."""
    folder = os.fspath(parent) if parent is not None else tempfile.gettempdir()
    cell_owner.sweep_once(folder, remove_tree)  # the cells of processes that died
    cell = Path(tempfile.mkdtemp(prefix=prefix, dir=folder)).resolve()  # mkdtemp: 0700
    try:
        cell_owner.hold(cell)  # <cell>.lock, locked while we live (cell_owner.py)
        os.chmod(cell, 0o700)
        for name in CELL_DIRS:
            os.mkdir(cell / name, 0o700)
            os.chmod(cell / name, 0o700)  # whatever the umask
    except BaseException:
        remove_tree(cell)
        raise
    return cell


def cell_is_clean(cell: Path | str) -> bool:
    """Whether ``cell`` looks exactly as a fresh cell does to the next check.

    The cell and its ``home/`` and ``tmp/`` are real directories (not symlinks) owned by
    us with mode exactly 0700; the cell holds nothing but those two, and they hold
    nothing at all (no entries, no ``user.*`` extended attributes). Read through file
    descriptors opened without following symlinks, so a swapped path is not trusted.
    """
    fds: list[int] = []
    try:
        fds.append(os.open(cell, _OPEN_DIR))
        if not _private_dir(fds[0]) or sorted(os.listdir(fds[0])) != list(CELL_DIRS):
            return False
        for name in CELL_DIRS:
            fds.append(os.open(name, _OPEN_DIR, dir_fd=fds[0]))
            if not _private_dir(fds[-1]) or os.listdir(fds[-1]):
                return False
        return True
    except OSError:  # vanished, replaced by a symlink or a file, unreadable: not clean
        return False
    finally:
        for fd in fds:
            os.close(fd)


def _private_dir(fd: int) -> bool:
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o700:
        return False
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return False
    return not _user_xattrs(fd)


def _user_xattrs(fd: int) -> bool:
    if not hasattr(os, "listxattr"):
        return False
    try:
        names = os.listxattr(fd)
    except OSError:  # the file system has no extended attributes
        return False
    return any(name.startswith("user.") for name in names)


class CellPool:
    """Cells reused between checks of one process: a clean cell is reused, a dirty one goes.

    Making and removing a cell costs several directory operations per check (``rmdir``
    alone can take milliseconds); a check that leaves ``home/`` and ``tmp/`` empty
    leaves nothing to remove, so its cell can serve the next check. A cell is tested
    with ``cell_is_clean`` when it is taken for a check -- after anything that might
    have written to it since its last check, late writers included -- and a cell that
    fails is removed there and then, and the check gets a new one: a check never sees
    another check's files. Idle cells are removed at interpreter exit; a forked child
    starts with an empty pool and never touches its parent's cells (the module's
    handlers, registered once: a process that opens many sessions does not pile them up).
    """

    def __init__(
        self, prefix: str = "vgate-", *, parent: Path | str | None = None, keep: int = 4
    ) -> None:
        self.prefix = prefix
        self.parent = parent
        self.keep = keep  # idle cells kept at most (one per concurrent check)
        self._lock = threading.Lock()
        self._idle: list[tuple[Path, str]] = []  # (cell, the folder it was made in)
        self._pid = os.getpid()
        _POOLS.add(self)

    @contextmanager
    def cell(self) -> Iterator[Path]:
        """A cell that looks exactly as a new ``check_cell`` one; kept for reuse after."""
        owner = os.getpid()
        cell, made_in = self._take()
        _BUSY.add(cell)
        try:
            yield cell
        finally:
            if os.getpid() == owner:  # a forked child leaves its parent's cell alone
                _BUSY.discard(cell)
                self._give_back(cell, made_in)

    def idle(self) -> tuple[Path, ...]:
        with self._lock:
            return tuple(cell for cell, _ in self._idle)

    def close(self) -> None:
        """Remove the idle cells (done for every pool at exit); the pool stays usable."""
        with self._lock:
            idle, self._idle = (self._idle, []) if os.getpid() == self._pid else ([], [])
            _HOLDING.discard(self)
        for cell, _ in idle:
            remove_tree(cell)

    def _folder(self) -> str:
        return os.fspath(self.parent) if self.parent is not None else tempfile.gettempdir()

    def _take(self) -> tuple[Path, str]:
        folder = self._folder()
        while True:
            with self._lock:
                cell, made_in = self._idle.pop() if self._idle else (None, "")
            if cell is None:
                return new_cell(self.prefix, folder), folder
            try:
                reusable = made_in == folder and cell_is_clean(cell)
            except BaseException:  # an interrupt: the cell is no longer in the pool
                remove_tree(cell)
                raise
            if reusable:
                return cell, made_in
            remove_tree(cell)

    def _give_back(self, cell: Path, made_in: str) -> None:
        with self._lock:
            if len(self._idle) < self.keep and os.getpid() == self._pid and not _exiting:
                self._idle.append((cell, made_in))
                _HOLDING.add(self)  # its cells are removed at exit, if not before
                return
        remove_tree(cell)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._idle = []
        self._pid = os.getpid()


# Every pool of this process (weakly: a dropped pool has nothing to forget after a fork)
# and, strongly, those holding idle cells until they are removed: at exit, if not before.
_POOLS: weakref.WeakSet[CellPool] = weakref.WeakSet()
_HOLDING: set[CellPool] = set()
_exiting = False  # interpreter exit began: a cell given back is removed, not kept
# Cells in use: at exit, those a thread never gave back (its check dies with us) go too.
_BUSY: set[Path] = set()


def _at_exit() -> None:
    global _exiting
    _exiting = True
    for pool in list(_HOLDING):
        pool.close()
    for cell in list(_BUSY):
        remove_tree(cell)


def _after_fork_in_child() -> None:
    _HOLDING.clear()  # the parent's cells: its to remove
    _BUSY.clear()
    for pool in list(_POOLS):
        pool._forget()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def remove_tree(path: Path) -> None:
    """Delete ``path`` even when it holds read-only directories; never follows symlinks."""
    for attempt in range(2):
        _make_dirs_writable(path)
        try:
            shutil.rmtree(path)
            cell_owner.release(path)
            return
        except FileNotFoundError:
            cell_owner.release(path)
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
    # A check that runs pytest must not run the gates again (a gate running the gates,
    # forever): under this the plugin ignores --vgate/--vgate-cite however they are given.
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
