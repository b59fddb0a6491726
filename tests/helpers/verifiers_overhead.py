"""Per-call time of a process-isolated verifier, called as a library (docs/verifiers.md).

Run: ``python tests/helpers/verifiers_overhead.py [calls]``. A trivial verifier module is
called ``calls`` times after one warm-up call (which starts the zygotes); the median and
the fastest call are printed. bench/verifiers.py measures the same inside pytest.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path


def measure(calls: int) -> None:
    from pytest_vgate.verifiers import VerifierCall, VerifierTarget, call_verifier

    folder = Path(tempfile.mkdtemp(prefix="vgate-bench-"))
    (folder / "bench_checks.py").write_text("def ok(ctx):\n    return True\n")
    target = VerifierTarget("bench_checks", "ok")
    times = []
    for _ in range(calls + 1):
        start = time.perf_counter()
        result = call_verifier(
            target, VerifierCall(root=folder, timeout=60, sys_path=(str(folder),))
        )
        times.append(time.perf_counter() - start)
        assert result.ok, result.detail
    first, rest = times[0], times[1:]
    print(
        f"first call (zygotes start) {first * 1000:.1f} ms; "
        f"then median {statistics.median(rest) * 1000:.2f} ms, fastest {min(rest) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    measure(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
