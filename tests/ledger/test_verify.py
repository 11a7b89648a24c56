"""``ledger verify`` finds and names every way the issue lists of changing an archive
unseen: a snapshot row forged so that it still reads cleanly, a file's piece changed with
its digest rows, a snapshot's rows deleted, the log reordered or cut, the whole log
rewritten and signed with another key, an older copy of the store put back; and it tells
snapshots the Java service wrote (no seal) apart from tampering."""

from __future__ import annotations

import base64
import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshot_xml import seal, snapshot_xml
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import ArchiveError
from imixs_archive.filestore.reading import pieces_digest
from imixs_archive.ledger.checkpoints import checkpoint_dir, sign_checkpoint
from imixs_archive.ledger.entries import DELETED, ELSEWHERE, FOUND, Entry
from imixs_archive.ledger.forks import ForkError
from imixs_archive.ledger.keys import key_path, load_signer
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tiles import WIDTH, tile_reader
from imixs_archive.ledger.tree import TREE, TreeState, read_tree
from imixs_archive.ledger.verify import LedgerReport, verify_ledger
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_LEDGER_ENTRIES,
    ARCHIVE_LEDGER_TILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
)
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.tlog.merkle import Frontier, leaf_hash, range_hash
from imixs_archive.tlog.note import Checkpoint, generate_signer
from support.snapshots import ORIGIN, make_snapshot

PDF = b"%PDF-1.7 " + bytes(range(256)) * 300


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "witness"),
        }
    )


def _sid(step: int) -> str:
    return str(make_snapshot(step).get_first("$uniqueid"))


@pytest.fixture
def logged(archive: Archive, settings: Settings) -> Iterator[Archive]:
    """An archive of five snapshots (two with a file), all logged and signed."""
    for step in range(5):
        files = {"contract.pdf": PDF + bytes([step])} if step in (1, 3) else None
        archive.store(make_snapshot(step, files=files))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    yield archive


def _verify(archive: Archive, settings: Settings, **options: object) -> LedgerReport:
    return verify_ledger(archive, settings, **options)  # type: ignore[arg-type]


def test_an_untouched_archive_holds(logged: Archive, settings: Settings) -> None:
    report = _verify(logged, settings)
    assert report.ok, report.problems
    assert (report.checked, report.snapshots, report.size) == (5, 5, 5)
    assert report.checkpoints == [
        "the ledger's last checkpoint: 5 entries",
        "the last checkpoint the key signed (ledger.key.signed): 5 entries",
        "the checkpoint folder's newest checkpoint (checkpoint-000000000005): 5 entries",
    ]


def test_a_row_forged_to_read_cleanly_is_named_altered(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    """One string item changed (one no index or figure is derived from) and the row sealed
    again: every read and `verify` take it for good; the ledger does not."""
    target = _sid(2)
    row = backend.get(SNAPSHOTS, {"snapshot": target})
    assert row is not None
    xml = snapshot_xml(backend, row)
    forged = xml.replace(b">step 2<", b">step 2, forged<", 1)
    assert forged != xml
    backend.put(SNAPSHOTS, [{"snapshot": target, "data": seal(forged)}])
    assert logged.verify().ok  # the seal was made again: no other check can tell
    assert logged.load(target) is not None
    report = _verify(logged, settings)
    assert not report.ok and report.altered == [target]
    assert any("altered" in problem for problem in report.problems)


def test_a_piece_changed_with_its_digest_rows_is_named_altered(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    """A file's piece replaced by other bytes stored under their own SHA-256, the file's
    piece list and digest rewritten to match: the file reads cleanly."""
    target = _sid(1)
    key = hashlib.md5(PDF + bytes([1])).hexdigest().upper()
    ids = [row["data_id"] for row in backend.scan(DOCUMENTS, {"md5": key})]
    forged = b"%PDF-1.7 forged"
    forged_id = hashlib.sha256(forged).hexdigest()
    backend.put(DOCUMENTS_DATA, [{"data_id": forged_id, "data": forged}])
    backend.delete(DOCUMENTS, {"md5": key})
    backend.put(DOCUMENTS, [{"md5": key, "sort_id": 0, "data_id": forged_id}])
    backend.put(
        ARCHIVE_FILES,
        [{"md5": key, "digest": pieces_digest([forged_id]), "size": len(forged), "pieces": 1}],
    )
    assert ids and forged_id not in ids
    report = _verify(logged, settings)
    assert report.altered == [target] and not report.ok


def test_a_snapshot_whose_rows_were_deleted_is_named_removed(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    target = _sid(3)
    backend.delete(SNAPSHOTS, {"snapshot": target})  # the row that makes it complete
    report = _verify(logged, settings)
    assert report.removed == [target] and not report.ok
    assert any("removed without a logged deletion" in p for p in report.problems)


def test_a_logged_deletion_is_no_finding(logged: Archive, settings: Settings) -> None:
    logged.delete(_sid(3), reason="retention")
    assert _verify(logged, settings).ok


def _rewrite_entry(backend: Backend, idx: int, text: str) -> None:
    row = {"bucket": 0, "idx": idx, "entry": text, "hash": leaf_hash(text.encode())}
    backend.put(ARCHIVE_LEDGER_ENTRIES, [row])


def test_a_reordered_log_is_found(logged: Archive, backend: Backend, settings: Settings) -> None:
    first, second = logged.ledger.entry(1), logged.ledger.entry(2)
    assert first is not None and second is not None
    _rewrite_entry(backend, 1, second.text)
    _rewrite_entry(backend, 2, first.text)
    report = _verify(logged, settings, restart=True)
    assert not report.ok
    assert any("are not those the ledger's last checkpoint signed" in p for p in report.problems)


def test_a_truncated_log_is_found(logged: Archive, backend: Backend, settings: Settings) -> None:
    backend.delete(ARCHIVE_LEDGER_ENTRIES, {"bucket": 0, "idx": 4})
    report = _verify(logged, settings)
    assert not report.ok
    assert any("ledger entries 4 to 4 are missing" in p for p in report.problems)


def test_a_head_cut_back_is_found_by_the_witness(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    """The head set back to three entries, the entries past it deleted, and signed again
    with the real key (an insider with the key): the checkpoint folder still has the
    checkpoint of five."""
    head = Sequencer(logged, settings).tree()
    assert head is not None
    signer = load_signer(key_path(settings))
    assert signer is not None
    frontier = Frontier()
    for logged_entry in logged.ledger.entries(0, 3):
        frontier.append(logged_entry.leaf)
    note = sign_checkpoint(signer, head.origin, 3, frontier.root())
    cut = TreeState(
        3,
        frontier.root(),
        frontier.to_bytes(),
        head.origin,
        head.key,
        head.queue_from,
        note,
        3,
        head.checkpoint_at,
    )
    logged.ledger.head.write(TREE, cut.encode())
    for idx in (3, 4):
        backend.delete(ARCHIVE_LEDGER_ENTRIES, {"bucket": 0, "idx": idx})
    report = _verify(logged, settings)
    assert not report.ok
    assert any(
        "the checkpoint folder's newest checkpoint" in p
        and "signed 5 entries, the log now holds 3" in p
        for p in report.problems
    )


def test_a_log_rewritten_and_signed_with_another_key_is_found(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    """Everything rewritten: a snapshot forged, its entry changed to match, the tree and
    a checkpoint made again and signed with a key of the forger's (the ledger's key file is
    not theirs to read)."""
    head = Sequencer(logged, settings).tree()
    assert head is not None
    target = _sid(2)
    row = backend.get(SNAPSHOTS, {"snapshot": target})
    assert row is not None
    forged = snapshot_xml(backend, row) + b""
    forged = forged.replace(b"</document>", b'<item name="x"><value>1</value></item></document>')
    backend.put(SNAPSHOTS, [{"snapshot": target, "data": seal(forged)}])
    new_digest = logged.stored_digest(target)
    assert new_digest is not None
    old = logged.ledger.entry(2)
    assert old is not None
    entry = Entry.decode(old.text)
    rewritten = Entry(entry.kind, entry.target, entry.at, entry.by, new_digest.digest).encode()
    _rewrite_entry(backend, 2, rewritten)
    frontier = Frontier()
    for logged_entry in logged.ledger.entries(0, 5):
        frontier.append(logged_entry.leaf)
    forger = generate_signer(head.origin)
    note = sign_checkpoint(forger, head.origin, 5, frontier.root())
    state = TreeState(
        5,
        frontier.root(),
        frontier.to_bytes(),
        head.origin,
        forger.vkey(),
        head.queue_from,
        note,
        5,
        head.checkpoint_at,
    )
    logged.ledger.head.write(TREE, state.encode())
    report = _verify(logged, settings)
    assert not report.ok
    assert any("the ledger's last checkpoint" in p and "another key" in p for p in report.problems)
    assert any("are not those the checkpoint folder's" in p for p in report.problems)


def _put_back_older_copy(
    store: Path, settings: Settings, kept_steps: range, later_steps: range
) -> str:
    """Store and sign ``kept_steps``, copy the store, store and sign ``later_steps``, put
    the copy back; the checkpoint the later log had."""
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for step in kept_steps:
            archive.store(make_snapshot(step))
        with Sequencer(archive, settings) as sequencer:
            sequencer.drain(checkpoint=True)
    copy = store.with_name("copy")
    shutil.copytree(store, copy)
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for step in later_steps:
            archive.store(make_snapshot(step))
        with Sequencer(archive, settings) as sequencer:
            sequencer.drain(checkpoint=True)
            kept = sequencer.tree().checkpoint  # type: ignore[union-attr]
    shutil.rmtree(store)
    shutil.copytree(copy, store)
    return kept


def test_an_older_copy_of_the_store_put_back_is_found(tmp_path: Path, settings: Settings) -> None:
    """A copy taken at three snapshots, the archive grows to six, the copy is put back:
    the checkpoint folder (or a checkpoint the auditor kept) signed six."""
    store = tmp_path / "store"
    kept = _put_back_older_copy(store, settings, range(3), range(3, 6))
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        report = _verify(archive, settings)
        assert not report.ok
        assert any("signed 6 entries, the log now holds 3" in p for p in report.problems)
        alone = load_settings({"ARCHIVE_DATA_DIR": str(settings.data_dir)})  # no witness
        report = _verify(archive, alone, since=kept)
        assert any("the checkpoint given (--since) signed 6 entries" in p for p in report.problems)


def test_an_older_copy_put_back_and_grown_is_refused_not_signed(
    tmp_path: Path, settings: Settings
) -> None:
    """The copy of three is put back after the key signed five, and the archive goes on
    storing: no round sequences or signs the forked log (C2SP tlog-checkpoint: a log must
    not sign a checkpoint inconsistent with one it signed), the refusal names both roots,
    the ledger stays stopped (also for a process without the key), and verify names it."""
    store = tmp_path / "store"
    kept = _put_back_older_copy(store, settings, range(3), range(3, 5))
    signed = Checkpoint.parse(kept.split("\n\n")[0] + "\n")
    folder = Path(checkpoint_dir(settings))
    before = sorted(path.name for path in folder.iterdir())
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        old_head = read_tree(archive.ledger)
        assert old_head is not None and old_head.size == 3
        for step in range(10, 14):
            archive.store(make_snapshot(step))
        with Sequencer(archive, settings) as sequencer, pytest.raises(ForkError) as refused:
            sequencer.drain(checkpoint=True)
        message = str(refused.value)
        assert _b64(signed.root_hash) in message and _b64(old_head.root) in message
        assert "signed 5 entries" in message and "holds only 3 entries" in message
        assert "ledger new-log" in message
        assert read_tree(archive.ledger) == old_head  # nothing sequenced, nothing signed
        keyless = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "elsewhere")})
        with Sequencer(archive, keyless) as other, pytest.raises(ForkError):
            other.drain()  # stopped for every process, not only the one with the key
        assert sorted(path.name for path in folder.iterdir()) == before
        report = _verify(archive, settings)
        assert not report.ok
        assert any("Signing it would fork the log" in p for p in report.problems)
        assert any("the checkpoint folder's newest checkpoint" in p for p in report.problems)


def test_a_log_grown_past_what_the_key_signed_names_both_roots_at_that_size(
    tmp_path: Path, settings: Settings
) -> None:
    """The copy of three put back grows past five before the ledger runs again (its
    entries already in the log, as another replica without the key would sequence them):
    the refusal names the signed root and the store's root at five entries."""
    store = tmp_path / "store"
    kept = _put_back_older_copy(store, settings, range(3), range(3, 5))
    signed = Checkpoint.parse(kept.split("\n\n")[0] + "\n")
    keyless = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "elsewhere")})
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        for step in range(10, 14):
            archive.store(make_snapshot(step))
        with Sequencer(archive, keyless) as other:
            assert other.drain().size == 7  # no key here: nothing to compare, no signature
        with Sequencer(archive, settings) as sequencer, pytest.raises(ForkError) as refused:
            sequencer.drain(checkpoint=True)
        prefix = range_hash(0, 5, tile_reader(archive.ledger).node)
        assert prefix != signed.root_hash
        message = str(refused.value)
        assert f"signed 5 entries of {signed.origin} with the root {_b64(signed.root_hash)}" in (
            message
        )
        assert f"has the root {_b64(prefix)} at 5 entries" in message


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def test_a_snapshot_written_around_the_archive_is_named(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    """Rows with the archive's seal but no entry: the archive always logs what it seals."""
    other = make_snapshot(40, origin="f00d0000-0000-4000-8000-000000000001")
    with SQLiteBackend(Path(settings.data_dir) / "elsewhere") as scratch, Archive(scratch) as a:
        a.store(other)
        row = scratch.get(SNAPSHOTS, {"snapshot": str(other.get_first("$uniqueid"))})
    assert row is not None
    backend.put(SNAPSHOTS, [row])  # only the row that makes it complete: enough to read
    report = _verify(logged, settings)
    assert report.unlogged == [row["snapshot"]] and not report.ok


def test_a_snapshot_the_java_service_wrote_is_logged_as_found_apart_from_tampering(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    other = make_snapshot(41, origin="f00d0000-0000-4000-8000-000000000002")
    snapshot_id = str(other.get_first("$uniqueid"))
    with SQLiteBackend(Path(settings.data_dir) / "java") as scratch, Archive(scratch) as a:
        a.store(other)
        row = scratch.get(SNAPSHOTS, {"snapshot": snapshot_id})
        assert row is not None
        unsealed = snapshot_xml(scratch, row)  # the Java service writes no seal
    backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": unsealed}])
    report = _verify(logged, settings)
    if not logged.storage.java_may_write:  # the embedded store: no one else writes there
        assert not report.ok and report.unlogged == [snapshot_id]
        assert any("a store the Java service cannot write" in p for p in report.problems)
        return
    assert report.ok and report.not_logged == [snapshot_id] and report.unlogged == []
    Sequencer(logged, settings).drain()
    entries = [Entry.decode(e.text) for e in logged.ledger.entries(0)]
    assert (entries[-1].kind, entries[-1].target) == (FOUND, snapshot_id)
    again = _verify(logged, settings)
    assert again.ok and again.not_logged == []


def test_a_verify_stopped_part_way_resumes_where_it_stopped(
    archive: Archive, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imixs_archive.ledger import verify as verify_module

    monkeypatch.setattr(verify_module, "SAVE_EVERY", 4)
    for step in range(11):
        archive.store(make_snapshot(step))
    Sequencer(archive, settings).drain(checkpoint=True)
    seen = [0]

    def stop_after_nine(stage: str, count: int) -> None:
        seen[0] += count
        if stage == "entries" and seen[0] == 9:
            raise ArchiveError("stopped")

    with pytest.raises(ArchiveError, match="stopped"):
        _verify(archive, settings, progress=stop_after_nine)
    report = _verify(archive, settings)
    assert report.ok and report.resumed_at == 8 and report.checked == 11
    assert _verify(archive, settings).resumed_at is None  # finished: the next begins anew


def test_a_store_from_before_the_ledger_is_logged_as_found_not_as_tampering(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    from imixs_archive.archive.versions import check_store_version
    from imixs_archive.storage.model import ARCHIVE_LEDGER_QUEUE, ARCHIVE_VERSIONS

    for step in range(3):
        archive.store(make_snapshot(step))  # sealed, as version 1 wrote them
    backend.delete(
        ARCHIVE_LEDGER_QUEUE,
        {"slot": next(int(row["slot"]) for row in backend.scan(ARCHIVE_LEDGER_QUEUE))},
    )  # version 1 queued nothing
    backend.put(ARCHIVE_VERSIONS, [{"name": "store", "version": 1, "written_by": "0.0.9"}])
    check_store_version(backend, record=True)
    report = _verify(archive, settings)
    assert report.ok and sorted(report.not_logged) == sorted(_sid(s) for s in range(3))
    assert any("from before the ledger" in w for w in report.warnings)
    Sequencer(archive, settings).drain()
    assert _verify(archive, settings).not_logged == []


def test_a_holds_change_without_an_entry_is_named(logged: Archive, settings: Settings) -> None:
    import datetime as dt

    from imixs_archive.archive.holds import release_hold

    logged.holds.place(ORIGIN, "audit", "mia", dt.datetime.now(dt.UTC))
    Sequencer(logged, settings).drain()
    release_hold(logged.backend, ORIGIN)  # around the archive: no entry
    report = _verify(logged, settings)
    assert not report.ok
    assert any(
        f"legal hold of {ORIGIN}: released without an entry" in p and "case 'audit'" in p
        for p in report.problems
    )


def test_files_the_java_service_cut_are_logged_by_their_bytes(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """A snapshot the Java service wrote, its file in 1 MiB pieces under random ids: the
    digest logged is that of the bytes as this archive would cut them, the same as when
    this archive stores the same content; a byte changed in a Java piece is found."""
    import random

    from support.java_rows import java_store_snapshot

    content = random.Random(5).randbytes(2_500_000)
    java_doc = make_snapshot(60, files={"scan.tif": content})
    java_id = java_store_snapshot(backend, java_doc)
    ours = make_snapshot(61, files={"scan.tif": content})  # later, by this archive
    archive.store(ours)
    report = _verify(archive, settings)
    if not archive.storage.java_may_write:  # the embedded store: Java-shaped rows are forged
        assert not report.ok and report.unlogged == [java_id]
        return
    assert report.ok and report.not_logged == [java_id]
    Sequencer(archive, settings).drain()
    entries = {Entry.decode(e.text).target: Entry.decode(e.text) for e in archive.ledger.entries(0)}
    assert entries[java_id].kind == FOUND
    assert _verify(archive, settings, read_all=True).ok
    key = hashlib.md5(content).hexdigest().upper()
    first = next(iter(backend.scan(DOCUMENTS, {"md5": key})))
    piece = backend.get(DOCUMENTS_DATA, {"data_id": first["data_id"]})
    assert piece is not None and len(first["data_id"]) == 36  # a Java piece, a random id
    changed = bytearray(piece["data"])
    changed[1000] ^= 0xFF
    backend.put(DOCUMENTS_DATA, [{"data_id": first["data_id"], "data": bytes(changed)}])
    report = _verify(archive, settings, read_all=True)
    assert not report.ok and java_id in report.altered


def test_a_changed_tile_of_the_tree_is_named(
    archive: Archive, backend: Backend, settings: Settings
) -> None:
    """The tiles proofs are made of (and ``/ledger/`` serves) are checked against the tree
    the log gives: a full tile as the walk completes it, the right edge's at the end."""
    for step in range(WIDTH + 3):
        archive.store(make_snapshot(step))
    with Sequencer(archive, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    assert _verify(archive, settings, restart=True).ok
    for width, hint in ((WIDTH, "ledger tile 0/0 is not the log's"), (3, "do not give the head")):
        key = {"level": 0, "idx": 0 if width == WIDTH else 1, "width": width}
        row = backend.get(ARCHIVE_LEDGER_TILES, key)
        assert row is not None
        changed = bytearray(row["hashes"])
        changed[33] ^= 1
        backend.put(ARCHIVE_LEDGER_TILES, [{**key, "hashes": bytes(changed)}])
        report = _verify(archive, settings, restart=True)
        assert any(hint in problem for problem in report.problems), report.problems
        backend.put(ARCHIVE_LEDGER_TILES, [row])
    assert _verify(archive, settings, restart=True).ok


def test_snapshots_the_java_service_deleted_are_no_tamper_alarm_where_it_writes(
    logged: Archive, backend: Backend, settings: Settings
) -> None:
    """Java's ``cleanupSnaphostHistory`` keeps N-1 snapshots and its Inspect page deletes
    (java-audit-3 X3): where the operator says the Java service writes
    (``ARCHIVE_JAVA_WRITES``), such a delete is counted apart and logged as deleted
    ``elsewhere``, once; on a store the Java service cannot write, it stays a finding."""
    from support.java_rows import java_delete_snapshot

    target = _sid(3)
    java_delete_snapshot(backend, logged, target)  # statement by statement, as Java does
    assert _verify(logged, settings).removed == [target]  # the setting off: a finding
    beside = Archive(backend, java_writes=True)
    report = _verify(beside, settings)
    if not beside.storage.java_may_write:  # the embedded store: no one else writes there
        assert not report.ok and report.removed == [target] and report.removed_elsewhere == []
        return
    assert report.ok and report.removed == [] and report.removed_elsewhere == [target]
    assert any("removed by another writer" in w for w in report.warnings)
    with Sequencer(beside, settings) as sequencer:
        sequencer.drain()
    last = Entry.decode(list(beside.ledger.entries(0))[-1].text)
    assert (last.kind, last.target, last.reason) == (DELETED, target, ELSEWHERE)
    again = _verify(beside, settings)
    assert again.ok and again.removed_elsewhere == [] and again.removed == []
