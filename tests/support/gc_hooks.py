"""The collector's tests: a collection once the grace period has passed, and a store that
runs a hook (another collection, a delete) once, at a chosen moment of a write."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from imixs_archive.filestore.gc import GcReport, collect
from imixs_archive.storage.base import Backend
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table


def collect_due(
    backend: Backend, *, grace: float, wait: bool = True, dry_run: bool = False
) -> GcReport:
    """One collection, after the grace period of everything listed so far has passed."""
    if wait:
        time.sleep(grace + 0.05)
    report = collect(backend, grace=grace, clock_skew_us=0, dry_run=dry_run)
    assert not report.errors
    return report


class OnceHook(DelegatingBackend):
    """Runs ``hook`` once, to its end, at the first :meth:`fire` for ``table``: on another
    thread (its own store connection) unless ``same_thread``; what it raised is kept in
    ``errors``."""

    def __init__(self, inner: Backend, table: Table, hook: Callable[[], None]) -> None:
        super().__init__(inner)
        self.table = table
        self.hook: Callable[[], None] | None = hook
        self.errors: list[BaseException] = []
        self.same_thread = False
        self._lock = threading.Lock()

    def fire(self, table: Table) -> None:
        with self._lock:
            hook, self.hook = (self.hook, None) if table == self.table else (None, self.hook)
        if hook is None:
            return
        if self.same_thread:
            hook()
            return

        def run() -> None:
            try:
                hook()
            except BaseException as exc:
                self.errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
