"""Shared helpers of the benchmarks: timing, medians, tables, pytest runs in temp dirs.

Every benchmark runs its subjects as child processes of one Python process, alternating
them round by round (A B, B A, A B, ...), so that load changes on a shared machine hit
both sides alike; it prints medians and ratios of medians. Nothing here asserts a speed:
the numbers are for reading (docs/performance.md).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent


@dataclass(frozen=True)
class Run:
    """One child process run: wall time, exit status, peak RSS and the output's tail."""

    wall: float  # seconds, perf_counter around spawn .. reap
    returncode: int
    peak_rss_mib: float  # ru_maxrss of the child: max over it and its reaped descendants
    user: float  # CPU seconds of the child and its reaped descendants
    system: float
    output: str  # last lines of stdout+stderr

    def check(self, expect: Sequence[int] = (0,), what: str = "run") -> Run:
        if self.returncode not in expect:
            raise SystemExit(
                f"{what} exited {self.returncode} (expected {list(expect)}):\n{self.output}"
            )
        return self


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    timeout: float = 1800.0,
    tail_lines: int = 30,
) -> Run:
    """Run ``argv`` to completion; wait4 gives the child's own rusage (not the harness's).

    Output goes to a temp file (never a pipe we must drain), so a child writing a lot
    cannot block on us and our memory does not grow with its output.
    """
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            cwd=os.fspath(cwd),
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from reaping again
        out.seek(0, os.SEEK_END)
        size = out.tell()
        out.seek(max(0, size - 16384))
        text = out.read().decode("utf-8", errors="replace")
    tail = "\n".join(text.splitlines()[-tail_lines:])
    return Run(
        wall=wall,
        returncode=proc.returncode,
        peak_rss_mib=usage.ru_maxrss / 1024.0,  # Linux reports KiB
        user=usage.ru_utime,
        system=usage.ru_stime,
        output=tail,
    )


def pytest_argv(*args: str, console_script: bool = False) -> list[str]:
    """``python -m pytest ARGS`` with this interpreter (or the ``pytest`` console script
    next to it, which behaves differently for forkserver children; see verifiers.py)."""
    if console_script:
        script = Path(sys.executable).with_name("pytest")
        if not script.exists():
            raise SystemExit(f"no pytest console script next to {sys.executable}")
        return [str(script), *args]
    return [sys.executable, "-m", "pytest", *args]


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment minus what would change a pytest run under measurement."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "COV_", "PYTHONBREAKPOINT"))
        and k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ written into the bench dirs
    env.update(extra)
    return env


@contextmanager
def workdir(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A fresh temp directory (outside the repo, so no conftest or ini of ours applies)."""
    path = Path(tempfile.mkdtemp(prefix=f"vgate-bench-{prefix}-")).resolve()
    try:
        yield path
    finally:
        if keep:
            print(f"(kept {path})")
        else:
            shutil.rmtree(path, ignore_errors=True)


def write_ini(folder: Path) -> None:
    """A pytest.ini that makes ``folder`` the rootdir and turns off the cache provider."""
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Series:
    """Wall times (and peak RSS) of one subject over the rounds."""

    name: str
    walls: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # user + system of the child tree

    def add(self, run: Run) -> None:
        self.walls.append(run.wall)
        self.rss.append(run.peak_rss_mib)
        self.cpus.append(run.user + run.system)

    @property
    def cpu(self) -> float:
        return median(self.cpus)

    @property
    def median(self) -> float:
        return median(self.walls)

    @property
    def spread(self) -> str:
        if not self.walls:
            return "-"
        return f"{min(self.walls):.3f}-{max(self.walls):.3f}"

    @property
    def peak_rss(self) -> float:
        return max(self.rss) if self.rss else float("nan")


def alternate(
    rounds: int, subjects: Sequence[tuple[str, Callable[[], Run]]], *, verbose: bool = True
) -> dict[str, Series]:
    """Run each subject once per round, in an order that rotates every round."""
    series = {name: Series(name) for name, _ in subjects}
    for r in range(rounds):
        shift = r % len(subjects)
        order = [*subjects[shift:], *subjects[:shift]]
        for name, fn in order:
            run = fn()
            series[name].add(run)
            if verbose:
                print(f"  round {r + 1}/{rounds} {name:<28} {run.wall:8.3f} s", flush=True)
    return series


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (readable in a terminal and pasteable into docs)."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for row in cells:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3f}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def verdict(value: float, target: float, *, at_most: bool) -> str:
    """'met' / 'NOT met' for a target like ``<= 1.10`` (at_most) or ``>= 20``."""
    if value != value:
        return "?"
    ok = value <= target if at_most else value >= target
    return "met" if ok else "NOT met"


def base_parser(description: str, *, rounds: int) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes, 1-2 rounds: a smoke run")
    parser.add_argument(
        "--rounds", type=int, default=rounds, help=f"rounds per subject (default {rounds})"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directories")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-round lines")
    return parser


def machine_line() -> str:
    """nproc, CPU model, load and Python: printed by every bench with its results."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        model = platform.processor() or "?"
    try:
        load = "load %.2f %.2f %.2f" % os.getloadavg()  # noqa: UP031
    except OSError:
        load = "load ?"
    impl = f"{platform.python_implementation()} {platform.python_version()}"
    return f"machine: {os.cpu_count()} CPUs ({model}), {load}, {impl}, {platform.system()}"


def header(title: str) -> None:
    """Print the benchmark's title and machine, and compile the package first.

    An installed plugin has its bytecode (pip compiles it); the children here never write
    bytecode (``PYTHONDONTWRITEBYTECODE``), so a checkout edited since its modules were
    last imported would recompile them in every child and count that as the plugin's time.
    """
    compileall.compile_dir(REPO_DIR / "pytest_vgate", quiet=1)
    print(f"== {title}")
    print(machine_line(), flush=True)


def gates_yaml(checks: Sequence[str], *, extra: str = "") -> str:
    """A gates file with one gate per check (ids g0..gN-1), in the plain minimal form."""
    lines = ["gates:"]
    for i, check in enumerate(checks):
        lines.append(f"  - id: g{i}")
        lines.append(f"    check: {json.dumps(check)}")
        if extra:
            lines.append(f"    {extra}")
    return "\n".join(lines) + "\n"
