"""How each operation of a round runs, and what its outcome tells: which snapshots it
acknowledged or deleted, and what it saw that breaks a rule of the model (a stable
snapshot that read back different or not at all, an exit code no run should give).

Every operation runs on a thread of the harness; the process kinds start the real CLI
(``processes.run``), ``push`` and ``api`` talk HTTP to ``serve``. What can only be judged
once the round is over and the store is looked at (a backup's files, an export's rows,
a retention that finished) is returned as a check for :mod:`.invariants` to run.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from imixs_archive.document.conventions import iter_files
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.document.xml_writer import to_xml
from support.torture.corpus import Corpus
from support.torture.double import TortureDouble
from support.torture.model import Model, fingerprint
from support.torture.processes import TESTS, Ran, Serve, run
from support.torture.schedule import Op

IMPORT_REPORT = re.compile(rb"(\d+) new, (\d+) already present, (\d+) failed")
PER_DATA_FILE = 25
"""Snapshots per ``<data>`` file of an import the schedule wants so (option ``data``);
the others write a file per snapshot, as a backup folder holds them."""


@dataclass
class Bench:
    """What the operations of a run share."""

    env: dict[str, str]
    work: Path
    corpus: Corpus
    model: Model
    double: TortureDouble
    serve: Serve
    timeout: float = 300.0
    round_over: threading.Event = field(default_factory=threading.Event)
    """Set when a round's operations have ended: the background readers stop."""


@dataclass(frozen=True)
class View:
    """A round as its operations see it."""

    number: int
    required: frozenset[str]
    """Required when the round began."""
    may_go: frozenset[str]
    """What the round may remove: what its deletes name and every snapshot of an expired
    instance (retention, the command's or ``serve``'s, may run at any time), except those
    of firmly held instances."""

    @property
    def removable(self) -> frozenset[str]:
        """Of the required snapshots, those the round may remove."""
        return self.required & self.may_go

    def may_remove(self, sid: str) -> bool:
        return sid in self.may_go

    @property
    def stable(self) -> frozenset[str]:
        """Snapshots that must read back equal at any moment of the round."""
        return self.required - self.removable


@dataclass
class Seen:
    """The store after a round, as :mod:`.invariants` found it."""

    visible: set[str]
    model: Model
    round: int


Check = Callable[[Seen], list[str]]


@dataclass
class Outcome:
    op: Op
    runs: list[Ran] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)
    """Snapshots it acknowledged as stored."""
    deleted: set[str] = field(default_factory=set)
    """Snapshots it acknowledged as deleted."""
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return any(r.killed for r in self.runs)

    def fail(self, text: str, ran: Ran | None = None) -> None:
        where = f" [{ran.command()} -> exit {ran.code}: {ran.tail()}]" if ran else ""
        self.failures.append(f"{self.op.label()}: {text}{where}")


def sent_ids(bench: Bench, op: Op) -> list[str]:
    ids = []
    for number, step in op.sends:
        ids.append(bench.corpus.snapshot_id(bench.corpus.instance(number), step))
    return list(dict.fromkeys(ids))


def docs_of(bench: Bench, op: Op) -> list[Document]:
    seen: set[tuple[int, int]] = set()
    docs = []
    for pair in op.sends:
        if pair not in seen:
            seen.add(pair)
            docs.append(bench.corpus.snapshot(*pair))
    return docs


def _cli(bench: Bench, op: Op, args: list[str], **kw: object) -> Ran:
    kill = op.kill_after
    return run(args, bench.env, kill_after=kill, timeout=bench.timeout, **kw)  # type: ignore[arg-type]


def _unexpected(out: Outcome, ran: Ran, allowed: tuple[int, ...] = (0,)) -> bool:
    """A process that ended by itself with a code not ``allowed`` is a failure."""
    if ran.timed_out:
        out.fail(f"still running after {ran.seconds:.0f}s (hung?)", ran)
        return True
    if ran.code is not None and ran.code not in allowed:
        out.fail("unexpected exit code", ran)
        return True
    if "Traceback" in ran.err:
        out.fail("a traceback reached the user", ran)
        return True
    return False


# ---- writers ---------------------------------------------------------------------------


class ImportFiles:
    """The files of an import, written as the snapshots are made (before the round
    starts): a file per snapshot, or ``<data>`` files of :data:`PER_DATA_FILE`."""

    def __init__(self, op: Op, folder: Path) -> None:
        folder.mkdir(parents=True)
        self.folder = folder
        self.per_file = PER_DATA_FILE if op.option == "data" else 1
        self._held: list[Document] = []
        self._count = 0

    def add(self, doc: Document) -> None:
        self._held.append(doc)
        if len(self._held) >= self.per_file:
            self.flush()

    def flush(self) -> None:
        if not self._held:
            return
        one = self.per_file == 1
        body = to_xml(self._held[0]) if one else to_xml(self._held, collection=True)
        (self.folder / f"f{self._count:05d}.xml").write_bytes(body)
        self._count += 1
        self._held = []


def do_import(bench: Bench, op: Op, view: View, folder: Path) -> Outcome:
    out = Outcome(op)
    ran = _cli(bench, op, ["import", str(folder)])
    out.runs.append(ran)
    if ran.killed or _unexpected(out, ran):
        return out
    found = IMPORT_REPORT.search(ran.out)
    count = len(sent_ids(bench, op))
    if found is None or int(found[1]) + int(found[2]) != count or int(found[3]):
        out.fail(f"reported {found[0] if found else ran.out[-200:]!r} for {count} sent", ran)
        return out
    out.acked.update(sent_ids(bench, op))
    return out


def do_push(bench: Bench, op: Op, view: View) -> Outcome:
    """The snapshots in requests of one to four, each acknowledged by a 2xx."""
    out = Outcome(op)
    docs = docs_of(bench, op)
    for n in range(0, len(docs), 4):
        chunk = docs[n : n + 4]
        url = bench.serve.wait_ready(60)
        if url is None:
            out.notes.append("serve not up: push skipped")
            continue
        generation = bench.serve.generation
        try:
            answer = httpx.post(
                f"{url}/api/archive/snapshot",
                content=to_xml(chunk, collection=True),
                headers={"Content-Type": "application/xml"},
                timeout=120,
            )
        except httpx.HTTPError as exc:
            if generation == bench.serve.generation:
                out.fail(f"push failed while serve ran: {exc!r}")
            continue
        if answer.status_code in (200, 201):
            out.acked.update(str(d.get_first("$uniqueid")) for d in chunk)
        elif generation == bench.serve.generation:
            out.fail(f"push answered {answer.status_code}: {answer.text[:300]}")
    return out


def do_sync(bench: Bench, op: Op, view: View) -> Outcome:
    """The workflow saves the snapshots (events), a ``sync`` loop runs for a while and is
    stopped (SIGTERM) or killed. Acknowledged: the events it (or any) deleted, found when
    the round is checked."""
    out = Outcome(op)
    for doc in docs_of(bench, op):
        bench.double.offer(doc)
    ran = run(
        ["sync"],
        bench.env,
        kill_after=op.kill_after if op.kill_after and op.kill_after < op.seconds else None,
        stop_after=op.seconds,
        timeout=bench.timeout,
    )
    out.runs.append(ran)
    if not ran.killed:
        _unexpected(out, ran, (0, -15))
    return out


# ---- deletes, retention, holds -----------------------------------------------------------


def do_delete(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    model = bench.model
    held = {sid: model.firmly_held(sid.rsplit("-", 1)[0]) for sid in op.targets}
    ran = _cli(bench, op, ["delete", *op.targets])
    out.runs.append(ran)
    if ran.killed or _unexpected(out, ran, (0, 4, 8)):
        return out
    for sid in op.targets:
        if f"{sid}: deleted".encode() in ran.out:
            out.deleted.add(sid)
            if held[sid]:
                out.fail(f"deleted {sid} of an instance under legal hold", ran)
        elif f"{sid}: not in the archive" in ran.err:
            if sid in view.stable:
                out.fail(f"says {sid} is not in the archive: it was acknowledged", ran)
        elif sid in ran.err:  # refused: held
            if model.held.get(sid.rsplit("-", 1)[0], False) is False:
                out.fail(f"refused {sid} as held: no hold was placed", ran)
        else:
            out.fail(f"says nothing of {sid}", ran)
    return out


def do_retention(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    ran = _cli(bench, op, ["retention"])
    out.runs.append(ran)
    if ran.killed or _unexpected(out, ran, (0, 75)):
        return out
    if ran.code == 0:
        out.notes.append("retention finished")
    return out


def do_hold(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    if not op.targets:
        return out
    uid = op.targets[0]
    args = ["legal-hold", op.option, uid]
    if op.option == "place":
        args += ["--reason", "torture", "--ahead"]
    ran = _cli(bench, op, args)
    out.runs.append(ran)
    _unexpected(out, ran, (0, 4) if op.option == "release" else (0,))  # 4: no hold
    return out


# ---- collection, checks, ledger ------------------------------------------------------------


def do_simple(
    bench: Bench, op: Op, view: View, args: list[str], allowed: tuple[int, ...]
) -> Outcome:
    out = Outcome(op)
    ran = _cli(bench, op, args)
    out.runs.append(ran)
    if not ran.killed:
        _unexpected(out, ran, allowed)
    return out


def do_gc(bench: Bench, op: Op, view: View) -> Outcome:
    return do_simple(bench, op, view, ["gc", *op.option.split()], (0, 75))


def do_verify(bench: Bench, op: Op, view: View) -> Outcome:
    out = do_simple(bench, op, view, ["verify", *op.option.split()], (0, 5, 75))
    for ran in out.runs:
        if ran.code == 5:  # while others write: said, judged by the quiet verify after
            problems = [line for line in ran.out.decode().splitlines() if "PROBLEM" in line]
            out.notes.append(
                f"verify {op.option} found problems while others wrote: {problems[:3]}"
            )
    return out


def do_ledger(bench: Bench, op: Op, view: View) -> Outcome:
    return do_simple(bench, op, view, ["ledger", "checkpoint"], (0, 75))


# ---- copies out: backup, export, restore ---------------------------------------------------


def do_backup(bench: Bench, op: Op, view: View, chain_start: int) -> Outcome:
    out = Outcome(op)
    folder = bench.work / "backup"
    ran = _cli(bench, op, ["backup", str(folder), "--create", "--all-snapshots"])
    out.runs.append(ran)
    if ran.killed or _unexpected(out, ran, (0, 75)):
        return out
    if ran.code == 0:
        out.checks.append(lambda seen: backup_problems(bench, folder, seen, chain_start, view))
    return out


def backup_problems(
    bench: Bench, folder: Path, seen: Seen, chain_start: int, view: View
) -> list[str]:
    """Every backup file whole and equal to what was sent; every snapshot required since
    the backup's first run began (and not removable since) in it."""
    problems = []
    found: set[str] = set()
    for path in folder.rglob("*.xml"):
        sid = path.stem
        found.add(sid)
        try:
            (doc,) = read_xml(path.read_bytes())
        except Exception as exc:
            problems.append(f"backup file {path} is not one whole document: {exc}")
            continue
        if seen.model.version(sid, fingerprint(doc)) is None:
            problems.append(f"backup file {path} is not what was sent for {sid}")
    for sid in _kept_throughout(seen, chain_start, view):
        if sid not in found:
            problems.append(f"backup (exit 0) lacks {sid}, archived since round {chain_start}")
    return problems


def _kept_throughout(seen: Seen, chain_start: int, view: View) -> set[str]:
    """Snapshots archived from before ``chain_start`` to the end of this round, which no
    operation could remove meanwhile: a copy of everything that ran then holds them."""
    return seen.model.stable_since(chain_start) & view.stable & seen.visible


def do_export(bench: Bench, op: Op, view: View, chain_start: int) -> Outcome:
    out = Outcome(op)
    target = bench.work / "export" / "table.csv"
    target.parent.mkdir(exist_ok=True)
    target.unlink(missing_ok=True)
    ran = _cli(bench, op, ["export-table", str(target), "--items", "subject,amount"])
    out.runs.append(ran)
    if not ran.killed and _unexpected(out, ran, (0, 75)):
        return out
    if ran.code == 0 or (ran.killed and target.exists()):  # it appears only when complete
        whole = ran.code == 0
        out.checks.append(lambda seen: export_problems(target, seen, chain_start, view, whole))
    return out


def export_problems(
    target: Path, seen: Seen, chain_start: int, view: View, whole: bool
) -> list[str]:
    with target.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    ids = [row["snapshot"] for row in rows]
    problems = []
    if len(ids) != len(set(ids)):
        problems.append(f"export-table wrote {len(ids) - len(set(ids))} rows twice")
    unknown = set(ids) - set(seen.model.sent)
    if unknown:
        problems.append(f"export-table wrote rows of snapshots never sent: {sorted(unknown)[:3]}")
    if whole:
        missing = _kept_throughout(seen, chain_start, view) - set(ids)
        if missing:
            problems.append(
                f"export-table (exit 0) lacks {len(missing)} snapshots archived since round "
                f"{chain_start}: {sorted(missing)[:3]}"
            )
    return problems


def do_restore(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    if not op.targets:
        return out
    uid = op.targets[0]
    ran = _cli(bench, op, ["restore", "--uniqueid", uid])
    out.runs.append(ran)
    if ran.killed or _unexpected(out, ran, (0, 4)):
        return out
    wanted = {sid for sid in view.stable if sid.rsplit("-", 1)[0] == uid}
    if ran.code == 4 and wanted:
        out.fail(f"found nothing of {uid}: {len(wanted)} snapshots were acknowledged", ran)
    missing = {sid for sid in wanted if sid not in bench.double.snapshots}
    if ran.code == 0 and missing:
        out.fail(f"exit 0, but the workflow did not get {sorted(missing)[:3]}", ran)
    return out


def restored_problems(double: TortureDouble, model: Model, checked: set[str]) -> list[str]:
    """Every body a restore sent is one whole snapshot, equal to what was sent."""
    problems = []
    with double.lock:
        received = {sid: list(bodies) for sid, bodies in double.received.items()}
    for sid, bodies in received.items():
        for n, body in enumerate(bodies):
            if (sid, n) in checked:  # type: ignore[comparison-overlap]
                continue
            checked.add((sid, n))  # type: ignore[arg-type]
            try:
                (doc,) = read_xml(body)
                same = model.version(sid, fingerprint(doc)) is not None
            except Exception:
                same = False
            if not same:
                problems.append(f"restore sent {sid} other than what was archived")
    return problems


# ---- readers ---------------------------------------------------------------------------------


def do_get(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    started = time.monotonic()
    for sid in op.targets:
        left = (
            None
            if op.kill_after is None
            else max(op.kill_after - (time.monotonic() - started), 0.05)
        )
        ran = run(["get", sid], bench.env, kill_after=left, timeout=bench.timeout)
        out.runs.append(ran)
        if ran.killed:
            break
        _judge_read(out, ran, sid, view, lambda done: fingerprint(read_xml(done.out)[0]), bench)
    return out


def do_file(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    for sid in op.targets:
        sent = bench.model.sent.get(sid)
        if sent is None or not sent.files:
            continue
        name, _md5, sha, _size = sent.files[0]
        ran = _cli(bench, op, ["file", sid, name])
        out.runs.append(ran)
        if ran.killed:
            break
        _judge_read(out, ran, sid, view, lambda _done: "", bench, digest=sha)
    return out


def _judge_read(
    out: Outcome,
    ran: Ran,
    sid: str,
    view: View,
    compute: Callable[[Ran], str],
    bench: Bench,
    digest: str | None = None,
) -> None:
    """A read of a stable snapshot: exit 0 and equal; of any other: equal when found."""
    if _unexpected(out, ran, (0, 4)):
        return
    if ran.code == 4:
        if sid in view.stable:
            out.fail(f"{sid} not found: it was acknowledged", ran)
        return
    if digest is not None:
        same = hashlib.sha256(ran.out).hexdigest() == digest
    else:
        try:
            same = bench.model.version(sid, compute(ran)) is not None
        except Exception as exc:
            out.fail(f"{sid} read back unparsable: {exc}", ran)
            return
    if not same:
        out.fail(f"{sid} read back other than what was sent", ran)


def do_list(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    uid = op.targets[0] if op.targets else ""
    if op.option == "uniqueid" and uid:
        args = ["list", "--uniqueid", uid, "--json", "--limit", "1000"]
        must = {sid for sid in view.stable if sid.rsplit("-", 1)[0] == uid}
    elif op.option == "days":
        first, last = "2024-03-01", "2024-05-31"
        args = ["list", "--from", first, "--to", last, "--json", "--limit", "100000"]
        must = {s for s in view.stable if first <= bench.model.as_archived(s).day <= last}
    else:
        args = ["list", "--json", "--limit", "1000000"]
        must = set(view.stable)
    ran = _cli(bench, op, args)
    out.runs.append(ran)
    # 4: no snapshot of the instance, or in the days (then none may be acknowledged there:
    # the check below names those not listed)
    none = (0, 4) if (op.option == "uniqueid" and uid) or op.option == "days" else (0,)
    if ran.killed or _unexpected(out, ran, none):
        return out
    listed = {json.loads(line)["snapshot"] for line in ran.out.decode().splitlines() if line}
    unknown = listed - set(bench.model.sent)
    if unknown:
        out.fail(f"lists snapshots never sent: {sorted(unknown)[:3]}", ran)
    if must - listed:
        out.fail(
            f"does not list {len(must - listed)} acknowledged: {sorted(must - listed)[:3]}", ran
        )
    return out


def do_stats(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    ran = _cli(bench, op, ["stats", "--json"])
    out.runs.append(ran)
    if not ran.killed and not _unexpected(out, ran):
        json.loads(ran.out)
    return out


def do_opener(bench: Bench, op: Op, view: View) -> Outcome:
    out = Outcome(op)
    env = {**bench.env, "PYTHONPATH": str(TESTS)}
    background = op.option == "background"
    seconds = bench.timeout if background else op.seconds
    mode = "bare" if background else "files"
    args = ["-m", "support.torture.opener", f"{seconds:.1f}", mode, *op.targets]
    until = bench.round_over if background else None
    ran = run(args, env, kill_after=op.kill_after, timeout=bench.timeout, python=True, until=until)
    out.runs.append(ran)
    if not ran.killed and _unexpected(out, ran, (0, -15)):
        return out
    for line in ran.out.decode().splitlines():
        sid, _, said = line.partition(" ")
        known = bench.model.version(sid, said, bare=background)
        if said.startswith("error"):
            out.fail(f"read of {sid}: {said}", ran)
        elif said == "missing":
            if sid in view.stable:
                out.fail(f"{sid} missing: it was acknowledged", ran)
        elif known is None:
            out.fail(f"{sid} read back other than what was sent", ran)
    return out


def do_api(bench: Bench, op: Op, view: View) -> Outcome:
    """The API's reads for a while: snapshots, files, a day listing, the stats."""
    out = Outcome(op)
    deadline = time.monotonic() + op.seconds
    turn = 0
    while time.monotonic() < deadline and op.targets:
        url = bench.serve.wait_ready(max(deadline - time.monotonic(), 0.1))
        if url is None:
            break
        generation = bench.serve.generation
        sid = op.targets[turn % len(op.targets)]
        turn += 1
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                _api_round(client, bench, sid, view, out)
        except httpx.HTTPError as exc:
            if generation == bench.serve.generation:
                out.fail(f"API read of {sid} failed while serve ran: {exc!r}")
    return out


def _api_round(client: httpx.Client, bench: Bench, sid: str, view: View, out: Outcome) -> None:
    sent = bench.model.sent.get(sid)
    answer = client.get(f"/api/archive/snapshot/{sid}")
    if answer.status_code == 404:
        if sid in view.stable:
            out.fail(f"GET snapshot {sid}: 404, it was acknowledged")
    elif answer.status_code != 200:
        out.fail(f"GET snapshot {sid}: {answer.status_code} {answer.text[:300]}")
    elif bench.model.version(sid, fingerprint(read_xml(answer.content)[0])) is None:
        out.fail(f"GET snapshot {sid}: other than what was sent")
    if sent is not None and sent.files and answer.status_code == 200:
        name, _md5, sha, _size = sent.files[0]
        got = client.get(f"/api/archive/snapshot/{sid}/file/{name}")
        if got.status_code == 200 and hashlib.sha256(got.content).hexdigest() != sha:
            out.fail(f"GET file {name} of {sid}: other bytes")
        elif got.status_code not in (200, 404):
            out.fail(f"GET file {name} of {sid}: {got.status_code} {got.text[:300]}")
    day = bench.model.as_archived(sid).day if sent is not None else "2024-03-10"
    listing = client.get("/api/archive/snapshots", params={"from": day, "to": day, "limit": 1000})
    if listing.status_code != 200:
        out.fail(f"GET snapshots of {day}: {listing.status_code} {listing.text[:300]}")
    stats = client.get("/api/stats")
    if stats.status_code != 200:
        out.fail(f"GET stats: {stats.status_code} {stats.text[:300]}")


def files_of(doc: Document) -> list[str]:
    return [entry.name for entry in iter_files(doc)]
