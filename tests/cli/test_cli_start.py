"""A command loads its own module only; the top-level help still lists every command."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from imixs_archive.cli import (
    COMMAND_MODULES,
    COMMANDS,
    STANDBY_FROM_BYTES,
    build_parser,
    command_of,
    main,
    standby_workers,
)
from imixs_archive.services import workers


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_the_table_names_each_command_with_the_module_registering_it() -> None:
    registered: dict[str, str] = {}
    for name in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        import_module(f"imixs_archive.cli.{name}").register(parser.add_subparsers())
        registered.update(dict.fromkeys(_choices(parser), name))
    assert registered == COMMANDS
    assert set(_choices(build_parser())) == set(COMMANDS)
    for command in COMMANDS:
        assert command in _choices(build_parser(command))


def test_the_command_word_is_found_past_the_options_before_it() -> None:
    assert command_of(["--data-dir", "list", "import", "x"]) == "import"
    assert command_of(["--data", "backup", "list"]) == "list"  # an abbreviated option
    assert command_of(["--data-dir=list", "get", "x"]) == "get"
    assert command_of(["--version"]) is None
    assert command_of(["-h"]) is None
    assert command_of(["--", "stats"]) == "stats"


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert all(command in out for command in COMMANDS)


def test_an_unknown_command_is_refused_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["improt", "x"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'improt'" in err and "export-table" in err


@pytest.mark.parametrize("command", ["import", "backup"])
def test_import_and_backup_start_without_analytics_web_or_rich(command: str) -> None:
    """Each CLI start paid ~0.2 s CPU importing every command's dependencies."""
    probe = (
        "import sys\n"
        "from imixs_archive.cli import build_parser\n"
        f"build_parser({command!r}).parse_args([{command!r}, 'x'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert f"imixs_archive.cli.{COMMANDS[command]}" in loaded
    unwanted = {
        "imixs_archive.analytics.aggregates",
        "imixs_archive.cli.analyze_commands",
        "imixs_archive.cli.sync_commands",
        "imixs_archive.sync.service",
        "imixs_archive.web.credentials",
        "rich",
        "pyarrow",
        "fastapi",
    }
    assert not loaded & unwanted


def test_an_import_of_large_files_starts_its_workers_before_it_loads_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``import``, by default (no ``--jobs``), of files of at least
    ``STANDBY_FROM_BYTES``; anything else starts no process."""
    started: list[tuple[int, tuple[str, ...]]] = []

    class Recorded:
        def __init__(self, count: int, warm: tuple[str, ...] = ()) -> None:
            started.append((count, warm))

    monkeypatch.setattr(workers, "Standby", Recorded)
    monkeypatch.setattr(workers, "default_jobs", lambda: 2)
    big, small = tmp_path / "big", tmp_path / "small"
    big.mkdir()
    small.mkdir()
    with (big / "a.xml").open("wb") as f:  # sparse: its size is what counts
        f.truncate(STANDBY_FROM_BYTES)
    (small / "a.xml").write_bytes(b"<document/>")
    assert standby_workers("import", ["--data-dir", "x", "import", str(big)]) is not None
    assert started == [(1, ("imixs_archive.services.importer",))]
    for argv in (
        ["import", str(small)],
        ["import", "--jobs", "2", str(big)],
        ["import", "-"],
        ["import", "--help"],
        ["backup", str(big)],
        ["import", str(tmp_path / "missing")],
    ):
        assert standby_workers(command_of(argv), argv) is None, argv
    monkeypatch.setattr(workers, "default_jobs", lambda: 1)
    assert standby_workers("import", ["import", str(big)]) is None
    assert len(started) == 1


def test_the_command_line_module_loads_no_part_of_the_archive() -> None:
    """So that a worker started ahead starts while this process loads the archive."""
    code = "import sys, imixs_archive.cli; print(sorted(m for m in sys.modules if 'archive.' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "imixs_archive.archive." not in out.stdout and "storage." not in out.stdout


def test_workers_that_cannot_be_started_ahead_leave_the_import_to_start_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starting ahead is a head start only: it happens outside the command's error
    handling, so a failure there must not reach the user."""

    def refused(count: int, warm: tuple[str, ...] = ()) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(workers, "Standby", refused)
    monkeypatch.setattr(workers, "default_jobs", lambda: 2)
    with (tmp_path / "a.xml").open("wb") as f:
        f.truncate(STANDBY_FROM_BYTES)
    assert standby_workers("import", ["import", str(tmp_path / "a.xml")]) is None
