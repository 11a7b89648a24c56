"""Summaries as JSON, written once: a dataclass that says what it did (a collection, a job,
a hold, the store's totals ...) answers its fields as JSON, private ones (``_``) and those
named in ``JSON_SKIP`` left out, the properties named in ``JSON_EXTRA`` added; times as ISO
8601 to the second, days ISO, enumerations by value, nested summaries, lists and maps
alike. A class whose answer is more than its fields keeps a ``to_json`` of its own."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import fields, is_dataclass
from typing import Any, ClassVar


class Jsonable:
    """The mixin of a dataclass summary: ``to_json``."""

    JSON_SKIP: ClassVar[tuple[str, ...]] = ()
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        assert is_dataclass(self)
        names = [
            f.name
            for f in fields(self)
            if not f.name.startswith("_") and f.name not in self.JSON_SKIP
        ]
        return {name: json_value(getattr(self, name)) for name in (*names, *self.JSON_EXTRA)}


def json_value(value: Any) -> Any:
    """A value of a summary as JSON data."""
    if isinstance(value, Jsonable):
        return value.to_json()
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_value(item) for item in value]
    return value
