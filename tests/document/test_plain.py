"""Known answers of the one rule that turns Imixs values into plain data and text."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from imixs_archive.document.model import Document, Long, Short
from imixs_archive.document.plain import as_text, plain
from imixs_archive.web.api_archive import doc_rows


def test_known_answers() -> None:
    when = dt.datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert plain(when) == "2024-03-01T12:00:00.123+01:00"
    assert type(plain(Long(5))) is int and type(plain(Short(2))) is int
    assert plain(True) is True and plain(None) is None
    assert plain(Decimal("1.10")) == "1.10"
    assert plain(float("nan")) == "nan"
    assert plain(b"\x00\xff") == "AP8="
    assert plain({"a": [Long(1), when]}) == {"a": [1, "2024-03-01T12:00:00.123+01:00"]}
    assert json.dumps(plain([Long(7), 1.5])) == "[7, 1.5]"


def test_text_is_the_plain_form() -> None:
    # Before: the API's HTML view and the overviews printed an xs:long as "Long(5)".
    assert as_text(Long(5)) == "5"
    assert as_text("text") == "text"
    assert as_text([1, "a"]) == '[1, "a"]'
    doc = Document({"$uniqueid": ["a-1700000000000"], "count": [Long(5)], "nothing": [None]})
    assert dict(doc_rows(doc))["count"] == ["5"]
    assert dict(doc_rows(doc))["nothing"] == ["(empty)"]
