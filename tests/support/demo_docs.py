"""The Quick start's demo month (``scripts/demo_month.py``) as documents."""

from __future__ import annotations

import sys
from pathlib import Path

from imixs_archive.document.model import Document

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def demo_documents() -> list[Document]:
    sys.path.insert(0, str(SCRIPTS))
    try:
        import demo_month
    finally:
        sys.path.remove(str(SCRIPTS))
    return list(demo_month.month())
