"""``python -m pytest_vgate merge REPORT...`` (docs/scaling.md) and
``python -m pytest_vgate verify REPORT`` (docs/ci.md)."""

from __future__ import annotations

import sys

USAGE = (
    "usage: python -m pytest_vgate merge REPORT... [options]  (merge --help for the options)\n"
    "       python -m pytest_vgate verify REPORT"
)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "merge":
        from pytest_vgate.plugin.merge import main as merge

        return merge(argv[1:])
    if argv and argv[0] == "verify":
        from pytest_vgate.exporters.verify import main as verify

        return verify(argv[1:])
    print(USAGE, file=sys.stderr)
    return 4


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
