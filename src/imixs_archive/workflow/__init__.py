"""The Imixs-Workflow REST client (section 4 of the reference): event log, documents,
the syncpoint feed and ``POST /snapshot``, with every authentication method."""

from imixs_archive.workflow.auth import Credentials, make_auth
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import (
    WorkflowAuthError,
    WorkflowError,
    WorkflowRejectedError,
    WorkflowUnavailableError,
)
from imixs_archive.workflow.events import SYNC_TOPICS, TOPIC_ADD, TOPIC_REMOVE, Event

__all__ = [
    "SYNC_TOPICS",
    "TOPIC_ADD",
    "TOPIC_REMOVE",
    "Credentials",
    "Event",
    "WorkflowAuthError",
    "WorkflowClient",
    "WorkflowError",
    "WorkflowRejectedError",
    "WorkflowUnavailableError",
    "make_auth",
]
