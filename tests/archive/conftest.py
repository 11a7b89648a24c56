"""Fixtures for the archive tests: an archive on each backend."""

from __future__ import annotations

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend


@pytest.fixture
def archive(backend: Backend) -> Archive:
    return Archive(backend)
