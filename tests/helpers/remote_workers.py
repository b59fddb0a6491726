"""Real execnet socket servers on loopback, each serving one xdist worker (docs/scaling.md).

Started with execnet's own ``script/socketserver.py`` as a subprocess bound to
127.0.0.1 only, on a port the OS picked free a moment before; stopped (killed and
reaped) by the context manager. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import execnet

SERVER = Path(execnet.__file__).parent / "script" / "socketserver.py"
LOOPBACK = "127.0.0.1"
START_BOUND = 60.0  # seconds a server may take to listen on a loaded machine


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def socket_servers(count: int, env: Mapping[str, str], log_dir: Path) -> Iterator[list[int]]:
    """``count`` socket servers on loopback; yields their ports.

    Not probed by connecting: the server would execute what a connection sends; its
    log shows when it is listening instead.
    """
    procs: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for index in range(count):
            port = free_port()
            log = (log_dir / f"socketserver-{index}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-u", str(SERVER), f"{LOOPBACK}:{port}"],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=dict(env),
                    cwd=log_dir,
                )
            )
            log.close()
            ports.append(port)
        deadline = time.monotonic() + START_BOUND
        for index, proc in enumerate(procs):
            logfile = log_dir / f"socketserver-{index}.log"
            while b"Entering Accept loop" not in logfile.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"socket server did not start: {logfile.read_text()}")
                time.sleep(0.05)
        yield ports
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)


__all__ = ["LOOPBACK", "free_port", "socket_servers"]
