"""The docs say what the code does: the README's examples run, the pages it points to for
settings list them, and what the service writes into a checkout is ignored by git."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.cli import main
from imixs_archive.config import describe_settings
from imixs_archive.storage import model

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_analyze_aggregates_example_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    assert main(["import", str(ROOT / "samples"), "--data-dir", store]) == 0
    [example] = re.findall(r"`(analyze aggregates[^`]*)`", (ROOT / "README.md").read_text())
    capsys.readouterr()
    assert main([*example.split(), "--data-dir", store]) == 0
    assert "snapshots" in capsys.readouterr().out


def test_web_md_sends_readers_to_pages_listing_every_workflow_setting() -> None:
    text = (ROOT / "docs" / "web.md").read_text()
    [paragraph] = [p for p in text.split("\n\n") if "(`WORKFLOW_*`)" in p]
    assert "--help" not in paragraph  # no command's --help lists the settings
    pages = "".join(
        (ROOT / "docs" / link).read_text() for link in re.findall(r"\]\(([\w-]+\.md)\)", paragraph)
    )
    names = [name for name, _default, _help in describe_settings()]
    assert [n for n in names if n.startswith("WORKFLOW_") and n not in pages] == []


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_what_the_service_writes_into_a_checkout_is_ignored() -> None:
    folders = ["archive-data", "archive-backup"]  # ARCHIVE_DATA_DIR, ARCHIVE_BACKUP_DIR
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *(f"{f}/x.xml" for f in folders)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 128:
        pytest.skip(f"not a git checkout: {done.stderr.strip()}")
    assert done.stdout.split() == [f"{f}/x.xml" for f in folders]


GENERATED = {
    "docs/data-model.md": "scripts/data_model_doc.py",
    "docs/configuration.md": "scripts/settings_doc.py",
}
"""Pages printed by a script from the one source of truth (the model, the settings)."""


@pytest.mark.parametrize(("page", "script"), GENERATED.items(), ids=list(GENERATED))
def test_a_generated_page_is_what_its_script_prints(page: str, script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    regenerate = f"regenerate it: .venv/bin/python {script} > {page}"
    assert (ROOT / page).read_text(encoding="utf-8") == done.stdout, regenerate


QUERIES = {
    "snapshots": 1,
    "snapshots_by_uniqueid": 2,
    "snapshots_by_modified": 3,
    "documents": 4,
    "documents_data": 5,
    "snapshots_by_document": 6,
    "archive_files": 7,
    "archive_snapshot_files": 8,
    "archive_piece_refs": 9,
    "archive_day_aggregates": 10,
    "archive_sync_failures": 11,
    "archive_sync_instances": 12,
    "archive_file_heads": 13,
    "archive_garbage": 14,
    "archive_snapshot_parts": 15,
    "archive_modified_days": 16,
    "archive_sync_claims": 17,
    "archive_sync_gone": 18,
    "archive_sync_progress": 19,
    "archive_legal_holds": 20,
    "archive_day_changes": 21,
    "archive_versions": 22,
    "archive_ledger_queue": 23,
    "archive_ledger_entries": 24,
    "archive_ledger_nodes": 25,
    "archive_ledger_head": 26,
    "archive_ledger_subjects": 27,
    "archive_ledger_checkpoints": 28,
    "archive_snapshot_facts": 29,
    "archive_day_summaries": 30,
    "archive_census": 31,
    "archive_month_figures": 32,
    "archive_checks": 33,
    "archive_file_cuts": 34,
    "archive_legal_hold_cases": 35,
    "archive_ledger_tiles": 36,
}
"""The query numbers as docs and comments cite them ("Q23 to Q28"): never changed."""
QUERY_ROW = re.compile(r"^\| Q(\d+) \| (?!`).* \| `([a-z_]+)` \| ([a-z]+) \|$", re.MULTILINE)


def test_data_model_md_has_every_declared_table_under_its_own_query() -> None:
    """Every table declared in the model is one the stores create (``TABLES``) and has a
    row in the page's queries under the number it always had, with its owner."""
    declared = {t.name: t.query for t in vars(model).values() if isinstance(t, model.Table)}
    assert declared == {t.name: t.query for t in model.TABLES}
    assert {name: q for name, q in declared.items() if name in QUERIES} == QUERIES
    text = (ROOT / "docs" / "data-model.md").read_text(encoding="utf-8")
    rows = QUERY_ROW.findall(text)
    assert {name: int(q) for q, name, _owner in rows} == declared
    owners = {t.name: t.owner and t.owner.value for t in model.TABLES}
    assert {name: owner for _q, name, owner in rows} == owners


PATH_IN_BACKTICKS = re.compile(
    r"`((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(?:py|md|yml|yaml|toml|sh|html|js|css|xml))"
    r"(?:[:#][^`]*)?`"
)


def test_every_path_the_docs_name_exists() -> None:
    """A file a page names by its path (``archive/verify_runs.py``, ``tests/sync/...``) is
    there: below the repository, the package, the tests or the page's own folder. Files
    move; the pages that name them must follow."""
    package = ROOT / "src" / "imixs_archive"
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench/README.md"]
    stale = []
    for page in pages:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for found in PATH_IN_BACKTICKS.finditer(line):
                path = found.group(1)
                places = (ROOT, package, ROOT / "tests", ROOT / "deploy", page.parent)
                if not any((place / path).exists() for place in places):
                    stale.append(f"{page.relative_to(ROOT)}:{number}: {path}")
    assert not stale, stale
