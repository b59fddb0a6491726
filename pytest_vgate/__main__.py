"""``python -m pytest_vgate merge REPORT...`` (docs/scaling.md)."""

from __future__ import annotations

import sys

USAGE = "usage: python -m pytest_vgate merge REPORT... [options]  (merge --help for the options)"


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "merge":
        print(USAGE, file=sys.stderr)
        return 4
    from pytest_vgate.plugin.merge import main as merge

    return merge(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
