"""The spread benchmark's targets (issue 24, items 2 and 3), judged on one run; a figure
whose states failed their check never passes."""

from __future__ import annotations

from typing import Any, Final

from bench.common.target import Target
from bench.pipeline.latency import LatencyResult

SPREAD_RATE: Final = 40_000.0
P99_MS: Final = 50.0
OUTSIDE_RATIO: Final = 0.15


def spread_rate(client: dict[str, Any], threads: int, ok: bool) -> Target:
    runs = client["repeats"]
    return Target(
        "spread shape end to end, Python client (median of repeats)",
        f">= {SPREAD_RATE:,.0f} deltas/s", f"{client['rate']:,.0f}/s",
        client["rate"] >= SPREAD_RATE and ok,
        f"{len(runs)} repeats {client['rate_min']:,.0f}-{client['rate_max']:,.0f}/s; "
        f"{threads:,} threads, one delta of a thread a bulk of 500; "
        f"{client['cpu_us_per_delta']['total']:,.0f} µs CPU a delta, "
        f"{client['commits_per_delta']:.2f} commits a delta")


def lag(result: LatencyResult) -> Target:
    return Target(
        "enqueue-to-visible p99 at half the spread rate",
        f"< {P99_MS:g} ms", f"{result.p99_ms:,.1f} ms",
        result.p99_ms < P99_MS and result.unresolved == 0 and result.check.ok,
        f"{result.achieved_rate:,.0f} deltas/s paced, one delta a chosen thread of "
        f"{result.config.threads:,}; p50 {result.p50_ms:,.1f} / p95 {result.p95_ms:,.1f} ms; "
        f"poll loop {result.mean_poll_ms:.1f} ms counted in")


def outside(median: dict[str, Any], ok: bool) -> Target:
    ratio = median.get("ratio", 0.0)
    return Target(
        "outside ratio: HTTP bulk all visible / bare pipelined XADD (median of rounds)",
        f">= {OUTSIDE_RATIO:g}", f"{ratio:.3f}",
        ratio >= OUTSIDE_RATIO and ok,
        f"{median.get('visible_per_s', 0):,.0f} vs {median.get('bare_per_s', 0):,.0f} "
        f"deltas/s (ingest {median.get('ingest_per_s', 0):,.0f}/s); rounds' ratios "
        f"{median.get('ratio_min', 0):.3f}-{median.get('ratio_max', 0):.3f}")
