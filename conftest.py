"""Root conftest: the pytester fixture drives the end-to-end tests in tests/."""

pytest_plugins = ("pytester",)
