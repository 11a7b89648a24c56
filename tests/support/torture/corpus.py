"""The torture's data, deterministic from a seed: process instances of a few snapshots each,
4-6 KB of XML per snapshot, attachments carried forward from step to step (sometimes
edited a little, so that content-defined pieces are shared), a file shared by many
instances, and now and then a large attachment of several pieces.

Instance ``n`` is of group ``Complaint`` when ``n % 5 == 4``: its snapshots are from 2021,
older than the retention policy keeps that group (:data:`POLICY`); the other groups are
kept for ever. Everything about a snapshot (items, times, file bytes) is drawn from a
random generator seeded with the seed, the instance and the step, so that any snapshot
can be made again without the others.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from imixs_archive.document.model import Document

GROUPS = ("Invoice", "Contract", "Ticket", "Order", "Complaint")
EXPIRING = "Complaint"
POLICY = f"group:{EXPIRING}=365d"
"""The retention policy of every process of a run (``ARCHIVE_RETENTION``)."""
KEPT_FROM = dt.datetime(2024, 1, 8, 8, 0, tzinfo=dt.UTC)
EXPIRED_FROM = dt.datetime(2021, 3, 1, 8, 0, tzinfo=dt.UTC)
SPAN_HOURS = 500 * 24
"""Instances start 7 hours apart, round and round within 500 days from their group's
first day: every snapshot stays in the past (an archive refuses one from the future)."""
OFFSETS = (0, 60, 120, -300, 330)
"""Minutes east of UTC of the snapshots' ``$modified``, one per instance."""
PEOPLE = [f"user{n:03d}" for n in range(40)]
WORDS = ("order", "invoice", "amount", "review", "approve", "ship", "customer", "note")
SHARED_NAME = "terms.pdf"
LARGE_SIZES = (1_300_000, 3_200_000)
SMALL_SIZES = (6_000, 40_000)


@dataclass(frozen=True)
class Attachment:
    """One file as a snapshot carries it: its name and how its bytes are made."""

    name: str
    recipe: tuple[Any, ...]
    """What :func:`file_bytes` makes the bytes from."""


@dataclass(frozen=True)
class Instance:
    number: int
    uniqueid: str
    group: str
    steps: int
    start: dt.datetime
    offset: dt.timezone

    @property
    def expires(self) -> bool:
        return self.group == EXPIRING


class Corpus:
    """Instances and their snapshots, made on demand from ``seed``. ``large`` is the
    chance that a step adds a large attachment (several pieces)."""

    def __init__(self, seed: int, *, large: float = 0.03) -> None:
        self.seed = seed
        self.large = large

    def instance(self, number: int) -> Instance:
        rng = random.Random(f"{self.seed}/instance/{number}")
        uniqueid = "-".join(
            f"{rng.getrandbits(bits):0{bits // 4}x}" for bits in (32, 16, 16, 16, 48)
        )
        group = EXPIRING if number % 5 == 4 else GROUPS[rng.randrange(len(GROUPS) - 1)]
        base = EXPIRED_FROM if group == EXPIRING else KEPT_FROM
        hours = (7 * number) % SPAN_HOURS
        start = base + dt.timedelta(hours=hours, minutes=rng.randrange(400))
        offset = dt.timezone(dt.timedelta(minutes=OFFSETS[number % len(OFFSETS)]))
        return Instance(number, uniqueid, group, rng.randint(3, 8), start, offset)

    def modified(self, instance: Instance, step: int) -> dt.datetime:
        """The time of a step: 20 minutes to 2 days after the step before."""
        when = instance.start
        for earlier in range(1, step + 1):
            rng = random.Random(f"{self.seed}/gap/{instance.number}/{earlier}")
            when += dt.timedelta(minutes=rng.randint(20, 2 * 24 * 60), milliseconds=earlier)
        return when

    def snapshot_id(self, instance: Instance, step: int) -> str:
        millis = int(self.modified(instance, step).timestamp() * 1000)
        return f"{instance.uniqueid}-{millis}"

    def attachments(self, instance: Instance, step: int) -> dict[str, Attachment]:
        """The files snapshot ``step`` carries: those of the step before, plus what this
        step adds or edits."""
        files = dict(self.attachments(instance, step - 1)) if step > 0 else {}
        rng = random.Random(f"{self.seed}/files/{instance.number}/{step}")
        if step == 0 and rng.random() < 0.3:
            files[SHARED_NAME] = Attachment(SHARED_NAME, ("shared", self.seed))
        if rng.random() < 0.3:
            name = f"scan-{step}.pdf"
            size = rng.randint(*SMALL_SIZES)
            files[name] = Attachment(name, ("small", self.seed, instance.number, step, size))
        if rng.random() < self.large:
            name = f"drawing-{step}.bin"
            size = rng.randint(*LARGE_SIZES)
            files[name] = Attachment(name, ("large", self.seed, instance.number, step, size))
        edits = [name for name in files if name.startswith("scan-")]
        if edits and rng.random() < 0.15:
            name = rng.choice(sorted(edits))
            files[name] = Attachment(name, ("edit", files[name].recipe, step))
        return files

    def snapshot(self, number: int, step: int) -> Document:
        """Snapshot ``step`` of instance ``number``, as the workflow writes it."""
        instance = self.instance(number)
        rng = random.Random(f"{self.seed}/items/{number}/{step}")
        when = self.modified(instance, step).astimezone(instance.offset)
        last = step == instance.steps - 1
        items: dict[str, Any] = {
            "$uniqueid": self.snapshot_id(instance, step),
            "$created": instance.start.astimezone(instance.offset),
            "$modified": when,
            "type": "snapshot-workitem",
            "$workflowgroup": instance.group,
            "$workflowstatus": "Completed" if last else ("Open", "In Review")[step % 2],
            "$taskid": 1900 if last else 1000 + 100 * min(step, 3),
            "$creator": PEOPLE[number % len(PEOPLE)],
            "$editor": rng.choice(PEOPLE),
            "subject": f"{instance.group} {number} step {step}",
            "amount": round(rng.uniform(10, 10_000), 2),
            "approved": rng.random() < 0.5,
            "namteam": rng.sample(PEOPLE, rng.randint(1, 4)),
        }
        for n in range(rng.randint(14, 22)):
            items[f"txtfield{n:02d}"] = " ".join(rng.choice(WORDS) for _ in range(30))
        doc = Document(items)
        files = self.attachments(instance, step)
        if files:
            doc["$file"] = [{name: _file_values(file_bytes(a.recipe)) for name, a in files.items()}]
        return doc

    def digests(self, number: int, step: int) -> dict[str, tuple[str, str, int]]:
        """File name -> (MD5 upper-case hex, SHA-256 hex, size) of the files snapshot
        ``step`` carries, without making their bytes again where known."""
        files = self.attachments(self.instance(number), step)
        return {name: recipe_digests(a.recipe) for name, a in files.items()}


@lru_cache(maxsize=100_000)
def recipe_digests(recipe: tuple[Any, ...]) -> tuple[str, str, int]:
    data = file_bytes(recipe)
    return hashlib.md5(data).hexdigest().upper(), hashlib.sha256(data).hexdigest(), len(data)


def _file_values(content: bytes) -> list[Any]:
    attributes = {"md5checksum": [hashlib.md5(content).hexdigest().upper()], "size": [len(content)]}
    return ["application/octet-stream", content, attributes]


@lru_cache(maxsize=64)
def file_bytes(recipe: tuple[Any, ...]) -> bytes:
    """The bytes of one attachment: random from its recipe; an edit changes a few bytes of
    the file it edits, so most of its pieces are shared with it."""
    kind = recipe[0]
    if kind == "shared":
        return random.Random(f"shared/{recipe[1]}").randbytes(150_000)
    if kind == "edit":
        base = bytearray(file_bytes(recipe[1]))
        rng = random.Random(f"edit/{recipe}")
        for _ in range(3):
            base[rng.randrange(len(base))] ^= 0xFF
        return bytes(base)
    _kind, seed, number, step, size = recipe
    return random.Random(f"{kind}/{seed}/{number}/{step}").randbytes(size)
