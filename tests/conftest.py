"""Fixtures for the whole suite: ``backend`` (each test on each backend), ``archive``, and
``double`` (the workflow test double)."""

pytest_plugins = ["support.backends", "support.workflow_fixtures"]
