"""Tool recheck: ``ToolInventory.verify()`` with an unchanged stat vs a full re-hash.

``verify()`` runs before every execution of a tool. With the file's stat identity
unchanged (and not racily recent) it is one ``stat``; otherwise the bytes are hashed
again. This measures both on this interpreter's binary (or ``--tool PATH``), in process,
alternating the two methods over several rounds.

    python bench/tool_recheck.py
    python bench/tool_recheck.py --quick
    python bench/tool_recheck.py --tool /usr/bin/git
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from _common import base_parser, header, median, ratio, table

from pytest_vgate.process.tools import ToolInventory, resolve_tool


def per_call(fn: object, number: int) -> float:
    assert callable(fn)
    started = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - started) / number


def default_tools() -> list[str]:
    """Tools of different sizes: ruff (a big static binary), git, this interpreter."""
    found = [
        shutil.which("ruff", path=str(Path(sys.executable).parent)),
        shutil.which("git"),
        sys.executable,
    ]
    return list(dict.fromkeys(os.path.realpath(t) for t in found if t))


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=7)
    parser.add_argument("--tool", action="append", help="a file to check (repeatable)")
    parser.add_argument("--calls", type=int, default=None, help="verify() calls per round")
    args = parser.parse_args()
    rounds = 2 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    calls = args.calls or (1000 if args.quick else 20_000)
    rehash_calls = 3 if args.quick else 20
    tools = args.tool or default_tools()
    header(f"tool recheck: verify() vs re-hash, {rounds} rounds")
    root = Path(tempfile.mkdtemp(prefix="vgate-bench-tools-"))
    rows = []
    for tool in tools:
        size = os.path.getsize(tool)
        inventory = ToolInventory.build([tool], root=root, path_env=None)
        if not inventory.verify(tool).ok:
            raise SystemExit(f"cannot verify {tool}: {inventory.verify(tool).message}")
        before = inventory.hash_count
        stat_times: list[float] = []
        hash_times: list[float] = []
        for r in range(rounds):
            stat_times.append(per_call(lambda t=tool, i=inventory: i.verify(t), calls))
            hash_times.append(
                per_call(lambda t=tool: resolve_tool(t, root=root, path_env=None), rehash_calls)
            )
            if not args.quiet:
                print(
                    f"  round {r + 1}/{rounds} {os.path.basename(tool):<12} verify "
                    f"{stat_times[-1] * 1e6:8.1f} us  re-hash {hash_times[-1] * 1e3:8.2f} ms",
                    flush=True,
                )
        s, h = median(stat_times), median(hash_times)
        rehashed = inventory.hash_count - before
        rows.append(
            [
                tool,
                f"{size / 1e6:.1f}",
                f"{s * 1e6:.1f}",
                f"{h * 1e3:.2f}",
                f"{ratio(h, s):.0f}x",
                rehashed,
            ]
        )
    root.rmdir()
    print()
    headers = ["tool", "MB", "verify() us", "re-hash ms", "re-hash/verify", "re-hashes by verify()"]
    print(table(headers, rows))
    print("(verify() with the stat unchanged should never re-hash: the last column is 0)")


if __name__ == "__main__":
    main()
