"""``Jsonable``: a summary's fields as JSON, the skipped left out, the extra added, times,
days, enumerations and nested summaries converted."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field

from imixs_archive.jsonable import Jsonable


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Inner(Jsonable):
    day: dt.date


@dataclass
class Outer(Jsonable):
    JSON_SKIP = ("hidden",)
    JSON_EXTRA = ("double",)

    count: int
    when: dt.datetime
    colour: Colour
    inner: list[Inner] = field(default_factory=list)
    hidden: int = 7
    _private: int = 9

    @property
    def double(self) -> int:
        return self.count * 2


def test_a_summary_answers_its_fields_as_json() -> None:
    when = dt.datetime(2024, 4, 1, 8, 30, 15, 999_000, tzinfo=dt.UTC)
    summary = Outer(3, when, Colour.RED, [Inner(dt.date(2024, 4, 2))])
    assert summary.to_json() == {
        "count": 3,
        "when": "2024-04-01T08:30:15+00:00",
        "colour": "red",
        "inner": [{"day": "2024-04-02"}],
        "double": 6,
    }
