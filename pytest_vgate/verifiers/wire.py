"""Messages between the pytest process and the verifier processes: length-prefixed JSON.

JSON, never pickle: a verifier process runs untrusted code, and unpickling what it sends
would let it run code in the pytest process (and rewrite the record of its tool runs).
The reading side of the pytest process is incremental (:class:`FrameReader`), so a
verifier that sends half a frame and stops cannot block it past a deadline.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any

HEADER = struct.Struct("!I")
MAX_FRAME = 64 << 20  # bytes; a larger frame is a protocol violation
MAX_FDS = 4


class WireError(Exception):
    """A malformed frame: too large, not JSON, not an object."""


def encode(message: Mapping[str, object]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return HEADER.pack(len(body)) + body


def _decode(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise WireError(f"not a JSON message: {exc}") from None
    if not isinstance(message, dict):
        raise WireError(f"not a JSON object: {type(message).__name__}")
    return message


class FrameReader:
    """Collects bytes and hands out the complete messages they hold."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME:
                raise WireError(f"a message of {size} bytes (at most {MAX_FRAME})")
            end = HEADER.size + size
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            messages.append(_decode(body))
        return messages


def send(sock: socket.socket, message: Mapping[str, object], fds: Sequence[int] = ()) -> None:
    """Send one message (blocking), with ``fds`` attached (and counted in ``nfds``)."""
    data = encode({**message, "nfds": len(fds)} if fds else message)
    if fds:
        sent = socket.send_fds(sock, [data], list(fds))
        data = data[sent:]
    if data:
        sock.sendall(data)


def send_by(sock: socket.socket, message: Mapping[str, object], deadline: float) -> bool:
    """Send on a non-blocking socket until ``deadline`` (``time.monotonic()``); False when
    the peer stopped reading or went away."""
    view = memoryview(encode(message))
    while view:
        try:
            view = view[sock.send(view) :]
        except BlockingIOError:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            select.select([], [sock], [], remaining)
        except OSError:
            return False
    return True


class Inbox:
    """The blocking, buffered reading end of a zygote's control socket or a child's call
    socket: whole messages in order. A message that carries descriptors says how many
    (``nfds``, set by :func:`send`); it takes them, in order, from those that arrived so far."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._reader = FrameReader()
        self._pending: list[dict[str, Any]] = []
        self._fds: list[int] = []

    def recv(self) -> tuple[dict[str, Any] | None, list[int]]:
        while not self._pending:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.sock, 1 << 16, MAX_FDS)
            except ConnectionResetError:  # the peer died with our messages unread
                return None, []
            self._fds.extend(fds)
            if not data:
                return None, []
            self._pending.extend(self._reader.feed(data))
        message = self._pending.pop(0)
        wanted = message.get("nfds", 0)
        count = wanted if isinstance(wanted, int) and 0 < wanted <= MAX_FDS else 0
        taken, self._fds = self._fds[:count], self._fds[count:]
        return message, taken
