"""``GET /metrics``: the fleet-wide counters (see threadfold.workers.metrics) as Prometheus text.

prometheus_client renders them (escaping, cumulative buckets, ``_sum`` and ``_count``)
through a collector over one snapshot read from Redis: the totals hash, plus gauges
read at scrape time (threads with a backlog, quarantined threads, live processes).

Hash fields are ``name`` or ``name|label=value|...``; a histogram is stored as
per-bucket counts (``name_bucket:<le>``) and ``name_sum``: its count is the ``+Inf``
bucket's cumulative count. A field that is not a valid Prometheus name is left out
rather than failing the scrape.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from threadfold.workers.metrics import BATCH_BUCKETS, LAG_BUCKETS_MS, LATENCY_BUCKETS_MS

PREFIX: Final = "threadfold_"
#: The exposition format: the classic text format, as before prometheus_client (every
#: name here is a legacy one, so its 1.0.0 format would be byte for byte the same).
CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4
HELP: Final = {
    "commits": ("counter", "Batches committed: by workers, and by the API's ingest calls "
                "(a delta to a thread with nothing waiting; a direct client's are not counted)."),
    "ingest_commits": ("counter", "Of those, the ones the API's ingest calls made."),
    "entries_applied": ("counter", "Log entries (deltas) applied, by workers and by ingest "
                        "commits."),
    "commit_conflicts": ("counter", "Commits refused by compare-and-set (stale or concurrent)."),
    "drain_failures": ("counter", "Drains that failed on a poison entry."),
    "quarantines": ("counter", "Threads put in quarantine."),
    "handoffs": ("counter", "Threads handed to a fresh task when a drain's time ran out."),
    "threads_expired": ("counter", "Idle threads the TTL sweep removed."),
    "deltas_ingested": ("counter", "Deltas appended through the API."),
    "http_requests": ("counter", "HTTP requests answered, by route and status."),
    "batch_entries": ("histogram", "Entries per committed batch."),
    "visible_lag_ms": ("histogram", "Enqueue-to-visible lag of each applied delta (ms)."),
    "http_request_ms": ("histogram", "HTTP request duration (ms)."),
    "sse_events_sent": ("counter", "Events written to event-stream subscribers."),
    "sse_subscribers_dropped": (
        "counter",
        "Event-stream subscribers ended by the server, by reason (too_slow, shutting_down).",
    ),
    "sse_subscribers": ("gauge", "Event-stream subscribers open on the live API processes."),
    "threads_with_backlog": ("gauge", "Threads with deltas not applied yet."),
    "threads_quarantined": ("gauge", "Threads in quarantine."),
    "processes": (
        "gauge",
        "Processes (API, worker pool children) that flushed metrics within "
        "METRICS_LIVENESS_SECONDS; a worker child counts from its first task.",
    ),
}
BOUNDS: Final = {
    "batch_entries": BATCH_BUCKETS,
    "visible_lag_ms": LAG_BUCKETS_MS,
    "http_request_ms": LATENCY_BUCKETS_MS,
}
#: Roles always shown in the processes gauge, at 0 when none is alive.
_NAME: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

Labels = tuple[tuple[str, str], ...]


def render(totals: Mapping[str, float], gauge_values: Mapping[str, float]) -> str:
    """The Prometheus text exposition (version 0.0.4) of a snapshot."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(totals, gauge_values))
    return generate_latest(registry).decode()


class FleetCollector(Collector):
    """The metric families of one snapshot (fleet-wide totals and scrape-time gauges)."""

    def __init__(self, totals: Mapping[str, float], gauge_values: Mapping[str, float]) -> None:
        self.totals = totals
        self.gauge_values = gauge_values

    def collect(self) -> Iterator[Metric]:
        counters: dict[str, dict[Labels, float]] = defaultdict(dict)
        histograms: dict[str, dict[Labels, dict[str, float]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for field, value in _parsed(self.totals):
            name, labels = field
            base, _, le = name.partition("_bucket:")
            if le and base in BOUNDS:
                slot = histograms[base][labels]
                slot[le] = slot.get(le, 0.0) + value
            elif name.endswith("_sum") and name[: -len("_sum")] in BOUNDS:
                histograms[name[: -len("_sum")]][labels]["_sum"] = value
            elif not le:
                counters[name][labels] = value
        families: list[Metric] = [
            *(_counter(name, rows) for name, rows in counters.items()),
            *(_histogram(name, rows) for name, rows in histograms.items()),
            *_gauges(self.gauge_values),
        ]
        yield from sorted(families, key=lambda family: family.name)


def _parsed(values: Mapping[str, float]) -> Iterator[tuple[tuple[str, Labels], float]]:
    """``((name, labels), value)`` of each field whose names Prometheus accepts."""
    for field, value in values.items():
        name, *pairs = field.split("|")
        split = [pair.partition("=") for pair in pairs]
        labels = tuple(sorted((key, v) for key, sep, v in split if sep))
        names_ok = _NAME.fullmatch(name.partition("_bucket:")[0]) and all(
            _NAME.fullmatch(key) and key != "le" for key, _ in labels
        )
        if names_ok and math.isfinite(value):
            yield (name, labels), value


def _label_names(rows: Iterable[Labels]) -> list[str]:
    return sorted({key for labels in rows for key, _ in labels})


def _label_values(names: list[str], labels: Labels) -> list[str]:
    # Missing labels are empty, which Prometheus reads as absent.
    given = dict(labels)
    return [given.get(name, "") for name in names]


def _doc(name: str) -> str:
    return HELP.get(name, ("", f"{name.replace('_', ' ').capitalize()}."))[1]


def _counter(name: str, rows: dict[Labels, float]) -> Metric:
    names = _label_names(rows)
    family = CounterMetricFamily(PREFIX + name, _doc(name), labels=names)
    for labels, value in sorted(rows.items()):
        family.add_metric(_label_values(names, labels), value)
    return family


def _histogram(name: str, rows: dict[Labels, dict[str, float]]) -> Metric:
    bounds = BOUNDS[name]
    names = _label_names(rows)
    family = HistogramMetricFamily(PREFIX + name, _doc(name), labels=names)
    for labels, values in sorted(rows.items()):
        # Per-bucket counts made cumulative. A bound no longer in the list (changed
        # between deploys) counts in the first bound above it, as an observation of
        # that value would now.
        per_bucket = [0.0] * (len(bounds) + 1)
        for le, count in values.items():
            if le != "_sum":
                per_bucket[bisect_left(bounds, _bound(le))] += count
        running, buckets = 0.0, []
        for bound, count in zip([*map(str, bounds), "+Inf"], per_bucket, strict=True):
            running += count
            buckets.append((bound, running))
        family.add_metric(_label_values(names, labels), buckets, values.get("_sum", 0.0))
    return family


def _bound(le: str) -> float:
    try:
        return float(le)
    except ValueError:
        return math.inf


def _gauges(values: Mapping[str, float]) -> Iterator[Metric]:
    by_name: dict[str, dict[Labels, float]] = defaultdict(dict)
    for (name, labels), value in _parsed(values):
        by_name[name][labels] = value
    for name, rows in by_name.items():
        names = _label_names(rows)
        family = GaugeMetricFamily(PREFIX + name, _doc(name), labels=names)
        for labels, value in sorted(rows.items()):
            family.add_metric(_label_values(names, labels), value)
        yield family
