"""``ledger``: the archive's signed log of what it did (docs/ledger.md).

``head`` prints the latest checkpoint, ``verify`` checks the log and the store against it,
``proof`` prints an inclusion proof and ``check-proof`` checks one without the store (the
auditor's tool), ``init`` logs what an existing archive holds, ``key`` prints the public
key, ``checkpoint`` sequences what is queued and signs a checkpoint now.

Each but ``init`` (and ``check-proof``, which needs no store) works on an archive that
exists: on a folder or keyspace without one it says so and exits 4, creating nothing (no
store, no signing key). They still write into the archive they find: the queued entries
into the log, and, where the ledger has not started, its head and its key.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from imixs_archive.cli.context import Context, store_options
from imixs_archive.cli.output import count_progress, print_json
from imixs_archive.errors import ConfigError, IntegrityError
from imixs_archive.ledger.found import init_ledger
from imixs_archive.ledger.keys import key_path, load_signer, read_verifier
from imixs_archive.ledger.proofs import check_inclusion, inclusion
from imixs_archive.ledger.schedule import sign_now
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.verify import LedgerReport, verify_ledger
from imixs_archive.timezones import from_epoch_ms

_EXISTING = {"reads_only": True, "writes": True}
"""The parser's defaults of a command that needs an archive there and writes into it."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = store_options()
    ledger = sub.add_parser(
        "ledger",
        help="the signed log of what the archive did: checkpoints, verify, proofs",
        description="An append-only log of every snapshot stored or deleted and every legal "
        "hold placed or released, in an RFC 6962 Merkle tree whose checkpoints are signed "
        "(docs/ledger.md).",
    )
    commands = ledger.add_subparsers(dest="ledger_command", metavar="COMMAND", required=True)

    p = commands.add_parser("head", parents=[common], help="print the latest signed checkpoint")
    p.add_argument("--json", action="store_true", help="the head and its checkpoint as JSON")
    p.set_defaults(handler=cmd_head, **_EXISTING)

    p = commands.add_parser(
        "verify",
        parents=[common],
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
        "and the witness folder's",
    )
    p.add_argument(
        "--read-all",
        action="store_true",
        help="also read every piece and check its SHA-256 (else only pieces without one)",
    )
    p.add_argument("--restart", action="store_true", help="begin again, not where a run stopped")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_verify, **_EXISTING)

    p = commands.add_parser(
        "proof", parents=[common], help="print the inclusion proof of a snapshot's last entry"
    )
    p.add_argument("snapshot_id", metavar="SNAPSHOT_ID")
    p.set_defaults(handler=cmd_proof, **_EXISTING)

    p = commands.add_parser(
        "check-proof",
        help="check an inclusion proof without the store (the auditor's tool)",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="a proof `ledger proof` printed")
    p.add_argument(
        "--key", required=True, metavar="PUBLIC_KEY", help="the ledger's public key (text or file)"
    )
    p.set_defaults(handler=cmd_check_proof)

    p = commands.add_parser(
        "init", parents=[common], help="log what the store holds that the ledger does not"
    )
    p.set_defaults(handler=cmd_init)

    p = commands.add_parser("key", parents=[common], help="print the ledger's public key")
    p.set_defaults(handler=cmd_key, **_EXISTING)

    p = commands.add_parser(
        "checkpoint",
        parents=[common],
        help="log what is queued and sign a checkpoint now",
    )
    p.set_defaults(handler=cmd_checkpoint, **_EXISTING)


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
    since = None
    if args.since is not None:
        try:
            since = args.since.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{args.since}: {exc}") from None
    with count_progress("ledger entries") as tick:
        report = verify_ledger(
            ctx.archive,
            ctx.settings,
            keys=keys,
            since=since,
            read_all=args.read_all,
            restart=args.restart,
            progress=lambda _stage, count: tick(count),
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
    print(json.dumps(proof, indent=2))
    return 0


def cmd_check_proof(args: argparse.Namespace, ctx: Context) -> int:
    try:
        proof = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{args.file}: {exc}") from None
    except ValueError as exc:
        raise IntegrityError(f"{args.file}: not JSON: {exc}") from None
    checked = check_inclusion(proof, [read_verifier(args.key)])
    entry = checked.entry
    print(
        f"holds: entry {checked.index} of {checked.checkpoint.origin!r} (signed at "
        f"{checked.checkpoint.size} entries): {entry.kind} {entry.target}"
        + (f" sha256:{entry.digest}" if entry.digest else "")
        + (f" ({entry.reason})" if entry.reason else "")
    )
    return 0


def cmd_init(args: argparse.Namespace, ctx: Context) -> int:
    with count_progress("snapshots") as tick:
        report = init_ledger(ctx.archive, ctx.settings, progress=tick)
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
