"""The log of the long-running commands (``serve``, ``sync``): one handler on standard
error, text or JSON lines (``ARCHIVE_LOG_FORMAT``), a level for everything
(``ARCHIVE_LOG_LEVEL``) and levels per component (``ARCHIVE_LOG_LEVELS``), uvicorn's loggers
(``uvicorn.error``, and ``uvicorn.access``: a line per request unless ``ARCHIVE_ACCESS_LOG``
is false) flowing into the same handler. Set up again, it replaces what it set up before."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import IO, Any

from imixs_archive.config import Settings

_MARK = "_imixs_archive_handler"


class JsonLines(logging.Formatter):
    """A record as one JSON object: time (UTC, ISO 8601), level, logger, message, and the
    exception when there is one. An access log record also says client, method, path and
    status as fields of their own."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            client, method, path, version, status = args
            data.update(client=client, method=method, path=path, http=version, status=status)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class StandardError(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler on standard error as it is when a record is written, not as it was when
    the log was set up: a thread that logs after ``sys.stderr`` was replaced (and the old
    one closed: a test's capture, an embedding program) writes to the new one, instead of
    failing with "--- Logging error ---" wherever standard error then points."""

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, _value: IO[str]) -> None:
        pass  # always the current sys.stderr


def setup_logging(settings: Settings, stream: IO[str] | None = None) -> None:
    """The log as the settings describe it, on ``stream`` (standard error)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _MARK, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream) if stream is not None else StandardError()
    setattr(handler, _MARK, True)
    handler.setFormatter(JsonLines() if settings.log_format == "json" else logging.Formatter(TEXT))
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    for part in filter(None, (p.strip() for p in settings.log_levels.split(","))):
        name, _sep, level = part.partition("=")
        logging.getLogger(name.strip()).setLevel(level.strip().upper())
