"""The verify's progress on a terminal: a bar of the snapshots with their total (the
archive's figures), counters of files and pieces; a verify that goes on where a stopped one
stood begins its bars where that one ended."""

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main, verify_commands
from imixs_archive.cli.output import LabelledTicks
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.kills import stops_at

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


class _Ticks(LabelledTicks):
    """The ticks a terminal's bars would be given, by label."""

    def __init__(self, totals: Mapping[str, int] | None) -> None:
        super().__init__()
        self.totals = dict(totals or {})
        self.counts: Counter[str] = Counter()

    def tick(self, label: str, count: int = 1) -> None:
        if label:
            self.counts[label] += count


class _Bars:
    """Stands in for ``labelled_progress`` on a terminal."""

    def __init__(self) -> None:
        self.runs: list[_Ticks] = []

    @contextlib.contextmanager
    def __call__(
        self, what: str, totals: Callable[[], Mapping[str, int]] | None = None
    ) -> Iterator[_Ticks]:
        ticks = _Ticks(totals() if totals is not None else None)
        self.runs.append(ticks)
        yield ticks

    def only(self) -> _Ticks:
        [ticks] = self.runs
        self.runs.clear()
        return ticks


def test_a_verify_shows_its_snapshots_against_their_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    assert main(["import", str(SAMPLES), "--data-dir", str(store)]) == 0
    bars = _Bars()
    monkeypatch.setattr(verify_commands, "labelled_progress", bars)
    assert main(["verify", "--data-dir", str(store)]) == 0
    whole = bars.only()
    assert whole.totals == {"snapshots": 9}
    assert whole.counts["snapshots"] == 9
    assert whole.counts["files"] > 0 and whole.counts["pieces"] > 0

    assert main(["verify", "--part", "1/2", "--data-dir", str(store)]) == 0
    assert bars.only().totals == {}  # a part: its share is not counted ahead

    with (
        SQLiteBackend(store) as backend,
        Archive(backend) as archive,
        pytest.raises(KeyboardInterrupt),
    ):
        archive.verify_part(progress=stops_at(whole.counts["pieces"] + 4))
    capsys.readouterr()
    assert main(["verify", "--data-dir", str(store)]) == 0
    assert "went on from" in capsys.readouterr().out
    resumed = bars.only()
    assert resumed.counts == whole.counts  # the stopped run's part, then the rest
