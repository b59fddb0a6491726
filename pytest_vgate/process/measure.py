"""What a check executed, in every Python process a check starts.

Core, no pytest. The runner asks ``start`` for a probe before it spawns a check and
``Probe.collect`` after the check ended. The probe puts a private folder first on the
check's ``PYTHONPATH`` whose ``sitecustomize`` is ``bootstrap.py``, which measures every
Python process of the check unseen. What could not be measured is said, never guessed:
such a run is ``Measured(False)`` with the reason, which the judgment turns into
``unmeasured``, never into ``misses`` or ``disconnected``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import math
import os
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_vgate.process import bootstrap
from pytest_vgate.process.stack import Thread, parse_dump
from pytest_vgate.process.statements import executable_lines

DIR_ENV = bootstrap.DIR_ENV
MEASURED_KEY = "vgate_measured"  # where run_command leaves the Measured on a verdict
RUN_DIRNAME = "vgate-coverage"
ENGINES = ("auto", "monitoring", "settrace")  # auto: sys.monitoring on 3.12+, else CTracer
SHOWN_MISSED = 3  # reasons named in a run's reason before "and N more"
# How long before its deadline a sampled run's stacks are dumped: a tenth of the timeout,
# between these bounds (the dump takes milliseconds; the kill must not come first).
SAMPLE_LEAD = (0.05, 0.5)


@dataclass(frozen=True)
class MeasureSpec:
    """Which files a measured run records: those matching ``include`` (absolute real
    paths: a file, or a folder followed by ``/*`` for every file below it).

    Files below a ``site-packages`` folder are never recorded, even inside an included
    folder (a virtual environment kept in the repository). Every executed line of a
    recorded file is reported, mapped to its statement's first line.

    ``lines``: the lines the caller will ask about, per file; ``any_of``: per file, lines
    of which one running is enough. With them, the tracer before 3.12 stops tracing
    once all those lines ran (a trace hook slows every line of every file before Python
    3.12), and later lines are not reported; without them (None), every executed line of
    the included files is. Files are reported as they start either way. ``engine``:
    ``auto`` (``sys.monitoring`` on Python 3.12+, coverage.py's C tracer before), or
    ``settrace``, a Python tracer, everywhere (to compare them). ``sample``: every
    process dumps every thread's stack shortly before the run's deadline (a base run:
    where it hung).
    """

    include: tuple[str, ...]
    lines: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    engine: str = "auto"
    any_of: tuple[tuple[str, tuple[int, ...]], ...] = ()
    sample: bool = False

    def spec_text(self, sample_at: float | None = None) -> str:
        """The spec as the bootstrap reads it (paths hex-encoded: any byte goes);
        ``sample_at``: the ``time.monotonic()`` of the stack sample."""
        rows = [f"engine {self.engine if self.engine in ENGINES else 'auto'}"]
        if sample_at is not None:
            rows.append(f"sample {sample_at!r}")
        for pattern in self.include:
            if pattern.endswith(os.sep + "*"):
                rows.append(f"folder {os.fsencode(pattern[:-1]).hex()}")
            else:
                rows.append(f"file {os.fsencode(pattern).hex()}")
        if self.lines is not None:
            rows.append("stop")
            for kind, entries in (("watch", self.lines), ("any", self.any_of)):
                rows.extend(
                    f"{kind} {os.fsencode(path).hex()} {','.join(map(str, lines))}"
                    for path, lines in entries
                    if lines
                )
        return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class Measured:
    """What one run executed: ``files`` maps a real path to its executed lines.

    ``measured`` False: the run's data is incomplete or missing (no Python process
    started measuring, a process out of reach, a tracer we could not share, unreadable
    data); ``reason`` says why, and ``files`` holds what was measured anyway.
    ``engines``: the engine of each measured process; ``missed``: what was not measured.
    ``stacks``: in a sampled run, every thread of every process still running at the
    sample, innermost frame first; ``sampled``: a sample was taken (even one with no
    Python frame); ``unsampled``: why a process could not arm or keep its sample.
    """

    measured: bool
    files: Mapping[str, frozenset[int]] = field(default_factory=dict)
    processes: int = 0
    reason: str = ""
    engines: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    stacks: tuple[Thread, ...] = ()
    sampled: bool = False
    unsampled: tuple[str, ...] = ()


class Probe:
    """The measuring of one run; ``env`` is what the check must be started with.

    ``data`` and ``home`` are the run's data folder and the bootstrap's folder, for a
    process that is already running and starts measuring itself (``bootstrap.start``: a
    verifier's zygote, before it imports the verifier's module)."""

    def __init__(self, folder: Path, home: Path, env: Mapping[str, str]) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.home = home
        self.env = self.extend(env)

    def extend(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with this run's measurement added (its ``PYTHONPATH`` kept after ours)."""
        new = dict(env)
        given = new.get("PYTHONPATH")
        new["PYTHONPATH"] = os.pathsep.join([str(self.home), *([given] if given else [])])
        new[DIR_ENV] = str(self.data)
        return new

    def collect(self) -> Measured:
        """Read every process's records strictly, then remove the run's folder."""
        from pytest_vgate.process.cell import remove_tree

        try:
            return _read(self.data)
        finally:
            remove_tree(self.folder)


def start(
    spec: MeasureSpec, cell: Path, env: Mapping[str, str], timeout: float | None = None
) -> Probe:
    """Prepare a measured run in ``cell``: the check must start with ``Probe.env``.
    ``timeout``: the run's deadline from now, before which a ``sample`` spec is sampled."""
    folder = cell / f"{RUN_DIRNAME}-{secrets.token_hex(4)}"
    data = folder / "data"
    for path in (folder, data):
        path.mkdir(mode=0o700)
    sample_at = None
    if spec.sample and timeout is not None and math.isfinite(timeout) and timeout > 0:
        lead = min(max(timeout / 10, SAMPLE_LEAD[0]), SAMPLE_LEAD[1])
        sample_at = time.monotonic() + timeout - lead
    (folder / bootstrap.SPEC_NAME).write_text(spec.spec_text(sample_at), encoding="ascii")
    return Probe(folder, _boot_home(folder), env)


def _boot_home(folder: Path) -> Path:
    """A folder holding the bootstrap as ``sitecustomize.py`` and a copy of coverage.py's
    C tracer (which a check's process of this interpreter loads): one per content next to
    the bytecode cache, so each Python version compiles it once, not once per process;
    else one in the run's folder."""
    from pytest_vgate.process import bytecode

    files = {"sitecustomize.py": Path(bootstrap.__file__).read_bytes(), **_c_tracer()}
    prefix = bytecode.cache_prefix()
    if prefix is not None:
        digest = hashlib.sha256(b"".join(files.values())).hexdigest()[:16]
        home = prefix.parent / f"measure-{digest}"
        try:
            for name, data in files.items():
                path = home / name
                if not path.is_file() or path.read_bytes() != data:
                    home.mkdir(mode=0o700, exist_ok=True)
                    scratch = home / f".{name}.{secrets.token_hex(4)}"
                    scratch.write_bytes(data)
                    os.replace(scratch, path)
            return home
        except OSError:
            pass
    home = folder / "boot"
    home.mkdir(mode=0o700)
    for name, data in files.items():
        (home / name).write_bytes(data)
    return home


@functools.cache
def _c_tracer() -> dict[str, bytes]:
    """coverage.py's C tracer extension of this interpreter, by file name (none: {}).

    Found where ``import coverage.tracer`` would find it, without importing coverage (a
    tenth of a second of a session's start that nothing else here needs)."""
    spec = importlib.util.find_spec("coverage")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"tracer{suffix}"
            if path.is_file():
                return {path.name: path.read_bytes()}
    return {}


def _read(data: Path) -> Measured:
    try:
        names = sorted(n for n in os.listdir(data) if n.startswith(bootstrap.DATA_PREFIX))
    except OSError as exc:
        return Measured(False, reason=f"the run's measurement folder is gone ({exc})")
    files: dict[str, set[int]] = {}
    engines: list[str] = []
    missed: list[str] = []
    unsampled: list[str] = []
    for name in names:
        problem = _read_process(data / name, files, engines, missed, unsampled)
        if problem:
            return Measured(False, reason=f"unreadable measurement data {name}: {problem}")
    stacks, sampled = _read_stacks(data)
    found = _measured(files, engines, missed)
    return replace(found, stacks=stacks, sampled=sampled, unsampled=tuple(unsampled))


def _measured(
    files: dict[str, set[int]],
    engines: list[str],
    missed: list[str],
) -> Measured:
    mapped = {path: statements(path, lines) for path, lines in files.items()}
    if missed:
        shown = "; ".join(missed[:SHOWN_MISSED])
        more = len(missed) - SHOWN_MISSED
        why = shown + (f"; and {more} more" if more > 0 else "")
        return Measured(False, mapped, len(engines), why, tuple(engines), tuple(missed))
    if not engines:
        return Measured(False, reason="no Python process of the check was measured")
    return Measured(True, mapped, len(engines), "", tuple(engines))


def _read_stacks(data: Path) -> tuple[tuple[Thread, ...], bool]:
    """Every thread of the stack samples in ``data``, and whether any was written."""
    threads: list[Thread] = []
    sampled = False
    for name in sorted(os.listdir(data)):
        if not name.startswith(bootstrap.STACK_PREFIX):
            continue
        try:
            text = (data / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if text.strip():
            sampled = True
            threads.extend(parse_dump(text))
    return tuple(threads), sampled


def _read_process(
    path: Path,
    files: dict[str, set[int]],
    engines: list[str],
    missed: list[str],
    unsampled: list[str],
) -> str:
    """Add one process's records to ``files``; what is wrong with them, or "". Strict: a
    record that does not parse means we do not know what ran."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        return str(exc)
    numbered: dict[int, str] = {}
    for row in text.splitlines():
        parts = row.split(" ")
        try:
            if parts[0] == "s" and len(parts) == 3:
                engines.append(parts[1])
                continue
            if parts[0] == "p" and len(parts) == 3 and parts[1].isdigit():
                numbered[int(parts[1])] = real = os.fsdecode(bytes.fromhex(parts[2]))
                files.setdefault(real, set())
                continue
            if parts[0] == "l" and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                real = numbered[int(parts[1])]
                files[real].add(int(parts[2]))
                continue
            if parts[0] == "w" and len(parts) == 2:
                unsampled.append(bytes.fromhex(parts[1]).decode("utf-8", "replace"))
                continue
            if parts[0] == "x" and len(parts) == 2:
                why = bytes.fromhex(parts[1]).decode("utf-8", "replace")
                if why not in missed:
                    missed.append(why)
                continue
        except (ValueError, KeyError):
            pass
        return f"bad record {row[:80]!r}"
    return ""


def statements(path: str, lines: Iterable[int]) -> frozenset[int]:
    """Executed lines as coverage.py counts them: a line inside a multi-line statement
    is the statement's first line (``executable_lines``, also what the change's lines are)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            parsed = executable_lines(fh.read())
    except OSError:
        parsed = None
    if parsed is None:
        return frozenset(n for n in lines if n > 0)  # line 0: a code object's prologue
    first = parsed[1]
    return frozenset(first.get(n, n) for n in lines if n > 0)
