"""What every command gets: settings, the open store and the archive over it; shared
options and output helpers."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import IO, Any

from imixs_archive.archive.part_runs import parse_part
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.durable import whole_file
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.runtime import open_archive
from imixs_archive.services.workers import MAX_JOBS, Spread, Standby, default_jobs
from imixs_archive.timezones import day_span, zone, zone_label


@dataclass(eq=False)
class Context:
    """Settings, and the store opened on first use: commands that need no store (such as
    ``hash-password``) never create one."""

    settings: Settings
    _: KW_ONLY
    existing_store: bool = False
    """The command only reads, or changes only what an archive holds (``delete``,
    ``retention``, ``legal-hold release``), so a missing store is an error (exit 4) rather
    than an empty one created on the spot (the parser's ``reads_only``; a command may set
    it before it opens the archive)."""
    writes: bool | None = None
    """The command writes into the archive it finds (the parser's ``writes``: the
    ``ledger`` commands), so the store's layout version is recorded
    (``runtime.build_archive``); by default a command that creates none writes none."""
    standby: Standby | None = None
    """Workers started ahead for this command (``cli.standby_workers``)."""
    _archive: Archive | None = field(default=None, init=False, repr=False)

    @property
    def archive(self) -> Archive:
        """The archive over the store, opened on first use (``runtime.py``)."""
        if self._archive is None:
            self._archive = open_archive(
                self.settings, create=not self.existing_store, writes=self.writes
            )
        return self._archive

    def close(self) -> None:
        """Close the archive and the store under it (once)."""
        archive, self._archive = self._archive, None
        if archive is not None:
            archive.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def day_arg(text: str) -> dt.date:
    """``--from``/``--to`` days: an ISO date. A date-time is refused: these commands
    take whole days, and cutting the time off silently answered for the whole day."""
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        pass
    try:
        dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
    raise argparse.ArgumentTypeError(
        f"a day (YYYY-MM-DD) is wanted, not a time: {text!r} (the range takes whole days)"
    )


def count_arg(text: str) -> int:
    """A count such as ``--limit``: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_jobs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=count_arg,
        help=f"worker processes (default: one per core, at most {MAX_JOBS}, for larger work)",
    )


def spread(args: argparse.Namespace, ctx: Context, least: int) -> Spread:
    """The worker processes ``--jobs`` asks for; by default one per core, for ``least``
    items or more."""
    if args.jobs is not None:
        return Spread(ctx.settings, args.jobs)
    return Spread(ctx.settings, default_jobs(), least, standby=ctx.standby)


def check_range(first: dt.date | None, last: dt.date | None) -> None:
    """A range given backwards is a mistake, not an empty answer."""
    if first is not None and last is not None and last < first:
        raise ConfigError(f"--to {last} is before --from {first}")


def day_range_options(p: argparse.ArgumentParser, zone_given: str = "--tz") -> None:
    """``--from``/``--to``: a range of ``$modified`` days, read in the time zone
    ``zone_given`` names (checked by :func:`check_range`)."""
    p.add_argument(
        "--from", dest="from_day", type=day_arg, help=f"first $modified day ({zone_given})"
    )
    p.add_argument("--to", dest="to_day", type=day_arg, help=f"last $modified day ({zone_given})")


def require_snapshots_in(
    archive: Archive, first: dt.date | None, last: dt.date | None, tz: dt.tzinfo
) -> None:
    """The one rule of every command over a ``--from``/``--to`` range of days (README,
    exit codes): a range in which the archive holds no snapshot is not found (exit 4, one
    line, nothing written), never an empty success. No range given: nothing to check."""
    if first is None and last is None:
        return
    start, end = day_span(first, last, tz)
    require_snapshots_between(
        archive,
        dt.datetime.combine(start, dt.time(0), tz),
        dt.datetime.combine(end + dt.timedelta(days=1), dt.time(0), tz),
        f"from {start} to {end} ({zone_label(tz)})",
    )


def require_snapshots_between(
    archive: Archive, start: dt.datetime, end: dt.datetime, described: str
) -> None:
    """As :func:`require_snapshots_in`, for instants ``[start, end)`` (aware)."""
    found = archive.days.iter_modified(start.astimezone(dt.UTC), end.astimezone(dt.UTC))
    if next(iter(found), None) is None:
        raise NotFoundError(f"no snapshots {described}")


def instant_arg(text: str) -> dt.datetime:
    """An ISO date or date-time. Without an offset it stays naive: the command reads it in
    ``ARCHIVE_TIMEZONE`` (:func:`in_zone`; never the machine's local zone)."""
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date or date-time: {text!r}") from None


def in_zone(when: dt.datetime, name: str) -> dt.datetime:
    """A time given without an offset, read in the time zone ``name`` (an aware time is
    kept). A wall time skipped by a clock change is read with the offset before it."""
    return when if when.tzinfo else when.replace(tzinfo=zone(name))


def instant_end_arg(text: str) -> dt.datetime:
    """As :func:`instant_arg`; a bare date means the end of that day (23:59:59.999)."""
    when = instant_arg(text)
    if len(text.strip()) == len("YYYY-MM-DD"):
        when += dt.timedelta(days=1, milliseconds=-1)
    return when


RESTART_HELP = "begin again instead of going on where it stopped"


def resumable_options(
    p: argparse.ArgumentParser,
    part_help: str,
    *,
    part_into: argparse._ActionsContainer | None = None,
    restart_help: str = RESTART_HELP,
) -> None:
    """``--part K/N`` (into ``part_into``: a group of exclusive options) and ``--restart``
    of a command whose run goes on where the last one stopped."""
    (part_into or p).add_argument("--part", metavar="K/N", help=part_help)
    p.add_argument("--restart", action="store_true", help=restart_help)


def store_options() -> argparse.ArgumentParser:
    """Options every command that opens the store takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, help="embedded store folder (env ARCHIVE_DATA_DIR)"
    )
    return common


def store_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *parents: argparse.ArgumentParser,
    **options: Any,
) -> argparse.ArgumentParser:
    """The parser of a command that opens the store: it takes :func:`store_options`, then
    the options of ``parents``."""
    return sub.add_parser(name, parents=[store_options(), *parents], **options)


@contextmanager
def output(path: Path | None) -> Iterator[IO[bytes]]:
    """Standard output, or a file that appears only once it is complete."""
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with whole_file(path, path.with_name(path.name + ".part")) as out:
        yield out


def part_words(part: int, parts: int) -> str:
    """The start of the summary of one part of a shared run: ``part K of N: `` ('' for a
    whole run)."""
    return f"part {part} of {parts}: " if parts > 1 else ""


def went_on(resumed: str) -> str:
    """The summary's note on a run that went on where a stopped one ended ('' for a run
    that began)."""
    return f" (went on {resumed})" if resumed else ""


def part_of(args: argparse.Namespace) -> tuple[int, int]:
    """``--part K/N`` as (K, N), (1, 1) without it; a clear error for a bad one."""
    try:
        return parse_part(args.part) if args.part else (1, 1)
    except ValueError as exc:
        raise ConfigError(f"--part: {exc}") from None
