"""``ledger new-log``: the one step that starts a new log (a new origin and key) from the
store's log as it is; a run that died midway is completed by the next."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.ledger import new_log
from imixs_archive.ledger.forks import FORK, ForkError, record_fork
from imixs_archive.ledger.keys import key_path, load_signer
from imixs_archive.ledger.new_log import NEW_LOGS, start_new_log
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tree import read_tree
from imixs_archive.ledger.verify import verify_ledger
from support.snapshots import make_snapshot

OLD, NEW = "archive.example.com/invoices", "archive.example.com/invoices/2"


class Died(Exception):
    pass


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_ORIGIN": OLD,
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "copies"),
        }
    )


@pytest.fixture
def stopped(archive: Archive, settings: Settings) -> Archive:
    """Three snapshots signed, then the ledger stopped by a refused fork."""
    for step in range(3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    record_fork(archive.ledger, "refused: a test's fork", "test", 0)
    archive.store(make_snapshot(3))
    with Sequencer(archive, settings) as sequencer, pytest.raises(ForkError):
        sequencer.drain()
    return archive


@pytest.mark.parametrize("dies_in", ["_record", "sign_now"])
def test_a_new_log_that_died_midway_is_completed_by_the_next_run(
    stopped: Archive,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dies_in: str,
) -> None:
    old_key = load_signer(key_path(settings))
    assert old_key is not None
    with monkeypatch.context() as patch:

        def die(*_args: object) -> None:
            raise Died(dies_in)

        patch.setattr(new_log, dies_in, die)
        with pytest.raises(Died):
            start_new_log(stopped, settings, NEW, "put back the backup")
    done = start_new_log(stopped, settings, NEW, "put back the backup")
    assert (done.origin, done.previous_origin) == (NEW, OLD)
    assert done.checkpoint.startswith(f"{NEW}\n4\n")  # every entry the store holds
    head = read_tree(stopped.ledger)
    assert head is not None and (head.origin, head.checkpoint_size) == (NEW, 4)
    new_key = load_signer(key_path(settings))
    assert new_key is not None and new_key.vkey() == head.key == done.public_key
    retired = sorted(p.name for p in key_path(settings).parent.glob("ledger.key*.retired"))
    assert len(retired) == 2  # the key and its record, once
    steps = json.loads(stopped.ledger.head.text(NEW_LOGS) or "[]")
    assert [(s["origin"], s["previous_origin"], s["reason"]) for s in steps] == [
        (NEW, OLD, "put back the backup")
    ]
    assert steps[0]["refused"] == "refused: a test's fork"
    assert stopped.ledger.head.text(FORK) is None
    stopped.store(make_snapshot(9))
    with Sequencer(stopped, settings) as sequencer:
        assert sequencer.drain(checkpoint=True).checkpoint == 5
    report = verify_ledger(stopped, settings)
    assert report.ok, report.problems
    with pytest.raises(ConfigError, match=f"the ledger's origin is {NEW} already"):
        start_new_log(stopped, settings, NEW, "again")


def test_a_new_log_needs_a_reason_and_a_schema_less_origin(
    stopped: Archive, settings: Settings
) -> None:
    with pytest.raises(ConfigError, match="--reason"):
        start_new_log(stopped, settings, NEW, " ")
    with pytest.raises(ConfigError, match="not a schema-less URL"):
        start_new_log(stopped, settings, "https://archive.example.com/2", "why")
    assert stopped.ledger.head.text(FORK) is not None  # still stopped
