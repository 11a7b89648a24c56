"""One way down: the entry points (``cli/``, ``web/``) call the same service functions
(none builds a sync or a resync of its own, nor archives an input its own way), and the
analytics read through the archive's typed reads, not table rows."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from imixs_archive.storage import model

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "imixs_archive"
ENTRY_POINTS = sorted([*PACKAGE.glob("cli/*.py"), *PACKAGE.glob("web/*.py")])

RANKS = {
    "errors": 0,
    "recent": 0,
    "humanize": 0,
    "timezones": 0,
    "budget": 0,
    "jsonable": 0,
    "tallies": 0,
    "periodic": 0,
    "durable": 0,
    "config": 1,
    "logs": 1,
    "document": 2,
    "storage": 2,
    "workflow": 2,
    "tlog": 2,
    "filestore": 3,
    "ledger.books": 3,
    "ledger.entries": 3,
    "ledger.store_entry": 3,
    "sync.records": 3,
    "archive": 4,
    "runtime": 5,
    "analytics": 6,
    "services": 6,
    "sync": 6,
    "recovery": 6,
    "ledger": 6,
    "cli": 8,
    "web": 8,
    "__main__": 9,
}
"""Each part of the package and its floor: a module imports from its own floor or below.
A wing's books, the modules of its tables that the archive writes with its own changes
(the ledger's queue entry in a snapshot's store) or builds for everyone (the sync's
records, ``Archive.sync_records``), sit below the archive in their wing's package."""


def _module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def _part(module: str) -> str:
    """The part of RANKS a module (``imixs_archive.ledger.books``) belongs to."""
    inner = module.removeprefix("imixs_archive").lstrip(".")
    parts = inner.split(".")
    if ".".join(parts[:2]) in RANKS:
        return ".".join(parts[:2])
    return parts[0] if inner else ""


BUILT_ONCE = {
    "SyncService": "sync.jobs.open_sync",
    "SyncConfig": "sync.jobs.open_sync",
    "Resync": "sync.jobs.new_resync",
    "iter_json_stream": "services.importer.archive_stream",
    "Restorer": "recovery.restore_jobs.run_restore",
    "restore_files": "recovery.restore_jobs.run_restore",
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


def _every(paths: list[Path], check: Callable[[Path], list[str]]) -> str:
    """The problems ``check`` finds in each of ``paths``, one a line ("" when none): each
    rule is one test that names every module breaking it."""
    return "\n".join(problem for path in paths for problem in check(path))


def _entry_point_builds(path: Path) -> list[str]:
    wrong = {name: instead for name, instead in BUILT_ONCE.items() if name in _calls(path)}
    return [f"{path.parent.name}/{path.name} builds its own: use {wrong}"] if wrong else []


def test_entry_points_use_the_service_functions() -> None:
    assert not (found := _every(ENTRY_POINTS, _entry_point_builds)), found


ANALYTICS = sorted(PACKAGE.glob("analytics/*.py"))
OWN_TABLES = {"day_store.py"}
"""The analytics' own storage-facing module (its table, ``archive_day_aggregates``)."""


def _imported(tree: ast.AST) -> set[str]:
    return {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }


def _analytics_reading_rows(path: Path) -> list[str]:
    if path.name in OWN_TABLES:
        return []
    imported = _imported(ast.parse(path.read_text(), str(path)))
    wrong = {
        "imixs_archive.storage.model": "use the Archive's typed reads",
        "imixs_archive.archive.snapshot_xml": "use Archive.load_complete",
    }
    return [f"analytics/{path.name}: {why}" for name, why in wrong.items() if name in imported]


def test_analytics_read_through_the_archive_not_table_rows() -> None:
    assert not (found := _every(ANALYTICS, _analytics_reading_rows)), found


ABOVE_THE_ARCHIVE = sorted(
    path
    for area in ("analytics", "services", "sync", "recovery", "ledger", "cli", "web")
    for path in PACKAGE.glob(f"{area}/*.py")
    if RANKS[_part(_module(path))] > RANKS["archive"]  # not a wing's books below it
)
TABLE_CALLS = {"get", "scan", "put", "delete", "grouped", "count"}
MAY_TOUCH_TABLES = {"analytics/day_store.py"}
"""Declared storage-facing modules above the archive: the analytics' own table."""
MAY_NAME_TABLES = {*MAY_TOUCH_TABLES, "web/metrics.py"}
"""``web/metrics.py`` wraps the backend to time each call by its table; it issues none."""


def _backend_calls(tree: ast.AST) -> list[str]:
    """Calls like ``backend.put(...)`` or ``self.archive.backend.scan(...)``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        target = node.func.value
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if node.func.attr in TABLE_CALLS and name == "backend":
            found.append(f"{name}.{node.func.attr} (line {node.lineno})")
    return found


def _touching_tables(path: Path) -> list[str]:
    where = f"{path.parent.name}/{path.name}"
    tree = ast.parse(path.read_text(), str(path))
    problems = []
    if where not in MAY_TOUCH_TABLES and (calls := _backend_calls(tree)):
        problems.append(f"{where}: {calls}: ask the archive (archive/*.py) instead")
    if where not in MAY_NAME_TABLES and "imixs_archive.storage.model" in _imported(tree):
        problems.append(f"{where} names tables")
    return problems


def test_no_module_above_the_archive_touches_tables() -> None:
    assert not (found := _every(ABOVE_THE_ARCHIVE, _touching_tables)), found


# --- each wing its own tables -------------------------------------------------------------

NAMES_EVERY_WING = {"web/metrics.py"}
"""Modules that name tables of any wing: ``web/metrics.py`` times the store's calls by
table (and tells pieces apart); it issues none."""


def _tables_named(tree: ast.AST) -> list[tuple[str, int]]:
    """(table constant, line) of each table a module imports from the model."""
    return [
        (alias.name, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "imixs_archive.storage.model"
        for alias in node.names
        if isinstance(getattr(model, alias.name, None), model.Table)
    ]


def test_a_module_names_only_its_own_wings_tables() -> None:
    """Every table is declared with its owner (``Wing`` in ``storage/model.py``); outside
    the store itself, a module names a table only when the table's wing is its own: the
    ledger's through ``ledger/``, the sync's through ``sync/``... Every violation named."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        package = path.relative_to(PACKAGE).parts[0]
        if package == "storage" or where in NAMES_EVERY_WING:
            continue
        for name, line in _tables_named(ast.parse(path.read_text(), str(path))):
            owner = getattr(model, name).owner
            if owner is None or package not in owner.packages:
                wrong.append(f"{where}:{line} names {name} ({owner and owner.value}'s)")
    assert not wrong, "a table named outside its wing:\n" + "\n".join(wrong)


def test_every_table_has_an_owner() -> None:
    assert [table.name for table in model.TABLES if table.owner is None] == []


# --- one door: the archive ------------------------------------------------------------

TABLE_MODULE = "# table module"
"""The first line of a module above the archive that may reach its own table through the
store (``analytics/day_store.py``)."""


def _attribute_uses(tree: ast.AST, name: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == name
    ]


def _taking_the_store(path: Path) -> list[str]:
    text = path.read_text()
    if text.startswith(TABLE_MODULE):
        return []
    lines = _attribute_uses(ast.parse(text, str(path)), "backend")
    return [f"{path.parent.name}/{path.name} takes .backend (lines {lines})"] if lines else []


def test_nothing_above_the_archive_takes_its_store() -> None:
    """Above the archive everything goes through the ``Archive`` (its files, holds, state,
    sync records, reads): no module takes ``.backend`` from it, but a declared table
    module for its own table."""
    assert not (found := _every(ABOVE_THE_ARCHIVE, _taking_the_store)), found


def test_only_the_runtime_builds_an_archive() -> None:
    """``runtime.py`` opens the store and builds the archive, the same way for everyone."""
    builders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Archive":
                builders.append(str(path.relative_to(PACKAGE)))
    assert builders == ["runtime.py"]


ARCHIVE_METHODS_AT_MOST = 30


def test_the_archive_keeps_at_most_30_public_methods() -> None:
    """``Archive`` keeps what callers need; the rest is grouped in its sub-objects
    (``.files``, ``.storage``, ``.index``, ``.days``, ``.facts``, ``.ledger``, ``.holds``,
    ``.state``, ``.sync_records``) that callers use directly, not forwarded one by one."""
    tree = ast.parse((PACKAGE / "archive" / "snapshots.py").read_text())
    archive = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Archive")
    public = [
        node.name
        for node in archive.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    ]
    assert len(public) <= ARCHIVE_METHODS_AT_MOST, f"Archive has {len(public)}: {public}"


# --- imports point down -------------------------------------------------------------------


def _imports_from_above(path: Path) -> list[str]:
    part = _part(_module(path))
    if part == "__init__":
        return []
    floor = RANKS[part]
    upward = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("imixs_archive.")
        ):
            target = _part(node.module)
            if target and RANKS[target] > floor:
                upward.append(f"{node.module} (line {node.lineno})")
    return [f"{path.relative_to(PACKAGE)} imports from above it: {upward}"] if upward else []


def test_no_import_runs_back_up() -> None:
    assert not (found := _every(sorted(PACKAGE.rglob("*.py")), _imports_from_above)), found


def test_one_sqlite_in_the_process() -> None:
    """Two copies of SQLite in one process corrupt a store both open (closing a connection
    of one drops the locks of the other): the package reaches SQLite through
    ``storage/sqlite/engine.py`` alone (APSW's), and nothing, tests included, imports the
    standard library's ``sqlite3``."""
    engine = PACKAGE / "storage" / "sqlite" / "engine.py"
    tests = Path(__file__).resolve().parent
    offenders = []
    for path in sorted([*PACKAGE.rglob("*.py"), *tests.rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                root = name.split(".")[0]
                in_package = path.is_relative_to(PACKAGE)
                if root == "sqlite3" or (root == "apsw" and in_package and path != engine):
                    offenders.append(f"{path.name}:{node.lineno} imports {name}")
    assert not offenders, offenders
