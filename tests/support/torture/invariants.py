"""The checks after a round, with every process of the round ended and ``serve`` stopped:
the store's file intact (SQLite), every listed snapshot readable whole and equal to what was
sent, every acknowledged one there, the counts of ``stats`` exact, ``verify`` and ``ledger
verify`` clean, the sync without dead letters, and what the operations left to check
(backups, exports, retention that finished)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from imixs_archive.config import load_settings
from imixs_archive.document.conventions import origin_id
from imixs_archive.errors import ArchiveError
from imixs_archive.filestore.reading import StoredContent
from imixs_archive.runtime import open_archive
from support.torture.model import Model, Sent, content_digest, fingerprint
from support.torture.operations import Bench, Outcome, View
from support.torture.processes import run

STATS_KEYS = ("snapshots", "instances", "files", "file_bytes", "logical_bytes", "by_day")


@dataclass
class Verdict:
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    visible: set[str] = field(default_factory=set)
    holds: dict[str, bool] = field(default_factory=dict)
    found: dict[str, Sent] = field(default_factory=dict)
    """The version of each visible snapshot read back."""


def look(bench: Bench, cassandra: bool) -> Verdict:
    """What the store holds now: its file checked, every snapshot read whole and compared."""
    verdict = Verdict()
    try:
        archive = open_archive(load_settings(bench.env), create=False)
    except ArchiveError as exc:
        verdict.failures.append(f"the store cannot be opened: {exc}")
        return verdict
    with archive:
        if not cassandra:
            problems = archive.backend.file_problems(full=True)
            verdict.failures += [f"store file: {p}" for p in problems[:20]]
        try:
            verdict.visible = set(archive.index.iter_snapshot_ids())
        except ArchiveError as exc:
            verdict.failures.append(f"the snapshots cannot be listed: {exc}")
            return verdict
        _compare(archive, bench.model, verdict)
        verdict.holds = {h.uniqueid: True for h in archive.holds.list()}
    return verdict


def _compare(archive: object, model: Model, verdict: Verdict) -> None:
    """Each visible snapshot read whole (each distinct file once) and equal to what was
    sent; a snapshot that was never sent is a failure too."""
    digests: dict[str, str] = {}

    def digest(value: object) -> str:
        if isinstance(value, StoredContent):
            if value.key not in digests:
                digests[value.key] = content_digest(value)
            return digests[value.key]
        return content_digest(value)

    for sid in sorted(verdict.visible):
        if sid not in model.sent:
            verdict.failures.append(f"{sid} is in the store but was never sent")
            continue
        try:
            doc = archive.load(sid)  # type: ignore[attr-defined]
            version = model.version(sid, fingerprint(doc, digest))
        except ArchiveError as exc:
            verdict.failures.append(f"{sid} is listed but cannot be read whole: {exc}")
            continue
        if version is None:
            verdict.failures.append(f"{sid} reads back other than what was sent")
        else:
            verdict.found[sid] = version


def against_model(
    model: Model, view: View, outcomes: Iterable[Outcome], visible: set[str], resent: set[str]
) -> list[str]:
    """Nothing required lost; every acknowledged store there and every acknowledged delete
    gone (unless the round sent it again, or the workflow may bring it back)."""
    failures = []
    for sid in sorted(view.required - view.removable - visible):
        failures.append(f"{sid} was acknowledged (since round {model.required[sid]}) and is gone")
    for out in outcomes:
        for sid in sorted(out.acked - visible):
            if not view.may_remove(sid):
                failures.append(f"{out.op.label()}: acknowledged {sid}, which is not in the store")
        for sid in sorted(out.deleted & visible - resent - model.in_workflow):
            failures.append(f"{out.op.label()}: deleted {sid}, which is in the store again")
    return failures


def stats_problems(bench: Bench, verdict: Verdict, cassandra: bool) -> tuple[list[str], list[str]]:
    """``stats`` against the model. On Cassandra a writer killed between a snapshot's row
    and its fact, or two writers bringing one new file at once, leave the kept figures
    off (docs/analytics.md, "Exact, and how drift is repaired"): there ``stats
    --reconcile`` runs first when they differ, and only what it leaves is a failure. On
    SQLite a snapshot's fact is written in its own transaction: any difference is one."""
    expected = bench.model.expected_stats(verdict.visible, verdict.found)
    found, problems = _stats(bench)
    notes: list[str] = []
    differ = problems or _differences(found, expected)
    if differ and cassandra:
        notes.append(f"stats before --reconcile (drift documented on Cassandra): {differ}")
        ran = run(["stats", "--reconcile"], bench.env, timeout=bench.timeout)
        if ran.code != 0:
            return [f"stats --reconcile: exit {ran.code}: {ran.tail()}"], notes
        found, problems = _stats(bench)
        differ = problems or _differences(found, expected)
    return [f"stats differs from the model: {d}" for d in differ], notes


def _stats(bench: Bench) -> tuple[dict[str, object], list[str]]:
    ran = run(["stats", "--json"], bench.env, timeout=bench.timeout)
    if ran.code != 0:
        return {}, [f"stats --json: exit {ran.code}: {ran.tail()}"]
    return json.loads(ran.out), []


def _differences(found: dict[str, object], expected: dict[str, object]) -> list[str]:
    out = []
    for key in STATS_KEYS:
        if found.get(key) != expected[key]:
            if key == "by_day":
                days = set(found.get(key) or {}) | set(expected[key])  # type: ignore[arg-type]
                wrong = {
                    d: ((found.get(key) or {}).get(d), expected[key].get(d))  # type: ignore[attr-defined]
                    for d in sorted(days)
                    if (found.get(key) or {}).get(d) != expected[key].get(d)  # type: ignore[attr-defined]
                }
                out.append(f"by_day (found, expected): {dict(list(wrong.items())[:5])}")
            else:
                out.append(f"{key}: found {found.get(key)}, expected {expected[key]}")
    return out


def quiet_checks(bench: Bench) -> list[str]:
    """``verify`` and ``ledger verify`` from the start, alone: both must hold; no dead
    letters."""
    failures = []
    ran = run(["verify", "--restart"], bench.env, timeout=bench.timeout)
    if ran.code != 0:
        lines = [line for line in ran.out.decode().splitlines() if line.strip()]
        failures.append(f"verify: exit {ran.code}: {' | '.join(lines[-8:])} {ran.tail(3)}")
    ran = run(["ledger", "verify", "--restart"], bench.env, timeout=bench.timeout)
    if ran.code != 0:
        lines = [line for line in ran.out.decode().splitlines() if line.strip()]
        failures.append(f"ledger verify: exit {ran.code}: {' | '.join(lines[-8:])} {ran.tail(3)}")
    ran = run(["sync", "--status", "--json"], bench.env, timeout=bench.timeout)
    if ran.code != 0:
        failures.append(f"sync --status: exit {ran.code}: {ran.tail()}")
    else:
        status = json.loads(ran.out)
        dead = status.get("dead_letters") or []
        if dead:
            failures.append(f"the sync has dead letters: {json.dumps(dead)[:500]}")
    return failures


def retention_problems(model: Model, visible: set[str], chain_start: int) -> list[str]:
    """A retention that exited 0 took every expired instance left alone since its first
    run began (no snapshot sent, no hold placed or released, never held)."""
    failures = []
    by_instance: dict[str, list[str]] = {}
    for sid in visible:
        by_instance.setdefault(origin_id(sid), []).append(sid)
    for uid, sids in sorted(by_instance.items()):
        if not model.sent[sids[0]].expires or model.held.get(uid, False) is not False:
            continue
        if model.touched.get(uid, 0) >= chain_start:
            continue
        failures.append(
            f"retention exited 0 but left {len(sids)} snapshots of expired instance {uid}"
        )
    return failures


def hold_problems(model: Model, holds: dict[str, bool], outcomes: Iterable[Outcome]) -> list[str]:
    """A hold placed (exit 0) by the only hold operation of its instance in the round is
    there; one released likewise is gone."""
    failures = []
    ops = [out for out in outcomes if out.op.kind == "hold" and out.op.targets]
    for out in ops:
        uid = out.op.targets[0]
        alone = sum(1 for o in ops if o.op.targets[0] == uid) == 1
        ran = out.runs[0] if out.runs else None
        if not alone or ran is None or ran.code != 0:
            continue
        if holds.get(uid, False) != (out.op.option == "place"):
            failures.append(
                f"{out.op.label()}: exit 0, but the store says held={holds.get(uid, False)}"
            )
    return failures
