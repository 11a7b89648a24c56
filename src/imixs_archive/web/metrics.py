"""Prometheus metrics: requests, store operations, bytes stored, ingests, sync state.

One ``CollectorRegistry`` per app (no global registry): two apps in one process (tests)
never share counters. Store operations are measured by :class:`MeteredBackend`, a
``Backend`` that times every call of the real one; ``/metrics`` renders the registry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Unpack

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from imixs_archive.storage.base import Backend, Row, ScanOptions
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import DOCUMENTS_DATA, TABLES, Table
from imixs_archive.web.http_middleware import HttpMiddleware

PREFIX = "imixs_archive"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

INGESTED = ("logical", "new")
INGEST_OUTCOMES = (("push", "new"), ("push", "present"), ("push", "failed"))
"""(source, outcome) of the snapshots ingested that the counter counts."""
OPERATIONS = ("put", "replace", "get", "scan", "delete")
"""The store operations :class:`MeteredBackend` times and counts."""

Gauges = Callable[[], Iterable[tuple[str, str, float, Mapping[str, str]]]]
"""(name, help, value, labels) of gauges computed when scraped."""


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = self._counter(
            "http_requests", "HTTP requests answered.", "method", "route", "status"
        )
        self.latency = self._histogram(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, body included.",
            "method",
            "route",
        )
        self.store_ops = self._histogram(
            "store_operation_duration_seconds",
            "Store operations by kind and table (a scan is timed until fully read).",
            "operation",
            "table",
        )
        self.store_errors = self._counter(
            "store_errors", "Store operations that raised.", "operation", "table"
        )
        self.piece_bytes = self._counter(
            "stored_piece_bytes", "Bytes of new pieces written to the store."
        )
        self.ingested_bytes = self._counter(
            "ingested_bytes",
            "Attachment bytes ingested: logical (as the snapshots carry them) and new "
            "(not stored before); logical/new is the dedup ratio of recent ingests.",
            "kind",
        )
        self.snapshots = self._counter(
            "snapshots_ingested", "Snapshots received, by source and outcome.", "source", "outcome"
        )
        self._initialise()

    def _initialise(self) -> None:
        """The series the alerting rules and the dashboard read, at 0 from the first scrape
        (a series that appears only at its first event shows "no data", and ``rate`` or
        ``increase`` miss that event): every kind of ingest and outcome, every store
        operation's errors, and the scrape's own route."""
        for kind in INGESTED:
            self.ingested_bytes.labels(kind)
        for source, outcome in INGEST_OUTCOMES:
            self.snapshots.labels(source, outcome)
        for operation in OPERATIONS:
            for table in TABLES:
                self.store_errors.labels(operation, table.name)
        self.requests.labels("GET", "/metrics", "200")
        self.latency.labels("GET", "/metrics")

    def _counter(self, name: str, help_text: str, *labels: str) -> Counter:
        return Counter(f"{PREFIX}_{name}", help_text, labels, registry=self.registry)

    def _histogram(self, name: str, help_text: str, *labels: str) -> Histogram:
        """Times in seconds, in the buckets of ``LATENCY_BUCKETS``."""
        return Histogram(
            f"{PREFIX}_{name}", help_text, labels, buckets=LATENCY_BUCKETS, registry=self.registry
        )

    def add_gauges(self, gauges: Gauges) -> None:
        self.registry.register(_GaugeCollector(gauges))

    def add_java_counters(self, counters: Gauges) -> None:
        """Counters under the names the Java services exported (no prefix; ``_total``
        added), computed when scraped: dashboards and alerts written for them go on."""
        self.registry.register(_GaugeCollector(counters, java=True))

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def record_ingest(self, source: str, outcome: str, logical: int = 0, new: int = 0) -> None:
        self.snapshots.labels(source, outcome).inc()
        if logical:
            self.ingested_bytes.labels("logical").inc(logical)
        if new:
            self.ingested_bytes.labels("new").inc(new)


class _GaugeCollector(Collector):
    """Values computed when scraped, as gauges under this app's prefix (or, ``java``, as
    counters under the Java services' own names)."""

    def __init__(self, gauges: Gauges, *, java: bool = False) -> None:
        self._gauges = gauges
        self._java = java

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}
        for name, help_text, value, labels in self._gauges():
            family = families.get(name)
            if family is None:
                family = (
                    CounterMetricFamily(name, help_text, labels=list(labels))
                    if self._java
                    else GaugeMetricFamily(f"{PREFIX}_{name}", help_text, labels=list(labels))
                )
                families[name] = family
            family.add_metric(list(labels.values()), value)
        yield from families.values()

    def describe(self) -> Iterator[Metric]:
        return iter(())  # computed at scrape time: nothing to check at registration


class MeteredBackend(DelegatingBackend):
    """The real backend, every call timed and counted."""

    def __init__(self, inner: Backend, metrics: Metrics) -> None:
        super().__init__(inner)
        self._metrics = metrics

    @contextmanager
    def _timed(self, operation: str, table: Table) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        except Exception:
            self._metrics.store_errors.labels(operation, table.name).inc()
            raise
        finally:
            elapsed = time.perf_counter() - start
            self._metrics.store_ops.labels(operation, table.name).observe(elapsed)

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        if table is DOCUMENTS_DATA:
            rows = self._count_piece_bytes(rows)
        with self._timed("put", table):
            return self.inner.put(table, rows)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        with self._timed("put", table):
            return self.inner.put_partition(table, rows)

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        with self._timed("put", table):
            return self.inner.put_soon(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        with self._timed("put", table):
            return self.inner.put_new(table, row)

    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        with self._timed("put", table):
            return self.inner.put_if_absent(table, row)

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        with self._timed("replace", table):
            return self.inner.replace(table, key, column, expected, value)

    def _count_piece_bytes(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        for row in rows:
            self._metrics.piece_bytes.inc(len(row["data"]))
            yield row

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        with self._timed("get", table):
            return self.inner.get(table, key, columns)

    def scan(
        self,
        table: Table,
        partition: Mapping[str, Any] | None = None,
        **options: Unpack[ScanOptions],
    ) -> Iterator[Row]:
        with self._timed("scan", table):
            yield from self.inner.scan(table, partition, **options)

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        with self._timed("delete", table):
            self.inner.delete(table, key, written_before=written_before)


class RequestMetrics(HttpMiddleware):
    """ASGI middleware: counts and times every HTTP request by its route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        status = 500
        root_path = str(scope.get("root_path", ""))

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or _mount(scope, root_path)
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - start)


def _mount(scope: Scope, root_path: str) -> str:
    """The mount a request was routed to (``/static``: its files are one route, not one
    label each), else ``unmatched``: a mount adds its path to the scope's ``root_path``."""
    mounted = str(scope.get("root_path", ""))
    if mounted != root_path and mounted.startswith(root_path):
        return mounted[len(root_path) :]
    return "unmatched"
