"""``GET /metrics``: Prometheus text from every process's counters (see workers.metrics).

Hash fields are ``name`` or ``name|label=value|...``; histograms are stored as
per-bucket counts plus ``_sum`` and ``_count`` and exposed cumulatively, as Prometheus
expects. Gauges (threads with a backlog, quarantined threads) are read at scrape time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Final

from core.keys import Keyspace
from workers.metrics import BATCH_BUCKETS, LAG_BUCKETS_MS, LATENCY_BUCKETS_MS
from workers.ops import text
from workers.redis_io import AsyncClient

PREFIX: Final = "threadfold_"
HELP: Final = {
    "commits": ("counter", "Batches committed by workers."),
    "entries_applied": ("counter", "Log entries (deltas) applied by workers."),
    "commit_conflicts": ("counter", "Commits refused by compare-and-set (stale or concurrent)."),
    "drain_failures": ("counter", "Drains that failed on a poison entry."),
    "quarantines": ("counter", "Threads put in quarantine."),
    "handoffs": ("counter", "Threads handed to a fresh task when a drain's time ran out."),
    "deltas_ingested": ("counter", "Deltas appended through the API."),
    "http_requests": ("counter", "HTTP requests answered, by route and status."),
    "batch_entries": ("histogram", "Entries per committed batch."),
    "visible_lag_ms": ("histogram", "Enqueue-to-visible lag of each applied delta (ms)."),
    "http_request_ms": ("histogram", "HTTP request duration (ms)."),
}


BOUNDS: Final = {
    "batch_entries": BATCH_BUCKETS,
    "visible_lag_ms": LAG_BUCKETS_MS,
    "http_request_ms": LATENCY_BUCKETS_MS,
}


async def collect(client: AsyncClient, keyspace: Keyspace) -> dict[str, float]:
    """Every live process's counters, summed by field."""
    alive_since = int(time.time() * 1000) - 60_000
    procs = await client.zrangebyscore(keyspace.metrics_procs, alive_since, "+inf")
    pipe = client.pipeline(transaction=False)
    for proc in procs:
        pipe.hgetall(keyspace.metrics_of(text(proc)))
    totals: dict[str, float] = defaultdict(float)
    for fields in await pipe.execute():
        for name, value in fields.items():
            totals[text(name)] += float(value)
    return totals


async def gauges(client: AsyncClient, keyspace: Keyspace) -> dict[str, float]:
    pipe = client.pipeline(transaction=False)
    for bucket in range(keyspace.buckets):
        keys = keyspace.bucket_keys(bucket)
        pipe.zcard(keys.dirty)
        pipe.zcard(keys.quarantine)
    counts = await pipe.execute()
    return {
        "threads_with_backlog": float(sum(counts[0::2])),
        "threads_quarantined": float(sum(counts[1::2])),
    }


def _split(field: str) -> tuple[str, dict[str, str]]:
    name, *labels = field.split("|")
    return name, dict(label.split("=", 1) for label in labels if "=" in label)


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in sorted(labels.items())
    )
    return "{" + inner + "}"


def render(totals: dict[str, float], gauge_values: dict[str, float]) -> str:
    """The Prometheus text exposition (version 0.0.4)."""
    series: dict[str, list[tuple[dict[str, str], str, float]]] = defaultdict(list)
    for field, value in totals.items():
        name, labels = _split(field)
        base, _, part = name.partition("_bucket:")
        if part:
            series[base].append(({**labels, "le": part}, "_bucket", value))
        elif name.endswith(("_sum", "_count")) and name.rsplit("_", 1)[0] in HELP:
            root, suffix = name.rsplit("_", 1)
            series[root].append((labels, f"_{suffix}", value))
        else:
            series[name].append((labels, "_total", value))
    lines: list[str] = []
    for name in sorted(series):
        kind, doc = HELP.get(name, ("counter", name.replace("_", " ")))
        lines += [f"# HELP {PREFIX}{name} {doc}", f"# TYPE {PREFIX}{name} {kind}"]
        lines += _samples(name, kind, series[name])
    for name, value in sorted(gauge_values.items()):
        lines += [
            f"# HELP {PREFIX}{name} {name.replace('_', ' ')}.",
            f"# TYPE {PREFIX}{name} gauge",
            f"{PREFIX}{name} {value:g}",
        ]
    return "\n".join(lines) + "\n"


def _samples(name: str, kind: str, rows: list[tuple[dict[str, str], str, float]]) -> list[str]:
    if kind != "histogram":
        return [
            f"{PREFIX}{name}{suffix}{_labels(labels)} {value:g}" for labels, suffix, value in rows
        ]
    by_labels: dict[str, dict[str, float]] = defaultdict(dict)
    label_sets: dict[str, dict[str, str]] = {}
    for labels, suffix, value in rows:
        rest = {k: v for k, v in labels.items() if k != "le"}
        key = _labels(rest)
        label_sets[key] = rest
        slot = labels["le"] if suffix == "_bucket" else suffix
        by_labels[key][slot] = by_labels[key].get(slot, 0.0) + value
    out: list[str] = []
    for key, values in sorted(by_labels.items()):
        running = 0.0
        for bound in [*map(str, BOUNDS[name]), "+Inf"]:
            running += values.get(bound, 0.0)
            labels = {**label_sets[key], "le": bound}
            shown = values.get("_count", running) if bound == "+Inf" else running
            out.append(f"{PREFIX}{name}_bucket{_labels(labels)} {shown:g}")
        out.append(f"{PREFIX}{name}_sum{key} {values.get('_sum', 0.0):g}")
        out.append(f"{PREFIX}{name}_count{key} {values.get('_count', running):g}")
    return out
