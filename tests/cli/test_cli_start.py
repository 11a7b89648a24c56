"""A command loads its own module only; the top-level help still lists every command."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import import_module

import pytest

from imixs_archive.cli import COMMAND_MODULES, COMMANDS, build_parser, command_of, main


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
        "imixs_archive.services.sync",
        "imixs_archive.web.credentials",
        "rich",
        "pyarrow",
        "fastapi",
    }
    assert not loaded & unwanted
