"""Helpers shared by the test suite (on pytest's pythonpath)."""
