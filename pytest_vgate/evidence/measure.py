"""What a check executed, in every Python process a check starts.

Core, no pytest. The runner asks ``start`` for a probe before it spawns a check and
``Probe.collect`` after the check ended. The probe puts a private bootstrap folder on the
check's ``PYTHONPATH``: its ``sitecustomize`` starts measuring in every Python process of
the check (``python -m pytest``, scripts, ``pytest.main``, subprocesses: they inherit the
environment). Each process writes its data into the run's folder, plus a start and a
finish marker, so "ran Python but executed none of the tree" is told apart from "nothing
could be measured" (no process started measuring: ``unmeasured``).

Two engines answer the same question ("which of these lines ran, and was this file
executed at all"):

- coverage.py, with ``COVERAGE_PROCESS_START`` naming a generated rc file: on Python
  3.12+ (its ``sys.monitoring`` core), for a spec of folders (``include_for``), for a
  process whose main script is a changed file, and wherever the other cannot run;
- on CPython 3.8-3.11, for a spec of exact files and lines (``MeasureSpec.lines``, what
  the judgment of a change needs): one-shot probes compiled into those files
  (pytest_vgate/evidence/measure_lines.py), because any trace hook slows every line of every file
  there, recorded or not.

``COVERAGE_*`` and pytest-cov's ``COV_CORE_*`` variables of the caller never reach a
measured check: the two never mix.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIR_ENV = "PYTEST_VGATE_COVERAGE_DIR"
RC_ENV = "PYTEST_VGATE_COVERAGE_RC"  # the rc file, when the bootstrap picks coverage.py
MEASURED_KEY = "vgate_measured"  # where run_command leaves the Measured on a verdict
FOREIGN_PREFIXES = ("COVERAGE_", "COV_CORE_")
RUN_DIRNAME = "vgate-coverage"
PATCH_MIN = (7, 10)  # coverage.py's `[run] patch` (saving data at os._exit)
LINES_MODULE = "_vgate_lines"  # pytest_vgate/evidence/measure_lines.py, as the bootstrap imports it
LINES_PREFIX = "lines."  # the probes' data files

# Written into the run's folder; runs inside the check's own interpreter, so it may use
# only the standard library until coverage is imported.
BOOTSTRAP = r'''"""pytest-vgate: measure this process (pytest_vgate/evidence/measure.py)."""
import os
import sys

TARGETS = @TARGETS@  # None, or {real path: [changed lines]} for the probes
LINES_HOME = @LINES_HOME@  # the folder of _vgate_lines.py


def _vgate_start():
    folder = os.environ.get("PYTEST_VGATE_COVERAGE_DIR")
    if not folder or not os.path.isdir(folder):
        return
    token = "%d.%s" % (os.getpid(), os.urandom(4).hex())
    if _probes_fit() and _start_probes(folder, token):
        return
    try:
        import coverage
    except ImportError:
        coverage = None
        if tuple(sys.version_info[:2]) == (@MAJOR@, @MINOR@):
            sys.path.append(@COVERAGE_HOME@)
            try:
                import coverage
            except ImportError:
                coverage = None
            finally:
                sys.path.remove(@COVERAGE_HOME@)
    if coverage is None:
        _mark(folder, "failed." + token, "coverage.py is not importable by %s" % sys.executable)
        return
    if sys.version_info >= (3, 12):
        os.environ["COVERAGE_CORE"] = "sysmon"
    import atexit

    atexit.register(_mark, folder, "finished." + token, "")  # runs after coverage saved
    rc = os.environ.get("PYTEST_VGATE_COVERAGE_RC")
    if rc:  # for this process only: coverage's own .pth must not start it in the others
        os.environ["COVERAGE_PROCESS_START"] = rc
    try:
        coverage.process_startup()
    # This process's boundary (boundary.py): a broken start is "not measured", never a
    # broken check.
    except Exception as exc:  # noqa: BLE001
        _mark(folder, "failed." + token, "%s: %s" % (type(exc).__name__, exc))
        return
    finally:
        if rc:
            os.environ.pop("COVERAGE_PROCESS_START", None)
    if getattr(coverage.process_startup, "coverage", None) is None:
        _mark(folder, "failed." + token, "coverage.process_startup() did not start")
        return
    _mark(folder, "started." + token, sys.executable)


def _probes_fit():
    if TARGETS is None or sys.implementation.name != "cpython":
        return False
    if not (3, 8) <= tuple(sys.version_info[:2]) < (3, 12):
        return False  # 3.12+: coverage.py's sys.monitoring core is cheap
    script = sys.argv[0] if sys.argv else ""
    # `python changed.py` is compiled by the interpreter before any hook: coverage.py.
    return not (
        script not in ("", "-c", "-m", "-")
        and os.path.isfile(script)
        and os.path.realpath(script) in TARGETS
    )


def _start_probes(folder, token):
    sys.path.insert(0, LINES_HOME)
    try:
        import _vgate_lines

        _vgate_lines.install(folder, token, TARGETS)
    except Exception:  # probes that cannot start: coverage.py measures this process
        return False
    finally:
        sys.path.remove(LINES_HOME)
    import atexit

    atexit.register(_mark, folder, "finished." + token, "")
    real_exit = os._exit

    def _exit(code):
        _mark(folder, "finished." + token, "")
        real_exit(code)

    os._exit = _exit
    _mark(folder, "started." + token, "probes " + sys.executable)
    return True


def _mark(folder, name, text):
    try:
        with open(os.path.join(folder, name), "w") as fh:
            fh.write(text)
    except OSError:
        pass


def _chain():
    """Run the sitecustomize this one shadows, if there is one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            import importlib.util

            spec = importlib.util.spec_from_file_location("sitecustomize", candidate)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules["sitecustomize"] = module
                try:
                    spec.loader.exec_module(module)
                except Exception:  # the user's own sitecustomize: its failure is not ours
                    pass
            return


_vgate_start()
_chain()
'''


@dataclass(frozen=True)
class MeasureSpec:
    """Which files a measured run records: those matching ``include`` (absolute file
    patterns, as coverage's ``[run] include``).

    Files below a ``site-packages`` folder are never recorded, even inside an included
    folder (a virtual environment kept in the repository).

    ``lines``: the exact files (real paths) and the lines asked about, when that is all
    the caller needs; a measured file then reports at least which of those lines ran
    (the probes report nothing else), and an executed file with none of them appears with
    no lines. ``engine`` ``"coverage"`` keeps coverage.py for every process.
    """

    include: tuple[str, ...]
    lines: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    engine: str = "auto"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"include": list(self.include)}
        if self.lines is not None:
            out["lines"] = {path: list(lines) for path, lines in self.lines}
        return out

    def probe_targets(self) -> dict[str, list[int]] | None:
        """What the probes watch (real path -> lines), or None: coverage.py only."""
        if self.lines is None or self.engine == "coverage":
            return None
        return {path: sorted(lines) for path, lines in sorted(self.lines)}


@dataclass(frozen=True)
class Measured:
    """What one run executed: ``files`` maps a real path to its executed lines.

    ``measured`` False: no Python process of the check started measuring (a compiled tool,
    a shell pipeline, coverage missing); ``reason`` says why, and ``files`` is empty.
    ``probed``: how many of the ``processes`` the probes measured (the rest: coverage.py).
    """

    measured: bool
    files: Mapping[str, frozenset[int]] = field(default_factory=dict)
    processes: int = 0
    unfinished: int = 0
    reason: str = ""
    probed: int = 0


def strip_foreign(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without coverage.py's and pytest-cov's own variables."""
    return {k: v for k, v in env.items() if not k.startswith(FOREIGN_PREFIXES)}


def _coverage_version() -> tuple[int, ...] | None:
    try:
        import coverage
    except ImportError:
        return None
    return tuple(coverage.version_info[:2])


def _rc_text(spec: MeasureSpec, data: Path, version: tuple[int, ...]) -> str:
    include = "".join(f"\n    {pattern}" for pattern in spec.include)
    lines = [
        "[run]",
        "parallel = True",
        "branch = False",
        f"data_file = {data / '.coverage'}",
        f"include ={include}",
        "omit =\n    */site-packages/*\n    */dist-packages/*",
        "disable_warnings = no-data-collected, module-not-measured, couldnt-parse",
    ]
    if version >= PATCH_MIN:
        lines.append("patch = _exit")
    return "\n".join(lines) + "\n"


class Probe:
    """The measuring of one run; ``env`` is what the check must be started with."""

    def __init__(self, folder: Path, env: dict[str, str], targets: Sequence[str] = ()) -> None:
        self.folder = folder
        self.env = env
        self.targets = targets  # the probes' files, in the order of their indexes

    def collect(self) -> Measured:
        """Read and combine every data file strictly, then remove the run's folder."""
        from pytest_vgate.process.cell import remove_tree

        try:
            return _read(self.folder / "data", tuple(self.targets))
        finally:
            remove_tree(self.folder)


def start(spec: MeasureSpec, cell: Path, env: Mapping[str, str]) -> Probe | Measured:
    """Prepare a measured run in ``cell``: a Probe, or ``Measured(False)`` when it cannot be."""
    version = _coverage_version()
    if version is None:
        return Measured(False, reason="coverage.py is not installed in pytest-vgate's Python")
    import coverage

    folder = cell / f"{RUN_DIRNAME}-{secrets.token_hex(4)}"
    boot, data = folder / "boot", folder / "data"
    for path in (folder, boot, data):
        path.mkdir(mode=0o700)
    home = os.path.dirname(os.path.dirname(os.path.abspath(coverage.__file__)))
    targets = spec.probe_targets()
    lines_home = str(_lines_home(boot)) if targets is not None else None
    text = (
        BOOTSTRAP.replace("@MAJOR@", str(sys.version_info[0]))
        .replace("@MINOR@", str(sys.version_info[1]))
        .replace("@COVERAGE_HOME@", repr(home))
        .replace("@TARGETS@", repr(targets))
        .replace("@LINES_HOME@", repr(lines_home))
    )
    (boot / "sitecustomize.py").write_text(text, encoding="utf-8")
    rc = folder / "coveragerc"
    rc.write_text(_rc_text(spec, data, version), encoding="utf-8")
    new = strip_foreign(env)
    given = new.get("PYTHONPATH")
    new["PYTHONPATH"] = os.pathsep.join([str(boot), *([given] if given else [])])
    # With probes, coverage.py starts only where the bootstrap picks it: its .pth file
    # (coverage 7.7+) would start it in every process that sees COVERAGE_PROCESS_START.
    new[RC_ENV if targets is not None else "COVERAGE_PROCESS_START"] = str(rc)
    new[DIR_ENV] = str(data)
    return Probe(folder, new, list(targets or ()))


def _lines_home(boot: Path) -> Path:
    """A folder holding ``_vgate_lines.py``: one per content next to the bytecode cache,
    so each Python version compiles it once, not once per process; else ``boot``."""
    from pytest_vgate.process import bytecode

    source = Path(__file__).with_name("measure_lines.py").read_bytes()
    prefix = bytecode.cache_prefix()
    if prefix is not None:
        home = prefix.parent / f"probes-{hashlib.sha256(source).hexdigest()[:16]}"
        path = home / f"{LINES_MODULE}.py"
        try:
            if not path.is_file() or path.read_bytes() != source:
                home.mkdir(mode=0o700, exist_ok=True)
                scratch = home / f".{LINES_MODULE}.{secrets.token_hex(4)}"
                scratch.write_bytes(source)
                os.replace(scratch, path)
            return home
        except OSError:
            pass
    (boot / f"{LINES_MODULE}.py").write_bytes(source)
    return boot


def _read(data: Path, targets: Sequence[str] = ()) -> Measured:
    try:
        names = sorted(os.listdir(data))
    except OSError as exc:
        return Measured(False, reason=f"the run's coverage folder is gone ({exc})")
    started = [n for n in names if n.startswith("started.")]
    finished = {n.split(".", 1)[1] for n in names if n.startswith("finished.")}
    failed = [n for n in names if n.startswith("failed.")]
    if not started:
        why = "no Python process of the check was measured"
        if failed:
            why += f" ({_first_text(data / failed[0])})"
        return Measured(False, reason=why)
    tokens = [n.split(".", 1)[1] for n in started]
    done = [t for t in tokens if t in finished]
    if not done:
        return Measured(
            False,
            processes=len(tokens),
            unfinished=len(tokens),
            reason=f"{len(tokens)} measured process(es) ended without saving coverage data",
        )
    import sqlite3

    from coverage import CoverageData
    from coverage.exceptions import CoverageException

    files: dict[str, set[int]] = {}
    for name in names:
        if name.startswith(LINES_PREFIX):
            problem = _read_lines(data / name, targets, files)
            if problem:
                return Measured(False, reason=f"unreadable probe data {name}: {problem}")
            continue
        if not name.startswith(".coverage"):
            continue
        try:
            part = CoverageData(basename=str(data / name))
            part.read()
            for path in part.measured_files():
                files.setdefault(os.path.realpath(path), set()).update(part.lines(path) or ())
        # Strict: a data file we cannot read means we do not know what ran.
        except (CoverageException, sqlite3.Error, OSError, ValueError) as exc:
            return Measured(False, reason=f"unreadable coverage data {name}: {exc}")
    return Measured(
        True,
        files={path: frozenset(lines) for path, lines in files.items()},
        processes=len(tokens),
        unfinished=len(tokens) - len(done),
        probed=sum(1 for n in started if _first_text(data / n).startswith("probes ")),
    )


def _read_lines(path: Path, targets: Sequence[str], files: dict[str, set[int]]) -> str:
    """Add a probes' data file (``f INDEX`` / ``l INDEX LINE`` lines) to ``files``; what is
    wrong with it, or "". Strict, as for coverage's data: a line that does not parse means
    we do not know what ran."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        return str(exc)
    for row in text.splitlines():
        parts = row.split(" ")
        try:
            if any(p.startswith("-") for p in parts[1:]):
                raise ValueError(row)
            if parts[0] == "f" and len(parts) == 2:
                files.setdefault(targets[int(parts[1])], set())
                continue
            if parts[0] == "l" and len(parts) == 3:
                files.setdefault(targets[int(parts[1])], set()).add(int(parts[2]))
                continue
        except (ValueError, IndexError):
            pass
        return f"bad record {row[:80]!r}"
    return ""


def _first_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()[:200]
    except OSError:
        return "unreadable marker"


def include_for(folders: Sequence[Path | str]) -> MeasureSpec:
    """A spec recording files below each folder (real paths, duplicates dropped)."""
    found = dict.fromkeys(os.path.join(os.path.realpath(f), "*") for f in folders)
    return MeasureSpec(tuple(found))
