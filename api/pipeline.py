"""``GET /pipeline``: the pipeline's totals as JSON, for the page at ``/ui``.

Why a JSON endpoint beside ``/metrics`` rather than the page parsing Prometheus text:
the page would need a parser of the exposition format and the histogram's naming in
JavaScript, a second copy of what :mod:`threadfold.api.metrics` already reads, and a
format change would break it silently. Here the same snapshot (the fleet-wide totals,
the gauges read now) becomes one documented, schema-checked body.

Counters only grow, so the page takes rates (ingested and applied deltas per second)
and the lag's p99 over an interval from two samples: the difference of the counters,
and of the histogram's buckets, between them (``api/ui/app.js``, interpolated within a
bucket as Prometheus's ``histogram_quantile``). One sample alone holds every total
since the start.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from threadfold.api.schemas import LagHistogram, PipelineOut
from threadfold.workers.metrics import LAG_BUCKETS_MS, ROLES


def summary(totals: Mapping[str, float], gauge_values: Mapping[str, float]) -> PipelineOut:
    """The totals and gauges of one scrape (:func:`threadfold.api.metrics.collect`,
    :func:`~threadfold.api.metrics.gauges`) as the page reads them."""
    per_bucket = [
        int(totals.get(f"visible_lag_ms_bucket:{bound}", 0.0))
        for bound in (*map(str, LAG_BUCKETS_MS), "+Inf")
    ]
    running, cumulative = 0, []
    for count in per_bucket:
        running += count
        cumulative.append(running)
    return PipelineOut(
        at_ms=int(time.time() * 1000),
        deltas_ingested=int(totals.get("deltas_ingested", 0.0)),
        entries_applied=int(totals.get("entries_applied", 0.0)),
        commits=int(totals.get("commits", 0.0)),
        threads_with_backlog=int(gauge_values.get("threads_with_backlog", 0.0)),
        threads_quarantined=int(gauge_values.get("threads_quarantined", 0.0)),
        processes={role: int(gauge_values.get(f"processes|role={role}", 0.0)) for role in ROLES},
        visible_lag_ms=LagHistogram(
            list(LAG_BUCKETS_MS), cumulative, totals.get("visible_lag_ms_sum", 0.0)
        ),
    )

