"""Per-call overhead of a process-isolated verifier, forkserver vs spawn (docs/verifiers.md).

Run: ``python tests/helpers/verifiers_overhead.py [calls]``. Each start method is measured
in a fresh interpreter (a forkserver is per process), with a trivial verifier module.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def measure(method: str, calls: int) -> None:
    from pytest_vgate.verifiers import VerifierTarget, call_verifier, isolation

    isolation.START_METHOD = method
    folder = Path(tempfile.mkdtemp(prefix="vgate-bench-"))
    (folder / "bench_checks.py").write_text("def ok(ctx):\n    return True\n")
    target = VerifierTarget("bench_checks", "ok")
    times = []
    for _ in range(calls + 1):
        start = time.perf_counter()
        result = call_verifier(target, root=folder, timeout=60)
        times.append(time.perf_counter() - start)
        assert result.ok, result.detail
    first, rest = times[0], times[1:]
    print(
        f"{method:10} first call {first * 1000:7.1f} ms, then median "
        f"{statistics.median(rest) * 1000:6.1f} ms, p90 "
        f"{sorted(rest)[int(len(rest) * 0.9)] * 1000:6.1f} ms over {len(rest)} calls"
    )


if __name__ == "__main__":
    if len(sys.argv) > 2:
        measure(sys.argv[2], int(sys.argv[1]))
    else:
        calls = sys.argv[1] if len(sys.argv) > 1 else "50"
        for method in ("forkserver", "spawn"):
            os.system(f"{sys.executable} {__file__} {calls} {method}")  # fresh interpreter each
