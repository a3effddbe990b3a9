"""The bodies of the API's own routes (``GET /pipeline``): msgspec Structs. The thread
operations' bodies are derived from their table
(:mod:`threadfold.workers.threads.routes`)."""

from __future__ import annotations

import msgspec


class LagHistogram(msgspec.Struct):
    """The enqueue-to-visible lag of applied deltas, all since the start: ``counts[i]``
    deltas within ``bounds[i]`` ms (cumulative), the last entry of ``counts`` all of them."""

    bounds: list[int]
    counts: list[int]
    sum_ms: float


class PipelineOut(msgspec.Struct):
    """``GET /pipeline``: fleet-wide totals at ``at_ms`` (the API's clock). Counters only
    grow: rates are the difference of two samples over their ``at_ms`` difference."""

    at_ms: int
    deltas_ingested: int
    entries_applied: int
    commits: int
    threads_with_backlog: int
    threads_quarantined: int
    processes: dict[str, int]
    visible_lag_ms: LagHistogram
