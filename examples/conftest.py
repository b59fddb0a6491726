"""The example judge joins every session run in this folder (see rubric_judge.py)."""

pytest_plugins = ["rubric_judge"]
