"""Measure specs the measurement tests share."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pytest_vgate.process.measure import MeasureSpec


def include_for(folders: Sequence[Path | str]) -> MeasureSpec:
    """A spec recording files below each folder (real paths, duplicates dropped)."""
    found = dict.fromkeys(os.path.join(os.path.realpath(f), "*") for f in folders)
    return MeasureSpec(tuple(found))
