"""What must be taken the moment pytest loads the plugin, before any conftest runs."""

from __future__ import annotations

import os

# The tools of the session are found on this PATH, whatever a conftest later prepends
# (a shim that exits 0).
STARTING_PATH = os.environ.get("PATH")
