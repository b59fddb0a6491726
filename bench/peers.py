"""Isolated Python checks: our verifiers against the peers that isolate tests.

The same N trivial checks four ways, alternating round by round: our ``@verifier``
functions (a fresh process per call) and the same functions as plain tests, in this
venv; and, in a venv of their own with a pytest they support (pytest-isolate and
pytest-forked fail every test on pytest 9), plain tests, ``--forked`` (pytest-forked) and
``--isolate`` (pytest-isolate). Each side's per-test overhead is measured against the
plain tests of its own venv, so the two pytest versions' own costs cancel out.

The peers' venv is made by this script when missing (``--peers-venv``, default under the
temp directory; it is never part of the repository) with ``pip install`` of the pinned
versions below, so the whole comparison is one command.

    python bench/peers.py                # N = 200, 3 rounds
    python bench/peers.py --quick        # N = 40, 1 round
    python bench/peers.py -n 500 --rounds 5
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
    Series,
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

PEERS = ("pytest==8.3.5", "pytest-forked==1.7.5", "pytest-isolate==0.0.17")
DEFAULT_VENV = Path(tempfile.gettempdir()) / "vgate-bench-peers-venv"

VERIFIER = """
@verifier
def check_{i}():
    return True
"""

PLAIN = """
def test_check_{i}():
    assert _check() is True
"""


def peers_python(venv: Path) -> Path:
    """The peers' venv's interpreter; made (and the pinned peers installed) if missing."""
    python = venv / "bin" / "python"
    stamp = venv / "vgate-bench-peers.txt"
    if python.exists() and stamp.exists() and stamp.read_text().split() == list(PEERS):
        return python
    print(f"(making the peers' venv {venv}: {' '.join(PEERS)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PEERS],
        check=True,
    )
    stamp.write_text("\n".join(PEERS) + "\n")
    return python


def versions(python: Path) -> str:
    code = (
        "import importlib.metadata as m;"
        "print(', '.join(f'{d} {m.version(d)}' for d in "
        "('pytest', 'pytest-forked', 'pytest-isolate')))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("-n", type=int, default=None, help="checks per run (default 200)")
    parser.add_argument(
        "--peers-venv", type=Path, default=DEFAULT_VENV, help=f"default {DEFAULT_VENV}"
    )
    args = parser.parse_args()
    n = args.n or (40 if args.quick else 200)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    peer = peers_python(args.peers_venv)
    header(f"peers: {n} isolated trivial checks, ours vs pytest-forked/isolate, {rounds} rounds")
    print(f"peers' venv: {peer.parent.parent} ({versions(peer)})")
    env = clean_env()
    common = ["-p", "no:cacheprovider", "-q"]
    with workdir("peers", keep=args.keep) as base:
        vdir, pdir = base / "verifiers", base / "plain"
        vdir.mkdir()
        pdir.mkdir()
        head = "from pytest_vgate import verifier\n"
        (vdir / "test_verifiers.py").write_text(
            head + "".join(VERIFIER.format(i=i) for i in range(n))
        )
        plain = "def _check():\n    return True\n"
        (pdir / "test_plain.py").write_text(plain + "".join(PLAIN.format(i=i) for i in range(n)))

        def ours(folder: Path, test: str, what: str) -> Run:
            argv = pytest_argv(test, *common)
            return run_child(argv, cwd=folder, env=env).check(what=what)

        def theirs(*flags: str) -> Run:
            argv = [str(peer), "-m", "pytest", "test_plain.py", *common, *flags]
            run = run_child(argv, cwd=pdir, env=env).check(what=f"peers {flags}")
            if f"{n} passed" not in run.output:
                raise SystemExit(f"peers {flags}: not {n} passed:\n{run.output}")
            return run

        subjects = [
            ("vgate verifiers", lambda: ours(vdir, "test_verifiers.py", "verifiers")),
            ("plain tests (ours)", lambda: ours(pdir, "test_plain.py", "plain tests")),
            ("pytest-forked --forked", lambda: theirs("--forked")),
            ("pytest-isolate --isolate", lambda: theirs("--isolate")),
            ("plain tests (peers' venv)", lambda: theirs()),
        ]
        series: dict[str, Series] = alternate(rounds, subjects, verbose=not args.quiet)

    anchor = {
        "vgate verifiers": "plain tests (ours)",
        "pytest-forked --forked": "plain tests (peers' venv)",
        "pytest-isolate --isolate": "plain tests (peers' venv)",
    }
    rows = []
    for name, s in series.items():
        base_s = series[anchor[name]] if name in anchor else None
        over = (s.median - base_s.median) / n * 1000 if base_s else float("nan")
        cpu_over = (s.cpu - base_s.cpu) / n * 1000 if base_s else float("nan")
        rel = ratio(s.median, base_s.median) if base_s else float("nan")
        rows.append(
            [name, s.median, s.spread, s.median / n * 1000, over, cpu_over, rel, s.peak_rss]
        )
    print()
    headers = ["subject", "median s", "min-max s", "ms/item", "overhead ms/item",
               "CPU overhead ms/item", "vs own plain", "RSS MiB"]  # fmt: skip
    print(table(headers, rows))


if __name__ == "__main__":
    main()
