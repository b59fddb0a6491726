"""The cost of loading the plugin in a session that does not use it.

Every pytest run of every user who installed pytest-vgate imports its entry point. This
runs ``python -X importtime -c "import pytest; import <module>"`` in fresh interpreters
(pytest imported first, so its own cost is not counted) and sums the *self* times of the
plugin's own modules: what loading the plugin adds. Anchors, measured the same way in the
same rounds: pytest-timeout's module and pytest-xdist's entry point (when installed).
A run of ``pytest --version``-like startup is not timed: importtime isolates our share.

    python bench/entry_cost.py
    python bench/entry_cost.py --rounds 30
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import base_parser, header, median, table, verdict

SUBJECTS = {
    "pytest-vgate (pytest_vgate.plugin)": ("pytest_vgate.plugin", "pytest_vgate"),
    "pytest-timeout (pytest_timeout)": ("pytest_timeout", "pytest_timeout"),
    "pytest-xdist (xdist.plugin)": ("xdist.plugin", "xdist"),
}
GOAL_MS = 5.0


def own_import_ms(module: str, prefix: str) -> tuple[float, list[str]]:
    """Milliseconds of self import time of ``prefix`` modules, and their names."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import pytest; import {module}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stderr
    total, names = 0, []
    for line in out.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue  # the header line
        name = fields[2].strip()
        if name == prefix or name.startswith(prefix + "."):
            total += int(fields[0])
            names.append(name)
    return total / 1000, names


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], rounds=15)
    args = parser.parse_args()
    rounds = 3 if args.quick and args.rounds == parser.get_default("rounds") else args.rounds
    header(f"entry point import cost, {rounds} rounds")
    subjects = {
        label: spec
        for label, spec in SUBJECTS.items()
        if importlib.util.find_spec(spec[0].split(".")[0]) is not None
    }
    times: dict[str, list[float]] = {label: [] for label in subjects}
    modules: dict[str, list[str]] = {}
    for r in range(rounds):
        labels = list(subjects)
        labels = labels[r % len(labels) :] + labels[: r % len(labels)]
        for label in labels:
            ms, names = own_import_ms(*subjects[label])
            times[label].append(ms)
            modules[label] = names
            if not args.quiet:
                print(f"  round {r + 1}/{rounds} {label:<38} {ms:7.2f} ms", flush=True)
    rows = [
        [label, median(times[label]), min(times[label]), len(modules[label])] for label in subjects
    ]
    print(table(["entry point", "median ms (own modules)", "min ms", "modules"], rows))
    ours = median(times[next(iter(subjects))])
    print(f"pytest-vgate's modules loaded: {', '.join(modules[next(iter(subjects))])}")
    print(f"goal <= {GOAL_MS:g} ms: {verdict(ours, GOAL_MS, at_most=True)}")


if __name__ == "__main__":
    main()
