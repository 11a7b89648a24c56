"""Fixtures for the whole suite: the ``backend`` fixture runs each test on each backend."""

pytest_plugins = ["support.backends"]
