"""Summaries as JSON, written once: a dataclass that says what it did (a collection, a job,
a hold, the store's totals ...) answers its fields as JSON, private ones (``_``) and those
named in ``JSON_SKIP`` left out, the properties named in ``JSON_EXTRA`` added, keys renamed
by ``JSON_NAMES``, seconds in ``JSON_ROUNDED`` to the millisecond, an empty value in
``JSON_NULL_IF_EMPTY`` as null; times as ISO 8601 to the second, days ISO, enumerations by
value, nested summaries (and anything else with a ``to_json``), lists and maps alike. A class
whose answer is more than its fields keeps a ``to_json`` of its own, with a line saying why
(``tests/test_jsonable.py`` lists them)."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import fields, is_dataclass
from typing import Any, ClassVar


class Jsonable:
    """The mixin of a dataclass summary: ``to_json``."""

    JSON_SKIP: ClassVar[tuple[str, ...]] = ()
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ()
    JSON_NAMES: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(field or property, its key in the JSON): ``("first", "from")``."""
    JSON_ROUNDED: ClassVar[tuple[str, ...]] = ()
    """Seconds (floats) answered to the millisecond."""
    JSON_NULL_IF_EMPTY: ClassVar[tuple[str, ...]] = ()
    """Fields answered as null when empty (``resumed``: '' when a run began)."""

    def to_json(self) -> dict[str, Any]:
        assert is_dataclass(self)
        names = [
            f.name
            for f in fields(self)
            if not f.name.startswith("_") and f.name not in self.JSON_SKIP
        ]
        renamed = dict(self.JSON_NAMES)
        return {renamed.get(name, name): self._json_of(name) for name in (*names, *self.JSON_EXTRA)}

    def _json_of(self, name: str) -> Any:
        value = getattr(self, name)
        if name in self.JSON_ROUNDED:
            return round(value, 3)
        if name in self.JSON_NULL_IF_EMPTY and not value:
            return None
        return json_value(value)


def json_value(value: Any) -> Any:
    """A value of a summary as JSON data."""
    if callable(getattr(value, "to_json", None)):
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
