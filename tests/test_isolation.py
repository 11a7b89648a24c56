"""What one test sets up for the process does not outlive it (``tests/conftest.py``,
``tests/support/loose_threads.py``). The two tests run in this order, on one worker."""

from __future__ import annotations

import logging

import pytest

from imixs_archive.config import load_settings
from imixs_archive.logs import setup_logging


def test_a_command_sets_up_the_log_for_the_process() -> None:
    setup_logging(load_settings({}))  # as `serve` and `sync` do, run in-process
    assert logging.getLogger().level == logging.INFO


def test_the_next_test_does_not_get_its_log(capsys: pytest.CaptureFixture[str]) -> None:
    """A loop of a server the worker still runs, logging while a CLI test counts the lines
    of its standard error, wrote one more there (a CI failure)."""
    logging.getLogger("imixs_archive.ledger.schedule").warning("ledger: 3 entries logged")
    assert capsys.readouterr().err == ""
