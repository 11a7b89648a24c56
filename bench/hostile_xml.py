"""Parse time of one huge XML token (attribute value, comment) against as much text.

expat 2.5 scans an unfinished token again with every piece it is given (CVE-2023-52425),
so one 32 MB attribute value took tens of seconds; the reader now refuses tokens over
``ReaderLimits.max_token`` after linear work. Prints seconds per case:

    .venv/bin/python bench/hostile_xml.py [--size-mb 32]
"""

from __future__ import annotations

import argparse
import io
import time

from imixs_archive.document.xml_reader import iter_xml_documents
from imixs_archive.errors import DocumentError

HEAD = b'<document><item name="a"><value>x</value></item>'


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=32)
    size = parser.parse_args().size_mb * 2**20
    cases = {
        "text value (baseline)": b'<item name="t"><value>' + b"t" * size + b"</value></item>",
        "attribute value": b'<item name="' + b"n" * size + b'"><value>v</value></item>',
        "comment": b"<!--" + b"c" * size + b"-->",
    }
    for label, token in cases.items():
        body = HEAD + token + b"</document>"
        started = time.perf_counter()
        try:
            list(iter_xml_documents(io.BytesIO(body)))
            outcome = "read"
        except DocumentError as exc:
            outcome = f"refused: {exc.reason}"
        print(f"{label:24} {time.perf_counter() - started:7.2f} s  {outcome}")


if __name__ == "__main__":
    main()
