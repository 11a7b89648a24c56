"""The books of the jobs that stop and go on (``archive/part_runs.py``): a book written by
the version before the one walk primitive is taken up by this one. On both backends."""

from __future__ import annotations

from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.snapshots import Archive
from support.snapshots import make_snapshot, numbered_origin

INSTANCES = 6


def test_an_instance_book_of_the_version_before_is_taken_up(archive: Archive) -> None:
    """Its book had no ``walk`` (an instance run walks one table): the run goes on after
    its place with its counts, and asked another key begins again."""
    for k in range(INSTANCES):
        archive.store(make_snapshot(k, origin=numbered_origin(k)))
    walked = list(archive.index.instances_in_range())
    place, _ids = walked[2]
    old = {"plan": "whole", "key": "k1", "after": place, "instances": 3, "job": {"n": 3}}
    CheckBooks(archive.backend).write("job/1/1", {**old, "saved": 1})
    with archive.open_instance_run(name="job", key="k1") as run:
        assert (run.saved, run.met, run.resumed) == ({"n": 3}, 3, "after 3 instances")
        assert [ids for _at, ids in run.instances()] == [ids for _at, ids in walked[3:]]
    with archive.open_instance_run(name="job", key="k2") as run:
        assert (run.saved, run.met, run.resumed) == (None, 0, "")
        assert len(list(run.instances())) == INSTANCES
