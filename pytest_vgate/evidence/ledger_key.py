"""The per-user key that authenticates ledger records (HMAC-SHA256).

A ledger lives in the repository's folder, where anyone who can write a file can write
a line naming real commits. A record is evidence only with a MAC made by this user's
key, kept outside every repository: ``$PYTEST_VGATE_KEY_DIR`` when set (tests point it
at a temp folder), else ``$XDG_CONFIG_HOME/pytest-vgate/``, else
``~/.config/pytest-vgate/``; the file ``ledger.key`` is created mode 0600 (its folder
0700). A process with the user's rights can read it: CI proves with ``--vgate-base``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KEY_DIR_ENV = "PYTEST_VGATE_KEY_DIR"
KEY_FILENAME = "ledger.key"
MAC_FIELD = "mac"


def key_dir() -> Path:
    given = os.environ.get(KEY_DIR_ENV)
    if given:
        return Path(given)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "pytest-vgate"


def ledger_key() -> bytes:
    """This user's key, created on first use; raises OSError when it cannot be had."""
    path = key_dir() / KEY_FILENAME
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another session made it first
        return _read(path)
    try:
        os.write(fd, secrets.token_hex(32).encode("ascii") + b"\n")
    finally:
        os.close(fd)
    return _read(path)


def _read(path: Path) -> bytes:
    key = path.read_bytes().strip()
    if len(key) < 32:
        raise OSError(f"the ledger key {path} is too short; remove it to make a new one")
    return key


def record_mac(key: bytes, record: Mapping[str, Any]) -> str:
    """The MAC of a record's JSON object (every field but the MAC, canonically)."""
    body = {k: v for k, v in record.items() if k != MAC_FIELD}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def verifies(key: bytes, record: Mapping[str, Any]) -> bool:
    mac = record.get(MAC_FIELD)
    return isinstance(mac, str) and hmac.compare_digest(mac, record_mac(key, record))
