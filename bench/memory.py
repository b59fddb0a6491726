"""Memory: one gate whose check writes 1 GiB to stdout; peak RSS of the session.

Subjects, alternating: the 1 GiB gate; a trivial gate (``true``: the session's baseline
RSS); and, as the anchor, a hand-written test doing ``subprocess.run(...,
capture_output=True)`` of the same writer (what unbounded capture costs). Peak RSS is
``ru_maxrss`` from wait4: the largest of the pytest process and each of its reaped
descendants (the writer itself stays small: it writes 1 MiB chunks).

    python bench/memory.py             # 1 GiB, 3 rounds
    python bench/memory.py --quick     # 64 MiB, 1 round
    python bench/memory.py --mib 4096 --no-anchor
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Run,
    alternate,
    base_parser,
    clean_env,
    gates_yaml,
    header,
    pytest_argv,
    run_child,
    table,
    verdict,
    workdir,
)

WRITER = (
    "import sys; line = b'x' * 1023 + b'\\n'; chunk = line * 1024; "
    "w = sys.stdout.buffer.write; [w(chunk) for _ in range({mib})]"
)

HAND = """\
import subprocess
import sys


def test_big_output():
    r = subprocess.run([sys.executable, "-c", {writer!r}], capture_output=True, timeout=600)
    assert r.returncode == 0 and len(r.stdout) == {size}
"""


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("--mib", type=int, default=None, help="MiB written (default 1024)")
    parser.add_argument("--no-anchor", action="store_true", help="skip the hand-written test")
    args = parser.parse_args()
    mib = args.mib or (64 if args.quick else 1024)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"memory: a gate writing {mib} MiB to stdout, {rounds} rounds")
    # The gates resolve `python` on PATH: make it this interpreter.
    env = clean_env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.defpath]))
    writer = WRITER.format(mib=mib)
    with workdir("memory", keep=args.keep) as base:
        big, small, hand = base / "big", base / "small", base / "hand"
        for d in (big, small, hand):
            d.mkdir()
        (big / "gates.yaml").write_text(gates_yaml([f'python -c "{writer}"']))
        (small / "gates.yaml").write_text(gates_yaml(["true"]))
        (hand / "test_hand.py").write_text(HAND.format(writer=writer, size=mib << 20))
        common = ["-p", "no:cacheprovider", "-q"]

        def gate(folder: Path) -> Run:
            argv = pytest_argv("--vgate", "gates.yaml", *common)
            return run_child(argv, cwd=folder, env=env, timeout=900).check(what="gate")

        def handwritten() -> Run:
            argv = pytest_argv("test_hand.py", *common)
            return run_child(argv, cwd=hand, env=env, timeout=900).check(what="hand-written")

        subjects = [
            (f"gate writing {mib} MiB", lambda: gate(big)),
            ("gate `true` (baseline)", lambda: gate(small)),
        ]
        if not args.no_anchor:
            subjects.append((f"hand-written capture {mib} MiB", handwritten))
        series = alternate(rounds, subjects, verbose=not args.quiet)
    rows = [[name, s.median, s.cpu, s.peak_rss] for name, s in series.items()]
    print()
    print(table(["subject", "median s", "CPU s", "peak RSS MiB"], rows))
    peak = series[f"gate writing {mib} MiB"].peak_rss
    base_rss = series["gate `true` (baseline)"].peak_rss
    print()
    print(
        table(
            ["measure", "value", "target", ""],
            [
                ["session peak RSS MiB", peak, "< 150", verdict(peak, 150, at_most=True)],
                ["growth over the baseline MiB", peak - base_rss, "-", ""],
            ],
        )
    )


if __name__ == "__main__":
    main()
