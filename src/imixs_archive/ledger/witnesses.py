"""Witnesses (C2SP tlog-witness): others who vouch that the log never forked.

A witness is a service run by someone else, named by its URL and its cosigning key
(``ARCHIVE_LEDGER_WITNESSES``). The process that signs a checkpoint sends it to each,
``POST <url>/add-checkpoint`` with the size the witness last cosigned (``old N``) and the
RFC 6962 consistency proof from that size; the witness checks the log's signature and the
proof against what it recorded, records the new size and answers with its cosignature
(C2SP tlog-cosignature, ``tlog/cosignature.py``), which is added to the checkpoint kept in
the store (the head's, so ``ledger head`` and ``ledger proof`` carry it). A witness that
has cosigned a larger tree, or one the checkpoint is not an extension of, refuses (409 or
422): the log forked, and the ledger stops (``forks.py``). A witness that cosigned a larger
tree than the checkpoint sent, when the store's log holds that tree now, met a newer
checkpoint first (another process's round, ending sooner than this one's): nothing to
cosign, no fork.

This process learns the size a witness knows from its 409 answer (the body is the size),
and remembers it for the next checkpoint.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, ConfigError
from imixs_archive.ledger.proof_files import consistency_file
from imixs_archive.tlog.cosignature import CosignatureVerifier, add_lines, cosigned_by
from imixs_archive.tlog.merkle import NodeGetter, consistency_proof
from imixs_archive.tlog.note import Checkpoint, NoteError

log = logging.getLogger(__name__)

TIMEOUT = 10.0
"""Seconds a witness has to answer."""


@dataclass(frozen=True)
class Witness:
    url: str
    key: CosignatureVerifier


def parse_witnesses(text: str, what: str = "ARCHIVE_LEDGER_WITNESSES") -> list[Witness]:
    """Witnesses from a comma list of ``URL VKEY``; ConfigError when one is malformed."""
    found: list[Witness] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        pieces = part.split()
        if len(pieces) != 2 or not pieces[0].startswith(("http://", "https://")):
            raise ConfigError(f"{what}: {part!r} is not 'URL VKEY' (the witness's URL and key)")
        try:
            key = CosignatureVerifier.from_vkey(pieces[1])
        except NoteError as exc:
            raise ConfigError(f"{what}: {exc}") from None
        found.append(Witness(pieces[0].rstrip("/"), key))
    return found


def configured(settings: Settings) -> list[Witness]:
    return parse_witnesses(settings.ledger_witnesses)


@dataclass
class Outcome:
    """What the witnesses said of a checkpoint: their cosignature lines, what failed
    (unreachable, not configured for this log), their refusals (a fork), and the witnesses
    that cosigned a larger tree of the log already (name: its size; a fork unless the
    store's log holds that many entries now: ``ahead_refusal``)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    ahead: dict[str, int] = field(default_factory=dict)


class _Refused(ArchiveError):
    pass


class _Ahead(ArchiveError):
    def __init__(self, size: int) -> None:
        super().__init__(f"the witness cosigned {size} entries")
        self.size = size


def ahead_refusal(name: str, cosigned: int, origin: str, size: int) -> str:
    """The refusal of a witness that cosigned ``cosigned`` entries of the log ``origin``,
    more than the checkpoint of ``size`` entries and more than the store's log holds: it
    was put back or cut."""
    return (
        f"witness {name} cosigned {cosigned} entries of {origin}, more than this "
        f"checkpoint's {size} and the store's log: the log was put back or cut (a fork)"
    )


class Witnessing:
    """The witnesses one sequencer sends its checkpoints to."""

    def __init__(self, witnesses: list[Witness]) -> None:
        self.witnesses = witnesses
        self.known: dict[str, int] = {}
        """The size each witness cosigned last, as far as this process learnt."""

    def cosign(self, note: str, node: NodeGetter) -> Outcome:
        """Ask each witness whose cosignature ``note`` lacks for one."""
        outcome = Outcome()
        text = note[: note.rfind("\n\n") + 1]
        checkpoint = Checkpoint.parse(text)
        have = cosigned_by(note, [w.key for w in self.witnesses])
        for witness in self.witnesses:
            if witness.key.name in have:
                continue
            try:
                lines = self._ask(witness, note, checkpoint, node)
            except _Refused as exc:
                outcome.refused.append(str(exc))
            except _Ahead as exc:
                outcome.ahead[witness.key.name] = exc.size
            except ArchiveError as exc:
                outcome.problems.append(str(exc))
            else:
                outcome.lines += lines
        return outcome

    def _ask(
        self, witness: Witness, note: str, checkpoint: Checkpoint, node: NodeGetter
    ) -> list[str]:
        name, size = witness.key.name, checkpoint.size
        old = self.known.get(name, 0)
        for _attempt in range(3):
            if old > size:  # a newer checkpoint's, sent by a round that ended sooner
                raise _Ahead(old)
            proof = consistency_proof(old, size, node) if 0 < old < size else []
            body = consistency_file(old, proof, note)
            status, answer = _post(witness.url + "/add-checkpoint", body)
            if status == 200:
                self.known[name] = size
                return _cosignatures(witness, note, answer)
            if status == 409 and answer.strip().isdigit() and int(answer) != old:
                old = self.known[name] = int(answer)  # it knows another size: ask again
                continue
            if status in (409, 422):
                raise _Refused(
                    f"witness {name} refuses the checkpoint of {size} entries of "
                    f"{checkpoint.origin} (HTTP {status}: {answer.strip()[:200]}): it is not "
                    f"an extension of the {old} entries the witness cosigned (a fork)"
                )
            raise ArchiveError(
                f"witness {name} ({witness.url}) answered HTTP {status}: {answer.strip()[:200]}"
                + (" (does it know this log's origin and key?)" if status in (403, 404) else "")
            )
        raise ArchiveError(f"witness {name} keeps answering another size")


def _cosignatures(witness: Witness, note: str, answer: str) -> list[str]:
    """The lines of a witness's answer that are its valid cosignatures of ``note``."""
    lines = [line for line in answer.split("\n") if line]
    valid = []
    for line in lines:
        try:
            if witness.key.name in cosigned_by(add_lines(note, [line]), [witness.key]):
                valid.append(line)
        except NoteError as exc:
            raise ArchiveError(f"witness {witness.key.name}: {exc}") from None
    if not valid:
        raise ArchiveError(f"witness {witness.key.name} answered without a valid cosignature")
    return valid


def _post(url: str, body: str) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body.encode("utf-8"), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return int(response.status), response.read(65536).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read(65536).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as exc:
        raise ArchiveError(f"witness {url}: {getattr(exc, 'reason', exc)}") from None
