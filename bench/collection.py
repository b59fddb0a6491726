"""Collection of a gates file with 10,000 gates: wall time and peak RSS.

``pytest --vgate gates.yaml --collect-only -q`` against the anchor, pytest collecting
10,000 parametrized trivial tests (its own per-item collection cost). Peak RSS is the
child's ``ru_maxrss`` (the pytest process; it starts no checks when only collecting).
Gates files are read by libyaml alone (docs/performance.md: "libyaml alone").

    python bench/collection.py            # 10,000 gates, 3 rounds
    python bench/collection.py --quick    # 1,000 gates, 1 round
"""

from __future__ import annotations

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
    ratio,
    run_child,
    table,
    verdict,
    workdir,
)

ANCHOR = """\
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_item(i):
    pass
"""


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("-n", type=int, default=None, help="gates (default 10000)")
    args = parser.parse_args()
    n = args.n or (1000 if args.quick else 10_000)
    rounds = 1 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"collection: {n} gates, --collect-only, {rounds} rounds")
    env = clean_env()
    with workdir("collection", keep=args.keep) as base:
        gdir, adir = base / "gates", base / "anchor"
        gdir.mkdir()
        adir.mkdir()
        checks = [f"python -c 'raise SystemExit({i % 3})'" for i in range(n)]
        (gdir / "gates.yaml").write_text(
            gates_yaml(checks, extra="claim: the check exits as expected")
        )
        (adir / "test_anchor.py").write_text(ANCHOR.format(n=n))
        common = ["--collect-only", "-q", "-p", "no:cacheprovider"]

        def plugin() -> Run:
            argv = pytest_argv("--vgate", "gates.yaml", *common)
            return run_child(argv, cwd=gdir, env=env).check(what="plugin")

        def anchor() -> Run:
            argv = pytest_argv("test_anchor.py", *common)
            return run_child(argv, cwd=adir, env=env).check(what="anchor")

        series = alternate(
            rounds, [("plugin", plugin), ("parametrized tests", anchor)], verbose=not args.quiet
        )
        size = (gdir / "gates.yaml").stat().st_size
    rows = [[name, s.median, s.spread, s.cpu, s.peak_rss] for name, s in series.items()]
    print()
    print(f"gates.yaml: {size / 1024:.0f} KiB")
    print(table(["subject", "median s", "min-max s", "CPU s", "peak RSS MiB"], rows))
    p = series["plugin"]
    anchor_s = series["parametrized tests"]
    print()
    print(
        table(
            ["measure", "value", "target", ""],
            [
                ["plugin collect s", p.median, "< 3 s", verdict(p.median, 3.0, at_most=True)],
                [
                    "plugin peak RSS MiB",
                    p.peak_rss,
                    "< 200",
                    verdict(p.peak_rss, 200, at_most=True),
                ],
                [
                    "plugin / parametrized",
                    ratio(p.median, anchor_s.median),
                    "<= 1.10",
                    verdict(ratio(p.median, anchor_s.median), 1.10, at_most=True),
                ],
                ["plugin / parametrized (CPU)", ratio(p.cpu, anchor_s.cpu), "-", ""],
            ],
        )
    )


if __name__ == "__main__":
    main()
