"""The anchor of real_pr.py: how a reviewer proves a pull request by hand.

The SWE-bench harness's way: a worktree of the base revision, the head's test files copied
into it, all node ids in one ``python -m pytest`` on the base (it must fail) and one on the
head (it must pass). Usage::

    python bench/_two_runs.py REPO BASE_REF --copy tests/ --copy other.py -- NODE [NODE ...]

Exits 0 when the base run failed and the head run passed, 1 otherwise; the worktree is
removed either way.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("base")
    parser.add_argument("--copy", action="append", default=[], help="a path carried onto the base")
    parser.add_argument("nodes", nargs="+")
    args = parser.parse_args()
    repo: Path = args.repo.resolve()
    scratch = Path(tempfile.mkdtemp(prefix="two-runs-"))
    base = scratch / "base"
    try:
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(base), args.base],
            check=True,
        )
        for rel in args.copy:
            source, target = repo / rel, base / rel
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.nodes]
        red = subprocess.run(pytest, cwd=base, stdout=subprocess.DEVNULL).returncode
        green = subprocess.run(pytest, cwd=repo, stdout=subprocess.DEVNULL).returncode
    finally:
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(base)],
            stderr=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"base exit {red}, head exit {green}")
    return 0 if red != 0 and green == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
