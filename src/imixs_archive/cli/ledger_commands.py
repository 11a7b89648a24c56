"""``ledger``: the archive's signed log of what it did (docs/ledger.md).

``head`` prints the latest checkpoint, ``verify`` checks the log and the store against it,
``proof`` prints an inclusion proof and ``check-proof`` checks one without the store (the
auditor's tool), ``consistency`` and ``check-consistency`` do the same for an older
checkpoint, ``entries`` prints entries by number, ``init`` logs what an existing archive
holds, ``key`` prints the public key, ``checkpoint`` sequences what is queued and signs a
checkpoint now.

Each but ``init`` (and ``check-proof`` and ``check-consistency``, which need no store)
works on an archive that exists: on a folder or keyspace without one it says so and exits
4, creating nothing (no store, no signing key). They still write into the archive they
find: the queued entries
into the log, and, where the ledger has not started, its head and its key.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from imixs_archive.cli.context import Context, store_command
from imixs_archive.cli.output import count_progress, print_json
from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError, IntegrityError
from imixs_archive.ledger.found import init_ledger
from imixs_archive.ledger.keys import (
    check_origin,
    configured_origin,
    key_path,
    load_signer,
    read_verifier,
)
from imixs_archive.ledger.new_log import start_new_log
from imixs_archive.ledger.proof_files import TLOG_PROOF, check_consistency, check_tlog_proof
from imixs_archive.ledger.proofs import check_inclusion, consistency, inclusion
from imixs_archive.ledger.published import logged_entries, require_entries
from imixs_archive.ledger.schedule import sign_now
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.tree import read_tree
from imixs_archive.ledger.verify import LedgerReport, quorum_problem, verify_ledger
from imixs_archive.timezones import from_epoch_ms
from imixs_archive.tlog.cosignature import CosignatureVerifier
from imixs_archive.tlog.note import Checkpoint, NoteError

_EXISTING = {"reads_only": True, "writes": True}
"""The parser's defaults of a command that needs an archive there and writes into it."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ledger = sub.add_parser(
        "ledger",
        help="the signed log of what the archive did: checkpoints, verify, proofs",
        description="An append-only log of every snapshot stored or deleted and every legal "
        "hold placed or released, in an RFC 6962 Merkle tree whose checkpoints are signed "
        "(docs/ledger.md).",
    )
    commands = ledger.add_subparsers(dest="ledger_command", metavar="COMMAND", required=True)

    p = store_command(commands, "head", help="print the latest signed checkpoint")
    p.add_argument("--json", action="store_true", help="the head and its checkpoint as JSON")
    p.set_defaults(handler=cmd_head, **_EXISTING)

    p = store_command(
        commands,
        "verify",
        help="check the log against its checkpoints and the store against the log",
        description="Exit 0 when everything holds, 5 otherwise, naming every snapshot altered, "
        "removed without a logged deletion, or stored without an entry. Resumes an "
        "interrupted run.",
    )
    p.add_argument(
        "--since",
        type=Path,
        metavar="CHECKPOINT_FILE",
        help="a checkpoint kept earlier: the log must still begin with what it signed",
    )
    p.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="PUBLIC_KEY",
        help="the ledger's public key (text or file) to trust; default: the key file's "
        "and the checkpoint folder's",
    )
    _witness_options(p, "the ledger's last checkpoint; default: ARCHIVE_LEDGER_WITNESSES")
    p.add_argument(
        "--read-all",
        action="store_true",
        help="also read every piece and check its SHA-256 (else only pieces without one)",
    )
    p.add_argument("--restart", action="store_true", help="begin again, not where a run stopped")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_verify, **_EXISTING)

    p = _proof_command(
        commands,
        "proof",
        "print the inclusion proof of a subject's last entry (c2sp.org/tlog-proof@v1)",
        cmd_proof,
    )
    p.add_argument(
        "snapshot_id", metavar="SUBJECT", help="a snapshot id, or hold:<instance> / <case>"
    )

    p = commands.add_parser(
        "check-proof",
        help="check an inclusion proof without the store (the auditor's tool)",
    )
    p.add_argument(
        "file", type=Path, metavar="FILE", help="a proof `ledger proof` printed (or its JSON)"
    )
    _key_argument(p)
    p.add_argument(
        "--entry",
        type=Path,
        metavar="ENTRY_FILE",
        help="the entry's bytes, for a tlog-proof without them (extra)",
    )
    _witness_options(p, "the proof's checkpoint")
    p.set_defaults(handler=cmd_check_proof)

    p = _proof_command(
        commands,
        "consistency",
        "print the proof that an older checkpoint's log begins today's (tlog-witness form)",
        cmd_consistency,
    )
    p.add_argument(
        "old", metavar="OLD", help="the older checkpoint: its file, or the size it signs"
    )

    p = commands.add_parser(
        "check-consistency",
        help="check, without the store, that an older checkpoint's log begins a newer one's",
    )
    p.add_argument("old", type=Path, metavar="OLD", help="the older checkpoint's file")
    p.add_argument(
        "new", type=Path, metavar="NEW", help="the proof `ledger consistency OLD` printed"
    )
    _key_argument(p)
    p.set_defaults(handler=cmd_check_consistency)

    p = store_command(
        commands, "entries", help="print log entries by number, one a line, as logged"
    )
    p.add_argument("start", type=int, metavar="INDEX", help="the first entry's number (from 0)")
    p.add_argument("--count", type=int, default=1, help="how many entries (default 1)")
    p.set_defaults(handler=cmd_entries, **_EXISTING)

    p = store_command(commands, "init", help="log what the store holds that the ledger does not")
    p.add_argument(
        "--origin",
        help="the log's name where the ledger starts: a schema-less URL such as "
        "archive.example.com/invoices (default: ARCHIVE_LEDGER_ORIGIN, else the host and path "
        "of ARCHIVE_PUBLIC_URL; asked for when neither is set)",
    )
    p.set_defaults(handler=cmd_init)

    p = store_command(
        commands,
        "new-log",
        help="start a new log (a new origin and key) from the store's log as it is",
        description="The one step after a refused fork (an older copy of the store put back "
        "on purpose): retires the key, makes one for the new origin, records the step and "
        "signs the new log's first checkpoint (docs/ledger.md).",
    )
    p.add_argument("--origin", required=True, help="the new log's origin (a schema-less URL)")
    p.add_argument("--reason", required=True, help="why (recorded with the step)")
    p.set_defaults(handler=cmd_new_log, **_EXISTING)

    p = store_command(commands, "key", help="print the ledger's public key")
    p.set_defaults(handler=cmd_key, **_EXISTING)

    p = store_command(
        commands,
        "checkpoint",
        help="log what is queued and sign a checkpoint now",
    )
    p.set_defaults(handler=cmd_checkpoint, **_EXISTING)


def _proof_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    text: str,
    handler: Callable[[argparse.Namespace, Context], int],
) -> argparse.ArgumentParser:
    """A command that prints a proof from the store: as a file, or with ``--json``."""
    p = store_command(commands, name, help=text)
    p.add_argument("--json", action="store_true", help="the proof as JSON (as the API gives it)")
    p.set_defaults(handler=handler, **_EXISTING)
    return p


def _key_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--key", required=True, metavar="PUBLIC_KEY", help="the ledger's public key (text or file)"
    )


def _witness_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--witness",
        action="append",
        metavar="VKEY",
        help=f"a witness's cosignature key (text or file; repeatable) whose cosignature on "
        f"{what} counts",
    )
    p.add_argument(
        "--quorum",
        type=int,
        metavar="K",
        help="cosignatures of those witnesses required (default: every --witness given; "
        "for verify without --witness: ARCHIVE_LEDGER_WITNESS_QUORUM)",
    )


def _witnesses(args: argparse.Namespace) -> list[CosignatureVerifier] | None:
    if args.witness is None:
        return None
    keys = []
    for given in args.witness:
        text = given
        if "+" not in given or Path(given).exists():
            try:
                text = Path(given).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"--witness {given!r}: {exc}") from None
        try:
            keys.append(CosignatureVerifier.from_vkey(text))
        except NoteError as exc:
            raise ConfigError(f"--witness: {exc}") from None
    return keys


def cmd_head(args: argparse.Namespace, ctx: Context) -> int:
    with Sequencer(ctx.archive, ctx.settings) as sequencer:
        sequencer.drain()
        head = sequencer.tree()
    if head is None or not head.checkpoint:
        size = head.size if head is not None else 0
        print(
            f"imixs-archive: no signed checkpoint yet ({size} entries logged; "
            "`imixs-archive ledger checkpoint` signs one)",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print_json(
            {
                "origin": head.origin,
                "key": head.key,
                "entries": head.size,
                "checkpoint_size": head.checkpoint_size,
                "signed_at": from_epoch_ms(head.checkpoint_at).isoformat(timespec="seconds"),
                "checkpoint": head.checkpoint,
            }
        )
        return 0
    sys.stdout.write(head.checkpoint)
    return 0


def cmd_checkpoint(args: argparse.Namespace, ctx: Context) -> int:
    with Sequencer(ctx.archive, ctx.settings) as sequencer:
        note, notes = sign_now(sequencer)
    for line in notes:
        print(f"warning: {line}", file=sys.stderr)
    sys.stdout.write(note)
    return 0


def cmd_verify(args: argparse.Namespace, ctx: Context) -> int:
    keys = [read_verifier(key) for key in args.key]
    since = None if args.since is None else _read(args.since)
    witnesses = _witnesses(args)
    with count_progress("ledger entries") as tick:
        report = verify_ledger(
            ctx.archive,
            ctx.settings,
            keys=keys,
            since=since,
            read_all=args.read_all,
            restart=args.restart,
            progress=lambda _stage, count: tick(count),
            witnesses=witnesses,
            quorum=len(witnesses) if args.quorum is None and witnesses else args.quorum,
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(report)
    return 0 if report.ok else 5


def _print_report(report: LedgerReport) -> None:
    for line in report.checkpoints:
        print(f"checked against {line}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    for name, ids in (
        ("altered", report.altered),
        ("removed without a logged deletion", report.removed),
        ("stored without an entry", report.unlogged),
    ):
        for snapshot_id in ids:
            print(f"{name}: {snapshot_id}")
    for snapshot_id in report.removed_elsewhere:
        print(f"removed by another writer (the Java service; no tampering): {snapshot_id}")
    for snapshot_id in report.not_logged:
        print(
            f"not logged (no seal: the Java service's, or from before the ledger; logged "
            f"as found now): {snapshot_id}"
        )
    resumed = f", resumed at entry {report.resumed_at}" if report.resumed_at else ""
    verdict = "everything holds" if report.ok else "PROBLEMS FOUND"
    pending = f"; {report.pending} change(s) still queued" if report.pending else ""
    print(
        f"checked {report.checked} ledger entries{resumed} and {report.snapshots} snapshots: "
        f"{verdict}{pending}"
    )


def cmd_proof(args: argparse.Namespace, ctx: Context) -> int:
    with Sequencer(ctx.archive, ctx.settings) as sequencer:
        proof = inclusion(ctx.archive, sequencer, args.snapshot_id)
    return _print_proof(proof, args.json)


def _print_proof(proof: dict[str, Any], as_json: bool) -> int:
    """A proof command's answer: the proof as the API gives it, else its file."""
    if as_json:
        print(json.dumps(proof, indent=2))
    else:
        sys.stdout.write(proof["file"])
    return 0


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def cmd_check_proof(args: argparse.Namespace, ctx: Context) -> int:
    text = _read(args.file)
    keys = [read_verifier(args.key)]
    if text.startswith(TLOG_PROOF):
        given = None
        if args.entry is not None:
            try:
                given = args.entry.read_bytes().removesuffix(b"\n")
            except OSError as exc:
                raise ConfigError(f"{args.entry}: {exc}") from None
        checked = check_tlog_proof(text, keys, given)
        note = text.partition("\n\n")[2]
    else:
        try:
            proof = json.loads(text)
        except ValueError as exc:
            raise IntegrityError(f"{args.file}: neither a tlog-proof nor JSON: {exc}") from None
        checked = check_inclusion(proof, keys)
        note = str(proof.get("checkpoint", ""))
    witnesses = _witnesses(args) or []
    quorum = len(witnesses) if args.quorum is None else args.quorum
    cosigned = ""
    if witnesses or quorum:
        found = quorum_problem(note, witnesses, quorum)
        if not found.startswith("+"):
            raise IntegrityError(f"{args.file}: the proof's checkpoint: {found}")
        cosigned = f"; {found[1:]}"
    entry = checked.entry
    print(
        f"holds: entry {checked.index} of {checked.checkpoint.origin!r} (signed at "
        f"{checked.checkpoint.size} entries): {entry.kind} {entry.subject}"
        + (f" sha256:{entry.digest}" if entry.digest else "")
        + (f" ({entry.reason})" if entry.reason else "")
        + cosigned
    )
    return 0


def cmd_consistency(args: argparse.Namespace, ctx: Context) -> int:
    old = args.old.strip()
    if not old.isdigit():
        body = _read(Path(old)).partition("\n\n")[0] + "\n"
        try:
            old = str(Checkpoint.parse(body).size)
        except NoteError as exc:
            raise ConfigError(f"{args.old}: not a checkpoint: {exc}") from None
    with Sequencer(ctx.archive, ctx.settings) as sequencer:
        proof = consistency(ctx.archive, sequencer, int(old))
    return _print_proof(proof, args.json)


def cmd_check_consistency(args: argparse.Namespace, ctx: Context) -> int:
    old, new = check_consistency(_read(args.old), _read(args.new), [read_verifier(args.key)])
    print(
        f"holds: the log of {old.size} entries {args.old} signs is the beginning of the log "
        f"of {new.size} entries of {new.origin!r} the proof's checkpoint signs"
    )
    return 0


ENTRIES_AT_ONCE = 256
"""Entries ``ledger entries`` reads from the store at a time."""


def cmd_entries(args: argparse.Namespace, ctx: Context) -> int:
    if args.start < 0 or args.count < 1:
        raise ConfigError("INDEX is 0 or more, --count 1 or more")
    with Sequencer(ctx.archive, ctx.settings) as sequencer:
        sequencer.drain()
        head = sequencer.tree()
    stop = args.start + args.count
    require_entries(head, args.start, stop)  # said before any is printed, not after 256
    for start in range(args.start, stop, ENTRIES_AT_ONCE):
        end = min(stop, start + ENTRIES_AT_ONCE)
        for logged in logged_entries(ctx.archive.ledger, head, start, end):
            print(logged.text)
    return 0


def cmd_init(args: argparse.Namespace, ctx: Context) -> int:
    settings = _with_origin(ctx, args.origin)
    with count_progress("snapshots") as tick:
        report = init_ledger(ctx.archive, settings, progress=tick)
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    print(
        f"{report.snapshots} snapshots in the store: {report.found} logged as found now, "
        f"{report.holds_found} legal hold(s); the log holds {report.size} entries"
    )
    return 5 if report.problems else 0


def cmd_key(args: argparse.Namespace, ctx: Context) -> int:
    ctx.archive  # noqa: B018 - no archive here: exit 4 (the key is of an archive's ledger)
    path = key_path(ctx.settings)
    signer = load_signer(path)
    if signer is None:
        print(
            f"imixs-archive: no ledger key in {path} (it is created when the ledger starts)",
            file=sys.stderr,
        )
        return 1
    print(signer.vkey())
    return 0


def _with_origin(ctx: Context, given: str | None) -> Settings:
    """The settings ``ledger init`` starts the ledger with: the origin given, configured,
    or asked for (a terminal); ConfigError when none can be had. A ledger that has
    started keeps its origin."""
    head = read_tree(ctx.archive.ledger)
    if head is not None:
        if given and check_origin(given, "--origin") != head.origin:
            raise ConfigError(
                f"the ledger's origin is {head.origin}: it stays (`imixs-archive ledger "
                "new-log` starts a new log under another)"
            )
        return ctx.settings
    origin = check_origin(given, "--origin") if given else configured_origin(ctx.settings)
    if not origin and sys.stdin.isatty():
        try:
            answer = input(
                "The ledger's origin, the name witnesses and auditors know this log by (a "
                "schema-less URL, e.g. archive.example.com/invoices): "
            )
        except EOFError:  # Ctrl-D: none given
            print(file=sys.stderr)
            answer = ""
        origin = check_origin(answer, "the origin") if answer.strip() else ""
    if not origin:
        raise ConfigError(
            "the ledger needs an origin: give --origin (a schema-less URL such as "
            "archive.example.com/invoices), or set ARCHIVE_LEDGER_ORIGIN or ARCHIVE_PUBLIC_URL"
        )
    return dataclasses.replace(ctx.settings, ledger_origin=origin)


def cmd_new_log(args: argparse.Namespace, ctx: Context) -> int:
    started = start_new_log(ctx.archive, ctx.settings, args.origin, args.reason)
    print(
        f"a new log {started.origin} starts from the {started.previous_size} entries of "
        f"{started.previous_origin} (recorded); its public key, for the witnesses and the "
        f"auditors: {started.public_key}; give every process that signs the new key file "
        f"{key_path(ctx.settings)}",
        file=sys.stderr,
    )
    sys.stdout.write(started.checkpoint)
    return 0
