"""Errors are one line (README): argparse's usage errors too, naming the command and where
its help is; and a data folder that cannot be made or written is exit 2 (a setting or
argument to correct) for every command, as any other path that cannot be written."""

from __future__ import annotations

from pathlib import Path

import pytest

from imixs_archive.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.mark.parametrize(
    ("argv", "prog", "says"),
    [
        (["import", "x", "--bogus"], "imixs-archive import", "unrecognized arguments: --bogus"),
        (["import"], "imixs-archive import", "the following arguments are required: PATH"),
        (["stats", "extra"], "imixs-archive stats", "unrecognized arguments: extra"),
        (["--data-dir", "d", "list", "--nope"], "imixs-archive list", "unrecognized"),
        (["analyze", "bogus"], "imixs-archive analyze", "invalid choice: 'bogus'"),
        (["analyze", "aggregates", "--from", "x"], "imixs-archive analyze aggregates", "--from"),
        (["legal-hold"], "imixs-archive legal-hold", "required: ACTION"),
        (["bogus"], "imixs-archive", "invalid choice: 'bogus'"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    argv: list[str], prog: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: ") and says in err
    assert err.rstrip().endswith(f"(see {prog} --help)")


def test_help_is_still_the_whole_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["import", "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: imixs-archive import")


@pytest.mark.parametrize(
    "command",
    [
        ["import", str(SAMPLES / "ticket-1.xml"), "--data-dir", "{bad}"],
        ["ledger", "init", "--data-dir", "{bad}"],
        ["sync", "--once", "--data-dir", "{bad}"],
        ["export", "--to", "{bad}", "--data-dir", "{store}"],
        ["backup", "{bad}", "--data-dir", "{store}"],
        ["copy-store", "{bad}", "--data-dir", "{store}"],
    ],
)
def test_a_folder_that_cannot_be_made_is_2_for_every_command(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", "http://127.0.0.1:9/api")
    store = tmp_path / "store"
    assert main(["import", str(SAMPLES / "ticket-1.xml"), "--data-dir", str(store)]) == 0
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    capsys.readouterr()
    argv = [arg.format(bad=blocker / "sub", store=store) for arg in command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(blocker) in err, err
