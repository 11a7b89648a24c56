"""Terminal output for the CLI: sizes, tables, and a progress bar only on a terminal
(rich is loaded only then: a command whose output goes to a file or pipe starts without it)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from imixs_archive.humanize import human_bytes, human_duration

__all__ = [
    "count_progress",
    "human_bytes",
    "human_duration",
    "import_progress",
    "labelled_progress",
    "print_json",
    "print_problems",
    "print_table",
    "snapshot_total",
]


@contextmanager
def import_progress(total: int) -> Iterator[Callable[[int], None] | None]:
    """A callback advancing a progress bar by bytes read; None when not on a terminal."""
    with _bars(
        lambda bars: (bars.BarColumn(), bars.DownloadColumn(), bars.TransferSpeedColumn())
    ) as progress:
        if progress is None:
            yield None
            return
        task = progress.add_task("import", total=total or None)
        yield lambda count: progress.advance(task, count)


@contextmanager
def count_progress(
    what: str, total: int | Callable[[], int | None] | None = None
) -> Iterator[Callable[[int], None]]:
    """A callback advancing a counter of ``what`` (a bar when ``total`` is known); a no-op
    when not on a terminal. ``total`` may be a function: it is asked only on a terminal
    (counting costs nothing when the output goes to a file or pipe)."""
    with _bars(_counted(what)) as progress:
        if progress is None:
            yield lambda _count: None
            return
        task = progress.add_task(what, total=_asked(total) if callable(total) else total)
        yield lambda count: progress.advance(task, count)


class LabelledTicks:
    """Counters by label (what a walk checks: snapshots, files, pieces), each a bar where
    its total is known; :func:`labelled_progress` gives one."""

    def __init__(self, progress: Any = None, totals: Mapping[str, int] | None = None) -> None:
        self._progress = progress
        self._totals = dict(totals or {})
        self._tasks: dict[str, Any] = {}

    def tick(self, label: str, count: int = 1) -> None:
        if self._progress is None or not label:
            return
        task = self._tasks.get(label)
        if task is None:
            task = self._progress.add_task(label, total=self._totals.get(label))
            self._tasks[label] = task
        self._progress.advance(task, count)

    def resumed(self, done: Mapping[str, int]) -> None:
        """A run that goes on where a stopped one stood: its bars begin at what it did."""
        for label, count in done.items():
            if count:
                self.tick(label, count)


@contextmanager
def labelled_progress(
    what: str, totals: Callable[[], Mapping[str, int]] | None = None
) -> Iterator[LabelledTicks]:
    """Counters of ``what`` by label, on a terminal only (else they do nothing); the
    ``totals`` known (a function: asked only on a terminal) make bars of them."""
    with _bars(_counted(f"{what}: {{task.description}}")) as progress:
        known = _asked(totals) if progress is not None and totals is not None else None
        yield LabelledTicks(progress, known)


@contextmanager
def _bars(columns: Callable[[Any], Sequence[Any]]) -> Iterator[Any]:
    """Rich's progress bars on standard error, gone when they end, their ``columns`` made
    from ``rich.progress`` (loaded only here); None when not on a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    import rich.progress
    from rich.console import Console

    console = Console(stderr=True)
    with rich.progress.Progress(*columns(rich.progress), console=console, transient=True) as bars:
        yield bars


def _counted(label: str) -> Callable[[Any], Sequence[Any]]:
    """The columns of counted bars: ``label`` (a format of the task), the bar, done/total."""
    return lambda bars: (bars.TextColumn(label), bars.BarColumn(), bars.MofNCompleteColumn())


def _asked(total: Callable[[], Any]) -> Any:
    """A bar's total, or None (a bar that counts without one) when the store cannot give
    it: the archive's figures read the day index, and a store damaged there must still be
    verified, or exported (the way out), not stopped before the work by its progress bar;
    the job meets the damage itself and reports it."""
    from imixs_archive.errors import ArchiveError

    try:
        return total()
    except ArchiveError:
        return None


def snapshot_total(archive: Any, *, instances: bool = False) -> int:
    """A bar's total of snapshots (or of instances: their newest) from the archive's kept
    figures, the same cost at any size; files and pieces have no kept figure (only
    ``stats --full`` counts them, by reading them all)."""
    from imixs_archive.analytics.archive_figures import archive_figures

    figures = archive_figures(archive)
    return figures.instances if instances else figures.snapshots


def print_problems(warnings: Iterable[str] = (), failures: Iterable[str] = ()) -> None:
    """Warnings and failures of a command, one line each, on standard error."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for failure in failures:
        print(f"failed: {failure}", file=sys.stderr)


def print_json(data: Any) -> None:
    """A command's ``--json`` answer: one JSON document on standard output, indented as
    every ``--json`` of this CLI prints it."""
    import json

    print(json.dumps(data, indent=2))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(*headers)
        for row in rows:
            table.add_row(*(str(cell) for cell in row))
        Console().print(table)
        return
    print("\t".join(headers))
    for row in rows:
        print("\t".join(str(cell) for cell in row))
