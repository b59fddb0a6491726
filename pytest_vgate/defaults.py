"""Values of the public contract that several layers share, and nothing else.

Standard library only and no imports at all: the pytest entry point reads these while
every pytest run of every user loads the plugin, so this module must stay free.
"""

from __future__ import annotations

DEFAULT_TIMEOUT = 60.0  # seconds per check when neither the gate nor an option says
MAX_TIMEOUT = 86400.0  # one day; larger deadlines overflow some wait primitives
ISOLATION_CHOICES = ("auto", "strict", "off")  # --vgate-isolation
DEFAULT_ISOLATION = "auto"
COVERAGE_CHOICES = ("auto", "on", "off")  # --vgate-coverage
MUTATE_CHOICES = ("auto", "on", "off")  # --vgate-mutate
BATCH_CHOICES = ("auto", "off")  # --vgate-batch
DEFAULT_BATCH = "auto"  # --vgate-batch
DEFAULT_MUTANTS = 8  # --vgate-mutants: mutants planted per gate
NESTED_ENV = "PYTEST_VGATE_NESTED"  # set in every check's environment
MARKER = "vgate"  # the pytest marker of every vgate item (and of tests tagged with a mode)
