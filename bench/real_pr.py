"""Proof of a real pull request: pytest-vgate against a reviewer's two pytest runs.

Each release pair is built from the package index (``pip download`` of the two sdists)
into a git repository: the older release is the base commit, the newer one the head
commit. ``pytest --vgate-init HEAD~1`` writes the gates; then, in alternating rounds:

- **vgate**: ``pytest --vgate gates.yaml --vgate-only --vgate-base HEAD~1`` with default
  settings (coverage evidence, and mutants where the installed plugin has them); its JSON
  report gives the cost of each forked mutant beyond the tests it ran (``seconds`` minus
  ``tests``), printed after the table;
- **proof alone**: the same session with ``--vgate-mutate=off`` (no mutants of the change);
- with ``--batch``: the same session with ``--vgate-batch=auto`` and with ``=off`` (every
  gate alone);
- **two runs** (the anchor, bench/_two_runs.py): a base worktree with the head's test
  files copied in, all node ids in one ``python -m pytest`` there and one on the head.

With ``--scale PAIR`` it also times 1, 5, 20 and 50 gates on one pair (the first N tests
of the pair's changed test file, ``red: not-required``), against the two runs of the same
node ids, to show whether the cost grows like the batch or like the gates. Usage::

    python bench/real_pr.py                      # both pairs, 3 rounds
    python bench/real_pr.py --quick              # one round, toolz only
    python bench/real_pr.py --scale more-itertools --sizes 1 5 20 50
"""

from __future__ import annotations

import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import yaml
from _common import (
    BENCH_DIR,
    Run,
    alternate,
    base_parser,
    clean_env,
    header,
    pytest_argv,
    ratio,
    run_child,
    table,
    workdir,
)

PAIRS = {
    "more-itertools": ("more-itertools", "11.0.2", "11.1.0", "tests/test_more.py"),
    "toolz": ("toolz", "0.12.0", "0.12.1", "toolz/tests/test_itertoolz.py"),
}


def sdist(cache: Path, name: str, version: str) -> Path:
    """The sdist of ``name==version`` in ``cache``, downloaded once."""
    stem = name.replace("-", "_")
    found = sorted(cache.glob(f"{stem}-{version}.tar.gz")) + sorted(
        cache.glob(f"{name}-{version}.tar.gz")
    )
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "-d", str(cache), f"{name}=={version}"],
            check=True,
        )  # fmt: skip
        return sdist(cache, name, version)
    return found[0]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def build_pair(work: Path, cache: Path, pair: str) -> Path:
    """A git repository: the older release committed, then the newer one on top."""
    name, old, new, _ = PAIRS[pair]
    repo = work / pair
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "bench")
    for version in (old, new):
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        with tarfile.open(sdist(cache, name, version)) as tar:
            tar.extractall(work / "unpacked" / version, filter="data")
        (top,) = (work / "unpacked" / version).iterdir()
        shutil.copytree(top, repo, dirs_exist_ok=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"{name} {version}")
    return repo


def nodes_of(gates_file: Path) -> tuple[list[str], list[str]]:
    """The node ids the gates' checks name, and their overlay paths."""
    spec = yaml.safe_load(gates_file.read_text(encoding="utf-8"))
    nodes: list[str] = []
    overlay: set[str] = set()
    for gate in spec.get("gates", []):
        words = shlex.split(gate["check"])
        nodes += [w for w in words[words.index("pytest") + 1 :] if not w.startswith("-")]
        overlay.update(gate.get("overlay", []))
    return nodes, sorted(overlay)


def scaled_gates(repo: Path, test_file: str, size: int) -> str:
    """Gates for the first ``size`` tests of ``test_file`` (regression gates)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         test_file],
        cwd=repo, capture_output=True, text=True, check=False,
    ).stdout.splitlines()  # fmt: skip
    nodes = [line for line in listed if "::" in line][:size]
    lines = ["gates:"]
    for i, node in enumerate(nodes):
        lines += [
            f"  - id: t{i}",
            f"    check: {shlex.join(['python', '-m', 'pytest', '-q', node])!r}",
            "    red: not-required",
            f"    overlay: [{test_file!r}]",
        ]
    return "\n".join(lines) + "\n"


def subjects(
    repo: Path,
    gates: str,
    env: dict[str, str],
    batch: bool = False,
    forks: dict[bool, list[float]] | None = None,
) -> list[tuple[str, Callable[[], Run]]]:
    """The subjects; ``forks`` collects each forked mutant's cost beyond its tests."""
    nodes, overlay = nodes_of(repo / gates)
    report = repo.parent / f"{repo.name}-report.json"

    def default() -> Run:
        report.unlink(missing_ok=True)
        run = vgate(f"--vgate-report={report}")
        found = forks if forks is not None else {}
        for gate in json.loads(report.read_text(encoding="utf-8"))["gates"]:
            for m in (gate.get("discrimination") or {}).get("mutants", []):
                if m.get("how") == "fork":  # outside functions: imported anew, then collected
                    found.setdefault(bool(m["function"]), []).append(m["seconds"] - m["tests"])
        return run

    def vgate(*extra: str) -> Run:
        shutil.rmtree(repo / ".vgate", ignore_errors=True)
        argv = pytest_argv("-p", "no:cacheprovider", "-q", "--vgate", gates, "--vgate-only",
                           "--vgate-base", "HEAD~1", *extra)  # fmt: skip
        return run_child(argv, cwd=repo, env=env).check((0, 1), what="vgate")

    def two_runs() -> Run:
        copies = [arg for path in overlay for arg in ("--copy", path)]
        argv = [sys.executable, str(BENCH_DIR / "_two_runs.py"), str(repo), "HEAD~1", *copies,
                "--", *nodes]  # fmt: skip
        return run_child(argv, cwd=repo, env=env).check((0, 1), what="two runs")

    runs: list[tuple[str, Callable[[], Run]]] = [
        ("vgate", default),
        ("two runs", two_runs),
        ("proof alone", lambda: vgate("--vgate-mutate=off")),
    ]
    if batch:  # the same session with batches on, and with every gate alone
        runs.append(("vgate batch", lambda: vgate("--vgate-batch=auto")))
        runs.append(("vgate solo", lambda: vgate("--vgate-batch=off")))
    return runs


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("--pairs", nargs="*", choices=sorted(PAIRS), help="default: all")
    parser.add_argument("--scale", choices=sorted(PAIRS), help="also time 1..50 gates on it")
    parser.add_argument("--sizes", nargs="*", type=int, default=[1, 5, 20, 50])
    parser.add_argument("--cache", type=Path, help="a folder for the downloaded sdists")
    parser.add_argument(
        "--batch", action="store_true", help="also time vgate with --vgate-batch auto and off"
    )
    args = parser.parse_args()
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    pairs = args.pairs or (["toolz"] if args.quick else sorted(PAIRS))
    header(f"real pull requests: vgate --vgate-base vs a reviewer's two runs, {rounds} rounds")
    env = clean_env(PATH=f"{Path(sys.executable).parent}:{clean_env().get('PATH', '')}")
    rows: list[list[object]] = []
    forks: dict[str, dict[bool, list[float]]] = {}
    with workdir("real-pr", keep=args.keep) as work:
        cache = args.cache or work / "sdists"
        cache.mkdir(exist_ok=True)
        for pair in pairs:
            repo = build_pair(work, cache, pair)
            init = run_child(
                pytest_argv("-p", "no:cacheprovider", "--vgate-init", "HEAD~1",
                            "--vgate-init-out", "gates.yaml"),
                cwd=repo, env=env,
            ).check(what="--vgate-init")  # fmt: skip
            count = len(nodes_of(repo / "gates.yaml")[0])
            print(f"{pair}: {count} gates from --vgate-init ({init.wall:.2f} s)", flush=True)
            runs = subjects(repo, "gates.yaml", env, args.batch, forks.setdefault(pair, {}))
            series = alternate(rounds, runs, verbose=not args.quiet)
            v, a, p = series["vgate"], series["two runs"], series["proof alone"].median
            row: list[object] = [pair, count, v.median, a.median, ratio(v.median, a.median)]
            row += [p, ratio(p, a.median)]
            if args.batch:
                b, o = series["vgate batch"].median, series["vgate solo"].median
                row += [b, ratio(b, a.median), o, ratio(o, a.median)]
            rows.append(row)
        scale: list[tuple[int, float, float, float | None]] = []
        if args.scale:
            repo = work / args.scale
            if not repo.exists():
                repo = build_pair(work, cache, args.scale)
            for size in args.sizes:
                name = f"scale-{size}.yaml"
                (repo / name).write_text(scaled_gates(repo, PAIRS[args.scale][3], size))
                runs = subjects(repo, name, env, args.batch)
                series = alternate(rounds, runs, verbose=not args.quiet)
                batched = series["vgate batch"].median if args.batch else None
                scale.append((size, series["vgate"].median, series["two runs"].median, batched))
    print()
    batch_cols = ["batch s", "batch/two runs"] if args.batch else []
    pair_cols = ["proof alone s", "proof alone/two runs"]
    pair_cols += [*batch_cols, "solo s", "solo/two runs"] if args.batch else []
    print(table(["pair", "gates", "vgate s", "two runs s", "vgate/two runs", *pair_cols], rows))
    for pair, found in forks.items():  # each forked mutant: fork to answer, less its tests
        for inside, costs in sorted(found.items(), reverse=True):
            ms = sorted(1000 * c for c in costs)
            where = "of a function" if inside else "outside functions (import and collection)"
            print(f"{pair}: {len(ms) / rounds:g} forked mutants {where} a session, beyond "
                  f"their tests median {statistics.median(ms):.1f} ms, mean "
                  f"{statistics.mean(ms):.1f} ms, max {ms[-1]:.0f} ms")  # fmt: skip
    if scale:
        print()
        print(table(["gates", "vgate s", "two runs s", "ratio", *batch_cols],
                    [[n, v, a, ratio(v, a), *([b, ratio(b, a)] if b is not None else [])]
                     for n, v, a, b in scale]))  # fmt: skip
        (n0, v0, a0, b0), (n1, v1, a1, b1) = scale[0], scale[-1]
        if n1 > n0:
            slope_v, slope_a = (v1 - v0) / (n1 - n0), (a1 - a0) / (n1 - n0)
            print(f"\nper gate: vgate {slope_v * 1000:.0f} ms, two runs {slope_a * 1000:.0f} ms, "
                  f"ratio of slopes {ratio(slope_v, slope_a):.2f}")  # fmt: skip
            if b0 is not None and b1 is not None:
                slope_b = (b1 - b0) / (n1 - n0)
                print(f"per gate with batches: {slope_b * 1000:.0f} ms, "
                      f"ratio of slopes {ratio(slope_b, slope_a):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
