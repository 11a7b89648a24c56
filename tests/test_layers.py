"""The entry points (``cli/``, ``web/``) call the same service functions: none of them
builds a sync, a resync or a restore job of its own, nor archives an input its own way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "imixs_archive"
ENTRY_POINTS = sorted([*PACKAGE.glob("cli/*.py"), *PACKAGE.glob("web/*.py")])

BUILT_ONCE = {
    "SyncService": "services.workflow_jobs.open_sync",
    "SyncConfig": "services.workflow_jobs.open_sync",
    "Resync": "services.workflow_jobs.new_resync",
    "iter_json_stream": "services.importer.archive_stream",
}
"""Names an entry point must not call, and the service function it calls instead."""


def _calls(path: Path) -> set[str]:
    called: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                called.add(func.value.id)  # SyncConfig.from_settings(...)
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            called.add(name)
    return called


@pytest.mark.parametrize("path", ENTRY_POINTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_entry_points_use_the_service_functions(path: Path) -> None:
    wrong = {name: instead for name, instead in BUILT_ONCE.items() if name in _calls(path)}
    assert not wrong, f"{path.name} builds its own: use {wrong}"
