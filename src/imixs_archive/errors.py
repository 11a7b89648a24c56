"""One error hierarchy for the whole project.

Every error a user can meet is an ``ArchiveError`` with a message meant for people and an
exit code. The CLI maps them once to exit codes (``cli/__init__.py``), the web app once to
problem responses (``web/problems.py``); nothing else prints tracebacks.
"""

from __future__ import annotations


class ArchiveError(Exception):
    """Base of every error this project reports to a user."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(ArchiveError):
    """A setting is missing or has a value that cannot be used."""

    exit_code = 2


class DocumentError(ArchiveError):
    """Input that is not a valid Imixs document (malformed, wrong type, not an Imixs document).

    ``where`` names the place: ``line 3, column 7`` or ``item 'txtname'``.
    """

    exit_code = 3

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(f"{message} ({where})" if where else message)
        self.reason = message
        self.where = where


class HostileInputError(DocumentError):
    """Input that tries to attack the parser: DTDs, entities, excessive nesting or sizes."""


class NotFoundError(ArchiveError):
    """A snapshot, file or piece that the archive does not hold."""

    exit_code = 4


class IntegrityError(ArchiveError):
    """Stored data that does not match its hashes or references."""

    exit_code = 5


class DamagedRowError(IntegrityError):
    """A row the store gave back that cannot be one of its table (a NULL key, a date that
    is none): what a damaged page of the embedded store's file gives back."""


class StoreError(ArchiveError):
    """The store cannot be reached or refused an operation."""

    exit_code = 6


class StoreUnavailableError(StoreError):
    """The store is (temporarily) unreachable: callers pause and retry rather than drop work."""


class TargetUnavailableError(ArchiveError):
    """A backup target (the FTPS server) that cannot be reached or refuses the session:
    the work stops at the first such failure rather than failing every item alike."""

    exit_code = 6


class BusyError(ArchiveError):
    """Another process does this now (a part of a verify, a job): try again later."""

    exit_code = 75


class ConflictError(ArchiveError):
    """What was confirmed is not what would be done now (a restore plan that changed since
    it was shown): nothing was done (the web app answers 409 Conflict)."""

    exit_code = 9


class LegalHoldError(ArchiveError):
    """A deletion refused because the process instance is under legal hold: nothing was
    changed (the web app answers 409 Conflict). ``why`` names the hold."""

    exit_code = 8

    def __init__(self, snapshot_id: str, why: str) -> None:
        super().__init__(f"{snapshot_id}: not deleted: {why}")
        self.why = why
