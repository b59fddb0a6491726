"""Build real tool folders for tests: ``.toolchain/bin`` tools, PATH decoys, multi-call tools.

Every tool is a ``/bin/sh`` script that uses only shell builtins (so it runs in an empty
environment), appends its ``$0`` to a marker file when run, and exits with a chosen code.
The marker is the proof that a tool did or did not run.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from pytest_vgate.process.tools import toolchain_bin


@dataclass(frozen=True)
class FakeTool:
    """A tool script on disk and the marker file it appends to on every run."""

    path: Path
    marker: Path

    @property
    def ran(self) -> bool:
        return self.marker.exists()

    @property
    def runs(self) -> list[str]:
        """The ``$0`` of each run, in order (empty when it never ran)."""
        return self.marker.read_text().splitlines() if self.marker.exists() else []


def make_tool(
    directory: Path,
    name: str,
    *,
    exit_code: int = 0,
    stdout: str = "",
    marker: Path | None = None,
    body: str = "",
) -> FakeTool:
    """Write ``directory/name``: records ``$0`` in ``marker``, prints ``stdout``, runs
    ``body`` (shell), exits ``exit_code``. Default marker: ``directory/../<name>.ran``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    marker = marker if marker is not None else directory.parent / f"{name}.ran"
    lines = [
        "#!/bin/sh",
        f"printf '%s\\n' \"$0\" >> {shlex.quote(str(marker))}",
    ]
    if stdout:
        lines.append(f"printf '%s\\n' {shlex.quote(stdout)}")
    if body:
        lines.append(body)
    lines.append(f"exit {int(exit_code)}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return FakeTool(path=path, marker=marker)


def toolchain_tool(
    root: Path, name: str, *, exit_code: int = 0, stdout: str = "", marker: Path | None = None
) -> FakeTool:
    """A tool pinned in ``<root>/.toolchain/bin``; marker ``<root>/.toolchain/<name>.ran``."""
    return make_tool(toolchain_bin(root), name, exit_code=exit_code, stdout=stdout, marker=marker)


def path_decoy(
    folder: Path, name: str, *, exit_code: int = 1, stdout: str = "", marker: Path | None = None
) -> FakeTool:
    """A same-named tool in a PATH folder; by default it fails, so running it shows."""
    return make_tool(folder, name, exit_code=exit_code, stdout=stdout, marker=marker)


def multicall_tool(directory: Path, name: str, links: list[str]) -> tuple[Path, list[Path]]:
    """A busybox-style tool that prints the basename it was started as, plus relative
    symlinks to it named ``links`` in the same folder."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    target.write_text("#!/bin/sh\nprintf '%s\\n' \"${0##*/}\"\n")
    target.chmod(0o755)
    made = []
    for link in links:
        (directory / link).symlink_to(name)
        made.append(directory / link)
    return target, made


def path_env(*folders: Path, base: str | None = None) -> str:
    """A PATH string: ``folders`` first, then ``base`` (e.g. the caller's PATH)."""
    parts = [str(f) for f in folders]
    if base:
        parts.append(base)
    return os.pathsep.join(parts)


def append_byte(path: Path, data: bytes = b"\n") -> None:
    """Tamper in place: same inode, one byte longer."""
    with open(path, "ab") as fh:
        fh.write(data)


def replace_same_size(path: Path) -> None:
    """Tamper by replacement: a new inode with bytes of the same length, same mode."""
    old = path.read_bytes()
    new = old[:-1] + (b" " if old[-1:] != b" " else b"\n")  # still a valid script
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(new)
    tmp.chmod(path.stat().st_mode & 0o7777)
    os.replace(tmp, path)
