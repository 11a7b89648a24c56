"""The docs say what the code does: the README's examples run, the pages it points to for
settings list them, and what the service writes into a checkout is ignored by git."""

from __future__ import annotations

import re
import shutil
import subprocess
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


def test_data_model_md_names_every_table_of_the_model() -> None:
    text = (ROOT / "docs" / "data-model.md").read_text()
    tables = [t.name for t in vars(model).values() if isinstance(t, model.Table)]
    assert len(tables) >= 20
    assert [name for name in tables if f"`{name}`" not in text] == []
    # A count of the extra tables in words must be right (it said "three" when there were 7).
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    words += ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"]
    extra = sum(name.startswith("archive_") for name in tables)
    for said in re.findall(r"(\w+) tables prefixed", text):
        if said.lower() in words or said.isdigit():
            assert (int(said) if said.isdigit() else words.index(said.lower())) == extra, said


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
