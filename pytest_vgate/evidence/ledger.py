"""The evidence ledger: an append-only JSONL file that never breaks the session.

Only the controller writes it. Each batch is one ``write`` under an exclusive ``flock`` on
an ``O_APPEND`` descriptor, so two sessions appending at once interleave whole lines and
lose none. Every problem (unwritable, locked, corrupted, a directory in the way, a named
pipe, socket or device at the path: never opened for real) becomes a warning whose text
names the ledger path; reading skips what it cannot parse. Each line carries a MAC made
with the user's key (``ledger_key``); a line whose MAC does not verify is ignored with a
warning: a hand-written line naming real commits proves nothing.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from pytest_vgate.evidence.ledger_key import MAC_FIELD, ledger_key, record_mac, verifies
from pytest_vgate.evidence.record import Record
from pytest_vgate.process.regular import open_regular, read_all

LEDGER_DIRNAME = ".vgate"
LEDGER_FILENAME = "ledger.jsonl"
LOCK_WAIT = 10.0  # seconds to wait for another session's lock before giving up


class Ledger:
    """Evidence records of one gates root (default ``<root>/.vgate/ledger.jsonl``).

    ``path`` ending in ``.jsonl`` is the file itself; anything else is a directory that
    holds ``ledger.jsonl`` (a directory we create gets a ``.gitignore`` of ``*``).
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if self.path.suffix == ".jsonl":
            self.file = self.path
            self._own_dir: Path | None = None
        else:
            self.file = self.path / LEDGER_FILENAME
            self._own_dir = self.path

    @classmethod
    def default(cls, root: Path | str) -> Ledger:
        return cls(Path(root) / LEDGER_DIRNAME)

    def __repr__(self) -> str:
        return f"Ledger({str(self.file)!r})"

    def warning(self, text: str) -> str:
        """A warning about this ledger, in the form every ledger warning takes."""
        return f"vgate ledger {self.file}: {text}"

    def _ensure_dir(self) -> None:
        directory = self.file.parent
        if directory.is_dir():
            return
        directory.mkdir(parents=True, exist_ok=True)
        if self._own_dir is not None and directory == self._own_dir:
            # Like .pytest_cache: keep the ledger out of `git status` and of tree digests.
            (directory / ".gitignore").write_text("# created by pytest-vgate\n*\n")

    def append(self, records: Sequence[Record]) -> list[str]:
        """Append whole JSON lines in one locked write. Returns warnings; never raises."""
        if not records:
            return []
        lost = f"{len(records)} records of this session are not recorded; the verdicts stand"
        try:
            key = ledger_key()
        except OSError as exc:
            return [self.warning(f"no ledger key ({_describe(exc)}); {lost}")]
        try:
            objects = [r.to_dict() for r in records]
            lines = [
                json.dumps({**o, MAC_FIELD: record_mac(key, o)}, sort_keys=True, ensure_ascii=True)
                for o in objects
            ]
        except (TypeError, ValueError) as exc:
            return [
                self.warning(f"could not serialise {len(records)} records ({exc}); not recorded")
            ]
        payload = ("\n".join(lines) + "\n").encode("ascii")
        try:
            self._ensure_dir()
            fd = open_regular(self.file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            return [self.warning(f"cannot open for append ({_describe(exc)}); {lost}")]
        try:
            if not _lock(fd, fcntl.LOCK_EX, LOCK_WAIT):
                return [
                    self.warning(f"still locked by another session after {LOCK_WAIT:g}s; {lost}")
                ]
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                payload = b"\n" + payload  # a torn last line stays torn, ours stay whole
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except OSError as exc:
            return [self.warning(f"write failed ({_describe(exc)}); {lost}")]
        finally:
            os.close(fd)  # closing releases the lock
        return []

    def read(self) -> tuple[list[Record], list[str]]:
        """All records that parse, plus warnings. Never raises."""
        try:
            data = self._read_bytes()
        except FileNotFoundError:
            return [], []
        except OSError as exc:
            return [], [
                self.warning(f"cannot read ({_describe(exc)}); no earlier evidence is used")
            ]
        try:
            key: bytes | None = ledger_key()
        except OSError as exc:
            key, no_key = None, _describe(exc)
        records: list[Record] = []
        bad: list[int] = []
        forged = 0
        first_problem = ""
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
                record = Record.from_dict({k: v for k, v in obj.items() if k != MAC_FIELD})
                if key is None or not verifies(key, obj):
                    forged += 1
                    continue
                records.append(record)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                bad.append(number)
                first_problem = first_problem or f"line {number}: {type(exc).__name__}"
        warnings: list[str] = []
        if forged:
            why = f"no ledger key ({no_key})" if key is None else "their MAC does not verify"
            warnings.append(
                self.warning(
                    f"ignored {forged} record(s): {why} (written by hand, by another user, "
                    "or with another key); they prove nothing"
                )
            )
        if bad:
            warnings.append(
                self.warning(
                    f"skipped {len(bad)} unreadable line(s) ({first_problem}); the "
                    f"{len(records)} records that parse are used"
                )
            )
        return records, warnings

    def _read_bytes(self) -> bytes:
        fd = open_regular(self.file)
        try:
            _lock(fd, fcntl.LOCK_SH, 2.0)  # best effort: avoids reading a half-written batch
            return read_all(fd)
        finally:
            os.close(fd)


def _lock(fd: int, kind: int, wait: float) -> bool:
    """flock without blocking forever: a stuck session must not hang ours."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return True  # flock unsupported here (some network filesystems): go on unlocked
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def _describe(exc: OSError) -> str:
    return str(exc) or type(exc).__name__
