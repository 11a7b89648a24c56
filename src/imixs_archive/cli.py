"""Command line entry point (commands are added by the archive layer)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    return 0
