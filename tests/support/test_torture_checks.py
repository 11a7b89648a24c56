"""The torture's own parts: its schedule is the seed's alone, and its checks fail on what
they are there to find (a lost snapshot, an unreadable one, one never sent, a damaged
store file, counts that differ), so that a clean run means something."""

from __future__ import annotations

import random
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.model import DOCUMENTS_DATA
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.damage import damage_page, flip_stored_bit
from support.torture.corpus import Corpus
from support.torture.double import TortureDouble
from support.torture.invariants import Verdict, against_model, look, stats_problems
from support.torture.model import Model, describe
from support.torture.operations import Bench, Outcome, View
from support.torture.processes import Serve
from support.torture.runner import base_env
from support.torture.schedule import SHORT, Op, Schedule


def test_the_same_seed_makes_the_same_schedule_and_data() -> None:
    first, again, other = Schedule(7, SHORT), Schedule(7, SHORT), Schedule(8, SHORT)
    rounds = [r for r, _ in zip(first.rounds(), range(12), strict=False)]
    assert rounds == [r for r, _ in zip(again.rounds(), range(12), strict=False)]
    assert rounds != [r for r, _ in zip(other.rounds(), range(12), strict=False)]
    assert Corpus(7).snapshot(3, 2) == Corpus(7).snapshot(3, 2)
    kinds = {op.kind for r in rounds for op in r.ops}
    assert {"import", "opener"} <= kinds and len(kinds) >= 8, kinds


def _stored(tmp_path: Path, count: int) -> tuple[Bench, list[str]]:
    """A store holding ``count`` snapshots of the corpus, all sent and acknowledged."""
    corpus, model = Corpus(3, large=0), Model()
    store = tmp_path / "store"
    ids = []
    with Archive(SQLiteBackend(store), owns_backend=True) as archive:
        for number in range(count):
            doc = corpus.snapshot(number, 0)
            archive.store(doc)
            model.send(describe(doc, False), 1)
            ids.append(str(doc.get_first("$uniqueid")))
    for sid in ids:
        model.acknowledge(sid, 1)
    env = {**base_env(), "ARCHIVE_DATA_DIR": str(store)}
    double = TortureDouble(model)
    bench = Bench(env, tmp_path, corpus, model, double, Serve(env, tmp_path / "log"))
    return bench, ids


def test_a_lost_snapshot_is_named_unless_the_round_could_remove_it(tmp_path: Path) -> None:
    bench, ids = _stored(tmp_path, 4)
    with Archive(SQLiteBackend(tmp_path / "store"), owns_backend=True) as archive:
        archive.delete(ids[1])  # behind the harness's back
    visible = look(bench, cassandra=False).visible
    assert visible == set(ids) - {ids[1]}
    view = View(2, frozenset(bench.model.required), frozenset())
    (lost,) = against_model(bench.model, view, [], visible, set())
    assert ids[1] in lost and "is gone" in lost
    deleting = View(2, frozenset(bench.model.required), frozenset({ids[1]}))
    assert against_model(bench.model, deleting, [], visible, set()) == []
    acked = Outcome(Op("import", 0.0), acked={ids[1]})
    nothing_required = View(2, frozenset(), frozenset())
    (unseen,) = against_model(bench.model, nothing_required, [acked], visible, set())
    assert f"acknowledged {ids[1]}, which is not in the store" in unseen


def test_an_unreadable_or_unknown_snapshot_is_named(tmp_path: Path) -> None:
    bench, _ids = _stored(tmp_path, 3)
    stranger = Corpus(99, large=0).snapshot(0, 0)
    with Archive(SQLiteBackend(tmp_path / "store"), owns_backend=True) as archive:
        archive.store(stranger)
        piece = next(iter(archive.backend.scan(DOCUMENTS_DATA, columns=["data_id"])))
        flip_stored_bit(archive.backend, DOCUMENTS_DATA, piece, random.Random(1))
    failures = look(bench, cassandra=False).failures
    assert any("never sent" in f and str(stranger.get_first("$uniqueid")) in f for f in failures)
    assert any("cannot be read whole" in f for f in failures), failures


def test_a_damaged_store_file_is_named(tmp_path: Path) -> None:
    bench, _ids = _stored(tmp_path, 3)
    damage_page(tmp_path / "store", "snapshots_by_modified")
    failures = look(bench, cassandra=False).failures
    assert any(f.startswith("store file:") for f in failures), failures


def test_counts_that_differ_from_the_model_are_named(tmp_path: Path) -> None:
    bench, ids = _stored(tmp_path, 3)
    assert stats_problems(bench, Verdict(visible=set(ids)), cassandra=False)[0] == []
    with Archive(SQLiteBackend(tmp_path / "store"), owns_backend=True) as archive:
        archive.delete(ids[0])  # the model still counts it
    problems, _notes = stats_problems(bench, Verdict(visible=set(ids)), cassandra=False)
    assert "stats differs from the model: snapshots: found 2, expected 3" in problems


def test_the_workflow_s_version_of_a_restored_snapshot_counts_as_sent(tmp_path: Path) -> None:
    """A restore into a workflow that did not hold the snapshot stores it there with the
    workflow's own ``$modified`` (as the engine saves it). After a delete the sync may
    archive that version: read back, it is right and counted on its own day; content sent
    by nobody is still named."""
    bench, ids = _stored(tmp_path, 2)
    with Archive(SQLiteBackend(tmp_path / "store"), owns_backend=True) as archive:
        doc = archive.load(ids[0])
        body = to_xml(doc, collection=False)
        archive.delete(ids[0])
        status, _headers, _body = bench.double._restore(body)
        assert status == 200
        version = bench.double.snapshots[ids[0]]
        assert version.get_first("$modified") != doc.get_first("$modified")
        archive.store(version)  # the sync archives the workflow's version
    verdict = look(bench, cassandra=False)
    assert verdict.failures == [] and verdict.visible == set(ids)
    found = verdict.found[ids[0]]
    assert found.day != bench.model.sent[ids[0]].day  # the workflow's day, counted there
    assert stats_problems(bench, verdict, cassandra=False)[0] == []
    other = Corpus(3, large=0).snapshot(0, 1)
    other["$uniqueid"] = ids[1]  # another content under an id sent
    with Archive(SQLiteBackend(tmp_path / "store"), owns_backend=True) as archive:
        archive.delete(ids[1])
        archive.store(other)
    assert look(bench, cassandra=False).failures == [
        f"{ids[1]} reads back other than what was sent"
    ]
