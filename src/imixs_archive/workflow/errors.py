"""Errors of the workflow REST client, part of the project's one error hierarchy.

``WorkflowUnavailableError`` means: the workflow (or the way to it) is down, slow or
answered 5xx. Callers pause and retry; they never drop work because of it.
"""

from __future__ import annotations

from imixs_archive.errors import ArchiveError


class WorkflowError(ArchiveError):
    """The workflow answered something this client cannot use (a 4xx, an unexpected body)."""

    exit_code = 7

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class WorkflowUnavailableError(WorkflowError):
    """No usable answer: connection refused or reset, timeout, or a 5xx status.

    ``down`` is True when no connection could be made at all (the whole workflow is
    unreachable, not just one request that failed)."""

    def __init__(self, message: str, status: int | None = None, *, down: bool = False) -> None:
        super().__init__(message, status)
        self.down = down


class WorkflowAuthError(WorkflowError):
    """The workflow refused the credentials (401/403 after a fresh login)."""


class WorkflowRejectedError(WorkflowError):
    """The workflow refused the input (``POST /snapshot``: 406 with ``$error_code``)."""

    def __init__(self, message: str, status: int, error_code: str = "") -> None:
        super().__init__(message, status)
        self.error_code = error_code
