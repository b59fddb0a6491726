"""Citations: 4,000 citations over 200 files vs pytest's per-item floor vs naive protocols.

Generates a repository (200 Python files of 20 functions each, in a git work tree) and
an ``answer.md`` citing each function's ``def`` line (all verifiable), then alternates:

- plugin:       ``pytest --vgate-cite answer.md`` (one item per citation);
- floor:        4,000 trivial parametrized tests (pytest's own per-item cost);
- library:      the same citations through ``CitationChecker`` without pytest (the core);
- naive python: for each citation, open and scan its file (resolve it, read it, split
                lines, check the entity on the line, else within 20 lines, else the whole
                file), no caching: the seed's protocol done in plain Python;
- naive shell:  the seed's protocol as written (``git rev-parse``, ``test -f``,
                ``wc -l``, ``sed -n``; ``grep -n`` when needed: one process each), on a
                sample of citations and scaled to all of them (``--shell-sample``).

    python bench/citations.py             # 4,000 citations, 3 rounds
    python bench/citations.py --quick     # 400 citations over 20 files, 1 round
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
    Series,
    alternate,
    base_parser,
    clean_env,
    header,
    median,
    pytest_argv,
    ratio,
    run_child,
    table,
    verdict,
    workdir,
)

FUNCS_PER_FILE = 20
BODY_LINES = 12

FLOOR_TESTS = """\
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_item(i):
    pass
"""

LIBRARY = """\
import sys
import time
from pathlib import Path
from pytest_vgate.citations import CitationChecker, parse_citations
started = time.perf_counter()
root = Path(sys.argv[2])
checker = CitationChecker(root)
results = [checker.check(c) for c in parse_citations(Path(sys.argv[1]))]
bad = [r for r in results if r.status.value != "verified"]
print(len(results), "checked,", len(bad), "not verified")
print("in-process", time.perf_counter() - started)
sys.exit(1 if bad else 0)
"""

# The naive protocol in plain Python: every citation opens and scans its file afresh.
NAIVE = r"""
import os, re, sys, time
started = time.perf_counter()
CITE = re.compile(r"^- (\S+):(\d+) \u2014 `(\w+)`")
def check(root, path, line, entity):
    full = os.path.realpath(os.path.join(root, path))
    if not full.startswith(root + os.sep) or not os.path.isfile(full):
        return "dropped"
    with open(full, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    word = re.compile(r"\b" + re.escape(entity) + r"\b")
    if line <= len(lines) and word.search(lines[line - 1]):
        return "verified"
    near = range(max(1, line - 20), min(len(lines), line + 20) + 1)
    for n in sorted(near, key=lambda n: abs(n - line)):
        if word.search(lines[n - 1]):
            return "corrected"
    for n, text in enumerate(lines, 1):
        if word.search(text):
            return "corrected"
    return "dropped"
root = os.path.realpath(sys.argv[2])
bad = 0
total = 0
with open(sys.argv[1], encoding="utf-8") as fh:
    for text in fh:
        m = CITE.match(text)
        if m:
            total += 1
            bad += check(root, m.group(1), int(m.group(2)), m.group(3)) != "verified"
print(total, "checked,", bad, "not verified")
print("in-process", time.perf_counter() - started)
sys.exit(1 if bad else 0)
"""

SHELL = r"""
import re, subprocess, sys
CITE = re.compile(r"^- (\S+):(\d+) \u2014 `(\w+)`")
limit = int(sys.argv[2])
done = bad = 0
def sh(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
with open(sys.argv[1], encoding="utf-8") as fh:
    for text in fh:
        m = CITE.match(text)
        if not m:
            continue
        if done >= limit:
            break
        path, line, entity = m.group(1), int(m.group(2)), m.group(3)
        top = sh("git", "rev-parse", "--show-toplevel").stdout.strip()
        full = f"{top}/{path}"
        if sh("test", "-f", full).returncode != 0:
            bad += 1
        elif int(sh("wc", "-l", full).stdout.split()[0]) < line:
            bad += 1
        elif not re.search(r"\b" + entity + r"\b", sh("sed", "-n", f"{line}p", full).stdout):
            bad += sh("grep", "-n", entity, full).returncode != 0
        done += 1
print(done, "checked,", bad, "not verified")
sys.exit(1 if bad else 0)
"""


def make_repo(base: Path, files: int, per_file: int) -> tuple[Path, int]:
    """Write the source files, answer.md and a git commit; returns (repo, citations)."""
    repo = base / "repo"
    cites = []
    for f in range(files):
        rel = f"src/pkg_{f // 20:02d}/mod_{f:03d}.py"
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f'"""Module {f}."""', "", "import os", ""]
        for k in range(FUNCS_PER_FILE):
            lines += ["", ""]
            if k < per_file:
                cites.append(f"- {rel}:{len(lines) + 1} \u2014 `func_{f}_{k}` computes a value")
            lines.append(f"def func_{f}_{k}(value, *, retry_count=3):")
            lines.append(f'    """Return a value derived from ``value`` ({k})."""')
            for b in range(BODY_LINES):
                lines.append(f"    value = os.path.join(str(value), 'part_{b}')  # step {b}")
            lines.append("    return value")
        path.write_text("\n".join(lines) + "\n")
    answer = ["# Where things are", "", *cites, ""]
    (repo / "answer.md").write_text("\n".join(answer))
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], cwd=repo, check=True)
    return repo, len(cites)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("--files", type=int, default=None, help="source files (default 200)")
    parser.add_argument(
        "--per-file", type=int, default=20, help="citations per file, at most 20 (default 20)"
    )
    parser.add_argument(
        "--shell-sample",
        type=int,
        default=200,
        help="citations run through the shell protocol, scaled up (0: skip; default 200)",
    )
    args = parser.parse_args()
    files = args.files or (20 if args.quick else 200)
    per_file = min(args.per_file, FUNCS_PER_FILE)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    with workdir("citations", keep=args.keep) as base:
        repo, n = make_repo(base, files, per_file)
        header(f"citations: {n} citations over {files} files, {rounds} rounds")
        floor_dir = base / "floor"
        floor_dir.mkdir()
        (floor_dir / "test_floor.py").write_text(FLOOR_TESTS.format(n=n))
        for name, text in (("library.py", LIBRARY), ("naive.py", NAIVE), ("shell.py", SHELL)):
            (base / name).write_text(text)
        env = clean_env()
        answer = str(repo / "answer.md")

        def plugin() -> Run:
            argv = pytest_argv("--vgate-cite", "answer.md", "-p", "no:cacheprovider", "-q")
            return run_child(argv, cwd=repo, env=env).check(what="plugin")

        def floor() -> Run:
            argv = pytest_argv("test_floor.py", "-p", "no:cacheprovider", "-q")
            return run_child(argv, cwd=floor_dir, env=env).check(what="floor")

        inner: dict[str, list[float]] = {"library": [], "naive": []}

        def in_process(run: Run, name: str) -> Run:
            inner[name].append(float(run.output.split()[-1]))  # "in-process SECONDS"
            return run

        def library() -> Run:
            argv = [sys.executable, str(base / "library.py"), answer, str(repo)]
            return in_process(run_child(argv, cwd=repo, env=env).check(what="library"), "library")

        def naive() -> Run:
            argv = [sys.executable, str(base / "naive.py"), answer, str(repo)]
            return in_process(run_child(argv, cwd=repo, env=env).check(what="naive"), "naive")

        subjects = [
            ("plugin", plugin),
            ("floor (trivial tests)", floor),
            ("library (no pytest)", library),
            ("naive python", naive),
        ]
        series: dict[str, Series] = alternate(rounds, subjects, verbose=not args.quiet)
        shell_total = float("nan")
        sample = min(args.shell_sample, n)
        if sample > 0:
            argv = [sys.executable, str(base / "shell.py"), answer, str(sample)]
            shell = run_child(argv, cwd=repo, env=env).check(what="naive shell")
            shell_total = shell.wall * n / sample
            print(f"  naive shell: {sample} citations in {shell.wall:.2f} s", flush=True)

    rows = [
        [name, s.median, s.spread, s.median / n * 1000, s.cpu, s.peak_rss]
        for name, s in series.items()
    ]
    if sample > 0:
        rows.append(
            [
                f"naive shell (x{n / sample:g} of {sample})",
                shell_total,
                "-",
                shell_total / n * 1000,
                "-",
                "-",
            ]
        )
    print()
    print(table(["subject", "median s", "min-max s", "ms/citation", "CPU s", "RSS MiB"], rows))
    p = series["plugin"].median
    f = series["floor (trivial tests)"].median
    nv = series["naive python"].median
    print()
    print(
        table(
            ["ratio", "value", "target", ""],
            [
                [
                    "plugin / floor",
                    ratio(p, f),
                    "<= 1.25",
                    verdict(ratio(p, f), 1.25, at_most=True),
                ],
                [
                    "naive python / plugin",
                    ratio(nv, p),
                    ">= 20",
                    verdict(ratio(nv, p), 20, at_most=False),
                ],
                [
                    "naive shell / plugin",
                    ratio(shell_total, p),
                    ">= 20",
                    verdict(ratio(shell_total, p), 20, at_most=False),
                ],
                [
                    "naive python / library",
                    ratio(nv, series["library (no pytest)"].median),
                    "-",
                    "",
                ],
                [
                    "naive python / library, in-process check only",
                    ratio(median(inner["naive"]), median(inner["library"])),
                    "-",
                    "",
                ],
            ],
        )
    )


if __name__ == "__main__":
    main()
